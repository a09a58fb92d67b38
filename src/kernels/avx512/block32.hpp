// Four 32-value blocks (a unit, 128 values) into the lanes of one step of the group driver (groups.hpp), with
// narrow loads (loads.hpp): code runs, f16 scales from their blocks, nibbles and fifth bits; and the decoding of
// Q4_0, Q4_1, Q5_0 and Q5_1 from them (Legacy32).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/avx512/groups.hpp"
#include "kernels/kernels.hpp"
#include "kernels/x86/common.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// Four runs of 16 bytes at the given byte offsets of a unit, run g in lane g.
template <int R0, int R1, int R2, int R3>
inline __m512i gather_runs16(const uint8_t* p) {
  const auto run = [p](int at) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at)); };
  __m512i v = _mm512_castsi128_si512(run(R0));
  v = _mm512_inserti32x4(v, run(R1), 1);
  v = _mm512_inserti32x4(v, run(R2), 2);
  return _mm512_inserti32x4(v, run(R3), 3);
}

// Where gather_halves finds its f16 values: two windows, the first at the lowest value and the second ending with
// the highest, of 32 bytes where those hold them all, else of 64 (Q8_0's scales lie 34 bytes apart).
template <int N>
struct HalfWindows {
  int bytes = 0, first = 0, second = 0;
  bool in_first[N] = {};
};
template <int N>
constexpr HalfWindows<N> plan_halves(const int (&at)[N]) {
  int low = at[0], high = at[0];
  for (const int a : at) {
    low = std::min(low, a);
    high = std::max(high, a);
  }
  for (const int bytes : {32, 64}) {
    HalfWindows<N> w{bytes, low, high + 2 - bytes, {}};
    bool all = true;
    for (int i = 0; i < N; ++i) {
      w.in_first[i] = at[i] + 2 <= w.first + bytes;
      all = all && (w.in_first[i] || at[i] >= w.second);
    }
    if (all) return w;
  }
  return {};
}
// The word permute index: `copies` words a value, word l taking value l / copies (with 4, words 16f + 4g..16f +
// 4g + 3 take value 4f + g), from the first window or (index 32 on) the second.
template <int N>
constexpr IndexVector<short, 32> half_index(const int (&at)[N], HalfWindows<N> w, int copies) {
  IndexVector<short, 32> idx{};
  for (int l = 0; l < copies * N; ++l) {
    const int i = l / copies;
    idx.v[l] = static_cast<short>(w.in_first[i] ? (at[i] - w.first) / 2 : 32 + (at[i] - w.second) / 2);
  }
  return idx;
}

// Words picked from the two windows of a plan: one two-source word permute.
template <int N>
inline __m512i window_words(const uint8_t* p, const HalfWindows<N>& plan,
                            const IndexVector<short, 32>& idx) {
  const auto window = [&](int at) {
    if (plan.bytes == 32) return _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + at)));
    return _mm512_loadu_si512(p + at);
  };
  return _mm512_permutex2var_epi16(window(plan.first), _mm512_load_si512(idx.v), window(plan.second));
}

// Four or eight f16 values at the given (even) byte offsets of a unit, converted and spread over 4 lanes each:
// value 4f + g in lanes 4g..4g+3 of out[f]. Values that two 32-byte windows hold come from those; four further
// apart (Q8_0's, 34 bytes) are broadcast one by one: 64-byte windows, which mostly straddle two lines, slowed Q8_0
// gemv at one activation row, from memory and in L2 (docs/performance.md, gemv drivers).
template <int... H>
inline void gather_halves(const uint8_t* p, __m512 (&out)[sizeof...(H) / 4]) {
  constexpr int kN = sizeof...(H);
  static constexpr int kAt[kN] = {H...};
  static constexpr HalfWindows<kN> kPlan = plan_halves(kAt);
  static_assert((kN == 4 || kN == 8) && ((H % 2 == 0) && ...));
  if constexpr (kPlan.bytes == 32) {
    static constexpr IndexVector<short, 32> kIdx = half_index(kAt, kPlan, 4);
    static_assert(kPlan.second >= kPlan.first, "the windows read only bytes between the values");
    const __m512i words = window_words(p, kPlan, kIdx);
    out[0] = _mm512_cvtph_ps(_mm512_castsi512_si256(words));
    if constexpr (kN == 8) out[1] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(words, 1));
  } else {
    static_assert(kN == 4, "eight values too far apart for two 32-byte windows");
    const auto spread = [p](int at) {
      int16_t half;
      std::memcpy(&half, p + at, sizeof half);
      return _mm256_set1_epi16(half);
    };
    __m256i words = _mm256_blend_epi32(spread(kAt[0]), spread(kAt[1]), 0x0c);  // dwords 2g, 2g + 1: value g
    words = _mm256_blend_epi32(words, spread(kAt[2]), 0x30);
    words = _mm256_blend_epi32(words, spread(kAt[3]), 0xc0);
    out[0] = _mm512_cvtph_ps(words);
  }
}

// The byte offsets of an f16 field (at kAt) in N consecutive blocks.
template <int kBlockBytes, int kAt, int N>
struct BlockFields {
  int at[N];
  constexpr BlockFields() : at{} {
    for (int i = 0; i < N; ++i) at[i] = kAt + i * kBlockBytes;
  }
};

// The f16 field at byte kAt of each of N (8 or 4) consecutive blocks, as words 0..N-1 in block order: one
// permute of two windows where those hold all N, else one for each half (Q8_0's, 34 bytes apart).
template <int kBlockBytes, int kAt, int N = 8>
inline __m128i block_halves(const uint8_t* p) {
  static constexpr BlockFields<kBlockBytes, kAt, N> kFields;
  static constexpr HalfWindows<N> kPlan = plan_halves(kFields.at);
  if constexpr (kPlan.bytes == 0) {
    static_assert(N == 8, "blocks too far apart for two windows");
    return _mm_unpacklo_epi64(block_halves<kBlockBytes, kAt, 4>(p),
                              block_halves<kBlockBytes, kAt + 4 * kBlockBytes, 4>(p));
  } else {
    static constexpr IndexVector<short, 32> kIdx = half_index(kFields.at, kPlan, 1);
    return _mm512_castsi512_si128(window_words(p, kPlan, kIdx));
  }
}

// Low and high nibbles of 16 code bytes per lane: values 0-15 and 16-31 of each block.
inline void split_nibbles(__m512i codes, __m512i& lo, __m512i& hi) {
  const __m512i low = _mm512_set1_epi8(0x0f);
  lo = _mm512_and_si512(codes, low);
  hi = _mm512_and_si512(_mm512_srli_epi16(codes, 4), low);
}

// Adds 16 to the codes whose fifth bit is set: bit j of block g's 32-bit qh (at byte kQh of the block) belongs to
// value j, that is byte j of lane g of lo for j < 16, byte j - 16 of lane g of hi for the rest.
template <int kBlockBytes, int kQh>
inline void add_fifth_bits(const uint8_t* p, __m512i& lo, __m512i& hi) {
  uint64_t lo_bits = 0, hi_bits = 0;
  for (int g = 0; g < kStepGroups; ++g) {
    uint32_t qh;
    std::memcpy(&qh, p + kQh + g * kBlockBytes, sizeof qh);
    lo_bits |= static_cast<uint64_t>(qh & 0xffff) << (16 * g);
    hi_bits |= static_cast<uint64_t>(qh >> 16) << (16 * g);
  }
  const __m512i sixteen = _mm512_set1_epi8(16);
  lo = _mm512_mask_add_epi8(lo, _cvtu64_mask64(lo_bits), lo, sixteen);
  hi = _mm512_mask_add_epi8(hi, _cvtu64_mask64(hi_bits), hi, sixteen);
}

// Q4_0, Q4_1, Q5_0, Q5_1, four blocks a unit: the levels are the codes, the _0 formats centre them with the bias
// (8 or 16), the _1 formats add their min.
template <class Block>
struct Legacy32 {
  static constexpr bool kHasMin = requires(const Block& b) { b.m; };
  static constexpr bool kHasFifthBit = requires(const Block& b) { b.qh; };
  static constexpr int kBlockValues = 32;
  static constexpr int kUnitValues = kStepValues;
  static constexpr int kBlockBytes = sizeof(Block);
  static constexpr int kUnitBytes = kStepGroups * kBlockBytes;
  static constexpr int kLevelBias = kHasMin ? 0 : kHasFifthBit ? 16 : 8;
  static constexpr int kBias[kStepGroups] = {kLevelBias, kLevelBias, kLevelBias, kLevelBias};
  static constexpr int kCodesAt = offsetof(Block, qs);
  static constexpr int kScaleAt = offsetof(Block, d);
  static constexpr int kMinAt = [] {
    if constexpr (kHasMin) return static_cast<int>(offsetof(Block, m));
    return -1;
  }();

  // Panels (NibbleGroupPanel): nibbles (codes, 0-15 a byte) to panel codes, level + 128.
  static __m512i panel_codes(__m512i nibbles) {
    return _mm512_add_epi8(nibbles, _mm512_set1_epi8(static_cast<char>(128 - kLevelBias)));
  }

  struct Unit {
    StepWeights w;

    explicit Unit(const uint8_t* p) {
      constexpr int q = kCodesAt, d = kScaleAt, b = kBlockBytes;
      split_nibbles(gather_runs16<q, q + b, q + 2 * b, q + 3 * b>(p), w.lo, w.hi);
      if constexpr (kHasFifthBit) add_fifth_bits<kBlockBytes, offsetof(Block, qh)>(p, w.lo, w.hi);
      if constexpr (kHasMin) {
        constexpr int m = kMinAt;
        __m512 factors[2];
        gather_halves<d, d + b, d + 2 * b, d + 3 * b, m, m + b, m + 2 * b, m + 3 * b>(p, factors);
        w.scale = factors[0];
        w.min = factors[1];
      } else {
        __m512 scales[1];
        gather_halves<d, d + b, d + 2 * b, d + 3 * b>(p, scales);
        w.scale = scales[0];
      }
    }
    template <int S>
    const StepWeights& step() const {
      return w;
    }
  };
};

}  // namespace
}  // namespace ggufmm::kernels::avx512
