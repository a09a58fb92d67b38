// Panel adaptors: each gemv family's decoding turned into the 256-value runs that decode_panel (panel_decoder.hpp)
// transposes into panels, so that a format's panels come from the same decoding as its gemv.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/avx512/block32.hpp"
#include "kernels/avx512/grid8.hpp"
#include "kernels/avx512/groups.hpp"
#include "kernels/avx512/kquant.hpp"
#include "kernels/avx512/nibble.hpp"
#include "kernels/avx512/panel_decoder.hpp"
#include "kernels/kernels.hpp"
#include "kernels/unroll.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// ---- Codebook blocks (grid8.hpp).

// The scale of each 16 values of a codebook block: its float unit times the odd integer scale, d * (s + 1/2) / 4
// and the like, as ggml rounds them (the power-of-two factors are exact); per-group scales (kScaleValues 32) serve
// both halves of their group.
template <class Codes>
inline __m512 grid8_sub_scales(const Codes& c) {
  const __m512i odd =
      Codes::kScaleValues == 16 ? c.scales() : _mm512_permutexvar_epi32(halves_of_groups(), c.scales());
  return _mm512_mul_ps(_mm512_broadcastss_ps(_mm256_castps256_ps128(c.unit())), _mm512_cvtepi32_ps(odd));
}

// A codebook block as a panel run (panel_decoder.hpp): the integers are the signed magnitudes, or the codes less
// their offset where that is one constant, kOffset; the scales of grid8_sub_scales.
template <class Codes>
struct Grid8Panel {
  static_assert(Codes::kForm == Grid8Form::Signed || requires { Codes::kOffset; });
  static constexpr int kBlockValues = 256;
  static constexpr int kRunBytes = sizeof(typename Codes::Block);
  static constexpr bool kOffsets = false;
  static void decode(const uint8_t* p, __m512i (&q)[4], __m512& scales, __m512& offsets) {
    const auto& block = *reinterpret_cast<const typename Codes::Block*>(p);
    const auto run = [&](const Codes& c) {
      unroll<4>([&]<int C>() {
        const __m512i w = c.template weights<C>();
        if constexpr (Codes::kForm == Grid8Form::Signed) {
          q[C] = _mm512_mask_sub_epi8(w, c.template negative<C>(), _mm512_setzero_si512(), w);
        } else {
          q[C] = _mm512_sub_epi8(w, _mm512_set1_epi8(Codes::kOffset));
        }
      });
      scales = grid8_sub_scales(c);
    };
    ScratchOf<Codes> scratch;
    run(decoder<Codes>(block, scratch));
    offsets = _mm512_setzero_ps();
  }
};

// ---- K-quant super-blocks (kquant.hpp).

// A super-block as a panel run (panel_decoder.hpp): the codes less their centre; per 16 values the scale d * sc and
// the offset dmin * m, the products ggml dequantizes with.
template <class F>
struct KPanel {
  static constexpr int kBlockValues = 256;
  static constexpr int kRunBytes = sizeof(typename F::Block);
  static constexpr bool kOffsets = F::kMins;
  static KDecoded block(const uint8_t* p) { return F::decode(*reinterpret_cast<const typename F::Block*>(p)); }
  static void factors_of(const KDecoded& kd, __m512& scales, __m512& offsets) {
    scales = _mm512_mul_ps(kd.d, sub_scales<F>(kd.table));
    offsets = F::kMins ? kd.mins : _mm512_setzero_ps();
  }
  static void decode(const uint8_t* p, __m512i (&q)[4], __m512& scales, __m512& offsets) {
    const KDecoded kd = block(p);
    for (int c = 0; c < 4; ++c) q[c] = _mm512_sub_epi8(kd.w[c], _mm512_set1_epi8(F::kCentre));
    factors_of(kd, scales, offsets);
  }
  // Q4_K and Q5_K begin with d, dmin and the 12 bytes of 6-bit scales and mins: one factor piece, whose fields
  // ggml's get_scale_min_k4 reads, here for 16 rows at once (panel_decoder.hpp).
  static constexpr int kFactorPieces = 1;
  static __m128i factor_piece(const uint8_t* p, int)
    requires std::is_same_v<F, K4Format<typename F::Block>>
  {
    static_assert(offsetof(typename F::Block, scales) == 4 && sizeof(typename F::Block{}.scales) == 12);
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  static void lane_factors(const __m512i (&words)[1][4], __m512 (&scales)[8], __m512 (&offsets)[8]) {
    const __m512 d = f16_lanes(words[0][0], 0), dmin = f16_lanes(words[0][0], 1);
    const __m512i low6 = _mm512_set1_epi32(63), low4 = _mm512_set1_epi32(15);
    // Byte i of the 12, in every lane; its top two bits, shifted to bits 4 and 5.
    const auto byte = [&](int i) {
      return _mm512_and_si512(_mm512_srli_epi32(words[0][1 + i / 4], 8 * (i % 4)), _mm512_set1_epi32(255));
    };
    const auto top = [&](int i) { return _mm512_slli_epi32(_mm512_srli_epi32(byte(i), 6), 4); };
    for (int j = 0; j < 8; ++j) {
      __m512i sc, m;
      if (j < 4) {
        sc = _mm512_and_si512(byte(j), low6);
        m = _mm512_and_si512(byte(j + 4), low6);
      } else {
        sc = _mm512_or_si512(_mm512_and_si512(byte(j + 4), low4), top(j - 4));
        m = _mm512_or_si512(_mm512_srli_epi32(byte(j + 4), 4), top(j));
      }
      scales[j] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc));
      offsets[j] = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(m));
    }
  }
};

// ---- Group formats (groups.hpp, block32.hpp).

// A step's values in value order (for panels): group g's first half (lane g of lo), then its second (lane g of
// hi), for g = 0, 1 in `first` and 2, 3 in `second`.
inline void value_order(__m512i lo, __m512i hi, __m512i& first, __m512i& second) {
  first = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), hi);
  second = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4), hi);
}

// 256 values (two units of four 32-value blocks, or one unit of two steps) as a panel run (panel_decoder.hpp): the
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
  // The scales and offsets alone, for the formats whose panels take the code bytes (panel_decoder.hpp).
  static void factors(const uint8_t* p, __m512& scales, __m512& offsets) {
    StepWeights w[2];
    steps(p, w);
    factors_of(w, scales, offsets);
  }
  // Where blocks keep their scale (and min) as f16 fields: those of a run's 8 blocks as its factor pieces
  // (panel_decoder.hpp), scales then mins.
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
// panels transpose the code bytes (panel_decoder.hpp) and turn the nibbles into codes with F::panel_codes.
template <class F>
struct NibbleGroupPanel : GroupPanel<F> {
  static constexpr int kBits = 4;
  static const uint8_t* piece(const uint8_t* p, int i) { return p + i * F::kBlockBytes + F::kCodesAt; }
  static constexpr int chunk(int c, int f) { return nibble_group_chunk(c, f); }
  static __m512i codes(__m512i fields) { return F::panel_codes(fields); }
};

// ---- Nibble formats (nibble.hpp).

// 256 values as a panel run (panel_decoder.hpp) of their code bytes (F::group_codes): the panel transposes the code
// bytes as stored and looks the levels up after; the group scales per 16.
template <class F>
struct NibblePanel {
  static constexpr int kUnits = 256 / F::kUnitValues;
  static constexpr int kBlockValues = kUnits == 1 ? 256 : kGroup;
  static constexpr int kRunBytes = kUnits * F::kUnitBytes;
  static constexpr bool kOffsets = false;
  static constexpr int kBits = 4;

  static void steps(const uint8_t* p, NibbleWeights (&w)[2]) {
    if constexpr (kUnits == 1) {
      F::decode(p, 0, w);
    } else {
      for (int u = 0; u < kUnits; ++u) {
        NibbleWeights step[1];
        F::decode(p, u, step);
        w[u] = step[0];
      }
    }
  }
  static const uint8_t* piece(const uint8_t* p, int i) { return F::group_codes(p, i); }
  static constexpr int chunk(int c, int f) { return nibble_group_chunk(c, f); }
  static __m512i codes(__m512i fields) { return level_codes(F::kLevels, fields); }
  static void factors(const uint8_t* p, __m512& scales, __m512& offsets) {
    NibbleWeights w[2];
    steps(p, w);
    // Group g's scale is element g of its step: it goes to the group's two sub-blocks of 16.
    const __m512i subs = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 16, 16, 17, 17, 18, 18, 19, 19);
    scales = _mm512_permutex2var_ps(w[0].scale, subs, w[1].scale);
    offsets = _mm512_setzero_ps();
  }
  // Formats that give their factor bytes raw (panel_decoder.hpp).
  static constexpr int kFactorPieces = 1;
  static __m128i factor_piece(const uint8_t* p, int i)
    requires requires { F::factor_piece(p, i); }
  {
    return F::factor_piece(p, i);
  }
  static void lane_factors(const __m512i (&words)[1][4], __m512 (&scales)[8], __m512 (&offsets)[8]) {
    F::lane_factors(words, scales, offsets);
  }
};

}  // namespace
}  // namespace ggufmm::kernels::avx512
