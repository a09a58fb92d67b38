// The IQ3 codebooks in registers. A grid word assembled from scalar loads costs a load and about two shuffles,
// 16 of each per chunk of 64 values; an entry's 4 values on 8 levels fit 16 bits instead, vpermt2w looks up 32
// entries among 64 in one instruction (a codebook of 64P entries takes P of them, and P - 1 blends chosen by bit
// tests in a tree: a compare and a blend per part measured 0.85 to 0.95 times as fast for IQ3_S), and the codes
// widen to bytes in three instructions per chunk: a word permutation that doubles each code, a shift per word, a
// vpshufb of the levels. (The IQ2 grids, 8 values on 3 levels, fit 16 bits too, but half as many grid loads per
// chunk were cheaper than the lookup: IQ2_XS's gemv ran 0.8 times as fast with it.)
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/avx512/gemv.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// A codebook of N entries of 4 values on 8 levels as 16-bit codes: the level numbers of values 0-3 in nibbles 0,
// 2, 1 and 3, so that with the code doubled into a dword and its high word shifted right by 4, byte v holds value
// v's level in its low nibble (and bit 7 clear, as vpshufb needs).
template <size_t N>
struct GridCodes {
  static_assert(N >= 64 && ((N / 64) & (N / 64 - 1)) == 0);  // parts of 64 entries, a power of two
  alignas(64) uint16_t code[N];
  uint64_t level_bytes;  // level l's value in byte l

  // grid[e] holds value v of entry e in byte v, each byte one of levels. Evaluated at compile time, so that the
  // tables are constants, ready before any static initializer can call a kernel.
  constexpr GridCodes(const uint32_t (&grid)[N], const uint8_t (&levels)[8]) : code{}, level_bytes{} {
    for (int l = 0; l < 8; ++l) level_bytes |= uint64_t{levels[l]} << 8 * l;
    for (size_t e = 0; e < N; ++e) {
      for (int v = 0; v < 4; ++v) {
        const auto byte = static_cast<uint8_t>(grid[e] >> 8 * v);
        int level = 0;
        while (level < 7 && levels[level] != byte) ++level;
        code[e] |= static_cast<uint16_t>(level << 4 * (v % 2 * 2 + v / 2));
      }
    }
  }

  // The codes of 32 entries, idx holding their indices (below N) as words.
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

  // The 64 values of entries 16H..16H+15 of a lookup.
  template <int H>
  __m512i values(__m512i codes) const {
    const __m512i doubled = _mm512_permutexvar_epi16(epi16_pattern([](int w) { return 16 * H + w / 2; }), codes);
    const __m512i levels = _mm512_broadcast_i32x4(_mm_cvtsi64_si128(static_cast<long long>(level_bytes)));
    return _mm512_shuffle_epi8(levels, _mm512_srlv_epi16(doubled, epi16_pattern([](int w) { return w % 2 * 4; })));
  }
};

}  // namespace
}  // namespace ggufmm::kernels::avx512
