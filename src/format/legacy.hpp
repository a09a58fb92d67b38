// The 32-value block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
#pragma once
#include <cstdint>

namespace ggufmm::format {
void dequantize_q4_0(const void* blocks, float* out, int64_t n);
void dequantize_q4_1(const void* blocks, float* out, int64_t n);
void dequantize_q5_0(const void* blocks, float* out, int64_t n);
void dequantize_q5_1(const void* blocks, float* out, int64_t n);
void dequantize_q8_0(const void* blocks, float* out, int64_t n);
void quantize_q4_0(const float* in, void* blocks, int64_t n);
void quantize_q4_1(const float* in, void* blocks, int64_t n);
void quantize_q5_0(const float* in, void* blocks, int64_t n);
void quantize_q5_1(const float* in, void* blocks, int64_t n);
void quantize_q8_0(const float* in, void* blocks, int64_t n);
}  // namespace ggufmm::format
