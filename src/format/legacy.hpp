// The 32-value block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0. Each decodes one block to its exact integer form
// (Int8Block, two sub-blocks sharing one scale); dequantization derives from that (see registry.cpp).
// q ranges: Q4_0 [-8, 7], Q5_0 [-16, 15], Q8_0 [-128, 127] (offset 0); Q4_1 [0, 15], Q5_1 [0, 31] (offset -m).
#pragma once
#include <cstdint>

#include "format/registry.hpp"

namespace ggufmm::format {
void decode_q4_0(const void* block, Int8Block& out, int slot);
void decode_q4_1(const void* block, Int8Block& out, int slot);
void decode_q5_0(const void* block, Int8Block& out, int slot);
void decode_q5_1(const void* block, Int8Block& out, int slot);
void decode_q8_0(const void* block, Int8Block& out, int slot);
void quantize_q4_0(const float* in, void* blocks, int64_t n);
void quantize_q4_1(const float* in, void* blocks, int64_t n);
void quantize_q5_0(const float* in, void* blocks, int64_t n);
void quantize_q5_1(const float* in, void* blocks, int64_t n);
void quantize_q8_0(const float* in, void* blocks, int64_t n);
}  // namespace ggufmm::format
