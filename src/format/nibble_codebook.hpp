// 32 values stored as 16 bytes of 4-bit indices into a codebook of 16 int8 levels (IQ4_NL, IQ4_XS, MXFP4): value
// j in the low nibble of byte j, value j + 16 in its high nibble. Decoded through a table of the two levels of
// every byte value, so each byte costs one lookup instead of two.
#pragma once

#include <array>
#include <cstdint>

namespace ggufmm::format {

template <const int8_t (&Levels)[16]>
struct NibbleCodebook {
  static constexpr std::array<uint16_t, 256> kPairs = [] {
    std::array<uint16_t, 256> t{};
    for (int b = 0; b < 256; ++b) {
      t[b] = static_cast<uint16_t>(static_cast<uint8_t>(Levels[b & 15]) | static_cast<uint8_t>(Levels[b >> 4]) << 8);
    }
    return t;
  }();

  static void decode32(const uint8_t* codes, int8_t* q) {
    for (int j = 0; j < 16; ++j) {
      const unsigned pair = kPairs[codes[j]];
      q[j] = static_cast<int8_t>(pair & 0xffu);
      q[j + 16] = static_cast<int8_t>(pair >> 8);
    }
  }
};

}  // namespace ggufmm::format
