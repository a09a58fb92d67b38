// A stand-in for cuBLAS beside the stub driver (cuda_stub.cpp), built as libcublas.so.<CUDA major version>: the
// calls the CUDA backend makes succeed, and the GEMM computes nothing, as the stub's kernels do not run.
#include <cublas_v2.h>

namespace {
char g_handle;
}

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  *handle = reinterpret_cast<cublasHandle_t>(&g_handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }

cublasStatus_t CUBLASWINAPI cublasGemmEx_64(cublasHandle_t, cublasOperation_t, cublasOperation_t, int64_t, int64_t,
                                            int64_t, const void*, const void*, cudaDataType, int64_t, const void*,
                                            cudaDataType, int64_t, const void*, void*, cudaDataType, int64_t,
                                            cublasComputeType_t, cublasGemmAlgo_t) {
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
