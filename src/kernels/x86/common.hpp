// Helpers whose work does not depend on the vector width, shared by the AVX2 (and AVX-VNNI) and AVX-512 kernels:
// f16 scalars, the IQ2 formats' unit scale, sign completion, and constant index vectors. Each level compiles its
// own copy with its own flags (namespace GGUFMM_LEVEL, internal linkage), so the copies never meet at link time.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/level.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

inline float half(uint16_t h) { return _cvtsh_ss(h); }

// The f16 bits at p, which need not be aligned.
inline uint16_t load_half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return h;
}

// The float value of scale 1 for the IQ2 formats: d * (s + 1/2) / 4 is d / 8 * (2s + 1).
inline __m256 eighth_of_half(uint16_t d) {
  return _mm256_mul_ps(_mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(d))), _mm256_set1_ps(0.125f));
}

// 7 stored sign bits per run (bits 0-6 of each byte, bit 7 clear) made whole: the quantizer keeps the count of
// negative values in a run even, so bit 7 is the parity of the others (looked up per nibble).
inline __m256i complete_signs(__m256i signs7) {
  const __m256i odd = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0, 0, -128,
                                       -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  const __m256i lo = _mm256_shuffle_epi8(odd, _mm256_and_si256(signs7, nibble));
  const __m256i hi = _mm256_shuffle_epi8(odd, _mm256_and_si256(_mm256_srli_epi16(signs7, 4), nibble));
  return _mm256_or_si256(signs7, _mm256_xor_si256(lo, hi));
}

// A constant vector of N elements (shuffle and permute indices, byte tables), aligned for one vector load.
template <class T, int N>
struct IndexVector {
  alignas(N * sizeof(T)) T v[N];
};

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
