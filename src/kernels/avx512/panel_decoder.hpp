// The AVX-512 panel decoder, decode_panel<F> (a PanelDecodeFn): 256 values of each of 16 weight rows at a time, decoded
// in registers by the format's own AVX-512 decoding (the one its gemv kernel uses), then turned into the panel layout
// by 16 x 16 transposes of 32-bit words, which leave word i of every row, values 4i..4i+3, in one register: a chunk.
// A format supplies, most through an adaptor of its gemv family (panels.hpp):
//
//   struct Format {
//     static constexpr int kBlockValues;  // 32 or 256: a row may end inside a run of 256 values
//     static constexpr int kRunBytes;     // the bytes of 256 values
//     static constexpr bool kOffsets;     // false: every offset is zero
//     // 256 values from p: the integers q in value order, the scale and the offset of each 16 values
//     // (value = scale * q - offset, exactly ggml's).
//     static void decode(const uint8_t* p, __m512i (&q)[4], __m512& scales, __m512& offsets);
//   };
//
// A format whose codes are bit fields of its bytes may instead supply where those bytes are, and its factors; the
// panel then transposes the bytes, up to 4 times fewer words than the codes, and extracts the fields after:
//
//     static constexpr int kBits;                                 // 2, 4 or 8: 8 / kBits fields a byte
//     static const uint8_t* piece(const uint8_t* p, int i);       // the run's code bytes 16i..16i+15
//     static constexpr int chunk(int c, int f);  // the chunk (values 4x..4x+3) in field f of code dword c
//     static __m512i codes(__m512i fields);      // fields (below 2^kBits a byte) to panel codes, q + 128
//     static void factors(const uint8_t* p, __m512& scales, __m512& offsets);  // as decode gives them
//
// Two-bit fields may instead be multiplied, exactly, by an integer factor per 16 values (q = field * factor, at
// most 127), so that the scales left pair up (Q2_K: its 4-bit sub-scales, leaving one scale per block):
//
//     static __m512i multipliers(const uint8_t* p);  // the 16 factors, one per dword, in place of codes()
//
// A format whose factors are fields of a few bytes of each run may instead hand over those bytes, 16 a piece,
// and work the factors out from them with the 16 rows in lanes: the panel transposes the pieces, where factors()
// works out each row's own and the panel transposes the results, which is faster for the formats that offer it
// (docs/performance.md, Panels and tiles):
//
//     static constexpr int kFactorPieces;                   // 1 or 2
//     static __m128i factor_piece(const uint8_t* p, int i);  // 16 bytes of the run's factors (i < kFactorPieces)
//     // Per 32 values of the run, the scales and offsets of all 16 rows from their pieces' words: word j of row
//     // l's piece i in lane l of words[i][j].
//     static void lane_factors(const __m512i (&words)[kFactorPieces][4], __m512 (&scales)[8], __m512 (&offsets)[8]);
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/kernels.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// r[i] becomes word i of every r[l], in order of l. (Zero-masked forms throughout: GCC 12's unmasked ones start
// from self-initialized "undefined" registers, which -Werror=uninitialized rejects.)
inline void transpose_words(__m512i (&r)[16]) {
  __m512i u[16];
  for (int q = 0; q < 16; q += 4) {
    const __m512i t0 = _mm512_maskz_unpacklo_epi32(0xffff, r[q], r[q + 1]);
    const __m512i t1 = _mm512_maskz_unpackhi_epi32(0xffff, r[q], r[q + 1]);
    const __m512i t2 = _mm512_maskz_unpacklo_epi32(0xffff, r[q + 2], r[q + 3]);
    const __m512i t3 = _mm512_maskz_unpackhi_epi32(0xffff, r[q + 2], r[q + 3]);
    // u[q + j], 128-bit lane L: word 4L + j of rows q..q+3.
    u[q] = _mm512_maskz_unpacklo_epi64(0xff, t0, t2);
    u[q + 1] = _mm512_maskz_unpackhi_epi64(0xff, t0, t2);
    u[q + 2] = _mm512_maskz_unpacklo_epi64(0xff, t1, t3);
    u[q + 3] = _mm512_maskz_unpackhi_epi64(0xff, t1, t3);
  }
  for (int j = 0; j < 4; ++j) {
    // Lanes 0 and 2 (even), 1 and 3 (odd) of u[j], u[4 + j], then of u[8 + j], u[12 + j].
    const __m512i even_lo = _mm512_maskz_shuffle_i32x4(0xffff, u[j], u[4 + j], 0x88);
    const __m512i even_hi = _mm512_maskz_shuffle_i32x4(0xffff, u[8 + j], u[12 + j], 0x88);
    const __m512i odd_lo = _mm512_maskz_shuffle_i32x4(0xffff, u[j], u[4 + j], 0xdd);
    const __m512i odd_hi = _mm512_maskz_shuffle_i32x4(0xffff, u[8 + j], u[12 + j], 0xdd);
    r[j] = _mm512_maskz_shuffle_i32x4(0xffff, even_lo, even_hi, 0x88);       // lane 0 of all four
    r[8 + j] = _mm512_maskz_shuffle_i32x4(0xffff, even_lo, even_hi, 0xdd);   // lane 2
    r[4 + j] = _mm512_maskz_shuffle_i32x4(0xffff, odd_lo, odd_hi, 0x88);     // lane 1
    r[12 + j] = _mm512_maskz_shuffle_i32x4(0xffff, odd_lo, odd_hi, 0xdd);    // lane 3
  }
}

// 16 rows of 64 bytes, laid out [16][16] words, transposed: r[i] holds word i of every row.
inline void load_transposed(const void* rows, __m512i (&r)[16]) {
  for (int l = 0; l < 16; ++l) r[l] = _mm512_load_si512(static_cast<const uint8_t*>(rows) + 64 * l);
  transpose_words(r);
}

// Code bytes 16i..16i+15 of 16 rows (piece(l): row l's) as four chunks: word j of every row's piece in out[j],
// row l in word l. Broadcast loads merged by 128-bit lane gather rows l, l + 4, l + 8, l + 12; one in-lane 4 x 4
// transpose finishes. The merges run on either vector port, where transposing whole registers takes twice the
// shuffles, all on one.
template <class Piece>
inline void transpose_pieces(Piece piece, __m512i (&out)[4]) {
  const auto at = [&](int l) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(piece(l))); };
  __m512i a[4];
  for (int g = 0; g < 4; ++g) {
    a[g] = _mm512_broadcast_i32x4(at(g));
    a[g] = _mm512_mask_broadcast_i32x4(a[g], 0x00f0, at(4 + g));
    a[g] = _mm512_mask_broadcast_i32x4(a[g], 0x0f00, at(8 + g));
    a[g] = _mm512_mask_broadcast_i32x4(a[g], 0xf000, at(12 + g));
  }
  const __m512i t0 = _mm512_maskz_unpacklo_epi32(0xffff, a[0], a[1]);
  const __m512i t1 = _mm512_maskz_unpackhi_epi32(0xffff, a[0], a[1]);
  const __m512i t2 = _mm512_maskz_unpacklo_epi32(0xffff, a[2], a[3]);
  const __m512i t3 = _mm512_maskz_unpackhi_epi32(0xffff, a[2], a[3]);
  out[0] = _mm512_maskz_unpacklo_epi64(0xff, t0, t2);
  out[1] = _mm512_maskz_unpackhi_epi64(0xff, t0, t2);
  out[2] = _mm512_maskz_unpacklo_epi64(0xff, t1, t3);
  out[3] = _mm512_maskz_unpackhi_epi64(0xff, t1, t3);
}

// A masked store of 64 bytes: GCC turns a loop of plain ones (with a zero flip) into a memcpy of variable length
// through the stack, which took longer than the whole decoding.
inline void store_chunk(void* out, __m512i v) { _mm512_mask_storeu_epi32(out, 0xffff, v); }

// Stores `count` (<= 16) of the 16 transposed words of 16 rows of 64 bytes ([count][16] words), each xor `flip`.
inline void store_transposed(const void* rows, int count, __m512i flip, void* out) {
  __m512i r[16];
  load_transposed(rows, r);
  for (int i = 0; i < count; ++i) store_chunk(static_cast<uint8_t*>(out) + 64 * i, _mm512_xor_si512(r[i], flip));
}

// -v, exactly: the sign bit flipped (a min becomes an offset, a scale takes the sign a fold gave its codes).
inline __m512 negated(__m512 v) {
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN)));
}

// Sixteen rows stream at once, too many for the hardware prefetcher: each row asks for its run after next into
// L1 (2 runs ahead beat 1, 4 and 8, and gemv's 4 KB over 16 rows overflows L1), and for the lines 2 KB on into L2,
// so that more requests are in flight than L1's miss buffers allow (docs/performance.md, Prefetching). The
// addresses may lie past the end of the weight.
template <int kRunBytes>
inline void prefetch_run(const uint8_t* run) {
  const auto at = reinterpret_cast<uintptr_t>(run);
  prefetch_lines<kRunBytes, Cache::L1>(at + 2 * kRunBytes);
  prefetch_lines<kRunBytes, Cache::L2>(at + 2048);
}

// Nibbles (0-15 a byte) to panel codes through a table of 16 levels: level + 128.
inline __m512i level_codes(const int8_t (&levels)[16], __m512i nibbles) {
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(levels));
  return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_xor_si128(table, _mm_set1_epi8(static_cast<char>(0x80)))),
                             nibbles);
}

template <class F>
concept PackedFields = requires { F::kBits; };
template <class F>
concept FoldedFields = PackedFields<F> && F::kBits == 2 && requires(const uint8_t* p) { F::multipliers(p); };
template <class F>
concept LaneFactors = requires(const uint8_t* p) { F::factor_piece(p, 0); };

// The f16 halves (h = 0 low, 1 high) of 16 words, as floats.
inline __m512 f16_lanes(__m512i words, int h) {
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h == 0 ? words : _mm512_srli_epi32(words, 16)));
}

// Per 16 values (s) of a run, a byte table in each 128-bit lane that maps field q of row 4L + j (byte 4j + q of
// lane L) to its panel code, 128 + factor * q: multipliers[l][s] is row l's factor.
inline void folding_tables(const int32_t (&multipliers)[kPanelRows][16], __m512i (&tables)[16]) {
  load_transposed(multipliers, tables);
  for (auto& t : tables) {
    const __m512i products = _mm512_mullo_epi32(t, _mm512_set1_epi32(0x03020100));  // 0, f, 2f, 3f: no carries
    t = _mm512_add_epi32(products, _mm512_set1_epi32(static_cast<int>(0x80808080u)));
  }
}
// Fields (0-3 a byte) of a chunk through its table: byte b looks up entry 4 (b / 4 % 4) + field.
inline __m512i folded_codes(__m512i table, __m512i fields) {
  const __m512i row_in_lane = _mm512_set_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0, 0x0c0c0c0c, 0x08080808,
                                               0x04040404, 0, 0x0c0c0c0c, 0x08080808, 0x04040404, 0, 0x0c0c0c0c,
                                               0x08080808, 0x04040404, 0);
  return _mm512_shuffle_epi8(table, _mm512_or_si512(fields, row_in_lane));
}

// The chunk of field f of code dword c for 4-bit codes stored as 16 bytes a 32-value group (byte j: values j and
// 16 + j): dword c holds bytes 4 (c % 4)..4 (c % 4) + 3 of group c / 4.
constexpr int nibble_group_chunk(int c, int f) { return 8 * (c / 4) + 4 * f + c % 4; }

template <class F>
PanelShape decode_panel(const uint8_t* w, size_t row_bytes, int rows, int64_t k, uint8_t* codes, float* scales,
                        float* offsets, const uint8_t* next, size_t ahead) {
  constexpr int kRun = 256;
  constexpr int kBlockBytes = F::kRunBytes / (kRun / F::kBlockValues);
  // Decoded formats: one run of every row, by 64-value chunk, the rows past `rows` zero (unused by the others).
  constexpr int kDecoded = PackedFields<F> ? 1 : 4;
  alignas(64) int8_t q[kDecoded][kPanelRows][64];
  alignas(64) float sc[kPanelRows][kRun / 16];
  alignas(64) float off[kPanelRows][kRun / 16];
  alignas(64) int32_t multipliers[kPanelRows][kRun / 16];  // folding formats only
  alignas(16) uint8_t pieces[2][kPanelRows][16];           // LaneFactors formats only
  // Where each row's run is: past `rows`, zero bytes; in a row's last run, which may hold fewer blocks, a
  // zero-padded copy (zero blocks, zero scales).
  alignas(64) static constexpr uint8_t kZeroRun[F::kRunBytes] = {};
  alignas(64) uint8_t padded[kPanelRows][F::kRunBytes];
  const uint8_t* run[kPanelRows];
  for (int l = rows; l < kPanelRows; ++l) {
    run[l] = kZeroRun;
    if constexpr (!PackedFields<F>) {
      for (auto& chunk : q) std::memset(chunk[l], 0, sizeof chunk[l]);
    }
    std::memset(sc[l], 0, sizeof sc[l]);
    if constexpr (F::kOffsets) std::memset(off[l], 0, sizeof off[l]);
    if constexpr (LaneFactors<F>) {
      for (auto& piece : pieces) std::memset(piece[l], 0, sizeof piece[l]);
    }
    if constexpr (FoldedFields<F>) std::memset(multipliers[l], 0, sizeof multipliers[l]);
  }
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));  // q + 128: the panel's unsigned codes
  // The shape, from the bits of each row's scales and offsets: a pair differs where a sub-block's bits differ
  // from its neighbour's, a run where any differs from its first (the padded rows and blocks are zero: they
  // agree, with no offset).
  __m512i scale_split = _mm512_setzero_si512(), offset_split = _mm512_setzero_si512();
  __m512i block_split = _mm512_setzero_si512(), offset = _mm512_setzero_si512();
  const auto differ = [](__m512i split, __m512i bits) {
    return _mm512_ternarylogic_epi32(split, bits, _mm512_maskz_shuffle_epi32(0xffff, bits, _MM_PERM_CDAB), 0xf6);
  };
  L2Stream stream(next, ahead, (k + kRun - 1) / kRun);
  for (int64_t i0 = 0; i0 < k; i0 += kRun) {
    stream.step();
    const int values = static_cast<int>(std::min<int64_t>(kRun, k - i0));
    const size_t at = static_cast<size_t>(i0 / F::kBlockValues) * kBlockBytes;
    for (int l = 0; l < rows; ++l) {
      const uint8_t* p = w + l * row_bytes + at;
      prefetch_run<F::kRunBytes>(p);
      if (values < kRun) {
        std::memset(padded[l], 0, sizeof padded[l]);
        std::memcpy(padded[l], p, static_cast<size_t>(values / F::kBlockValues) * kBlockBytes);
        p = padded[l];
      }
      run[l] = p;
      __m512 s = _mm512_setzero_ps(), o = _mm512_setzero_ps();
      if constexpr (PackedFields<F>) {
        if constexpr (!LaneFactors<F>) F::factors(p, s, o);
        if constexpr (FoldedFields<F>) _mm512_store_si512(multipliers[l], F::multipliers(p));
      } else {
        __m512i v[kDecoded];
        F::decode(p, v, s, o);
        for (int c = 0; c < kDecoded; ++c) _mm512_store_si512(q[c][l], v[c]);
      }
      if constexpr (LaneFactors<F>) {
        for (int i = 0; i < F::kFactorPieces; ++i) {
          _mm_store_si128(reinterpret_cast<__m128i*>(pieces[i][l]), F::factor_piece(p, i));
        }
        continue;
      }
      _mm512_store_ps(sc[l], s);
      const __m512i bits = _mm512_castps_si512(s);
      scale_split = differ(scale_split, bits);
      block_split = _mm512_ternarylogic_epi32(block_split, bits, _mm512_broadcastd_epi32(_mm512_castsi512_si128(bits)),
                                              0xf6);
      if constexpr (F::kOffsets) {
        _mm512_store_ps(off[l], o);
        offset_split = differ(offset_split, _mm512_castps_si512(o));
        offset = _mm512_or_si512(offset, _mm512_castps_si512(o));
      }
    }
    uint8_t* run_codes = codes + i0 / 4 * 64;
    if constexpr (PackedFields<F>) {
      const __m512i field = _mm512_set1_epi8(static_cast<char>((1 << F::kBits) - 1));
      [[maybe_unused]] __m512i tables[16];
      if constexpr (FoldedFields<F>) folding_tables(multipliers, tables);
      // Unrolled, so that chunk indices are constants and the words stay in registers.
      #pragma GCC unroll 16
      for (int i = 0; i < 2 * F::kBits; ++i) {
        __m512i words[4];
        transpose_pieces([&](int l) { return F::piece(run[l], i); }, words);
        #pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          #pragma GCC unroll 4
          for (int f = 0; f < 8 / F::kBits; ++f) {
            const int c = F::chunk(4 * i + j, f);
            const __m512i shifted = f == 0 ? words[j] : _mm512_srli_epi16(words[j], F::kBits * f);
            const __m512i bits = F::kBits == 8 ? shifted : _mm512_and_si512(shifted, field);
            if (4 * c >= values) continue;
            if constexpr (FoldedFields<F>) {
              store_chunk(run_codes + 64 * c, folded_codes(tables[c / 4], bits));
            } else {
              store_chunk(run_codes + 64 * c, F::codes(bits));
            }
          }
        }
      }
    } else {
      for (int c = 0; c < values / 64 + (values % 64 != 0); ++c) {
        store_transposed(q[c], std::min(16, (values - 64 * c) / 4), flip, run_codes + 16 * 64 * c);
      }
    }
    const int subs = values / 16;
    if constexpr (LaneFactors<F>) {
      __m512i words[F::kFactorPieces][4];
      for (int i = 0; i < F::kFactorPieces; ++i) transpose_pieces([&](int l) { return pieces[i][l]; }, words[i]);
      __m512 s[8], o[8];
      F::lane_factors(words, s, o);
      // Per 32 values: both sub-blocks of 16 take them, so the splits stay zero.
      for (int b = 0; 2 * b < subs; ++b) {
        for (int h = 2 * b; h < std::min(2 * b + 2, subs); ++h) {
          _mm512_store_ps(scales + i0 + 16 * h, s[b]);
          if constexpr (F::kOffsets) _mm512_store_ps(offsets + i0 + 16 * h, o[b]);
        }
        if constexpr (F::kOffsets) offset = _mm512_or_si512(offset, _mm512_castps_si512(o[b]));
      }
    } else {
      store_transposed(sc, subs, _mm512_setzero_si512(), scales + i0);
      if constexpr (F::kOffsets) store_transposed(off, subs, _mm512_setzero_si512(), offsets + i0);
    }
  }
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
  // (Formats with lane factors have a scale per 32 values.)
  return {.scale_pairs = _mm512_test_epi32_mask(scale_split, scale_split) == 0,
          .offset_pairs = _mm512_test_epi32_mask(offset_split, offset_split) == 0,
          .asymmetric = _mm512_test_epi32_mask(offset, magnitude) != 0,
          .scale_blocks = !LaneFactors<F> && k % kRun == 0 && _mm512_test_epi32_mask(block_split, block_split) == 0};
}

}  // namespace
}  // namespace ggufmm::kernels::avx512
