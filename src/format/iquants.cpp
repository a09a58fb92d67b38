// The IQ formats. The decoders give each block's exact integer form (Int8Block), from which dequantization
// reproduces ggml's float results bit for bit; the IQ4 quantizers search the scale the way ggml's do (without
// importance weights).
#include "format/iquants.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "format/blocks.hpp"
#include "format/fp16.hpp"
#include "format/iq_tables.hpp"
#include "format/nibble_codebook.hpp"
#include "format/quant_search.hpp"
#include "format/swar.hpp"

namespace ggufmm::format {
namespace {

// The IQ super-blocks are 8 groups of 32 values; the codebook formats split each group into 4 runs of 8.
constexpr int kGroups = kQK_K / 32;
constexpr int kRunsPerGroup = 4;

// Blocks sit at 2-byte aligned addresses, so wider words are read through memcpy.
uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A run of an IQ2 or IQ3 format: 8 grid magnitudes, one sign bit per value, one scale. ggml multiplies
// scale * magnitude by -1 where the sign bit is set, which equals scale * (-magnitude) exactly.
struct SignedRun {
  float scale;
  uint64_t magnitudes;
  unsigned signs;

  // -m is (m ^ 0xff) + 1, so a byte mask of the signs negates all 8 at once.
  void write(int8_t* q) const {
    const uint64_t negative = swar::byte_mask(signs);
    swar::store(q, swar::add_bytes(magnitudes ^ negative, negative & swar::kOnes));
  }
};

// IQ1's delta is 1/8: the grid step is 8 deltas.
constexpr int kIQ1Units = 8;
static_assert(kIQ1Delta * kIQ1Units == 1);

// A run of an IQ1 format: 8 grid values in {-1, 0, 1}, all shifted by one delta of +-1/8. In units of the delta
// (a power of two) the values are the integers 8 * grid +- 1 and the scale is exact: the same real number as
// ggml's scale * (grid + delta) before its one rounding.
struct ShiftedRun {
  float scale;  // already in units of the delta
  uint64_t values;
  bool negative_delta;

  ShiftedRun(float run_scale, uint64_t grid_values, bool negative)
      : scale(run_scale * kIQ1Delta), values(grid_values), negative_delta(negative) {}

  // The grid bytes are -1, 0 or 1: times 8 is a shift whose bits spilling into the next byte are masked off.
  static_assert(kIQ1Units == 8);
  void write(int8_t* q) const {
    swar::store(q, swar::add_bytes((values << 3) & (swar::kOnes * 0xf8), negative_delta ? ~uint64_t{0} : swar::kOnes));
  }
};

// The codebook formats differ only in where a run's grid index, signs and scale are stored: each format F
// decodes the super-block scale and run r of group g, and this loop writes the integers. The two runs of a
// 16-value sub-block always share their scale.
template <class F>
void decode_runs(const void* block, Int8Block& out) {
  const auto& b = *static_cast<const typename F::Block*>(block);
  const float d = F::super_scale(b);
  for (int g = 0; g < kGroups; ++g) {
    for (int r = 0; r < kRunsPerGroup; ++r) {
      const auto run = F::run(b, d, g, r);
      run.write(out.q + 32 * g + 8 * r);
      out.scale[2 * g + r / 2] = run.scale;
    }
  }
  std::fill(std::begin(out.offset), std::end(out.offset), 0.0f);
}

// The 4-bit scale s of the IQ2 formats and IQ3_XXS means (s + 1/2) * step.
float half_step_scale(float d, unsigned s, float step) { return d * (0.5f + s) * step; }

// The nibble of a byte array holding two 4-bit values per byte, low nibble first.
unsigned nibble(const uint8_t* bytes, int i) { return (bytes[i / 2] >> (4 * (i % 2))) & 0xfu; }

// All but IQ1_M store the super-block scale as an fp16 field d.
template <class B>
struct HalfScaled {
  using Block = B;
  static float super_scale(const B& b) { return fp16_to_f32(b.d); }
};

struct IQ2XXS : HalfScaled<BlockIQ2_XXS> {
  // A group is 8 bytes: four grid indices, then a word of four 7-bit sign indices with the scale on top.
  static SignedRun run(const Block& b, float d, int g, int r) {
    const uint32_t aux = b.qs[4 * g + 2] | static_cast<uint32_t>(b.qs[4 * g + 3]) << 16;
    const unsigned index = (b.qs[4 * g + r / 2] >> (8 * (r % 2))) & 0xffu;
    return {half_step_scale(d, aux >> 28, 0.25f), kIQ2XXSGrid[index], kIQ2Signs[(aux >> (7 * r)) & 127]};
  }
};

struct IQ2XS : HalfScaled<BlockIQ2_XS> {
  // Each run is a 16-bit word: 9-bit grid index, 7-bit sign index. Runs 0-1 and 2-3 have a scale each.
  static SignedRun run(const Block& b, float d, int g, int r) {
    const unsigned q = b.qs[4 * g + r];
    return {half_step_scale(d, nibble(b.scales, 2 * g + r / 2), 0.25f), kIQ2XSGrid[q & 511], kIQ2Signs[q >> 9]};
  }
};

struct IQ2S : HalfScaled<BlockIQ2_S> {
  // The grid index has its low 8 bits in qs and 2 more in qh; the 8 sign bits follow the indices in qs.
  static SignedRun run(const Block& b, float d, int g, int r) {
    const unsigned index = b.qs[4 * g + r] | ((b.qh[g] >> (2 * r)) & 3u) << 8;
    return {half_step_scale(d, nibble(b.scales, 2 * g + r / 2), 0.25f), kIQ2SGrid[index], b.qs[kQK_K / 8 + 4 * g + r]};
  }
};

struct IQ3XXS : HalfScaled<BlockIQ3_XXS> {
  // Two grid indices of 4 values per run in the first 64 bytes of qs; then per group a word as in IQ2_XXS.
  static SignedRun run(const Block& b, float d, int g, int r) {
    const uint32_t aux = load_u32(b.qs + kQK_K / 4 + 4 * g);
    const uint8_t* q = b.qs + 8 * g + 2 * r;
    return {half_step_scale(d, aux >> 28, 0.5f), kIQ3XXSGrid[q[0]] | uint64_t{kIQ3XXSGrid[q[1]]} << 32,
            kIQ2Signs[(aux >> (7 * r)) & 127]};
  }
};

struct IQ3S : HalfScaled<BlockIQ3_S> {
  // Two 9-bit grid indices per run (ninth bits in qh), 8 explicit sign bits, and an odd scale 2s + 1 per group.
  static SignedRun run(const Block& b, float d, int g, int r) {
    const uint8_t* q = b.qs + 8 * g + 2 * r;
    const unsigned high = b.qh[g] >> (2 * r);
    const uint64_t lo = kIQ3SGrid[q[0] | (high & 1u) << 8];
    const uint64_t hi = kIQ3SGrid[q[1] | (high & 2u) << 7];
    return {d * (1 + 2 * nibble(b.scales, g)), lo | hi << 32, b.signs[4 * g + r]};
  }
};

struct IQ1S : HalfScaled<BlockIQ1_S> {
  // Per group a 16-bit word: four 3-bit high parts of the grid indices, a 3-bit scale, the delta's sign.
  static ShiftedRun run(const Block& b, float d, int g, int r) {
    const unsigned h = b.qh[g];
    return {d * (2 * ((h >> 12) & 7) + 1), kIQ1SGrid[b.qs[4 * g + r] | ((h >> (3 * r)) & 7) << 8],
            (h & 0x8000) != 0};
  }
};

struct IQ1M {
  using Block = BlockIQ1_M;
  // The scales are four little-endian 16-bit words.
  static unsigned scale_word(const Block& b, int i) { return b.scales[2 * i] | b.scales[2 * i + 1] << 8; }
  // The super-block scale is an fp16 whose nibbles are the top nibbles of the four scale words.
  static float super_scale(const Block& b) {
    unsigned h = 0;
    for (int i = 0; i < 4; ++i) h |= (scale_word(b, i) >> 12) << (4 * i);
    return fp16_to_f32(static_cast<uint16_t>(h));
  }
  // Each scale word holds four 3-bit scales, one per half group; each qh nibble the high index bits and the
  // delta's sign of one run.
  static ShiftedRun run(const Block& b, float d, int g, int r) {
    const unsigned s = scale_word(b, g / 2) >> (6 * (g % 2) + 3 * (r / 2));
    const unsigned h = nibble(b.qh, 4 * g + r);
    return {d * (2 * (s & 7) + 1), kIQ1SGrid[b.qs[4 * g + r] | (h & 7) << 8], (h & 8) != 0};
  }
};

// IQ4_NL and IQ4_XS: a group of 32 values is 16 bytes of indices into kIQ4Values, value j in the low nibble of
// byte j and value j + 16 in its high nibble; one scale for the group's two sub-blocks.
void decode_iq4_group(float scale, const uint8_t* codes, int g, Int8Block& out) {
  NibbleCodebook<kIQ4Values>::decode32(codes, out.q + 32 * g);
  out.scale[2 * g] = out.scale[2 * g + 1] = scale;
  out.offset[2 * g] = out.offset[2 * g + 1] = 0.0f;
}

// The 6-bit scale of IQ4_XS group g: low nibble in scales_l, high 2 bits in scales_h; it stores l + 32.
int iq4_xs_group_scale(const BlockIQ4_XS& b, int g) {
  return static_cast<int>(nibble(b.scales_l, g) | ((b.scales_h >> (2 * g)) & 3u) << 4) - 32;
}

// Index of the level of kIQ4Values nearest to x; a tie goes to the upper level.
int nearest_iq4(float x) {
  const int8_t* const v = kIQ4Values;
  const auto above = std::upper_bound(v, v + 16, x, [](float a, int8_t level) { return a < level; }) - v;
  if (above == 0) return 0;
  if (above == 16) return 15;
  return x - v[above - 1] < v[above] - x ? static_cast<int>(above - 1) : static_cast<int>(above);
}

// For indices fixed by a trial inverse scale, the weighted least-squares scale is qx / qq and it lowers the
// weighted squared error by qx^2 / qq.
struct Moments {
  float qx = 0;
  float qq = 0;
};

Moments moments(const float* x, float inverse_scale) {
  Moments m;
  for (int j = 0; j < 32; ++j) {
    const float q = kIQ4Values[nearest_iq4(inverse_scale * x[j])];
    const float w = x[j] * x[j];  // large values weigh most, as in ggml without importance weights
    m.qx += w * q * x[j];
    m.qq += w * q * q;
  }
  return m;
}

// Trial scales either side of the one that maps a group's extreme value to the lowest level.
constexpr int kScaleTries = 7;

// The scale of a group of 32 values. The codebook is asymmetric (-127 .. 113): the candidates map the value of
// largest magnitude to the top level, or to one of the levels around -127 (the longer reach).
float best_iq4_scale(const float* values) {
  const float amax = std::fabs(signed_absmax({values, 32}));
  if (amax < 1e-15f) return 0;
  // The search runs on the values scaled by a power of two to a largest magnitude in [1/2, 1): that is exact, so
  // it finds the same levels, and the x^2 weights can neither overflow nor underflow.
  int exponent = 0;
  std::frexp(amax, &exponent);
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = std::ldexp(values[j], -exponent);
  const float extreme = signed_absmax(x);
  Moments m = moments(x, -kIQ4Values[0] / extreme);
  float scale = m.qq > 0 ? m.qx / m.qq : 0;
  float gain = scale * m.qx;
  for (int t = -kScaleTries; t <= kScaleTries; ++t) {
    m = moments(x, (kIQ4Values[0] + t) / extreme);
    if (m.qq > 0 && m.qx * m.qx > gain * m.qq) {
      scale = m.qx / m.qq;
      gain = scale * m.qx;
    }
  }
  return std::ldexp(scale, exponent);
}

// Indices of a group of 32 for the scale the block will store (after rounding), packed as decode_iq4_group reads.
void pack_iq4_group(const float* x, float scale, uint8_t* q) {
  const float inverse = scale != 0 ? 1 / scale : 0;
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<uint8_t>(nearest_iq4(inverse * x[j]) | nearest_iq4(inverse * x[j + 16]) << 4);
  }
}

}  // namespace

void decode_iq2_xxs(const void* block, Int8Block& out) { decode_runs<IQ2XXS>(block, out); }
void decode_iq2_xs(const void* block, Int8Block& out) { decode_runs<IQ2XS>(block, out); }
void decode_iq2_s(const void* block, Int8Block& out) { decode_runs<IQ2S>(block, out); }
void decode_iq3_xxs(const void* block, Int8Block& out) { decode_runs<IQ3XXS>(block, out); }
void decode_iq3_s(const void* block, Int8Block& out) { decode_runs<IQ3S>(block, out); }
void decode_iq1_s(const void* block, Int8Block& out) { decode_runs<IQ1S>(block, out); }
void decode_iq1_m(const void* block, Int8Block& out) { decode_runs<IQ1M>(block, out); }

void decode_iq4_nl(const void* block, Int8Block& out, int slot) {
  const auto& b = *static_cast<const BlockIQ4_NL*>(block);
  decode_iq4_group(fp16_to_f32(b.d), b.qs, slot, out);
}

void decode_iq4_xs(const void* block, Int8Block& out) {
  const auto& b = *static_cast<const BlockIQ4_XS*>(block);
  const float d = fp16_to_f32(b.d);
  for (int g = 0; g < kGroups; ++g) decode_iq4_group(d * iq4_xs_group_scale(b, g), b.qs + 16 * g, g, out);
}

void quantize_iq4_nl(const float* in, void* blocks, int64_t n) {
  auto* b = static_cast<BlockIQ4_NL*>(blocks);
  for (int64_t i = 0; i < n / kQK; ++i, in += kQK) {
    b[i].d = f32_to_fp16(saturate_fp16(best_iq4_scale(in)));
    pack_iq4_group(in, fp16_to_f32(b[i].d), b[i].qs);
  }
}

void quantize_iq4_xs(const float* in, void* blocks, int64_t n) {
  auto* b = static_cast<BlockIQ4_XS*>(blocks);
  for (int64_t i = 0; i < n / kQK_K; ++i, in += kQK_K) {
    float scales[kGroups];
    for (int g = 0; g < kGroups; ++g) scales[g] = best_iq4_scale(in + 32 * g);
    const float max_scale = signed_absmax(scales);
    // Group scales are d * l with l in [-32, 31]: the largest one in magnitude becomes l = -32, the longer reach.
    BlockIQ4_XS& block = b[i];
    block.d = f32_to_fp16(saturate_fp16(-max_scale / 32));
    const float d = fp16_to_f32(block.d);
    const float inverse = d != 0 ? 1 / d : 0;
    block.scales_h = 0;
    std::memset(block.scales_l, 0, sizeof block.scales_l);
    for (int g = 0; g < kGroups; ++g) {
      const int l = std::clamp(nearest_int(inverse * scales[g]), -32, 31);
      pack_iq4_group(in + 32 * g, d * l, block.qs + 16 * g);
      const auto stored = static_cast<unsigned>(l + 32);
      block.scales_l[g / 2] = static_cast<uint8_t>(block.scales_l[g / 2] | (stored & 0xf) << (4 * (g % 2)));
      block.scales_h = static_cast<uint16_t>(block.scales_h | (stored >> 4) << (2 * g));
    }
  }
}

}  // namespace ggufmm::format
