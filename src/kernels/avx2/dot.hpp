// The int8 dot products of this level, compiled twice: plain AVX2 sums pairs of u8 x s8 products in int16
// (vpmaddubsw) before widening them, AVX-VNNI has the 4-product dot product as one instruction (vpdpbusd).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/level.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// Whether this copy is the AVX-VNNI one.
#if defined(__AVXVNNI__)
constexpr bool kVnni = true;
#else
constexpr bool kVnni = false;
#endif

// Sums of 4 products of unsigned weight bytes and signed activation bytes, in 8 int32 lanes, added to acc.
inline __m256i dot_unsigned(__m256i acc, __m256i w_u8, __m256i xq) {
#if defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(acc, w_u8, xq);
#else
  // Pairs of u8 x s8 products fit int16 as long as the weight bytes stay at or below 128.
  const __m256i pairs = _mm256_maddubs_epi16(w_u8, xq);
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
#endif
}

// +1 or -1 per byte from 32 sign bits (bit j set: byte j negative), as the second operand of _mm256_sign_epi8.
inline __m256i plus_minus_one(uint32_t bits) {
  const __m256i byte_of_bit = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
  const __m256i each = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), byte_of_bit);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
  return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(each, bit), bit), _mm256_set1_epi8(1));
}

// Odd integer scales (< 2^15, one per lane) in the form scaled_dot multiplies by.
inline __m256i scale_words(__m256i odd) {
#if defined(__AVXVNNI__)
  return odd;  // times a 4-product sum held in the low word (the high word is its sign)
#else
  return _mm256_or_si256(odd, _mm256_slli_epi32(odd, 16));  // times each of the two 2-product sums
#endif
}

// Per lane: the sum of 4 products of unsigned weight bytes and signed activation bytes, less `offset` times the
// 4 activations, times the lane's scale (from scale_words). Valid while such a 4-product sum fits int16.
inline __m256i scaled_dot(__m256i w_u8, __m256i xq, __m256i scale, int offset = 0) {
#if defined(__AVXVNNI__)
  __m256i dot = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w_u8, xq);
  if (offset) dot = _mm256_sub_epi32(dot, _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(static_cast<char>(offset)), xq));
#else
  __m256i dot = _mm256_maddubs_epi16(w_u8, xq);
  if (offset) dot = _mm256_sub_epi16(dot, _mm256_maddubs_epi16(_mm256_set1_epi8(static_cast<char>(offset)), xq));
#endif
  return _mm256_madd_epi16(dot, scale);
}

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
