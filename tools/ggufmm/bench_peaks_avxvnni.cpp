// The int8 peak loop for AVX-VNNI (the VEX-encoded vpdpbusd of AVX2-only CPUs); this file is compiled with
// -mavx2 -mavxvnni.
#include <immintrin.h>

#include "bench_peak_chains.hpp"
#include "bench_peaks.hpp"

namespace ggufmm::cli::peaks::avxvnni {
namespace {

// Independent accumulators: enough to cover vpdpbusd's latency on two ports, within the 16 registers.
constexpr int kChains = 10;

double int8_dots(int64_t iterations) {
  const __m256i a = _mm256_set1_epi8(1), b = _mm256_set1_epi8(1);
  return run_chains<int32_t, kChains>(
      iterations, [](int c) { return _mm256_set1_epi32(c); },
      [&](__m256i v) { return _mm256_dpbusd_avx_epi32(v, a, b); });
}

}  // namespace

// vpdpbusd on 256 bits does 32 multiply-adds of u8 by s8.
const PeakLoop int8{kChains * 32 * 2, int8_dots};

}  // namespace ggufmm::cli::peaks::avxvnni
