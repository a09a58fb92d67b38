// The K-quants: 256-value super-blocks of 16 or 32-value sub-blocks with quantized scales. Each decodes one block
// to its exact integer form (Int8Block); dequantization derives from that (see registry.cpp).
// q ranges: Q2_K [0, 3], Q4_K [0, 15], Q5_K [0, 31] (offset dmin * min); Q3_K [-4, 3], Q6_K [-32, 31] (offset 0).
#pragma once
#include <cstdint>

#include "format/registry.hpp"

namespace ggufmm::format {
void decode_q2_K(const void* block, Int8Block& out);
void decode_q3_K(const void* block, Int8Block& out);
void decode_q4_K(const void* block, Int8Block& out);
void decode_q5_K(const void* block, Int8Block& out);
void decode_q6_K(const void* block, Int8Block& out);
void quantize_q2_K(const float* in, void* blocks, int64_t n);
void quantize_q3_K(const float* in, void* blocks, int64_t n);
void quantize_q4_K(const float* in, void* blocks, int64_t n);
void quantize_q5_K(const float* in, void* blocks, int64_t n);
void quantize_q6_K(const float* in, void* blocks, int64_t n);
}  // namespace ggufmm::format
