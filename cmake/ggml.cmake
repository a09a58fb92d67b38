# ggml, for what is built against it: the imported targets ggml::base and ggml::cpu, from the llama.cpp source tree
# GGUFMM_LLAMA_CPP names (its headers) and a build of its ggml in GGUFMM_GGML_BUILD (shared libraries, as ggml builds
# by default: a whole llama.cpp build, or only ggml's targets), for example
#   cmake -S $GGUFMM_LLAMA_CPP -B build-ggml -G Ninja -DLLAMA_CURL=OFF -DLLAMA_BUILD_TOOLS=OFF \
#     -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
#   cmake --build build-ggml --target ggml-base ggml-cpu
if(TARGET ggml::base)
  return()
endif()
if(NOT EXISTS ${GGUFMM_LLAMA_CPP}/ggml/include/ggml.h)
  message(FATAL_ERROR "GGUFMM_LLAMA_CPP=${GGUFMM_LLAMA_CPP}: not a llama.cpp source tree (no ggml/include/ggml.h)")
endif()
# A llama.cpp build puts the libraries in bin/, ggml's own build beside their sources.
set(ggml_lib_dirs ${GGUFMM_GGML_BUILD}/bin ${GGUFMM_GGML_BUILD}/src ${GGUFMM_GGML_BUILD}/ggml/src)
foreach(lib ggml-base ggml-cpu)
  find_library(GGUFMM_LIB_${lib} ${lib} PATHS ${ggml_lib_dirs} NO_DEFAULT_PATH NO_CACHE)
  if(NOT GGUFMM_LIB_${lib})
    message(FATAL_ERROR "GGUFMM_GGML_BUILD=${GGUFMM_GGML_BUILD}: no lib${lib} in ${ggml_lib_dirs} (build its "
      "ggml-base and ggml-cpu targets first)")
  endif()
  string(REPLACE ggml- "" name ${lib})
  add_library(ggml::${name} SHARED IMPORTED)
  # Imported include directories are system headers: ggml's code stays out of the project's warning flags.
  set_target_properties(ggml::${name} PROPERTIES IMPORTED_LOCATION ${GGUFMM_LIB_${lib}}
    INTERFACE_INCLUDE_DIRECTORIES ${GGUFMM_LLAMA_CPP}/ggml/include)
endforeach()
