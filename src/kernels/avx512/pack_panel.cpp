// Packing 32 values of 16 weight rows into panel chunks, AVX-512: rows l and l + 8 share a register (one per
// 256-bit half), so one 8 x 8 transpose of 32-bit words within the halves leaves register c holding word c of
// rows 0-7 and then of rows 8-15: chunk c, whole. (Zero-masked forms throughout: GCC 12's unmasked ones start from
// self-initialized "undefined" registers, which -Werror=uninitialized rejects.)
#include <immintrin.h>

#include "kernels/avx512/kernels.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

void pack(const int8_t* const (&rows)[kPanelRows], uint8_t* chunks) {
  __m512i r[8], a[8], b[8];
  for (int l = 0; l < 8; ++l) {
    const __m512i lo = _mm512_maskz_loadu_epi64(0x0f, rows[l]);
    r[l] = _mm512_mask_broadcast_i64x4(lo, 0xf0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[l + 8])));
  }
  for (int i = 0; i < 8; i += 2) {
    a[i] = _mm512_maskz_unpacklo_epi32(0xffff, r[i], r[i + 1]);
    a[i + 1] = _mm512_maskz_unpackhi_epi32(0xffff, r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    for (int j = 0; j < 2; ++j) {
      b[i + j] = _mm512_maskz_unpacklo_epi64(0xff, a[i + j], a[i + j + 2]);
      b[i + j + 2] = _mm512_maskz_unpackhi_epi64(0xff, a[i + j], a[i + j + 2]);
    }
  }
  // b[j] (j < 4) holds, lane by lane, words w and w + 4 of rows 0-3, then of rows 8-11, with w = (0, 2, 1, 3)[j];
  // b[j + 4] the same of rows 4-7 and 12-15. Chunk w is lanes 0 of b[j], b[j + 4], then lanes 2; chunk w + 4
  // lanes 1 and 3.
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  constexpr int kWord[4] = {0, 2, 1, 3};
  const auto store = [&](int c, __m512i v) {
    _mm512_storeu_si512(chunks + c * 64, _mm512_xor_si512(_mm512_maskz_shuffle_i64x2(0xff, v, v, 0xd8), flip));
  };
  for (int j = 0; j < 4; ++j) {
    store(kWord[j], _mm512_maskz_shuffle_i64x2(0xff, b[j], b[j + 4], 0x88));     // lanes 0, 2 of each, ...
    store(kWord[j] + 4, _mm512_maskz_shuffle_i64x2(0xff, b[j], b[j + 4], 0xdd));  // ... and lanes 1, 3
  }
}

}  // namespace

const PackFn pack_panel = pack;

}  // namespace ggufmm::kernels::avx512
