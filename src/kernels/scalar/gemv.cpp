// Portable decode kernels, format-blind: each block goes through its format's exact int8 decoder, then integer
// dot products per 16 values; float formats multiply in f32.
#include <algorithm>

#include "format/registry.hpp"
#include "kernels/scalar/scalar.hpp"

namespace ggufmm::kernels::scalar {
namespace {

template <Type T>
void gemv_int8(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
               int64_t ldy, const float* residual) {
  const format::Format& f = *format::find(T);
  const int64_t blocks = x.k / f.info.block_size;
  const int subs = f.info.block_size / format::Int8Block::kSubBlock;
  format::Int8Block b;
  for (int64_t o = m0; o < m1; ++o) {
    const uint8_t* row = w + static_cast<size_t>(o) * row_bytes;
    float acc[kMaxRowTileRows] = {};
    for (int64_t j = 0; j < blocks; ++j) {
      f.decode(row + j * f.info.block_bytes, b);
      for (int r = 0; r < x.rows; ++r) {
        for (int s = 0; s < subs; ++s) {
          const int64_t i = j * f.info.block_size + s * format::Int8Block::kSubBlock;
          const int8_t* xq = x.q + r * x.k + i;
          const int8_t* wq = b.q + s * format::Int8Block::kSubBlock;
          int isum = 0;
          for (int l = 0; l < format::Int8Block::kSubBlock; ++l) isum += wq[l] * xq[l];
          const float dx = x.d[(r * x.k + i) / kGroup];
          const float sx = x.sum[(r * x.k + i) / kSumGroup];
          acc[r] += b.scale[s] * dx * static_cast<float>(isum) - b.offset[s] * sx;
        }
      }
    }
    for (int r = 0; r < x.rows; ++r) y[r * ldy + o] = acc[r] + (residual ? residual[r * ldy + o] : 0.0f);
  }
}

// F32, F16 and BF16 multiply in f32: the weights are widened a chunk at a time, the activations used as they are.
template <Type T>
void gemv_float(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                int64_t ldy, const float* residual) {
  constexpr int64_t kChunk = 256;
  const format::Format& f = *format::find(T);
  float wf[kChunk];
  for (int64_t o = m0; o < m1; ++o) {
    const uint8_t* row = w + static_cast<size_t>(o) * row_bytes;
    float acc[kMaxRowTileRows] = {};
    for (int64_t i = 0; i < x.k; i += kChunk) {
      const int64_t n = std::min(kChunk, x.k - i);
      f.dequantize(row + i * f.info.block_bytes, wf, n);
      for (int r = 0; r < x.rows; ++r) {
        const float* xr = x.f32 + r * x.k + i;
        for (int64_t l = 0; l < n; ++l) acc[r] += wf[l] * xr[l];
      }
    }
    for (int r = 0; r < x.rows; ++r) y[r * ldy + o] = acc[r] + (residual ? residual[r * ldy + o] : 0.0f);
  }
}

}  // namespace

const IsaKernels& table() {
  static const IsaKernels t = [] {
    IsaKernels k{runtime::Isa::Scalar, quantize_act, {}};
#define GGUFMM_SET_FLOAT(TYPE, id, name) k.gemv[static_cast<size_t>(Type::TYPE)] = gemv_float<Type::TYPE>;
#define GGUFMM_SET_INT8(TYPE, id, name) k.gemv[static_cast<size_t>(Type::TYPE)] = gemv_int8<Type::TYPE>;
    GGUFMM_FLOAT_TYPES(GGUFMM_SET_FLOAT)
    GGUFMM_QUANT_TYPES(GGUFMM_SET_INT8)
#undef GGUFMM_SET_FLOAT
#undef GGUFMM_SET_INT8
    return k;
  }();
  return t;
}

}  // namespace ggufmm::kernels::scalar

namespace ggufmm::kernels {
const IsaKernels& scalar_kernels() { return scalar::table(); }
}  // namespace ggufmm::kernels
