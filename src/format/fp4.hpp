// MXFP4: 32 E2M1 values sharing one E8M0 exponent.
#pragma once
#include <cstdint>

namespace ggufmm::format {
void dequantize_mxfp4(const void* blocks, float* out, int64_t n);
void quantize_mxfp4(const float* in, void* blocks, int64_t n);
}  // namespace ggufmm::format
