# Writes OUTPUT, a C++ source defining `const char* const NAME[]` and `const size_t NAME_parts`: INPUT with every `#include "..."` of a file under
# ROOT replaced by that file's text (once per file, as include guards would), so that a device compiler that
# never sees the source tree gets the whole program, in parts of at most 8000 characters (compilers need not take
# longer literals; OpenCL takes a program as parts). SUBSTITUTE, "PATH=OTHER", includes OTHER where PATH is
# included (the one compiler's header for the header that picks among compilers). Run with cmake -P at build time.
cmake_minimum_required(VERSION 3.25)

function(ggufmm_inline_includes file out_var)
  get_property(seen GLOBAL PROPERTY ggufmm_inlined)
  if(file IN_LIST seen)
    set(${out_var} "" PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY ggufmm_inlined ${file})
  file(READ ${file} text)
  string(REGEX MATCHALL "#include \"[^\"]+\"" directives "${text}")
  foreach(directive IN LISTS directives)
    string(REGEX REPLACE "#include \"([^\"]+)\"" "\\1" path "${directive}")
    if(DEFINED SUBSTITUTE AND SUBSTITUTE MATCHES "^${path}=(.+)$")
      set(path ${CMAKE_MATCH_1})
    endif()
    if(NOT EXISTS ${ROOT}/${path})
      message(FATAL_ERROR "${file}: includes ${path}, not under ${ROOT}")
    endif()
    ggufmm_inline_includes(${ROOT}/${path} included)
    string(REPLACE "${directive}" "${included}" text "${text}")
  endforeach()
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

ggufmm_inline_includes(${INPUT} source)
string(LENGTH "${source}" length)
set(body "")
set(parts 0)
set(offset 0)
while(offset LESS length)
  string(SUBSTRING "${source}" ${offset} 8000 chunk)
  string(APPEND body "    R\"ggufmm(${chunk})ggufmm\",\n")
  math(EXPR offset "${offset} + 8000")
  math(EXPR parts "${parts} + 1")
endwhile()
file(WRITE ${OUTPUT}.tmp "// Generated from ${INPUT} by cmake/embed_source.cmake: do not edit.\n#include <cstddef>\n"
  "extern const char* const ${NAME}[];\nextern const size_t ${NAME}_parts;\n"
  "const char* const ${NAME}[] = {\n${body}};\nconst size_t ${NAME}_parts = ${parts};\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
