// The K-quants: 256-value super-blocks of 16 or 32-value sub-blocks with quantized scales.
#pragma once
#include <cstdint>

namespace ggufmm::format {
void dequantize_q2_K(const void* blocks, float* out, int64_t n);
void dequantize_q3_K(const void* blocks, float* out, int64_t n);
void dequantize_q4_K(const void* blocks, float* out, int64_t n);
void dequantize_q5_K(const void* blocks, float* out, int64_t n);
void dequantize_q6_K(const void* blocks, float* out, int64_t n);
void quantize_q2_K(const float* in, void* blocks, int64_t n);
void quantize_q3_K(const float* in, void* blocks, int64_t n);
void quantize_q4_K(const float* in, void* blocks, int64_t n);
void quantize_q5_K(const float* in, void* blocks, int64_t n);
void quantize_q6_K(const float* in, void* blocks, int64_t n);
}  // namespace ggufmm::format
