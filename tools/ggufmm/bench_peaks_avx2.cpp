// Peak loops for AVX2 with FMA; this file is compiled with -mavx2 -mfma.
#include <immintrin.h>

#include "bench_peak_chains.hpp"
#include "bench_peaks.hpp"

namespace ggufmm::cli::peaks::avx2 {
namespace {

// Independent accumulators: enough to cover the instructions' latency, few enough to leave registers (of 16)
// for the operands.
constexpr int kChains = 8;

double int8_dots(int64_t iterations) {
  const __m256i b = _mm256_set1_epi8(1), ones = _mm256_set1_epi16(1);
  __m256i a = _mm256_set1_epi8(1);
  return run_chains<int32_t, kChains>(
      iterations, [](int c) { return _mm256_set1_epi32(c); },
      [&](__m256i v) {
        // The products do not depend on the accumulator: hiding `a` keeps them from being hoisted out of the loop.
        __asm__ volatile("" : "+x"(a));
        return _mm256_add_epi32(v, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
      });
}

double f32_fmas(int64_t iterations) {
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  return run_chains<float, kChains>(
      iterations, [](int c) { return _mm256_set1_ps(static_cast<float>(c)); },
      [&](__m256 v) { return _mm256_fmadd_ps(v, a, b); });
}

}  // namespace

// vpmaddubsw does 32 multiply-adds of u8 by s8 (vpmaddwd and vpaddd only widen and accumulate them); vfmadd 8.
const PeakLoop int8{kChains * 32 * 2, int8_dots};
const PeakLoop f32{kChains * 8 * 2, f32_fmas};

}  // namespace ggufmm::cli::peaks::avx2
