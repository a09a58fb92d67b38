// The device program (device/kernels/program.h) as CUDA: nvcc compiles this file into the fatbin the library
// embeds (src/CMakeLists.txt).
#include "device/kernels/program.h"
