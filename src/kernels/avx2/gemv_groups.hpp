// The AVX2 / AVX-VNNI counterpart of avx512/gemv_groups.hpp: formats whose weights decode, 64 values (two groups
// of 32) at a time, to unsigned bytes with one scale per group; the 32-value block formats (two blocks a step) and
// the ternary ones.
//
// The activations are laid out once per call so that each 128-bit lane holds one group (GroupStep): `lo` its
// values 0-15, `hi` its values 16-31. A format decodes a step's weights to the same layout, as codes
// c = level + bias >= 0 with a float scale (and min) per lane. Per activation row, the dot products leave a quarter
// of each group's sum in each of its 4 int32 lanes, and one conversion and one multiply-add scale them. The bias
// term, bias * qsum, seeds the integer sums; the min term of w = d * level + m formats is m * dx * qsum.
//
// A format supplies:
//
//   struct Format {
//     static constexpr int kUnitValues;   // values per unit: a multiple of 64
//     static constexpr int kUnitBytes;
//     static constexpr int kBlockValues;  // 32 (a row may end inside a unit), or kUnitValues
//     static constexpr int kBias;         // the codes' bias: the integer sums are kBias * qsum too large
//     static constexpr int kMaxCode;      // at most 64 where the plain AVX2 dot products add pairs in int16
//     (static constexpr bool kSignedLevels;  where present and true: signed levels, no bias; see dot_step)
//     static constexpr bool kHasMin;      // w = d * level + m: StepWeights::min is used
//     struct Unit {
//       explicit Unit(const uint8_t* p);  // p: the unit's first byte
//       template <int S> StepWeights step() const;  // step S of the unit, S < kUnitValues / 64
//     };
//   };
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/avx2/gemv.hpp"
#include "kernels/kernels.hpp"
#include "kernels/level.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

constexpr int kStepValues = 64;
constexpr int kStepGroups = kStepValues / kGroup;

// 64 activation values of one row, a group of 32 per 128-bit lane.
struct alignas(32) GroupStep {
  int8_t lo[32];    // values 0-15 of each group
  int8_t hi[32];    // values 16-31
  int32_t bias[8];  // lane 4g: -kBias * qsum of group g; the other lanes 0
  float scale[8];   // dx of group g in its 4 lanes
  float sum[8];     // dx * qsum / 4 of group g in its 4 lanes: the min term (formats with a min only)
};

struct StepWeights {
  __m256i lo, hi;
  __m256 scale;
  __m256 min = _mm256_setzero_ps();
};

// Every activation row of a call in GroupStep layout; a group past the end of the row is zero.
class GroupActs {
 public:
  GroupActs(const Activations& x, int bias, bool with_sums) : steps_((x.k + kStepValues - 1) / kStepValues) {
    data_ = new GroupStep[static_cast<size_t>(x.rows * steps_)];
    const int64_t groups = x.k / kGroup;
    for (int r = 0; r < x.rows; ++r) {
      for (int64_t t = 0; t < steps_; ++t) {
        GroupStep& s = data_[r * steps_ + t];
        const bool both = x.k - t * kStepValues >= kStepValues;
        const int8_t* q = x.q + r * x.k + t * kStepValues;
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
        const __m256i b = both ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + kGroup)) : _mm256_setzero_si256();
        _mm256_store_si256(reinterpret_cast<__m256i*>(s.lo), _mm256_permute2x128_si256(a, b, 0x20));
        _mm256_store_si256(reinterpret_cast<__m256i*>(s.hi), _mm256_permute2x128_si256(a, b, 0x31));
        const int64_t g = r * groups + t * kStepGroups;
        const int qsum[2] = {x.qsum[g], both ? x.qsum[g + 1] : 0};
        const float dx[2] = {x.d[g], both ? x.d[g + 1] : 0.0f};
        for (int l = 0; l < 8; ++l) {
          const int h = l / 4;
          s.bias[l] = l % 4 == 0 ? -bias * qsum[h] : 0;
          s.scale[l] = dx[h];
          s.sum[l] = with_sums ? dx[h] * static_cast<float>(qsum[h]) * 0.25f : 0.0f;
        }
      }
    }
  }
  ~GroupActs() { delete[] data_; }
  GroupActs(const GroupActs&) = delete;
  GroupActs& operator=(const GroupActs&) = delete;

  const GroupStep* row(int r) const { return data_ + r * steps_; }

 private:
  int64_t steps_;
  GroupStep* data_;
};

// Lane sums of codes times activations over both halves of a step, added to seed. Formats with kSignedLevels give
// signed levels instead of codes (Q8_0 on plain AVX2, whose codes would need 8 bits): their sign moves onto the
// activations, and as one pair of products of |level| <= 128 only just fits int16, each half is widened alone.
template <class F>
constexpr bool signed_levels() {
  if constexpr (requires { F::kSignedLevels; }) return F::kSignedLevels;
  return false;
}

template <class F>
inline __m256i dot_step(__m256i seed, const StepWeights& w, __m256i lo, __m256i hi) {
  if constexpr (signed_levels<F>()) {
    const __m256i ones = _mm256_set1_epi16(1);
    const auto half = [&](__m256i level, __m256i xq) {
      return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(level, level), _mm256_sign_epi8(xq, level)), ones);
    };
    return _mm256_add_epi32(seed, _mm256_add_epi32(half(w.lo, lo), half(w.hi, hi)));
  } else {
#if defined(__AVXVNNI__)
    constexpr bool kVnni = true;
#else
    constexpr bool kVnni = false;
#endif
    // Without VNNI a pair of products is at most 2 * 64 * 127 in magnitude, so the two halves' pairs add in int16
    // unsaturated.
    static_assert(kVnni || F::kMaxCode <= 64);
#if defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(seed, w.lo, lo), w.hi, hi);
#else
    const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(w.lo, lo), _mm256_maddubs_epi16(w.hi, hi));
    return _mm256_add_epi32(seed, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
#endif
  }
}

template <int W, int NR, bool kHasMin>
struct GroupAcc {
  __m256 level[W][NR];
  __m256 min[W][kHasMin ? NR : 1];

  GroupAcc() {
    for (auto& row : level) {
      for (auto& a : row) a = _mm256_setzero_ps();
    }
    for (auto& row : min) {
      for (auto& a : row) a = _mm256_setzero_ps();
    }
  }
  float total(int w, int r) const {
    if constexpr (kHasMin) return hsum(_mm256_add_ps(level[w][r], min[w][r]));
    return hsum(level[w][r]);
  }
};

// Step t of every activation row against one step of each of W weight rows.
template <class F, int W, int NR>
inline void dot_group_step(const StepWeights (&w)[W], const GroupStep* const (&x)[NR], int64_t t,
                           GroupAcc<W, NR, F::kHasMin>& acc) {
  for (int r = 0; r < NR; ++r) {
    const GroupStep& s = x[r][t];
    const __m256i bias = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.bias));
    const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.lo));
    const __m256i hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.hi));
    const __m256 scale = _mm256_load_ps(s.scale);
    for (int j = 0; j < W; ++j) {
      const __m256i isum = dot_step<F>(bias, w[j], lo, hi);
      acc.level[j][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(w[j].scale, scale), acc.level[j][r]);
      if constexpr (F::kHasMin) acc.min[j][r] = _mm256_fmadd_ps(w[j].min, _mm256_load_ps(s.sum), acc.min[j][r]);
    }
  }
}

// The units of W weight rows, the first at p, the others `stride` bytes apart.
template <class F, int W>
struct RowUnits {
  typename F::Unit u[W];

  template <int... J>
  RowUnits(const uint8_t* p, size_t stride, std::integer_sequence<int, J...>) : u{typename F::Unit(p + J * stride)...} {}
};

// Step S of a unit of W weight rows.
template <class F, int S, int W, int NR, int... J>
inline void unit_step(const RowUnits<F, W>& units, const GroupStep* const (&x)[NR], int64_t t,
                      GroupAcc<W, NR, F::kHasMin>& acc, std::integer_sequence<int, J...>) {
  const StepWeights steps[W] = {units.u[J].template step<S>()...};
  dot_group_step<F, W, NR>(steps, x, t + S, acc);
}

template <class F, int W, int NR, int... S>
inline void unit_steps(const RowUnits<F, W>& units, const GroupStep* const (&x)[NR], int64_t t,
                       GroupAcc<W, NR, F::kHasMin>& acc, std::integer_sequence<int, S...>) {
  (unit_step<F, S, W, NR>(units, x, t, acc, std::make_integer_sequence<int, W>{}), ...);
}

// A unit of each of W weight rows, the first at p, the others `stride` bytes apart; t is its first step.
template <class F, int W, int NR>
inline void group_unit(const uint8_t* p, size_t stride, const GroupStep* const (&x)[NR], int64_t t,
                       GroupAcc<W, NR, F::kHasMin>& acc) {
  const RowUnits<F, W> units(p, stride, std::make_integer_sequence<int, W>{});
  unit_steps<F, W, NR>(units, x, t, acc, std::make_integer_sequence<int, F::kUnitValues / kStepValues>{});
}

// Weight rows [o, o + W): units along the rows, then the row's last blocks (fewer than a unit) through zero-padded
// copies, whose missing blocks have zero scales and meet zero activations.
template <class F, int W, int NR>
inline void group_rows(const uint8_t* row, size_t row_bytes, const GroupStep* const (&x)[NR], int64_t k, int64_t o,
                       float* y, int64_t ldy, const float* residual) {
  constexpr int64_t kUnitSteps = F::kUnitValues / kStepValues;
  const int64_t units = k / F::kUnitValues;
  GroupAcc<W, NR, F::kHasMin> acc;
  for (int64_t u = 0; u < units; ++u) {
    prefetch_pass<F::kUnitBytes, W, weight_cache(NR)>(row, row_bytes, static_cast<size_t>(u) * F::kUnitBytes);
    group_unit<F, W, NR>(row + u * F::kUnitBytes, row_bytes, x, u * kUnitSteps, acc);
  }
  if constexpr (F::kBlockValues < F::kUnitValues) {
    constexpr int64_t kBlockBytes = F::kUnitBytes / (F::kUnitValues / F::kBlockValues);
    const int64_t tail_bytes = k % F::kUnitValues / F::kBlockValues * kBlockBytes;
    if (tail_bytes > 0) {
      alignas(32) uint8_t padded[W][F::kUnitBytes] = {};
      for (int j = 0; j < W; ++j) {
        std::memcpy(padded[j], row + j * row_bytes + units * F::kUnitBytes, static_cast<size_t>(tail_bytes));
      }
      group_unit<F, W, NR>(padded[0], F::kUnitBytes, x, units * kUnitSteps, acc);
    }
  }
  for (int j = 0; j < W; ++j) {
    for (int r = 0; r < NR; ++r) {
      const int64_t at = r * ldy + o + j;
      y[at] = acc.total(j, r) + (residual ? residual[at] : 0.0f);
    }
  }
}

template <class F, int NR>
void gemv_group_rows(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const GroupActs& acts, int64_t k,
                     float* y, int64_t ldy, const float* residual) {
  const GroupStep* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = acts.row(r);
  // Two weight rows at a time halve the activation loads per weight byte, where their accumulators fit registers.
  paired_rows<NR * (F::kHasMin ? 2 : 1) <= 4>(m0, m1, row_bytes, [&]<int W>(int64_t o) {
    group_rows<F, W, NR>(w + static_cast<size_t>(o) * row_bytes, row_bytes, x, k, o, y, ldy, residual);
  });
}

template <class F>
void gemv_groups(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                 int64_t ldy, const float* residual) {
  const GroupActs acts(x, F::kBias, F::kHasMin);
  with_rows(x.rows, [&]<int NR>() { gemv_group_rows<F, NR>(w, row_bytes, m0, m1, acts, x.k, y, ldy, residual); });
}

// ---- Decoding helpers for two 32-value blocks.

// Two runs of 16 bytes at byte offsets a and b of p: a in the low lane, b in the high one.
inline __m256i two_runs(const uint8_t* p, int a, int b) {
  return _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(p + b), reinterpret_cast<const __m128i*>(p + a));
}

inline uint16_t load_half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return h;
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
