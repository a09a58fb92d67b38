// The GGUF block layouts, byte for byte as ggml stores them. Halves are raw IEEE binary16 bits (see fp16.hpp).
#pragma once

#include <cstdint>

namespace ggufmm::format {

inline constexpr int kQK = 32;    // values per block of the 32-value formats
inline constexpr int kQK_K = 256;  // values per super-block of the K-, IQ- and TQ-formats

// One struct per type, named Block<TYPE> after its line in GGUFMM_TYPES: kValues values in sizeof() bytes, the
// registry's block size and block bytes. Floats and integer types are blocks of one value.
struct BlockF32 {
  static constexpr int kValues = 1;
  float value;
};
struct BlockF16 {
  static constexpr int kValues = 1;
  uint16_t bits;
};
struct BlockBF16 {
  static constexpr int kValues = 1;
  uint16_t bits;
};
struct BlockI8 {
  static constexpr int kValues = 1;
  int8_t value;
};
struct BlockI16 {
  static constexpr int kValues = 1;
  int16_t value;
};
struct BlockI32 {
  static constexpr int kValues = 1;
  int32_t value;
};
struct BlockI64 {
  static constexpr int kValues = 1;
  int64_t value;
};
struct BlockF64 {
  static constexpr int kValues = 1;
  double value;
};

struct BlockQ4_0 {
  static constexpr int kValues = kQK;
  uint16_t d;
  uint8_t qs[kQK / 2];  // value j in the low nibble of byte j, value j+16 in its high nibble
};
struct BlockQ4_1 {
  static constexpr int kValues = kQK;
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  static constexpr int kValues = kQK;
  uint16_t d;
  uint8_t qh[4];  // fifth bits, little-endian uint32: bit j for value j
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  static constexpr int kValues = kQK;
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  static constexpr int kValues = kQK;
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockIQ4_NL {
  static constexpr int kValues = kQK;
  uint16_t d;
  uint8_t qs[kQK / 2];
};
struct BlockMXFP4 {
  static constexpr int kValues = kQK;
  uint8_t e;  // E8M0 shared exponent
  uint8_t qs[kQK / 2];
};

struct BlockQ2_K {
  static constexpr int kValues = kQK_K;
  uint8_t scales[kQK_K / 16];  // low nibble scale, high nibble min, per 16 values
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
struct BlockQ3_K {
  static constexpr int kValues = kQK_K;
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];  // sixteen 6-bit scales
  uint16_t d;
};
struct BlockQ4_K {
  static constexpr int kValues = kQK_K;
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];  // eight 6-bit scales and eight 6-bit mins
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {
  static constexpr int kValues = kQK_K;
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
  static constexpr int kValues = kQK_K;
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

struct BlockIQ2_XXS {
  static constexpr int kValues = kQK_K;
  uint16_t d;
  uint16_t qs[kQK_K / 8];
};
struct BlockIQ2_XS {
  static constexpr int kValues = kQK_K;
  uint16_t d;
  uint16_t qs[kQK_K / 8];
  uint8_t scales[kQK_K / 32];
};
struct BlockIQ2_S {
  static constexpr int kValues = kQK_K;
  uint16_t d;
  uint8_t qs[kQK_K / 4];
  uint8_t qh[kQK_K / 32];
  uint8_t scales[kQK_K / 32];
};
struct BlockIQ3_XXS {
  static constexpr int kValues = kQK_K;
  uint16_t d;
  uint8_t qs[3 * kQK_K / 8];
};
struct BlockIQ3_S {
  static constexpr int kValues = kQK_K;
  uint16_t d;
  uint8_t qs[kQK_K / 4];
  uint8_t qh[kQK_K / 32];
  uint8_t signs[kQK_K / 8];
  uint8_t scales[kQK_K / 64];
};
struct BlockIQ1_S {
  static constexpr int kValues = kQK_K;
  uint16_t d;
  uint8_t qs[kQK_K / 8];
  uint16_t qh[kQK_K / 32];
};
struct BlockIQ1_M {
  static constexpr int kValues = kQK_K;
  uint8_t qs[kQK_K / 8];
  uint8_t qh[kQK_K / 16];
  uint8_t scales[kQK_K / 32];  // 3-bit scales; the super-block half is spread over their top nibbles
};
struct BlockIQ4_XS {
  static constexpr int kValues = kQK_K;
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};

struct BlockTQ1_0 {
  static constexpr int kValues = kQK_K;
  uint8_t qs[(kQK_K - 4 * kQK_K / 64) / 5];  // 5 ternary digits per byte
  uint8_t qh[kQK_K / 64];                     // 4 ternary digits per byte
  uint16_t d;
};
struct BlockTQ2_0 {
  static constexpr int kValues = kQK_K;
  uint8_t qs[kQK_K / 4];
  uint16_t d;
};

}  // namespace ggufmm::format
