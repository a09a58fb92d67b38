// Output rows finished 16 at a time: a gemv driver's accumulators (a vector of lane sums per output row and
// activation row) summed across lanes for 16 output rows at once, and stored with what lies there before. The
// codebook, K-quant, nibble and float drivers use it; the group driver (groups.hpp) says why it does not.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ggufmm::kernels::avx512 {
namespace {

// The 16 lanes of each of 16 vectors summed: lane i of the result is the sum of v[i]. Four rounds of adding
// halves, 46 instructions, where a sum per vector takes about 8 in one chain of dependent adds.
inline __m512 sums_of_16(const __m512 (&v)[16]) {
  __m512 a[8], b[4], c[2];
  // a[i]: v[i] folded to 8 lanes (128-bit lanes 0-1), v[i + 8] (lanes 2-3).
  for (int i = 0; i < 8; ++i) {
    a[i] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(0xffff, v[i], v[i + 8], 0x44),
                         _mm512_maskz_shuffle_f32x4(0xffff, v[i], v[i + 8], 0xee));
  }
  // b[i]: 128-bit lane j folds vector i, i + 8, i + 4, i + 12 to 4 lanes.
  for (int i = 0; i < 4; ++i) {
    b[i] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(0xffff, a[i], a[i + 4], 0x88),
                         _mm512_maskz_shuffle_f32x4(0xffff, a[i], a[i + 4], 0xdd));
  }
  // c[i]: each 128-bit lane two vectors (of b[i]'s and b[i + 2]'s) folded to 2 lanes.
  for (int i = 0; i < 2; ++i) {
    const __m512d lo = _mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(b[i]), _mm512_castps_pd(b[i + 2]));
    const __m512d hi = _mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(b[i]), _mm512_castps_pd(b[i + 2]));
    c[i] = _mm512_add_ps(_mm512_castpd_ps(lo), _mm512_castpd_ps(hi));
  }
  // Lane 4j + e holds the sum of vector 0, 2, 1, 3 (e = 0..3) plus 8, 4 or 12 for 128-bit lane j = 1, 2, 3.
  const __m512 d = _mm512_add_ps(_mm512_maskz_shuffle_ps(0xffff, c[0], c[1], 0x88),
                                 _mm512_maskz_shuffle_ps(0xffff, c[0], c[1], 0xdd));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15), d);
}

// Output rows from their 16 lane sums, times `factor`, plus what `prior` holds there (the residual, or y itself
// for a later slice of k), 16 rows at a time (sums_of_16): added up one row at a time, the chains of dependent adds
// at the end of every row slowed the codebook and K-quant gemv at one to three activation rows. put() takes output
// rows in order, each the one after the last: a batch is stored from its first row on.
template <int NR>
class RowSums {
 public:
  RowSums(float* y, int64_t ldy, const float* prior, float factor = 1.0f)
      : y_(y), ldy_(ldy), prior_(prior), factor_(factor) {}
  void put(int64_t o, const __m512 (&acc)[NR]) {
    if (count_ == 0) first_ = o;
    for (int r = 0; r < NR; ++r) lanes_[r][count_] = acc[r];
    if (++count_ == 16) flush();
  }
  void flush() {
    if (count_ == 0) return;
    for (int i = count_; i < 16; ++i) {
      for (int r = 0; r < NR; ++r) lanes_[r][i] = _mm512_setzero_ps();
    }
    const auto rows = static_cast<__mmask16>((1u << count_) - 1);
    for (int r = 0; r < NR; ++r) {
      const int64_t at = r * ldy_ + first_;
      const __m512 prior = prior_ ? _mm512_maskz_loadu_ps(rows, prior_ + at) : _mm512_setzero_ps();
      _mm512_mask_storeu_ps(y_ + at, rows, _mm512_fmadd_ps(sums_of_16(lanes_[r]), _mm512_set1_ps(factor_), prior));
    }
    count_ = 0;
  }

 private:
  float* y_;
  int64_t ldy_;
  const float* prior_;
  float factor_;
  __m512 lanes_[NR][16];
  int count_ = 0;
  int64_t first_ = 0;
};

}  // namespace
}  // namespace ggufmm::kernels::avx512
