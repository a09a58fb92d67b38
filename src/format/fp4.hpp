// MXFP4: 32 E2M1 values sharing one E8M0 exponent. Decodes one block to its exact integer form (Int8Block: twice
// the E2M1 values, q in [-12, 12], offset 0); dequantization derives from that (see registry.cpp).
#pragma once
#include <cstdint>

namespace ggufmm::format {
struct Int8Block;  // format/registry.hpp; not included, so that kernels can take the table without the registry

// Twice the E2M1 values, by code (sign in bit 3): the decoded levels, also the kernels' lookup table.
inline constexpr int8_t kMXFP4Values[16] = {
#include "format/tables/mxfp4_values.inc"
};
void decode_mxfp4(const void* block, Int8Block& out, int slot);
void quantize_mxfp4(const float* in, void* blocks, int64_t n);
}  // namespace ggufmm::format
