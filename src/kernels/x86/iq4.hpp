// Pieces of the IQ4_NL and IQ4_XS kernels that every x86 level shares. Included by the AVX-512 and AVX2 kernel
// files only: everything here has internal linkage, so each level compiles its own copy with its own flags (AVX2,
// F16C and BMI2 at least).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "format/blocks.hpp"
#include "kernels/kernels.hpp"
#include "kernels/level.hpp"
#include "kernels/prefetch.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// The 8 group scales d * l of an IQ4_XS block. Each l is stored as l + 32 in 6 bits: the low 4 in the nibbles of
// scales_l, the high 2 in pairs of scales_h; a bit deposit spreads both to one byte per group. Flipping bit 5 then
// gives l modulo 64, and copying bit 5 into bits 6-7 (times 6: 0x20 * 6 = 0xc0, no carry between bytes) extends
// its sign: 8 signed bytes without a vector subtraction.
inline __m256 iq4_xs_group_scales(const format::BlockIQ4_XS& b) {
  constexpr uint64_t kBit5 = 0x2020202020202020ull;
  uint32_t low;
  std::memcpy(&low, b.scales_l, sizeof low);
  const uint64_t stored = _pdep_u64(low, 0x0f0f0f0f0f0f0f0full) | _pdep_u64(b.scales_h, 0x3030303030303030ull);
  const uint64_t flipped = stored ^ kBit5;
  const uint64_t l = flipped | (flipped & kBit5) * 6;
  const __m256i levels = _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(l)));
  const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(b.d)));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(levels), d);
}

// The weight streams from memory: without help the hardware keeps too few lines in flight for one core to read
// at the machine's bandwidth while it computes. Prefetching a unit's lines this far ahead, in the order they are
// read, into L2 measured best. Successive units cover every line: the addresses they prefetch are at most 64
// bytes apart.
constexpr size_t kIQ4PrefetchDistance = 16384;
template <size_t UnitBytes>
inline void iq4_prefetch(const uint8_t* unit) {
  prefetch_lines<UnitBytes, Cache::L2>(reinterpret_cast<uintptr_t>(unit) + kIQ4PrefetchDistance);
}

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
