# The device_programs fixture: `ggufmm check --device` on each OpenCL device compiles every format's program (and
# the driver its kernels) into the caches (GGUFMM_CACHE_DIR, PoCL's own) that the device tests then share. On a
# cold cache, the test processes would otherwise each compile the programs they need, several at once, seconds
# apiece. It never fails: a device that does not work is for the device tests to report in detail.
#   cmake -DTOOL=build/ggufmm -P tests/device_programs.cmake
execute_process(COMMAND ${TOOL} devices OUTPUT_VARIABLE listing RESULT_VARIABLE failed)
if(failed)
  message(WARNING "ggufmm devices failed (${failed})")
endif()
string(REGEX MATCHALL "opencl:[0-9]+" devices "${listing}")
list(REMOVE_DUPLICATES devices)
foreach(device IN LISTS devices)
  execute_process(COMMAND ${TOOL} check --device ${device} OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE failed)
  if(failed)
    message(WARNING "ggufmm check --device ${device} failed (${failed})")
  endif()
endforeach()
