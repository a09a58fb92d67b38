// An AVX-512 gemv driver for formats whose weights decode, 128 values (four groups of 32) at a time, to unsigned
// bytes with one scale per group: the 32-value block formats (four blocks a step) and the ternary ones.
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
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/avx512/panel_rows.hpp"
#include "kernels/avx512/weight_loads.hpp"
#include "kernels/x86/common.hpp"
#include "kernels/x86/group_rows.hpp"
#include "kernels/kernels.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"

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
  // Each output row summed on its own, unlike the other drivers' 16 at a time (row_sums.hpp): those ran these
  // formats 1.05 to 1.29 times as fast in L2, but Q8_0 at 3 and 4 activation rows 0.70 to 0.92 times from memory
  // (experts' rows of 2048 values, one core, calls alternated in one process).
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

// What the shared row loop (kernels/group_rows.hpp) takes from both layouts at this level.
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
// calls, which moved the registers through memory (Q4_0 at one activation row: half the speed).

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
  // The first n of 64 bytes (n may be negative or above 64).
  static __mmask64 prefix_mask(int64_t n) {
    if (n <= 0) return 0;
    return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
  }

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
  // while the next block streams into L2 in memory order. (Slicing all rows instead read 4 activation rows of
  // Q4_0, 14336 values, 0.64 times as fast from memory; not slicing, 0.85 times.)
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

// One activation row takes the lane layout, more take the wide one. (Q8_0 at one row over experts' short rows ran
// faster in the wide layout while its unit gathered its scales from two 64-byte windows; with them broadcast
// (gather_halves), the lane layout streams 1.06 to 1.17 times as fast from memory, one core, calls alternated.)
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

// ---- Gathering a unit of four 32-value blocks into lanes, with narrow loads (weight_loads.hpp).

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
// apart (Q8_0's, 34 bytes) are broadcast one by one: 64-byte windows, which mostly straddle two lines, cost Q8_0
// gemv at one activation row a sixth of its rate from memory (Zen 5, experts of 768 x 2048, one core, calls
// alternated, in the wide layout: 20 -> 24 and 25 -> 29 GB/s; 2 to 4 rows tied) and a fifth in L2.
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

// A step's values in value order (for panels): group g's first half (lane g of lo), then its second (lane g of
// hi), for g = 0, 1 in `first` and 2, 3 in `second`.
inline void value_order(__m512i lo, __m512i hi, __m512i& first, __m512i& second) {
  first = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), hi);
  second = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4), hi);
}

// 256 values (two units of four 32-value blocks, or one unit of two steps) as a panel run (panel_rows.hpp): the
// levels less their bias in value order, each group's scale, and its min negated as the offset (w = d * level + m
// is d * level - (-m), exactly). For formats whose codes are the levels plus one bias.
template <class F>
struct GroupPanel {
  static_assert(F::kBias[0] == F::kBias[1] && F::kBias[0] == F::kBias[2] && F::kBias[0] == F::kBias[3]);
  static constexpr int kUnits = 2 * kStepValues / F::kUnitValues;
  static constexpr int kBlockValues = F::kBlockValues;
  static constexpr int kRunBytes = kUnits * F::kUnitBytes;
  static constexpr bool kOffsets = F::kHasMin;
  static void steps(const uint8_t* p, StepWeights (&w)[2]) {
    if constexpr (kUnits == 2) {
      w[0] = typename F::Unit(p).template step<0>();
      w[1] = typename F::Unit(p + F::kUnitBytes).template step<0>();
    } else {
      const typename F::Unit unit(p);
      w[0] = unit.template step<0>();
      w[1] = unit.template step<1>();
    }
  }
  static void factors_of(const StepWeights (&w)[2], __m512& scales, __m512& offsets) {
    // Group g's factors sit in lanes 4g..4g+3 of its step: each goes to the group's two sub-blocks of 16.
    const __m512i subs = _mm512_set_epi32(28, 28, 24, 24, 20, 20, 16, 16, 12, 12, 8, 8, 4, 4, 0, 0);
    scales = _mm512_permutex2var_ps(w[0].scale, subs, w[1].scale);
    offsets = F::kHasMin ? negated(_mm512_permutex2var_ps(w[0].min, subs, w[1].min)) : _mm512_setzero_ps();
  }
  static void decode(const uint8_t* p, __m512i (&q)[4], __m512& scales, __m512& offsets) {
    StepWeights w[2];
    steps(p, w);
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(F::kBias[0]));
    for (int u = 0; u < 2; ++u) {
      value_order(_mm512_sub_epi8(w[u].lo, bias), _mm512_sub_epi8(w[u].hi, bias), q[2 * u], q[2 * u + 1]);
    }
    factors_of(w, scales, offsets);
  }
  // The scales and offsets alone, for the formats whose panels take the code bytes (panel_rows.hpp).
  static void factors(const uint8_t* p, __m512& scales, __m512& offsets) {
    StepWeights w[2];
    steps(p, w);
    factors_of(w, scales, offsets);
  }
  // Where blocks keep their scale (and min) as f16 fields: those of a run's 8 blocks as its factor pieces
  // (panel_rows.hpp), scales then mins.
  static constexpr int kFactorPieces = F::kHasMin ? 2 : 1;
  static __m128i factor_piece(const uint8_t* p, int i)
    requires requires { F::kScaleAt; }
  {
    if constexpr (F::kHasMin) {
      if (i == 1) return block_halves<F::kBlockBytes, F::kMinAt>(p);
    }
    return block_halves<F::kBlockBytes, F::kScaleAt>(p);
  }
  static void lane_factors(const __m512i (&words)[kFactorPieces][4], __m512 (&scales)[8], __m512 (&offsets)[8]) {
    for (int b = 0; b < 8; ++b) {
      scales[b] = f16_lanes(words[0][b / 2], b % 2);
      offsets[b] = F::kHasMin ? negated(f16_lanes(words[kFactorPieces - 1][b / 2], b % 2)) : _mm512_setzero_ps();
    }
  }
};

// GroupPanel for formats of 4-bit codes, 16 bytes a block at F::kCodesAt (byte j: values j and 16 + j), whose
// panels transpose the code bytes (panel_rows.hpp) and turn the nibbles into codes with F::panel_codes.
template <class F>
struct NibbleGroupPanel : GroupPanel<F> {
  static constexpr int kBits = 4;
  static const uint8_t* piece(const uint8_t* p, int i) { return p + i * F::kBlockBytes + F::kCodesAt; }
  static constexpr int chunk(int c, int f) { return nibble_group_chunk(c, f); }
  static __m512i codes(__m512i fields) { return F::panel_codes(fields); }
};

}  // namespace
}  // namespace ggufmm::kernels::avx512
