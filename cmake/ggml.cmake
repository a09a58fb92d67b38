# ggml, for what is built against it: the imported targets ggml::ggml (the backend registry), ggml::base and
# ggml::cpu, from a build of the llama.cpp source tree GGUFMM_LLAMA_CPP names (its headers) in GGUFMM_GGML_BUILD: a
# whole llama.cpp build or ggml's own, with shared libraries (ggml's default), for example
#   cmake -S $GGUFMM_LLAMA_CPP/ggml -B build-ggml -G Ninja && cmake --build build-ggml --target ggml-base ggml-cpu
if(TARGET ggml::base)
  return()
endif()
if(NOT EXISTS ${GGUFMM_LLAMA_CPP}/ggml/include/ggml.h)
  message(FATAL_ERROR "GGUFMM_LLAMA_CPP=${GGUFMM_LLAMA_CPP}: not a llama.cpp source tree (no ggml/include/ggml.h)")
endif()
# A llama.cpp build puts the libraries in bin/, ggml's own build beside their sources.
set(ggml_lib_dirs ${GGUFMM_GGML_BUILD}/bin ${GGUFMM_GGML_BUILD}/src ${GGUFMM_GGML_BUILD}/ggml/src)
foreach(lib ggml ggml-base ggml-cpu)
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
