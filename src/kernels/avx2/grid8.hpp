// The codebook step for gemv<F> (rows.hpp), Grid8Step: 256-value blocks decoded a group of 32 at a time for every
// activation row (IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M, and IQ3_XXS, IQ3_S with grid words of 4 values), and the
// pieces their decoders share.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx2/dot.hpp"
#include "kernels/avx2/rows.hpp"
#include "kernels/kernels.hpp"
#include "kernels/level.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"
#include "kernels/x86/common.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// Codebook formats whose grid words hold 8 values (IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M): 256-value blocks of
// 32 runs of 8, each run one whole grid word. A step decodes a block one group of 32 (4 runs, one register) at a
// time and feeds it to every activation row. The weight bytes take one of three forms:
enum class Grid8Form {
  Signed,       // |q| and a +-1 per value, moved onto the activations
  RunOffset,    // q + kOffset >= 0: the dot product drops kOffset times the activation sum of each lane
  GroupOffset,  // q + o_g >= 0 for an offset o_g per group: the row drops o_g times the group's qsum
};
// A format supplies the decoding of one block:
//
//   struct Codes {
//     using Block = ...;
//     static constexpr Grid8Form kForm;
//     static constexpr int kOffset;              // RunOffset only
//     static constexpr int kScaleValues;         // values per weight scale: 16 or 32
//     explicit Codes(const Block& b);            // or, given a type Scratch, Codes(const Block&, Scratch&)
//     __m256i weights(int g) const;              // group g as unsigned bytes
//     __m256i signs(int g) const;                // Signed only: +1 or -1 per value
//     __m256 scales() const;                     // per group: the float weight scale (32), or the unit (16)
//     __m256i half_scales(int g) const;          // 16 only: lanes 0-3 and 4-7 the odd integer scales of the
//                                                // group's two halves, as scale_words() makes them
//     __m256 offsets() const;                    // GroupOffset only: -o_g per group
//   };

// The grid words of 4 runs, whole, by their indices: four loads, faster than a gather even where gathers are
// quick, and much faster on AMD cores where they are microcoded (docs/performance.md, Codebook decoding).
template <class Index>
inline __m256i grid_runs(const uint64_t* grid, const Index* index) {
  return _mm256_setr_epi64x(static_cast<long long>(grid[index[0]]), static_cast<long long>(grid[index[1]]),
                            static_cast<long long>(grid[index[2]]), static_cast<long long>(grid[index[3]]));
}

// The grid words of a group of a codebook with 4 values per word (IQ3_XXS, IQ3_S), index(j) being word j's:
// scalar loads, for the same reason.
template <class Index>
inline __m256i grid_words(const uint32_t* grid, Index index) {
  const auto word = [&](int j) { return static_cast<int>(grid[index(j)]); };
  return _mm256_setr_epi32(word(0), word(1), word(2), word(3), word(4), word(5), word(6), word(7));
}

// High index bits of 8 runs, `bits` wide, from the word of 32 bits whose consecutive fields they are (run j at bit
// shift[j]), joined under their 8 low bytes (at `low`): dword indices, stored where the scalar grid loads read them.
inline void store_indices(uint32_t* out, const uint8_t* low, uint32_t word, __m256i shift, int bits) {
  const __m256i high = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(word)), shift),
                                        _mm256_set1_epi32((1 << bits) - 1));
  const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(low)));
  _mm256_store_si256(reinterpret_cast<__m256i*>(out), _mm256_or_si256(lo, _mm256_slli_epi32(high, 8)));
}

// 16 scales of 4 bits (two per byte, low nibble first) as odd integers 2s + 1: halves 0-7, then 8-15.
inline void odd_nibble_scales(const uint8_t* scales, __m256i (&odd)[2]) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales));
  const __m128i s = _mm_and_si128(_mm_unpacklo_epi8(b, _mm_srli_epi16(b, 4)), _mm_set1_epi8(0x0f));
  const __m128i odd8 = _mm_or_si128(_mm_add_epi8(s, s), _mm_set1_epi8(1));
  odd[0] = scale_words(_mm256_cvtepu8_epi32(odd8));
  odd[1] = scale_words(_mm256_cvtepu8_epi32(_mm_srli_si128(odd8, 8)));
}

// Lanes 0-3: half 2g of the 16 in `halves` (from odd_nibble_scales), lanes 4-7: half 2g + 1.
inline __m256i group_halves(const __m256i (&halves)[2], int g) {
  const int h = 2 * (g % 4);
  return _mm256_permutevar8x32_epi32(halves[g / 4], _mm256_setr_epi32(h, h, h, h, h + 1, h + 1, h + 1, h + 1));
}

template <class Codes>
struct Grid8Step {
  static constexpr int kValues = 256;
  static constexpr int kGroups = kValues / kGroup;
  static constexpr bool kPerGroup = Codes::kScaleValues == 32;
  static_assert(kPerGroup || Codes::kScaleValues == 16);
  static_assert(kPerGroup || Codes::kForm != Grid8Form::GroupOffset);

  template <int G>
  static __m256i dot(const Codes& c, __m256i w, __m256i sign, __m256i xq) {
    if constexpr (Codes::kForm == Grid8Form::Signed) xq = _mm256_sign_epi8(xq, sign);
    if constexpr (kPerGroup) {
      return dot_unsigned(_mm256_setzero_si256(), w, xq);
    } else if constexpr (Codes::kForm == Grid8Form::RunOffset) {
      return scaled_dot(w, xq, c.half_scales(G), Codes::kOffset);
    } else {
      return scaled_dot(w, xq, c.half_scales(G));
    }
  }

  template <int NR>
  static void step(const uint8_t* row, int64_t i, const Activations& x, __m256 (&acc)[NR]) {
    const auto& block = reinterpret_cast<const typename Codes::Block*>(row)[i / kValues];
    prefetch_ahead<sizeof block, weight_cache(NR)>(&block);
    // A format may ask for memory to decode into (Codes::Scratch: grid indices for scalar loads, sign bits), kept
    // apart from the decoded block so that the block's other fields stay in registers.
    if constexpr (requires { typename Codes::Scratch; }) {
      typename Codes::Scratch scratch;
      rows<NR>(Codes(block, scratch), i, x, acc);
    } else {
      rows<NR>(Codes(block), i, x, acc);
    }
  }

  template <int NR>
  static void rows(const Codes& c, int64_t i, const Activations& x, __m256 (&acc)[NR]) {
    // Weight times activation scale per row and group, read back as broadcasts (no shuffle per group and row).
    alignas(32) float ds[NR][kGroups];
    const __m256 ws = c.scales();
    for (int r = 0; r < NR; ++r) {
      const __m256 s = _mm256_mul_ps(ws, _mm256_loadu_ps(x.d + r * (x.k / kGroup) + i / kGroup));
      _mm256_store_ps(ds[r], s);
      if constexpr (Codes::kForm == Grid8Form::GroupOffset) {
        const __m128i qsum = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qsum + r * (x.k / kGroup) + i / kGroup));
        acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(qsum)), c.offsets()), s, acc[r]);
      }
    }
    unroll<kGroups>([&]<int G>() {
      const __m256i w = c.weights(G);
      __m256i sign = _mm256_setzero_si256();
      if constexpr (Codes::kForm == Grid8Form::Signed) sign = c.signs(G);
      for (int r = 0; r < NR; ++r) {
        const __m256i isum = dot<G>(c, w, sign, load_act(x, r, i + kGroup * G));
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_broadcast_ss(&ds[r][G]), acc[r]);
      }
    });
  }
};

// The sign words of IQ2_XXS and IQ3_XXS (four runs of 7 sign bits in bits 0-27 of each 32-bit word, the scale on
// top) as one byte of 8 signs per run, run k of a word in its byte k, the eighth sign completed by complete_signs.
inline __m256i seven_bit_sign_runs(__m256i words) {
  // Runs 2-3 move up 2 bits into the upper half, then runs 1 and 3 up 1 bit within their half.
  const __m256i halves = _mm256_blend_epi16(words, _mm256_slli_epi32(words, 2), 0xaa);
  const __m256i runs = _mm256_or_si256(_mm256_and_si256(halves, _mm256_set1_epi16(0x007f)),
                                       _mm256_and_si256(_mm256_slli_epi16(halves, 1), _mm256_set1_epi16(0x7f00)));
  return complete_signs(runs);
}

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
