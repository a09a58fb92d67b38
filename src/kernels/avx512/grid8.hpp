// The codebook step for gemv<F> (rows.hpp): formats whose grid words hold 8 values (IQ2_XXS, IQ2_XS, IQ2_S,
// IQ1_S, IQ1_M) or whose blocks decode to runs of 8 alike (IQ3_XXS, IQ3_S), a 256-value block in 4 chunks of 64
// values fed to every activation row (Grid8Step), and the pieces their decoders share.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/avx512/rows.hpp"
#include "kernels/kernels.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"
#include "kernels/x86/common.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// Codebook formats whose grid words hold 8 values (IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M): 256-value blocks of
// 32 runs of 8, each run one whole grid word. A step decodes a block in 4 chunks of 64 values (8 runs, 8 grid
// words) and feeds each chunk to every activation row. The weight bytes take one of two forms:
enum class Grid8Form {
  Signed,  // |q| and a mask of the negative weights, moved onto the activations
  Offset,  // u = q + o >= 0 for an offset o per half (16 values): the row drops o times the half's activation sum
};
// A format supplies the decoding of one block:
//
//   struct Codes {
//     using Block = ...;
//     static constexpr Grid8Form kForm;
//     static constexpr int kScaleValues;          // values per weight scale: 16 or 32
//     static constexpr int kPairings;             // 1 or 2: see below
//     static constexpr int kBlocksPerStep;        // 1, or 2 to decode two blocks before their products
//     explicit Codes(const Block& b);             // or, given a type Scratch, Codes(const Block&, Scratch&)
//     template <int C> __m512i weights() const;   // chunk C (values 64C..64C+63) as unsigned bytes
//     template <int C> __mmask64 negative() const;  // Signed only: bit j set where value j is negative
//     __m512i scales() const;    // the odd integer scale of each half (16 values) or group, one per dword
//     __m256 unit() const;       // the float value of scale 1, broadcast (super-block scale included)
//     __m512 offsets() const;    // Offset only: o times the half's scale, per half (in units of unit())
//   };
//
// The integer sums of a row stay integer until one conversion per block: dpbusd leaves 16 lanes of 4 products per
// chunk; as those fit int16, two chunks pack into one register whose word pairs madd sums (one pairing: the
// result holds runs of 8 values), and where runs of 8 still fit int16 a second pairing leaves one dword per half
// (16 values). The last madd multiplies by the weight scales on the way; the activation scales (one per group of
// 32) then apply in float to whole halves or runs.

// The int8 product of signed weights and signed activations on the u8 x s8 instruction: |w| times x with the
// sign of w moved onto x (activations stay within +-127, so negating them cannot overflow).
inline __m512i dot_signed(__m512i acc, __m512i w_abs, __mmask64 w_negative, __m512i xq) {
  return _mm512_dpbusd_epi32(acc, w_abs, _mm512_mask_sub_epi8(xq, w_negative, _mm512_setzero_si512(), xq));
}

// Index vectors built from a function of the element number, at compile time.
template <class F>
inline __m512i epi32_pattern(F f) {
  return [&]<int... E>(std::integer_sequence<int, E...>) { return _mm512_set_epi32(f(15 - E)...); }(
      std::make_integer_sequence<int, 16>{});
}
template <class F>
inline __m512i epi16_pattern(F f) {
  return [&]<int... E>(std::integer_sequence<int, E...>) {
    return _mm512_set_epi32((f(30 - 2 * E) | f(31 - 2 * E) << 16)...);
  }(std::make_integer_sequence<int, 16>{});
}

// The 8 grid words of one chunk (8 runs), index(j) being run j's: scalar loads, with the index worked out in
// general registers. A gather of the same words is slow on AMD cores and on Intel cores whose microcode mitigates
// GDS, and no faster elsewhere (docs/performance.md, Codebook decoding). The grids of up to 512 entries are looked
// up in registers instead where that pays (grid_codes.hpp).
template <class Index>
inline __m512i grid_runs(const uint64_t* grid, Index index) {
  const auto word = [&](int j) { return static_cast<long long>(grid[index(j)]); };
  return _mm512_setr_epi64(word(0), word(1), word(2), word(3), word(4), word(5), word(6), word(7));
}

// 16 scales of 4 bits (two per byte, low nibble first) as odd integers 2s + 1, one per dword.
inline __m512i odd_nibble_scales(const uint8_t* scales) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales));
  const __m128i s = _mm_unpacklo_epi8(b, _mm_srli_epi16(b, 4));
  return _mm512_ternarylogic_epi32(_mm512_slli_epi32(_mm512_cvtepu8_epi32(s), 1), _mm512_set1_epi32(0x1e),
                                   _mm512_set1_epi32(1), 0xea);  // (2s & 0x1e) | 1
}

// A format may ask for memory to decode into and read back (Codes::Scratch), kept apart from the decoded block so
// that the block's other fields stay in registers.
struct NoScratch {};
template <class Codes>
struct ScratchFor {
  using type = NoScratch;
};
template <class Codes>
  requires requires { typename Codes::Scratch; }
struct ScratchFor<Codes> {
  using type = typename Codes::Scratch;
};
template <class Codes>
using ScratchOf = typename ScratchFor<Codes>::type;
template <class Codes>
inline Codes decoder(const typename Codes::Block& block, ScratchOf<Codes>& scratch) {
  if constexpr (requires { typename Codes::Scratch; }) {
    return Codes(block, scratch);
  } else {
    return Codes(block);
  }
}

// A format may decode its blocks two ways: Codes below kManyRows activation rows, Many from there on (IQ2_XS: grid
// words looked up in registers, then assembled from scalar loads, which leave the vector units to the rows).
template <class Codes, class Many = Codes, int kManyRows = kMaxRowTileRows + 1>
struct Grid8Step {
  static_assert(Many::kForm == Codes::kForm && Many::kScaleValues == Codes::kScaleValues &&
                Many::kPairings == Codes::kPairings);
  static constexpr int kBlockValues = 256;
  static constexpr int kBlocksPerStep = Codes::kBlocksPerStep;
  static_assert(kBlocksPerStep == 1 || kBlocksPerStep == 2);
  static constexpr int kPairings = Codes::kPairings;
  static_assert(kPairings == 1 || kPairings == 2);
  static_assert(Codes::kScaleValues == 16 || Codes::kScaleValues == 32);

  // Half h of the block (16 values) as the dword of scales() that holds its scale, times 2: a word index.
  static constexpr int scale_word(int half) { return 2 * (Codes::kScaleValues == 16 ? half : half / 2); }

  // After one pairing of chunks 2P and 2P+1, dword e holds run 2 * (e % 2) of half e / 4 of chunk 2P + e % 4 / 2;
  // after two, dword e holds half e / 4 of chunk e % 4.
  static constexpr int paired_chunk(int pair, int e) { return kPairings == 1 ? 2 * pair + e % 4 / 2 : e % 4; }
  static constexpr int paired_group(int pair, int e) { return 2 * paired_chunk(pair, e) + e / 8; }

  static __m512i dot(__m512i w, __mmask64 negative, __m512i xq) {
    const __m512i zero = _mm512_setzero_si512();
    if constexpr (Codes::kForm == Grid8Form::Signed) {
      return dot_signed(zero, w, negative, xq);
    } else {
      return _mm512_dpbusd_epi32(zero, w, xq);
    }
  }

  template <int NR, int Blocks>
  static void step(const uint8_t* row, int64_t i, const Activations& x, __m512 (&acc)[NR]) {
    using Decoder = std::conditional_t<(NR >= kManyRows), Many, Codes>;
    const auto* block = reinterpret_cast<const typename Decoder::Block*>(row) + i / kBlockValues;
    prefetch_ahead<Blocks * sizeof *block, weight_cache(NR)>(block);
    ScratchOf<Decoder> scratch[Blocks];
    if constexpr (Blocks == 1) {
      rows<NR>(decoder<Decoder>(block[0], scratch[0]), i, x, acc);
    } else {
      // Both blocks decoded before either's products, so that the second's decoding runs alongside the first's
      // dot products (left to the out-of-order window, one block's long chain of decoding and products hardly
      // overlaps the next one's). IQ2_XS, IQ2_XXS, IQ3_S and IQ1_M gain from it; IQ2_S and IQ1_S do not, and
      // IQ3_XXS loses, so they keep one block a step (docs/performance.md, Codebook decoding).
      const Decoder first = decoder<Decoder>(block[0], scratch[0]), second = decoder<Decoder>(block[1], scratch[1]);
      rows<NR>(first, i, x, acc);
      rows<NR>(second, i + kBlockValues, x, acc);
    }
  }

  template <int NR, class Decoder>
  static void rows(const Decoder& c, int64_t i, const Activations& x, __m512 (&acc)[NR]) {
    const int64_t groups = x.k / kGroup;
    // Per row, the float scale of each group: activation scale times the weight's unit.
    const __m256 unit = c.unit();
    __m256 ds[NR];
    for (int r = 0; r < NR; ++r) ds[r] = _mm256_mul_ps(_mm256_loadu_ps(x.d + r * groups + i / kGroup), unit);
    if constexpr (Codes::kForm == Grid8Form::Offset) {
      // One multiply-add per row and block: the float activation sums of the 16 halves against the offsets.
      const __m512 dropped = _mm512_mul_ps(c.offsets(), _mm512_broadcastss_ps(_mm256_castps256_ps128(unit)));
      const int64_t halves = x.k / kSumGroup;
      for (int r = 0; r < NR; ++r) {
        acc[r] = _mm512_fnmadd_ps(dropped, _mm512_loadu_ps(x.sum + r * halves + i / kSumGroup), acc[r]);
      }
    }
    const __m512i scales = c.scales();
    [[maybe_unused]] __m512i paired[NR];  // the first pairing, kept for the second
    unroll<2>([&]<int P>() {
      __m512i isum[2][NR];
      unroll<2>([&]<int H>() {
        constexpr int C = 2 * P + H;
        const __m512i w = c.template weights<C>();
        __mmask64 negative = 0;
        if constexpr (Codes::kForm == Grid8Form::Signed) negative = c.template negative<C>();
        for (int r = 0; r < NR; ++r) isum[H][r] = dot(w, negative, _mm512_loadu_si512(x.q + r * x.k + i + 64 * C));
      });
      if constexpr (kPairings == 1) {
        // Word k of 128-bit lane j: half j of chunk 2P (k < 4) or 2P + 1.
        const __m512i wscale = _mm512_permutexvar_epi16(
            epi16_pattern([](int w) { return scale_word(4 * (2 * P + w % 8 / 4) + w / 8); }), scales);
        const __m512i spread = epi32_pattern([](int e) { return paired_group(P, e); });
        for (int r = 0; r < NR; ++r) {
          const __m512i sums = _mm512_madd_epi16(_mm512_packs_epi32(isum[0][r], isum[1][r]), wscale);
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums),
                                   _mm512_permutexvar_ps(spread, _mm512_castps256_ps512(ds[r])), acc[r]);
        }
      } else {
        for (int r = 0; r < NR; ++r) {
          const __m512i sums = _mm512_madd_epi16(_mm512_packs_epi32(isum[0][r], isum[1][r]), _mm512_set1_epi16(1));
          if constexpr (P == 0) paired[r] = sums;
          if constexpr (P == 1) paired[r] = _mm512_packs_epi32(paired[r], sums);
        }
      }
    });
    if constexpr (kPairings == 2) {
      // Word k of 128-bit lane j: half j of chunk k / 2.
      const __m512i wscale =
          _mm512_permutexvar_epi16(epi16_pattern([](int w) { return scale_word(4 * (w % 8 / 2) + w / 8); }), scales);
      const __m512i spread = epi32_pattern([](int e) { return paired_group(0, e); });
      for (int r = 0; r < NR; ++r) {
        const __m512i sums = _mm512_madd_epi16(paired[r], wscale);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums),
                                 _mm512_permutexvar_ps(spread, _mm512_castps256_ps512(ds[r])), acc[r]);
      }
    }
  }
};

// Dword index vector for per-group values (lanes 0-7, one per group of 32) spread over the group's two halves.
inline __m512i halves_of_groups() { return epi32_pattern([](int e) { return e / 2; }); }

}  // namespace
}  // namespace ggufmm::kernels::avx512
