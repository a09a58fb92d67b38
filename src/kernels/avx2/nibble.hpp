// AVX2 / AVX-VNNI steps for 4-bit formats that store a group of 32 values as 16 bytes, value j in the low nibble of
// byte j and value j + 16 in its high nibble, each code indexing a table of 16 signed levels (IQ4_NL, IQ4_XS).
//
// The group's 16 code bytes go to both 128-bit lanes; shifting the high lane's down a nibble and masking gives the
// 32 codes in value order, the activations' order, so no activation layout is needed. Two byte shuffles look up
// the levels' magnitudes and the signed levels; the signs move onto the activations (the levels reach -127, and
// magnitudes up to 127 keep the plain AVX2 pair sums within int16).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx2/dot.hpp"
#include "kernels/avx2/rows.hpp"
#include "kernels/kernels.hpp"
#include "kernels/level.hpp"
#include "kernels/x86/common.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// One group's weights: |level| and level per value.
struct NibbleGroup {
  __m256i magnitude;
  __m256i level;
};

struct NibbleTables {
  __m256i magnitude;
  __m256i level;
};

inline NibbleTables nibble_tables(const int8_t (&levels)[16]) {
  const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(levels));
  return {_mm256_broadcastsi128_si256(_mm_abs_epi8(l)), _mm256_broadcastsi128_si256(l)};
}

inline NibbleGroup decode_nibble_group(const NibbleTables& t, const uint8_t* codes) {
  const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
  const __m256i index =
      _mm256_and_si256(_mm256_srlv_epi64(both, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0f));
  return {_mm256_shuffle_epi8(t.magnitude, index), _mm256_shuffle_epi8(t.level, index)};
}

// Adds the group's products with values [i, i + 32) of every activation row, row r scaled by scale[r * stride].
template <int NR>
inline void dot_nibble_group(const NibbleGroup& w, const Activations& x, int64_t i, const float* scale, int stride,
                             __m256 (&acc)[NR]) {
  for (int r = 0; r < NR; ++r) {
    const __m256i isum = dot_unsigned(_mm256_setzero_si256(), w.magnitude, _mm256_sign_epi8(load_act(x, r, i), w.level));
    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_broadcast_ss(scale + r * stride), acc[r]);
  }
}

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
