// Loading weights as they stream from memory. A 512-bit load that straddles two cache lines not yet in L1 slows
// the stream: on Zen 5 one core read the Q4_0 layout (two such loads per 72 bytes) at 19-20 GB/s, the same bytes
// with 128- or 256-bit loads at 25, as fast as aligned 512-bit loads. So the kernels read weight blocks, which lie
// at any offset from a line, with loads of 32 bytes or less: two 256-bit loads cost one more shuffle than a
// 512-bit one, and nothing in cache.
#pragma once

#include <immintrin.h>

namespace ggufmm::kernels::avx512 {
namespace {

// The 64 weight bytes at p.
inline __m512i load_weights_512(const void* p) {
  const auto* q = static_cast<const __m256i*>(p);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(q)), _mm256_loadu_si256(q + 1), 1);
}

}  // namespace
}  // namespace ggufmm::kernels::avx512
