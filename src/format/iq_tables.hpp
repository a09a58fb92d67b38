// The codebooks and lookup tables of the IQ formats, shared by the scalar code and the SIMD kernels.
// Each grid entry packs a run of values into one little-endian word, value j in byte j, so that a kernel can
// load an entry whole (e.g. as 8 lanes of bytes) and scalar code can take byte j as (entry >> 8 * j) & 0xff.
// The values themselves are in format/tables/*.inc, bare initializer lists that the device kernel source
// (device/kernels/tables.h) includes too: one copy of the data for every compiler.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "format/iq2_grids.hpp"
#include "format/iq3_grids.hpp"

namespace ggufmm::format {

// IQ2 lattices: 8 magnitudes per entry, each byte one of kIQ2Levels (0x08, 0x19, 0x2b; scaled by 1/4 on use).
// kIQ2XXSGrid[256], IQ2_XXS, 8-bit index, and kIQ2XSGrid[512], IQ2_XS, 9-bit index, in iq2_grids.hpp.
extern const uint64_t kIQ2SGrid[1024];  // IQ2_S: 10-bit index

// IQ3 lattices: 4 magnitudes per entry (iq3_grids.hpp). kIQ3XXSGrid[256], IQ3_XXS: bytes in {4, 12, 20, ..., 52,
// 62}; kIQ3SGrid[512], IQ3_S: odd bytes 1..15.

// IQ1_S and IQ1_M: 8 signed values per entry, each byte an int8 in {-1, 0, +1}; 11-bit index.
extern const uint64_t kIQ1SGrid[2048];
// The offset IQ1 adds to every grid value before scaling; a per-run bit selects its sign.
inline constexpr float kIQ1Delta = 0.125f;

// IQ4_NL and IQ4_XS: the 16 non-linear levels a 4-bit index selects, ascending.
inline constexpr int8_t kIQ4Values[16] = {
#include "format/tables/iq4_values.inc"
};

// IQ2_XXS, IQ2_XS and IQ3_XXS store 7 sign bits per run of 8: their quantizers keep the count of negative
// values in a run even, so the eighth bit is the parity of the seven. Entry i: bits 0..6 = i, bit 7 = parity.
inline constexpr std::array<uint8_t, 128> kIQ2Signs = [] {
  std::array<uint8_t, 128> signs{};
  for (unsigned i = 0; i < signs.size(); ++i) signs[i] = static_cast<uint8_t>(i | (std::popcount(i) % 2 ? 0x80u : 0u));
  return signs;
}();

}  // namespace ggufmm::format
