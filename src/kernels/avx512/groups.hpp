// The AVX-512 group driver of gemv, gemv_groups<F>: formats whose weights decode, 128 values (four groups of 32) at a
// time, to unsigned bytes with one scale per group: the 32-value block formats (four blocks a step) and the ternary
// ones.
//
// A format decodes a step of weights as codes c = scale_factor * (level + bias) >= 0, one group per 128-bit lane
// (StepWeights), with a float scale (and min) per lane. The activations are laid out once per call to match, in
// one of two layouts chosen by the number of activation rows:
//   - one row: the lane layout, the steps as decoded (20 instructions per row and 512 values);
//   - two rows or more: the wide layout, four steps transposed to one group per dword lane (11 instructions per
//     row and 512 values, plus 19 per weight row for the transposes).
// The bias term, bias * qsum, seeds the integer sums; the min term of w = d * level + m formats is m * dx * qsum,
// from the quantized activations like the level term (so the product is that of the exact weights with the
// quantized activations, as in every kernel: see kernels.hpp, Activations).
//
// A format supplies:
//
//   struct Format {
//     static constexpr int kUnitValues;    // values per unit: 128 or 256
//     static constexpr int kUnitBytes;
//     static constexpr int kBlockValues;   // 32 (a row may end inside a unit), or kUnitValues
//     static constexpr int kBias[4];       // per lane g of a step: the integer sum of lane g is kBias[g] * qsum
//                                          // too large (the codes' bias, times their factor)
//     static constexpr bool kHasMin;       // w = d * level + m: StepWeights::min is used
//     struct Unit {
//       explicit Unit(const uint8_t* p);   // p: the unit's first byte
//       template <int S> StepWeights step() const;  // step S of the unit, S < kUnitValues / 128
//     };
//   };
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/avx512/loads.hpp"
#include "kernels/kernels.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"
#include "kernels/x86/common.hpp"
#include "kernels/x86/group_rows.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

constexpr int kStepValues = 128;
constexpr int kStepGroups = kStepValues / kGroup;
// Four steps: the wide layout's unit, 512 values, 16 groups.
constexpr int kChunkSteps = 4;
constexpr int kChunkValues = kChunkSteps * kStepValues;
constexpr int kChunkGroups = kChunkValues / kGroup;

// One step of weights: a group per 128-bit lane, `lo` its values 0-15 and `hi` its values 16-31, and per lane the
// float factor of its group (and the min).
struct StepWeights {
  __m512i lo, hi;
  __m512 scale;
  __m512 min = _mm512_setzero_ps();
};

// The sum of 16 lanes. (_mm512_reduce_add_ps, the unmasked shuffles and even _mm512_castps512_ps128 start from
// GCC 12's self-initialized "undefined" registers, which -Werror=uninitialized can reject; zero-masked forms do not.)
inline float lane_sum(__m512 v) {
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xffff, v, v, 0x4e));
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xffff, v, v, 0xb1));
  __m128 s = _mm512_maskz_extractf32x4_ps(0xf, v, 0);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// Accumulators of W weight rows (outputs) against NR activation rows.
template <int W, int NR, bool kHasMin>
struct GroupAcc {
  __m512 level[W][NR];
  __m512 min[W][kHasMin ? NR : 1];  // a separate chain, so the two multiply-adds of a step do not wait on each other

  GroupAcc() {
    for (auto& row : level) {
      for (auto& a : row) a = _mm512_setzero_ps();
    }
    for (auto& row : min) {
      for (auto& a : row) a = _mm512_setzero_ps();
    }
  }
  // Each output row summed on its own, unlike the other drivers' 16 at a time (row_sums.hpp): those gained in L2
  // but slowed Q8_0 at 3 and 4 activation rows from memory (docs/performance.md, gemv drivers).
  float total(int w, int r) const {
    if constexpr (kHasMin) return lane_sum(_mm512_add_ps(level[w][r], min[w][r]));
    return lane_sum(level[w][r]);
  }
};

// A layout's piece of one activation row (one step or four) as both take it in: per step the values of each
// group in lanes as the weights' `lo` and `hi`, and per group (in order, as int32 and float) the code sum and the
// scale.
struct ChunkInput {
  __m512i lo[kChunkSteps], hi[kChunkSteps];
  __m512i qsums;
  __m512 scales;
};

// What the shared row loop (x86/group_rows.hpp) takes from both layouts at this level.
struct LevelLayout {
  static constexpr int kStepValues = avx512::kStepValues;
  template <int W, int NR, bool kHasMin>
  using Acc = GroupAcc<W, NR, kHasMin>;
};

// ---- The lane layout: the steps as decoded. Per activation row, two u8 x s8 dot products leave a quarter of each
// group's sum in each of its 4 int32 lanes, and one conversion and one multiply-add scale them: 20 instructions
// per 512 values, and no transposes. For one activation row, where decoding dominates.

struct alignas(64) LaneStep {
  int8_t lo[64];     // values 0-15 of each group
  int8_t hi[64];     // values 16-31
  int32_t bias[16];  // lane 4g: -kBias[g] * qsum of group g; the other lanes 0
  float scale[16];   // dx of group g in its 4 lanes
  float sum[16];     // dx * qsum / 4 of group g in its 4 lanes: the min term (formats with a min only)
};

struct LaneLayout : LevelLayout {
  using Chunk = LaneStep;
  static constexpr int kActSteps = 1;  // steps per Chunk
  template <class F>
  static constexpr int kSteps = F::kUnitValues / kStepValues;  // steps per piece of weights: a unit

  static void store(const ChunkInput& in, const int (&bias)[kStepGroups], bool with_sums, Chunk& out) {
    const __m512i negative_bias = _mm512_set_epi32(0, 0, 0, -bias[3], 0, 0, 0, -bias[2], 0, 0, 0, -bias[1], 0, 0, 0,
                                                   -bias[0]);
    _mm512_store_si512(out.lo, in.lo[0]);
    _mm512_store_si512(out.hi, in.hi[0]);
    // Lane l takes group l / 4.
    const __m512i spread = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    const __m512i qsums = _mm512_permutexvar_epi32(spread, in.qsums);
    _mm512_store_si512(out.bias, _mm512_mullo_epi32(qsums, negative_bias));
    const __m512 scale = _mm512_permutexvar_ps(spread, in.scales);
    _mm512_store_ps(out.scale, scale);
    if (with_sums) {
      _mm512_store_ps(out.sum, _mm512_mul_ps(_mm512_mul_ps(scale, _mm512_cvtepi32_ps(qsums)), _mm512_set1_ps(0.25f)));
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
      const LaneStep& a = x[r][t * kSteps<F> + S];
      const __m512i bias = _mm512_load_si512(a.bias), lo = _mm512_load_si512(a.lo), hi = _mm512_load_si512(a.hi);
      const __m512 scale = _mm512_load_ps(a.scale);
      for (int j = 0; j < W; ++j) {
        const __m512i isum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(bias, w[j].lo, lo), w[j].hi, hi);
        acc.level[j][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(w[j].scale, scale), acc.level[j][r]);
        if constexpr (F::kHasMin) acc.min[j][r] = _mm512_fmadd_ps(w[j].min, _mm512_load_ps(a.sum), acc.min[j][r]);
      }
    }
  }
};

// ---- The wide layout: in-lane 4x4 dword transposes of the four steps leave eight registers that hold one group
// per dword lane, register i values 4i..4i+3 of every group. Per activation row, eight dot products then leave
// each group's whole sum in its lane, and one conversion and one multiply-add scale all 16 groups: 11
// instructions per 512 values. The transposes (19 instructions) are paid once per weight row, for all the
// activation rows: from two rows on, this layout does less.

// Lane l of a wide register holds group 4s + q of the chunk (lane q of step s), where l = 4q + s: the order the
// in-lane transposes leave.
constexpr int wide_group(int lane) { return kStepGroups * (lane % kChunkSteps) + lane / kChunkSteps; }
constexpr int kWideCodes = kGroup / 4;  // registers of codes: 4 values of each group in each

// Lane q (of 4) of out[d] holds dword d of lane q of in[0], in[1], in[2], in[3].
inline void transpose_lanes(const __m512i (&in)[4], __m512i* out) {
  const __m512i t0 = _mm512_unpacklo_epi32(in[0], in[1]), t1 = _mm512_unpackhi_epi32(in[0], in[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(in[2], in[3]), t3 = _mm512_unpackhi_epi32(in[2], in[3]);
  out[0] = _mm512_unpacklo_epi64(t0, t2);
  out[1] = _mm512_unpackhi_epi64(t0, t2);
  out[2] = _mm512_unpacklo_epi64(t1, t3);
  out[3] = _mm512_unpackhi_epi64(t1, t3);
}

// Lane 4q + s of the result from step s's factor in lane group q (its four lanes are equal).
inline __m512 wide_factors(__m512 s0, __m512 s1, __m512 s2, __m512 s3) {
  __m512 v = _mm512_mask_blend_ps(0x2222, s0, s1);
  v = _mm512_mask_blend_ps(0x4444, v, s2);
  return _mm512_mask_blend_ps(0x8888, v, s3);
}

inline constexpr IndexVector<int, 16> kWideGroupIndex = [] {
  IndexVector<int, 16> idx{};
  for (int l = 0; l < 16; ++l) idx.v[l] = wide_group(l);
  return idx;
}();

struct WideLayout : LevelLayout {
  static constexpr int kActSteps = kChunkSteps;
  template <class F>
  static constexpr int kSteps = kChunkSteps;

  struct alignas(64) Chunk {
    int8_t q[kWideCodes][64];
    int32_t bias[kChunkGroups];  // -kBias[q] * qsum of the lane's group
    float scale[kChunkGroups];   // dx of the lane's group
    float sum[kChunkGroups];     // dx * qsum: the min term (formats with a min only)
  };

  // A chunk of weights.
  struct Weights {
    __m512i codes[kWideCodes];
    __m512 scale;
    __m512 min;
  };

  static void store(const ChunkInput& in, const int (&bias)[kStepGroups], bool with_sums, Chunk& out) {
    __m512i codes[kWideCodes];
    transpose_lanes(in.lo, codes);
    transpose_lanes(in.hi, codes + 4);
    for (int i = 0; i < kWideCodes; ++i) _mm512_store_si512(out.q[i], codes[i]);
    const __m512i order = _mm512_load_si512(kWideGroupIndex.v);
    const __m512i negative_bias = _mm512_set_epi32(-bias[3], -bias[3], -bias[3], -bias[3], -bias[2], -bias[2],
                                                   -bias[2], -bias[2], -bias[1], -bias[1], -bias[1], -bias[1],
                                                   -bias[0], -bias[0], -bias[0], -bias[0]);
    const __m512i qsums = _mm512_permutexvar_epi32(order, in.qsums);
    _mm512_store_si512(out.bias, _mm512_mullo_epi32(qsums, negative_bias));
    const __m512 scale = _mm512_permutexvar_ps(order, in.scales);
    _mm512_store_ps(out.scale, scale);
    if (with_sums) _mm512_store_ps(out.sum, _mm512_mul_ps(scale, _mm512_cvtepi32_ps(qsums)));
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
    constexpr bool kHasMin = F::kHasMin;
    Weights w[W];
    for (int j = 0; j < W; ++j) {
      const uint8_t* q = p + j * stride;
      w[j] = widen({step_at<F, kStepValues, 0>(q), step_at<F, kStepValues, 1>(q), step_at<F, kStepValues, 2>(q),
                    step_at<F, kStepValues, 3>(q)});
    }
    for (int r = 0; r < NR; ++r) {
      const Chunk& a = x[r][t];
      __m512i isum[W];
      for (int j = 0; j < W; ++j) isum[j] = _mm512_load_si512(a.bias);
      for (int i = 0; i < kWideCodes; ++i) {
        const __m512i q = _mm512_load_si512(a.q[i]);
        for (int j = 0; j < W; ++j) isum[j] = _mm512_dpbusd_epi32(isum[j], w[j].codes[i], q);
      }
      const __m512 scale = _mm512_load_ps(a.scale);
      for (int j = 0; j < W; ++j) {
        acc.level[j][r] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[j]), _mm512_mul_ps(w[j].scale, scale), acc.level[j][r]);
        if constexpr (kHasMin) acc.min[j][r] = _mm512_fmadd_ps(w[j].min, _mm512_load_ps(a.sum), acc.min[j][r]);
      }
    }
  }
};

// ---- The driver. Its pieces that pass registers (steps, chunks of weights) are always inlined: GCC left some as
// calls, which moved the registers through memory.

// Every activation row of a call in a layout's chunks; groups past the end of the row are zero.
template <class Layout>
class GroupActs {
 public:
  using Chunk = typename Layout::Chunk;

  static constexpr int kValues = Layout::kActSteps * kStepValues;
  static constexpr int kGroups = kValues / kGroup;

  GroupActs(const Activations& x, const int (&bias)[kStepGroups], bool with_sums)
      : chunks_((x.k + kValues - 1) / kValues) {
    data_ = new Chunk[static_cast<size_t>(x.rows * chunks_)];
    const int64_t groups = x.k / kGroup;
    for (int r = 0; r < x.rows; ++r) {
      for (int64_t t = 0; t < chunks_; ++t) {
        const int64_t left = x.k - t * kValues;  // a positive multiple of 32
        const int8_t* q = x.q + r * x.k + t * kValues;
        ChunkInput in;
        for (int s = 0; s < Layout::kActSteps; ++s) {
          const int64_t at = s * kStepValues;
          const __m512i a = _mm512_maskz_loadu_epi8(prefix_mask(left - at), q + at);
          const __m512i b = _mm512_maskz_loadu_epi8(prefix_mask(left - at - 64), q + at + 64);
          in.lo[s] = _mm512_shuffle_i64x2(a, b, 0x88);  // lanes 0, 2 of a, then of b
          in.hi[s] = _mm512_shuffle_i64x2(a, b, 0xdd);  // lanes 1, 3 of a, then of b
        }
        const int64_t g = r * groups + t * kGroups;
        const auto present = static_cast<__mmask16>((1u << std::min<int64_t>(left / kGroup, kGroups)) - 1);
        in.qsums = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(present, x.qsum + g));
        in.scales = _mm512_maskz_loadu_ps(present, x.d + g);
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

// A cursor that prefetches into L2 in memory order, from `at` on: as many pieces per step as rows are read.
template <int kBytes>
struct StreamPrefetch {
  uintptr_t at;
  template <int W>
  void step() {
    prefetch_lines<W * kBytes, Cache::L2>(at);
    at += W * kBytes;
  }
};

template <class F, class Layout, int NR>
void gemv_group_rows(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const GroupActs<Layout>& acts,
                     int64_t k, float* y, int64_t ldy, const float* residual) {
  using Chunk = typename Layout::Chunk;
  const Chunk* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = acts.row(r);
  // Two weight rows at a time halve the activation loads per weight byte. The wide layout's codes take 18
  // registers for two rows, so it pairs only with two activation rows.
  constexpr bool kCanPair = NR * (F::kHasMin ? 2 : 1) <= (std::is_same_v<Layout, WideLayout> ? 2 : 8);
  // Every weight row reads all activation rows: from two rows on, where those pass 24 KiB, rows are taken in
  // slices whose activations stay in L1 beside the weights streaming through it. (One row is read as fast as
  // its weights stream.)
  constexpr int64_t kActBytes = sizeof(Chunk) * Layout::template kSteps<F> / Layout::kActSteps;  // per piece
  constexpr int64_t kMaxSlice = NR == 1 ? INT64_MAX : (24 << 10) / (kActBytes * NR);
  constexpr int kBytes = kPieceBytes<F, Layout>;
  const int64_t pieces = (k + kPieceValues<F, Layout> - 1) / kPieceValues<F, Layout>;
  if (pieces <= kMaxSlice) {
    const bool follows = runtime::prefetcher_follows_short_rows();
    paired_rows<kCanPair>(m0, m1, row_bytes, [&]<int W>(int64_t o) {
      RowsPrefetch<kBytes, kPieceValues<F, Layout>, NR, W> ahead(w, row_bytes, o, pieces, follows);
      group_rows<F, Layout, W, NR>(w, row_bytes, x, k, 0, pieces, o, y, ldy, residual, [&] { ahead.step(); });
    });
    return;
  }
  // Sliced, a row is read in pieces far apart: blocks of rows (about 128 KB) are taken slice by slice from L2,
  // while the next block streams into L2 in memory order: faster from memory than slicing whole rows, or not
  // slicing (docs/performance.md, gemv drivers).
  const int64_t slices = (pieces + kMaxSlice - 1) / kMaxSlice;
  const int64_t per_slice = (pieces + slices - 1) / slices;
  const int64_t block_rows = std::max<int64_t>(1, (128 << 10) / static_cast<int64_t>(row_bytes));
  for (int64_t b0 = m0; b0 < m1; b0 += block_rows) {
    const int64_t b1 = std::min(m1, b0 + block_rows);
    StreamPrefetch<kBytes> ahead{reinterpret_cast<uintptr_t>(w + static_cast<size_t>(b1) * row_bytes)};
    for (int64_t t0 = 0; t0 < pieces; t0 += per_slice) {
      const int64_t t1 = std::min(pieces, t0 + per_slice);
      paired_rows<kCanPair>(b0, b1, row_bytes, [&]<int W>(int64_t o) {
        group_rows<F, Layout, W, NR>(w, row_bytes, x, k, t0, t1, o, y, ldy, residual,
                                     [&] { ahead.template step<W>(); });
      });
    }
  }
}

// One activation row takes the lane layout, more take the wide one: at one row the lane layout streams Q8_0
// faster (its scales broadcast by gather_halves), and the other formats gain little or lose in the wide one.
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
}  // namespace ggufmm::kernels::avx512
