// F32, F16 and BF16 rows.
#pragma once
#include <cstdint>

namespace ggufmm::format {
void dequantize_f32(const void* blocks, float* out, int64_t n);
void dequantize_f16(const void* blocks, float* out, int64_t n);
void dequantize_bf16(const void* blocks, float* out, int64_t n);
void quantize_f32(const float* in, void* blocks, int64_t n);
void quantize_f16(const float* in, void* blocks, int64_t n);
void quantize_bf16(const float* in, void* blocks, int64_t n);
}  // namespace ggufmm::format
