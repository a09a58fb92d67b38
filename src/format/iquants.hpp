// The IQ formats: codebook (lattice) quantization and the non-linear 4-bit formats. Each decodes one block to
// its exact integer form; dequantization derives from that (see registry.cpp).
#pragma once
#include <cstdint>

#include "format/registry.hpp"

namespace ggufmm::format {
void decode_iq2_xxs(const void* block, Int8Block& out);
void decode_iq2_xs(const void* block, Int8Block& out);
void decode_iq2_s(const void* block, Int8Block& out);
void decode_iq3_xxs(const void* block, Int8Block& out);
void decode_iq3_s(const void* block, Int8Block& out);
void decode_iq1_s(const void* block, Int8Block& out);
void decode_iq1_m(const void* block, Int8Block& out);
void decode_iq4_nl(const void* block, Int8Block& out, int slot);
void decode_iq4_xs(const void* block, Int8Block& out);
// The codebook formats need an importance-matrix search to quantize, which ggufmm does not do.
inline constexpr QuantizeFn quantize_iq2_xxs = nullptr;
inline constexpr QuantizeFn quantize_iq2_xs = nullptr;
inline constexpr QuantizeFn quantize_iq2_s = nullptr;
inline constexpr QuantizeFn quantize_iq3_xxs = nullptr;
inline constexpr QuantizeFn quantize_iq3_s = nullptr;
inline constexpr QuantizeFn quantize_iq1_s = nullptr;
inline constexpr QuantizeFn quantize_iq1_m = nullptr;
void quantize_iq4_nl(const float* in, void* blocks, int64_t n);
void quantize_iq4_xs(const float* in, void* blocks, int64_t n);
}  // namespace ggufmm::format
