// Two 32-value blocks (a unit, 64 values) into the lanes of one step of the group driver (groups.hpp): code runs,
// f16 scales, nibbles and fifth bits; and the decoding of Q4_0, Q4_1, Q5_0 and Q5_1 from them (Legacy32).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/avx2/groups.hpp"
#include "kernels/kernels.hpp"
#include "kernels/level.hpp"
#include "kernels/x86/common.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// Two runs of 16 bytes at byte offsets a and b of p: a in the low lane, b in the high one.
inline __m256i two_runs(const uint8_t* p, int a, int b) {
  return _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(p + b), reinterpret_cast<const __m128i*>(p + a));
}

// Two f16 values, converted: a in the low 4 lanes, b in the high 4.
inline __m256 two_halves(uint16_t a, uint16_t b) {
  const __m128i both = _mm_cvtsi32_si128(static_cast<int>(a | static_cast<uint32_t>(b) << 16));
  return _mm256_cvtph_ps(_mm_shuffle_epi8(both, _mm_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3)));
}

// Low and high nibbles of 16 code bytes per lane: values 0-15 and 16-31 of each block.
inline void split_nibbles(__m256i codes, __m256i& lo, __m256i& hi) {
  const __m256i low = _mm256_set1_epi8(0x0f);
  lo = _mm256_and_si256(codes, low);
  hi = _mm256_and_si256(_mm256_srli_epi16(codes, 4), low);
}

// `value` where bit j of `bits` is set, for byte j of 32.
inline __m256i bytes_where(uint32_t bits, __m256i value) {
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                             _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202,
                                                                0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), value);
}

// Q4_0, Q4_1, Q5_0, Q5_1, two blocks a unit: the levels are the codes, the _0 formats centre them with the bias
// (8 or 16), the _1 formats add their min.
template <class Block>
struct Legacy32 {
  static constexpr bool kHasMin = requires(const Block& b) { b.m; };
  static constexpr bool kHasFifthBit = requires(const Block& b) { b.qh; };
  static constexpr int kBlockValues = 32;
  static constexpr int kUnitValues = kStepValues;
  static constexpr int kBlockBytes = sizeof(Block);
  static constexpr int kUnitBytes = kStepGroups * kBlockBytes;
  static constexpr int kBias = kHasMin ? 0 : kHasFifthBit ? 16 : 8;
  static constexpr int kMaxCode = kHasFifthBit ? 31 : 15;

  struct Unit {
    StepWeights w;

    explicit Unit(const uint8_t* p) {
      constexpr int q = offsetof(Block, qs), d = offsetof(Block, d), b = kBlockBytes;
      split_nibbles(two_runs(p, q, q + b), w.lo, w.hi);
      if constexpr (kHasFifthBit) {
        // Bit j of qh is value j's: bits 0-15 of both blocks go to lo, bits 16-31 to hi.
        uint32_t qh0, qh1;
        std::memcpy(&qh0, p + offsetof(Block, qh), sizeof qh0);
        std::memcpy(&qh1, p + b + offsetof(Block, qh), sizeof qh1);
        const __m256i sixteen = _mm256_set1_epi8(16);
        w.lo = _mm256_or_si256(w.lo, bytes_where((qh0 & 0xffff) | qh1 << 16, sixteen));
        w.hi = _mm256_or_si256(w.hi, bytes_where(qh0 >> 16 | (qh1 & 0xffff0000), sixteen));
      }
      w.scale = two_halves(load_half(p + d), load_half(p + b + d));
      if constexpr (kHasMin) {
        constexpr int m = offsetof(Block, m);
        w.min = two_halves(load_half(p + m), load_half(p + b + m));
      }
    }
    template <int S>
    const StepWeights& step() const {
      return w;
    }
  };
};

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
