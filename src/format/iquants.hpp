// The IQ formats: codebook (lattice) quantization and the non-linear 4-bit formats.
#pragma once
#include <cstdint>

namespace ggufmm::format {
void dequantize_iq2_xxs(const void* blocks, float* out, int64_t n);
void dequantize_iq2_xs(const void* blocks, float* out, int64_t n);
void dequantize_iq2_s(const void* blocks, float* out, int64_t n);
void dequantize_iq3_xxs(const void* blocks, float* out, int64_t n);
void dequantize_iq3_s(const void* blocks, float* out, int64_t n);
void dequantize_iq1_s(const void* blocks, float* out, int64_t n);
void dequantize_iq1_m(const void* blocks, float* out, int64_t n);
void dequantize_iq4_nl(const void* blocks, float* out, int64_t n);
void dequantize_iq4_xs(const void* blocks, float* out, int64_t n);
void quantize_iq4_nl(const float* in, void* blocks, int64_t n);
void quantize_iq4_xs(const float* in, void* blocks, int64_t n);
}  // namespace ggufmm::format
