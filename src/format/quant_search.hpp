// Shared by the block formats: the strip layout most of them pack small integers in, the guarded conversions the
// quantizers use, and the scale searches behind ggml's reference quantizers. The searches perform ggml's float
// operations in ggml's order, so that our quantizers produce ggml's blocks.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>

namespace ggufmm::format {

// Bits-wide integers in strips: values 0..Stride-1 take the low bits of bytes 0..Stride-1, the next Stride values
// the next bits of the same bytes, and so on until those bytes are full; then the next Stride bytes.
template <int Bits, int Stride>
struct Strips {
  static constexpr int kPerByte = 8 / Bits;
  static constexpr unsigned kMask = (1u << Bits) - 1;

  static constexpr int byte(int i) { return Stride * (i / (Stride * kPerByte)) + i % Stride; }
  static constexpr int shift(int i) { return Bits * (i / Stride % kPerByte); }

  static int get(const uint8_t* bytes, int i) { return (bytes[byte(i)] >> shift(i)) & kMask; }

  // out[i] = get(bytes, i) for i < n (a multiple of Stride * kPerByte), in runs of Stride contiguous bytes that
  // compilers turn into vector shifts and masks.
  static void unpack(const uint8_t* bytes, int n, int8_t* out) {
    for (int base = 0; base < n; base += Stride * kPerByte) {
      const uint8_t* from = bytes + base / kPerByte;
      for (int s = 0; s < kPerByte; ++s) {
        for (int i = 0; i < Stride; ++i) out[base + s * Stride + i] = static_cast<int8_t>((from[i] >> (Bits * s)) & kMask);
      }
    }
  }

  // Stores bits [from, from + Bits) of values[0..n) into the n / kPerByte bytes.
  static void put(const uint8_t* values, int n, uint8_t* bytes, int from = 0) {
    std::fill_n(bytes, n / kPerByte, uint8_t{0});
    for (int i = 0; i < n; ++i) bytes[byte(i)] |= static_cast<uint8_t>(((values[i] >> from) & kMask) << shift(i));
  }
};

// Block scales are stored as binary16; saturating at its largest finite value keeps huge inputs from producing
// infinite scales, and so NaN (infinity times a zero level) when dequantized.
inline float saturate_fp16(float x) { return std::clamp(x, -65504.0f, 65504.0f); }

// C's truncating float -> int conversion, limited to [lo, hi] so that it is defined for every input (NaN gives lo).
inline int clamp_to_int(float x, int lo, int hi) {
  if (!(x > static_cast<float>(lo))) return lo;
  if (x >= static_cast<float>(hi)) return hi;
  return static_cast<int>(x);
}

// ggml's nearest_int: round half to even by adding 1.5 * 2^23 and reading the mantissa. That needs |x| < 2^22;
// beyond it (and for NaN, which gives 0) the result is clamped, and every caller clamps to its level range anyway.
inline int nearest_int(float x) {
  constexpr float kLimit = 4194303.0f;
  if (!(std::fabs(x) <= kLimit)) return x > 0 ? 4194303 : x < 0 ? -4194303 : 0;
  return static_cast<int>(std::bit_cast<uint32_t>(x + 12582912.0f) & 0x7fffffu) - 0x400000;
}

// The value of largest magnitude, with its sign (the first one on ties).
inline float signed_absmax(std::span<const float> x) {
  float max = 0, amax = 0;
  for (const float v : x) {
    if (std::fabs(v) > amax) {
      amax = std::fabs(v);
      max = v;
    }
  }
  return max;
}

// The searches take groups of at most 64 values.

// Symmetric levels: x[i] ~ scale * (levels[i] - nmax), levels in [0, 2 * nmax). Tries inverse scales around
// nmax / max and keeps the one whose least-squares scale (weights x^2) fits best. ggml's make_qx_quants (rmse 1).
float search_symmetric_scale(std::span<const float> x, int nmax, uint8_t* levels);

// Symmetric levels as above, refined one level at a time while that improves the weighted fit (weights x^2), for
// the 3-bit case where the grid is coarse. ggml's make_q3_quants with rmse.
float refine_symmetric_scale(std::span<const float> x, int nmax, uint8_t* levels);

// Affine levels: x[i] ~ scale * levels[i] - offset, levels in [0, nmax], offset >= 0. Tries steps + 1 grids of
// nmax + rmin + rdelta * s steps over [min(x, 0), max(x)], solves scale and offset by weighted least squares for
// each and keeps the one with the least weighted (absolute or squared) error. ggml's make_qkx2_quants.
struct AffineSearch {
  float rmin;
  float rdelta;
  int steps;
  bool absolute_error;
};
struct AffineFit {
  float scale;
  float offset;
};
AffineFit search_affine(std::span<const float> x, std::span<const float> weights, int nmax, const AffineSearch& search,
                        uint8_t* levels);

}  // namespace ggufmm::format
