// The ternary formats TQ1_0 and TQ2_0 (values -1, 0, +1 times one scale per 256). Each decodes one block to its
// exact integer form (Int8Block, offset 0); dequantization derives from that (see registry.cpp). q ranges: TQ1_0
// [-1, 1]; TQ2_0 [-1, 2], as ggml reads the unused fourth code.
#pragma once
#include <cstdint>

#include "format/registry.hpp"

namespace ggufmm::format {
void decode_tq1_0(const void* block, Int8Block& out);
void decode_tq2_0(const void* block, Int8Block& out);
void quantize_tq1_0(const float* in, void* blocks, int64_t n);
void quantize_tq2_0(const float* in, void* blocks, int64_t n);
}  // namespace ggufmm::format
