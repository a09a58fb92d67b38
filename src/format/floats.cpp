// F32, F16 and BF16 rows: one value per "block". Rows of halves may sit at any even address, so values are
// copied out rather than read through a wider pointer.
#include "format/floats.hpp"

#include <cstring>

#include "format/fp16.hpp"

namespace ggufmm::format {
namespace {

template <float (*ToF32)(uint16_t)>
void decode_halves(const void* blocks, float* out, int64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(blocks);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, sizeof h);
    out[i] = ToF32(h);
  }
}

template <uint16_t (*FromF32)(float)>
void encode_halves(const float* in, void* blocks, int64_t n) {
  auto* bytes = static_cast<uint8_t*>(blocks);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = FromF32(in[i]);
    std::memcpy(bytes + 2 * i, &h, sizeof h);
  }
}

}  // namespace

void dequantize_f32(const void* blocks, float* out, int64_t n) {
  std::memcpy(out, blocks, static_cast<size_t>(n) * sizeof(float));
}
void dequantize_f16(const void* blocks, float* out, int64_t n) { decode_halves<fp16_to_f32>(blocks, out, n); }
void dequantize_bf16(const void* blocks, float* out, int64_t n) { decode_halves<bf16_to_f32>(blocks, out, n); }
void quantize_f32(const float* in, void* blocks, int64_t n) {
  std::memcpy(blocks, in, static_cast<size_t>(n) * sizeof(float));
}
void quantize_f16(const float* in, void* blocks, int64_t n) { encode_halves<f32_to_fp16>(in, blocks, n); }
void quantize_bf16(const float* in, void* blocks, int64_t n) { encode_halves<f32_to_bf16>(in, blocks, n); }

}  // namespace ggufmm::format
