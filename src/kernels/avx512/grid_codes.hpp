// Codebooks in registers. A grid word assembled from scalar loads costs a load and about two shuffles (IQ2: a
// word of 8 values, 4 loads per 32 values; IQ3: 4 values, 8 loads). An entry's values fit 16 bits as level
// numbers instead: IQ3's 4 values on 8 levels, IQ2's 8 values on 3. vpermt2w looks up 32 entries among 64 in one
// instruction (a codebook of 64P entries takes P of them, and P - 1 blends chosen by bit tests in a tree, cheaper
// than a compare and a blend per part), and the codes widen to bytes in three or four instructions per 64 values.
// Against the scalar loads this wins for IQ3 and IQ2_XXS (256 entries), gemv and panels; for IQ2_XS (512 entries)
// in its panels and its gemv up to 3 rows, but from 4 rows the rows' own arithmetic wants the vector units the
// lookup takes, so there it keeps the loads. IQ2_S (1024 entries) and the IQ1 grids (2048) would take 16 and 32
// vpermt2w: they keep the loads (docs/performance.md, Codebook decoding).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/avx512/grid8.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// Level l of the L in `levels` whose value is `byte` (the last one if none is).
template <size_t L>
constexpr int level_of(uint8_t byte, const uint8_t (&levels)[L]) {
  int level = 0;
  while (level < static_cast<int>(L) - 1 && levels[level] != byte) ++level;
  return level;
}

// The 16-bit codes of a codebook of N entries, looked up 32 at a time: entry e's values (value v in byte v of a
// grid word, each one of the L levels) as level numbers, value v's at bit position(v).
template <size_t N>
struct CodeBook {
  static_assert(N >= 64 && ((N / 64) & (N / 64 - 1)) == 0);  // parts of 64 entries, a power of two
  alignas(64) uint16_t code[N]{};
  uint64_t level_bytes{};  // level l's value in byte l

  // Evaluated at compile time, so that the tables are constants, ready before any static initializer can call a
  // kernel.
  template <class Word, size_t L, class Position>
  constexpr CodeBook(const Word (&grid)[N], const uint8_t (&levels)[L], Position position) {
    for (size_t l = 0; l < L; ++l) level_bytes |= uint64_t{levels[l]} << 8 * l;
    for (size_t e = 0; e < N; ++e) {
      for (int v = 0; v < static_cast<int>(sizeof(Word)); ++v) {
        const int level = level_of(static_cast<uint8_t>(grid[e] >> 8 * v), levels);
        code[e] |= static_cast<uint16_t>(level << position(v));
      }
    }
  }

  // The codes of 32 entries, idx holding their indices as words (bits above the index are ignored).
  __m512i lookup(__m512i idx) const { return lookup_in<0, N / 64>(idx); }

  // Looked up in entries 64 First.. of Parts parts of 64: in each part by the low 6 bits of the index, then halves
  // chosen by one higher bit each.
  template <size_t First, size_t Parts>
  __m512i lookup_in(__m512i idx) const {
    if constexpr (Parts == 1) {
      const auto* t = reinterpret_cast<const __m512i*>(code) + 2 * First;
      return _mm512_permutex2var_epi16(_mm512_load_si512(t), idx, _mm512_load_si512(t + 1));
    } else {
      const __mmask32 upper = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(static_cast<short>(64 * Parts / 2)));
      return _mm512_mask_mov_epi16(lookup_in<First, Parts / 2>(idx), upper,
                                   lookup_in<First + Parts / 2, Parts / 2>(idx));
    }
  }
};

// IQ3: entries of 4 values on 8 levels, the level numbers of values 0-3 in nibbles 0, 2, 1 and 3, so that with
// the code doubled into a dword and its high word shifted right by 4, byte v holds value v's level in its low
// nibble (and bit 7 clear, as vpshufb needs).
template <size_t N>
struct Grid4Codes : CodeBook<N> {
  constexpr Grid4Codes(const uint32_t (&grid)[N], const uint8_t (&levels)[8])
      : CodeBook<N>(grid, levels, [](int v) { return 4 * (v % 2 * 2 + v / 2); }) {}

  // The 64 values of entries 16H..16H+15 of a lookup.
  template <int H>
  __m512i values(__m512i codes) const {
    const __m512i doubled = _mm512_permutexvar_epi16(epi16_pattern([](int w) { return 16 * H + w / 2; }), codes);
    const __m512i levels = _mm512_broadcast_i32x4(_mm_cvtsi64_si128(static_cast<long long>(this->level_bytes)));
    return _mm512_shuffle_epi8(levels, _mm512_srlv_epi16(doubled, epi16_pattern([](int w) { return w % 2 * 4; })));
  }
};

// IQ2: entries of 8 values on 3 levels, 2 bits each: value v at bit v (v even) or v + 7 (v odd), so that word w
// of an entry's 4 copies, shifted right by 2w, holds value 2w in bits 0-1 of its low byte and value 2w + 1 in
// bits 0-1 of its high byte.
template <size_t N>
struct Grid8Codes : CodeBook<N> {
  constexpr Grid8Codes(const uint64_t (&grid)[N], const uint8_t (&levels)[3])
      : CodeBook<N>(grid, levels, [](int v) { return v % 2 == 0 ? v : v + 7; }) {}

  // The 64 values of entries 8C..8C+7 of a lookup.
  template <int C>
  __m512i values(__m512i codes) const {
    const __m512i copies = _mm512_permutexvar_epi16(epi16_pattern([](int w) { return 8 * C + w / 4; }), codes);
    const __m512i fields = _mm512_srlv_epi16(copies, epi16_pattern([](int w) { return w % 4 * 2; }));
    return _mm512_shuffle_epi8(_mm512_set1_epi32(static_cast<int>(this->level_bytes)),
                               _mm512_and_si512(fields, _mm512_set1_epi8(3)));
  }
};

}  // namespace
}  // namespace ggufmm::kernels::avx512
