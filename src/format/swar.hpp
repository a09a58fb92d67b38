// Eight bytes at a time in a 64-bit word (SWAR), for decoders whose runs are 8 values: portable, and about 8
// times fewer operations than a byte loop that compilers cannot vectorize. Byte j of a word is bits 8j..8j+7
// (little-endian, as the blocks are stored).
#pragma once

#include <cstdint>
#include <cstring>

namespace ggufmm::format::swar {

inline constexpr uint64_t kOnes = 0x0101010101010101u;
inline constexpr uint64_t kHighBits = kOnes * 0x80;

// The 8 byte sums a + b, each modulo 256: the low 7 bits add without carrying into the next byte, the top bits
// are summed by xor.
constexpr uint64_t add_bytes(uint64_t a, uint64_t b) {
  return ((a & ~kHighBits) + (b & ~kHighBits)) ^ ((a ^ b) & kHighBits);
}

// Byte j is 0xff where bit j of the low 8 bits of `bits` is set, else 0.
constexpr uint64_t byte_mask(unsigned bits) {
  // Byte j keeps bit j of the repeated byte; adding 0x7f carries it into the byte's top bit.
  const uint64_t picked = (bits & 0xffu) * kOnes & 0x8040201008040201u;
  return (((picked + ~kHighBits) & kHighBits) >> 7) * 0xff;
}

inline uint64_t load(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(void* p, uint64_t v) { std::memcpy(p, &v, sizeof v); }

static_assert(byte_mask(0xa5) == 0xff00ff0000ff00ffu);
static_assert(add_bytes(0x01ff7f80u, 0x01010101u) == 0x02008081u);  // no carry from 0xff + 1 into the next byte

}  // namespace ggufmm::format::swar
