// The AVX2 / AVX-VNNI group driver of gemv, gemv_groups<F>, the counterpart of avx512/groups.hpp: formats whose weights
// decode, 64 values (two groups of 32) at a time, to unsigned bytes with one scale per group; the 32-value block
// formats (two blocks a step) and the ternary ones.
//
// A format decodes a step of weights as codes c = level + bias >= 0, one group per 128-bit lane (StepWeights), with
// a float scale (and min) per lane. The activations are laid out once per call to match, in one of two layouts
// chosen by the number of activation rows, as at AVX-512:
//   - one row: the lane layout, the steps as decoded (per row and step, the dot products leave a quarter of each
//     group's sum in each of its 4 int32 lanes, and one conversion and one multiply-add scale them);
//   - two rows or more: the wide layout, four steps transposed to one group per dword lane (one conversion and one
//     multiply-add per row and 8 groups, plus the transposes once per weight row).
// The bias term, bias * qsum, seeds the integer sums; the min term of w = d * level + m formats is m * dx * qsum.
//
// A format supplies:
//
//   struct Format {
//     static constexpr int kUnitValues;   // values per unit: a multiple of 64
//     static constexpr int kUnitBytes;
//     static constexpr int kBlockValues;  // 32 (a row may end inside a unit), or kUnitValues
//     static constexpr int kBias;         // the codes' bias: the integer sums are kBias * qsum too large
//     static constexpr int kMaxCode;      // at most 64 where the plain AVX2 dot products add pairs in int16
//     (static constexpr bool kSignedLevels;  where present and true: signed levels, no bias; see dot_pair)
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
#include <type_traits>
#include <utility>

#include "kernels/avx2/dot.hpp"
#include "kernels/avx2/rows.hpp"
#include "kernels/kernels.hpp"
#include "kernels/level.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"
#include "kernels/x86/group_rows.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

constexpr int kStepValues = 64;
constexpr int kStepGroups = kStepValues / kGroup;
// Four steps: the wide layout's unit, 256 values, 8 groups.
constexpr int kChunkSteps = 4;
constexpr int kChunkValues = kChunkSteps * kStepValues;
constexpr int kChunkGroups = kChunkValues / kGroup;

// One step of weights: a group per 128-bit lane, `lo` its values 0-15 and `hi` its values 16-31, and per lane the
// float factor of its group (and the min).
struct StepWeights {
  __m256i lo, hi;
  __m256 scale;
  __m256 min = _mm256_setzero_ps();
};

// Lane sums of codes a times activations xa and codes b times activations xb, added to seed. Formats with
// kSignedLevels give signed levels instead of codes (Q8_0 on plain AVX2, whose codes would need 8 bits): their sign
// moves onto the activations, and as one pair of products of |level| <= 128 only just fits int16, each register
// is widened alone.
template <class F>
constexpr bool signed_levels() {
  if constexpr (requires { F::kSignedLevels; }) return F::kSignedLevels;
  return false;
}

template <class F>
[[gnu::always_inline]] inline __m256i dot_pair(__m256i seed, __m256i a, __m256i xa, __m256i b, __m256i xb) {
  if constexpr (signed_levels<F>()) {
    const __m256i ones = _mm256_set1_epi16(1);
    const auto one = [&](__m256i level, __m256i xq) {
      return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(level, level), _mm256_sign_epi8(xq, level)), ones);
    };
    return _mm256_add_epi32(seed, _mm256_add_epi32(one(a, xa), one(b, xb)));
  } else {
    // Without VNNI a pair of products is at most 2 * 64 * 127 in magnitude, so the two registers' pairs add in
    // int16 unsaturated.
    static_assert(kVnni || F::kMaxCode <= 64);
#if defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(seed, a, xa), b, xb);
#else
    const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(a, xa), _mm256_maddubs_epi16(b, xb));
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

// A layout's piece of one activation row (one step or four) as both take it in: per step the values of each
// group in lanes as the weights' `lo` and `hi`, and per group (in order) the code sum and the scale.
struct ChunkInput {
  __m256i lo[kChunkSteps], hi[kChunkSteps];
  int qsum[kChunkGroups];
  float scale[kChunkGroups];
};

// What the shared row loop (x86/group_rows.hpp) takes from both layouts at this level.
struct LevelLayout {
  static constexpr int kStepValues = GGUFMM_LEVEL::kStepValues;
  template <int W, int NR, bool kHasMin>
  using Acc = GroupAcc<W, NR, kHasMin>;
};

// ---- The lane layout: the steps as decoded. Per activation row the dot products leave a quarter of each group's
// sum in each of its 4 int32 lanes, and one conversion and one multiply-add scale them. For one activation row,
// where decoding dominates.

struct alignas(32) LaneStep {
  int8_t lo[32];    // values 0-15 of each group
  int8_t hi[32];    // values 16-31
  int32_t bias[8];  // lane 4g: -kBias * qsum of group g; the other lanes 0
  float scale[8];   // dx of group g in its 4 lanes
  float sum[8];     // dx * qsum / 4 of group g in its 4 lanes: the min term (formats with a min only)
};

struct LaneLayout : LevelLayout {
  using Chunk = LaneStep;
  static constexpr int kActSteps = 1;  // steps per Chunk
  template <class F>
  static constexpr int kSteps = F::kUnitValues / kStepValues;  // steps per piece of weights: a unit

  static void store(const ChunkInput& in, int bias, bool with_sums, Chunk& out) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.lo), in.lo[0]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.hi), in.hi[0]);
    for (int l = 0; l < 8; ++l) {
      const int g = l / 4;
      out.bias[l] = l % 4 == 0 ? -bias * in.qsum[g] : 0;
      out.scale[l] = in.scale[g];
      out.sum[l] = with_sums ? in.scale[g] * static_cast<float>(in.qsum[g]) * 0.25f : 0.0f;
    }
  }

  // A unit of each of W weight rows, the first at p, the others `stride` bytes apart, step by step; t is the
  // unit's index.
  template <class F, int W, int NR>
  [[gnu::always_inline]] static void dot(const uint8_t* p, size_t stride, const Chunk* const (&x)[NR], int64_t t,
                                         GroupAcc<W, NR, F::kHasMin>& acc) {
    dot_steps<F, W, NR>(p, stride, x, t, acc, std::make_integer_sequence<int, kSteps<F>>{});
  }

  template <class F, int W, int NR, int... S>
  [[gnu::always_inline]] static void dot_steps(const uint8_t* p, size_t stride, const Chunk* const (&x)[NR], int64_t t,
                                               GroupAcc<W, NR, F::kHasMin>& acc, std::integer_sequence<int, S...>) {
    (dot_step<F, S, W, NR>(p, stride, x, t, acc), ...);
  }

  template <class F, int S, int W, int NR>
  [[gnu::always_inline]] static void dot_step(const uint8_t* p, size_t stride, const Chunk* const (&x)[NR],
                                              int64_t t, GroupAcc<W, NR, F::kHasMin>& acc) {
    StepWeights w[W];
    for (int j = 0; j < W; ++j) w[j] = step_at<F, kStepValues, S>(p + j * stride);
    for (int r = 0; r < NR; ++r) {
      const LaneStep& s = x[r][t * kSteps<F> + S];
      const __m256i bias = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.bias));
      const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.lo));
      const __m256i hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.hi));
      const __m256 scale = _mm256_load_ps(s.scale);
      for (int j = 0; j < W; ++j) {
        const __m256i isum = dot_pair<F>(bias, w[j].lo, lo, w[j].hi, hi);
        acc.level[j][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(w[j].scale, scale), acc.level[j][r]);
        if constexpr (F::kHasMin) acc.min[j][r] = _mm256_fmadd_ps(w[j].min, _mm256_load_ps(s.sum), acc.min[j][r]);
      }
    }
  }
};

// ---- The wide layout: in-lane 4x4 dword transposes of the four steps leave eight registers that hold one group
// per dword lane, register i values 4i..4i+3 of every group. Per activation row, the dot products then leave each
// group's whole sum in its lane, and one conversion and one multiply-add scale all 8 groups, where the lane
// layout took four. The transposes are paid once per weight row, for all the activation rows.

// Lane l of a wide register holds group 2s + q of the chunk (lane q of step s), where l = 4q + s: the order the
// in-lane transposes leave.
constexpr int wide_group(int lane) { return kStepGroups * (lane % kChunkSteps) + lane / kChunkSteps; }
constexpr int kWideCodes = kGroup / 4;  // registers of codes: 4 values of each group in each

// Lane q (of 2) of out[d] holds dword d of lane q of in[0], in[1], in[2], in[3].
inline void transpose_lanes(const __m256i (&in)[4], __m256i* out) {
  const __m256i t0 = _mm256_unpacklo_epi32(in[0], in[1]), t1 = _mm256_unpackhi_epi32(in[0], in[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(in[2], in[3]), t3 = _mm256_unpackhi_epi32(in[2], in[3]);
  out[0] = _mm256_unpacklo_epi64(t0, t2);
  out[1] = _mm256_unpackhi_epi64(t0, t2);
  out[2] = _mm256_unpacklo_epi64(t1, t3);
  out[3] = _mm256_unpackhi_epi64(t1, t3);
}

// Lane 4q + s of the result from step s's factor in lane group q (its four lanes are equal).
inline __m256 wide_factors(__m256 s0, __m256 s1, __m256 s2, __m256 s3) {
  return _mm256_blend_ps(_mm256_blend_ps(_mm256_blend_ps(s0, s1, 0x22), s2, 0x44), s3, 0x88);
}

struct WideLayout : LevelLayout {
  static constexpr int kActSteps = kChunkSteps;
  template <class F>
  static constexpr int kSteps = kChunkSteps;

  struct alignas(32) Chunk {
    int8_t q[kWideCodes][32];
    int32_t bias[kChunkGroups];  // -kBias * qsum of the lane's group
    float scale[kChunkGroups];   // dx of the lane's group
    float sum[kChunkGroups];     // dx * qsum: the min term (formats with a min only)
  };

  // A chunk of weights.
  struct Weights {
    __m256i codes[kWideCodes];
    __m256 scale;
    __m256 min;
  };

  static void store(const ChunkInput& in, int bias, bool with_sums, Chunk& out) {
    __m256i codes[kWideCodes];
    transpose_lanes(in.lo, codes);
    transpose_lanes(in.hi, codes + 4);
    for (int i = 0; i < kWideCodes; ++i) _mm256_store_si256(reinterpret_cast<__m256i*>(out.q[i]), codes[i]);
    for (int l = 0; l < kChunkGroups; ++l) {
      const int g = wide_group(l);
      out.bias[l] = -bias * in.qsum[g];
      out.scale[l] = in.scale[g];
      out.sum[l] = with_sums ? in.scale[g] * static_cast<float>(in.qsum[g]) : 0.0f;
    }
  }

  [[gnu::always_inline]] static Weights widen(const StepWeights (&s)[kChunkSteps]) {
    Weights w;
    transpose_lanes({s[0].lo, s[1].lo, s[2].lo, s[3].lo}, w.codes);
    transpose_lanes({s[0].hi, s[1].hi, s[2].hi, s[3].hi}, w.codes + 4);
    w.scale = wide_factors(s[0].scale, s[1].scale, s[2].scale, s[3].scale);
    w.min = wide_factors(s[0].min, s[1].min, s[2].min, s[3].min);
    return w;
  }

  // A chunk of each of W weight rows, the first at p, the others `stride` bytes apart; t is the chunk's index.
  template <class F, int W, int NR>
  [[gnu::always_inline]] static void dot(const uint8_t* p, size_t stride, const Chunk* const (&x)[NR], int64_t t,
                                         GroupAcc<W, NR, F::kHasMin>& acc) {
    static_assert(kChunkValues % F::kUnitValues == 0);
    Weights w[W];
    for (int j = 0; j < W; ++j) {
      const uint8_t* q = p + j * stride;
      w[j] = widen({step_at<F, kStepValues, 0>(q), step_at<F, kStepValues, 1>(q), step_at<F, kStepValues, 2>(q),
                    step_at<F, kStepValues, 3>(q)});
    }
    for (int r = 0; r < NR; ++r) {
      const Chunk& a = x[r][t];
      const auto xq = [&](int i) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(a.q[i])); };
      __m256i isum[W];
      for (int j = 0; j < W; ++j) isum[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bias));
      for (int i = 0; i < kWideCodes; i += 2) {
        for (int j = 0; j < W; ++j) isum[j] = dot_pair<F>(isum[j], w[j].codes[i], xq(i), w[j].codes[i + 1], xq(i + 1));
      }
      const __m256 scale = _mm256_load_ps(a.scale);
      for (int j = 0; j < W; ++j) {
        acc.level[j][r] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[j]), _mm256_mul_ps(w[j].scale, scale), acc.level[j][r]);
        if constexpr (F::kHasMin) acc.min[j][r] = _mm256_fmadd_ps(w[j].min, _mm256_load_ps(a.sum), acc.min[j][r]);
      }
    }
  }
};

// ---- The driver. Its pieces that pass registers (steps, chunks of weights) are always inlined, as in the
// AVX-512 driver.

// Every activation row of a call in a layout's chunks; groups past the end of the row are zero.
template <class Layout>
class GroupActs {
 public:
  using Chunk = typename Layout::Chunk;

  static constexpr int kValues = Layout::kActSteps * kStepValues;
  static constexpr int kGroups = kValues / kGroup;

  GroupActs(const Activations& x, int bias, bool with_sums) : chunks_((x.k + kValues - 1) / kValues) {
    data_ = new Chunk[static_cast<size_t>(x.rows * chunks_)];
    const int64_t groups = x.k / kGroup;
    for (int r = 0; r < x.rows; ++r) {
      for (int64_t t = 0; t < chunks_; ++t) {
        ChunkInput in;
        for (int s = 0; s < Layout::kActSteps; ++s) {
          const int64_t at = t * kValues + s * kStepValues;
          const int8_t* q = x.q + r * x.k + at;
          const auto group = [&](int64_t from) {
            return from < x.k ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + from - at))
                              : _mm256_setzero_si256();
          };
          const __m256i a = group(at), b = group(at + kGroup);
          in.lo[s] = _mm256_permute2x128_si256(a, b, 0x20);
          in.hi[s] = _mm256_permute2x128_si256(a, b, 0x31);
        }
        for (int g = 0; g < kGroups; ++g) {
          const int64_t at = t * kGroups + g;
          in.qsum[g] = at < groups ? x.qsum[r * groups + at] : 0;
          in.scale[g] = at < groups ? x.d[r * groups + at] : 0.0f;
        }
        Layout::store(in, bias, with_sums, data_[r * chunks_ + t]);
      }
    }
  }
  ~GroupActs() { delete[] data_; }
  GroupActs(const GroupActs&) = delete;
  GroupActs& operator=(const GroupActs&) = delete;

  const Chunk* row(int r) const { return data_ + r * chunks_; }

 private:
  int64_t chunks_;
  Chunk* data_;
};

template <class F, class Layout, int NR>
void gemv_group_rows(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const GroupActs<Layout>& acts,
                     int64_t k, float* y, int64_t ldy, const float* residual) {
  using Chunk = typename Layout::Chunk;
  const Chunk* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = acts.row(r);
  // Two weight rows at a time halve the activation loads per weight byte, where their accumulators (and for the
  // wide layout, codes) fit the 16 registers.
  constexpr bool kCanPair = NR * (F::kHasMin ? 2 : 1) <= (std::is_same_v<Layout, WideLayout> ? 1 : 4);
  // Unlike the AVX-512 driver this one does not cut rows into slices for L1: its dot products cost more per
  // activation byte, and sliced (in blocks of rows streaming into L2) it ran slower than unsliced
  // (docs/performance.md, gemv drivers).
  constexpr int kBytes = kPieceBytes<F, Layout>;
  const int64_t pieces = (k + kPieceValues<F, Layout> - 1) / kPieceValues<F, Layout>;
  const bool follows = runtime::prefetcher_follows_short_rows();
  paired_rows<kCanPair>(m0, m1, row_bytes, [&]<int W>(int64_t o) {
    RowsPrefetch<kBytes, kPieceValues<F, Layout>, NR, W> ahead(w, row_bytes, o, pieces, follows);
    group_rows<F, Layout, W, NR>(w, row_bytes, x, k, 0, pieces, o, y, ldy, residual, [&] { ahead.step(); });
  });
}

// One activation row takes the lane layout; more take the wide one.
template <class F>
void gemv_groups(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                 int64_t ldy, const float* residual) {
  if (x.rows == 1) {
    const GroupActs<LaneLayout> acts(x, F::kBias, F::kHasMin);
    gemv_group_rows<F, LaneLayout, 1>(w, row_bytes, m0, m1, acts, x.k, y, ldy, residual);
    return;
  }
  const GroupActs<WideLayout> acts(x, F::kBias, F::kHasMin);
  with_rows(x.rows, [&]<int NR>() {
    gemv_group_rows<F, WideLayout, NR>(w, row_bytes, m0, m1, acts, x.k, y, ldy, residual);
  });
}

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
