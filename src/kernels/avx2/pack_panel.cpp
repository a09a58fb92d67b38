// Packing 32 values of 16 weight rows into panel chunks, AVX2: each half of the rows (8 rows of 8 words) is an
// 8 x 8 transpose of 32-bit words, after which register c holds word c of the 8 rows: half of chunk c.
#include <immintrin.h>

#include "kernels/avx2/kernels.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// r[l] holds the 8 words of row l; afterwards r[c] holds word c of rows 0-7.
inline void transpose8(__m256i (&r)[8]) {
  __m256i a[8], b[8];
  for (int i = 0; i < 8; i += 2) {
    a[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);  // words 0, 1 (and 4, 5) of rows i, i + 1 interleaved
    a[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    for (int j = 0; j < 2; ++j) {
      b[i + j] = _mm256_unpacklo_epi64(a[i + j], a[i + j + 2]);
      b[i + j + 2] = _mm256_unpackhi_epi64(a[i + j], a[i + j + 2]);
    }
  }
  // b[i..i+3] hold words (0, 4), (2, 6), (1, 5), (3, 7) of rows i..i+3: the 128-bit halves pair them up.
  constexpr int kWord[4] = {0, 2, 1, 3};
  for (int j = 0; j < 4; ++j) {
    r[kWord[j]] = _mm256_permute2x128_si256(b[j], b[j + 4], 0x20);
    r[kWord[j] + 4] = _mm256_permute2x128_si256(b[j], b[j + 4], 0x31);
  }
}

void pack(const int8_t* const (&rows)[kPanelRows], uint8_t* chunks) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int half = 0; half < 2; ++half) {
    __m256i r[8];
    for (int l = 0; l < 8; ++l) r[l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[8 * half + l]));
    transpose8(r);
    for (int c = 0; c < 8; ++c) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(chunks + c * 64 + 32 * half), _mm256_xor_si256(r[c], flip));
    }
  }
}

}  // namespace

const PackFn pack_panel = pack;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
