// The ternary formats TQ1_0 and TQ2_0 (values -1, 0, +1 times one scale per 256).
#pragma once
#include <cstdint>

namespace ggufmm::format {
void dequantize_tq1_0(const void* blocks, float* out, int64_t n);
void dequantize_tq2_0(const void* blocks, float* out, int64_t n);
void quantize_tq1_0(const float* in, void* blocks, int64_t n);
void quantize_tq2_0(const float* in, void* blocks, int64_t n);
}  // namespace ggufmm::format
