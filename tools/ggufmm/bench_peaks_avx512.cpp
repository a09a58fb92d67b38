// Peak loops for AVX-512 with VNNI and BF16; this file is compiled with those instruction sets.
#include <immintrin.h>

#include "bench_peak_chains.hpp"
#include "bench_peaks.hpp"

namespace ggufmm::cli::peaks::avx512 {
namespace {

// Independent accumulators: enough to keep the ports busy through each instruction's latency.
constexpr int kChains = 12;

double int8_dots(int64_t iterations) {
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(1);
  return run_chains<int32_t, kChains>(
      iterations, [](int c) { return _mm512_set1_epi32(c); },
      [&](__m512i v) { return _mm512_dpbusd_epi32(v, a, b); });
}

double bf16_dots(int64_t iterations) {
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512bh a = _mm512_cvtne2ps_pbh(half, half);
  return run_chains<float, kChains>(
      iterations, [](int c) { return _mm512_set1_ps(static_cast<float>(c)); },
      [&](__m512 v) { return _mm512_dpbf16_ps(v, a, a); });
}

double f32_fmas(int64_t iterations) {
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  return run_chains<float, kChains>(
      iterations, [](int c) { return _mm512_set1_ps(static_cast<float>(c)); },
      [&](__m512 v) { return _mm512_fmadd_ps(v, a, b); });
}

}  // namespace

// Per instruction: vpdpbusd does 64 multiply-adds of u8 by s8, vdpbf16ps 32 of bf16 pairs, vfmadd 16 of f32.
const PeakLoop int8{kChains * 64 * 2, int8_dots};
const PeakLoop bf16{kChains * 32 * 2, bf16_dots};
const PeakLoop f32{kChains * 16 * 2, f32_fmas};

}  // namespace ggufmm::cli::peaks::avx512
