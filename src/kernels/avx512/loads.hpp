// Loads at this level: weights as they stream from memory (load_weights_512), and the masked ends of activation
// rows (prefix_mask). A 512-bit load that straddles two cache lines not yet in L1 slows the stream, where 128- and
// 256-bit loads read as fast as aligned 512-bit ones (docs/performance.md, gemv drivers). So the kernels read weight
// blocks, which lie at any offset from a line, with loads of 32 bytes or less: two 256-bit loads cost one more
// shuffle than a 512-bit one, and nothing in cache.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ggufmm::kernels::avx512 {
namespace {

// The 64 weight bytes at p.
inline __m512i load_weights_512(const void* p) {
  const auto* q = static_cast<const __m256i*>(p);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(q)), _mm256_loadu_si256(q + 1), 1);
}

// The mask of the first n of 64 bytes (n may be negative or above 64): the end of an activation row, read with
// masked loads so that nothing past it is touched.
inline __mmask64 prefix_mask(int64_t n) {
  if (n <= 0) return 0;
  return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
}

}  // namespace
}  // namespace ggufmm::kernels::avx512
