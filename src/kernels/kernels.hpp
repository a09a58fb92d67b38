// The kernel interface: what every instruction-set variant provides, and how a call finds it.
// A kernel knows no file and no schedule: it computes a range of output columns for the rows it is given.
#pragma once

#include <xmmintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "ggufmm/ggufmm.hpp"
#include "runtime/cpu.hpp"

namespace ggufmm::kernels {

inline constexpr int kMaxGemvRows = 7;  // the decode regime: 1 to 7 activation rows
inline constexpr int kGroup = 32;       // activations are quantized in groups of 32 values
inline constexpr int kSumGroup = 16;    // activation sums are kept per 16 (finest weight offset group)

// Activation rows prepared once per call for the integer kernels (and kept as f32 for the float ones). Every
// integer kernel computes exactly sum_i w_i * d * q_i: the offset term of w = d*q - m multiplies d * (sum of q),
// not the sum of x, so an offset adds no error of its own, and kernels may shift codes by any centre.
struct Activations {
  int64_t k = 0;
  int rows = 0;
  const float* f32 = nullptr;     // [rows][k] the original values
  const int8_t* q = nullptr;      // [rows][k] round(x / d), |q| <= 127
  const float* d = nullptr;       // [rows][k/32] the scale of each group of 32
  const int16_t* qsum = nullptr;  // [rows][k/32] the sum of q over each group: corrects unsigned weight codes
  const float* sum = nullptr;     // [rows][k/16] d * (sum of q) over each 16: the offset term of w = d*q - m
};

// y[r * ldy + o] = sum_i W[o][i] * X[r][i] (+ residual[r * ldy + o]) for o in [m0, m1) and every row r.
// w points at row 0 of the weight; rows are row_bytes apart.
using GemvFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                        int64_t ldy, const float* residual);

// How a panel's 16-value scales can be grouped (by 32 where every pair agrees, offsets too, bit for bit) and
// whether any offset is set (not +-0).
struct PanelShape {
  bool pairs = true;
  bool asymmetric = false;
  PanelShape operator&(const PanelShape& o) const { return {pairs && o.pairs, asymmetric || o.asymmetric}; }
  int group() const { return pairs ? 32 : 16; }
};

// Decodes weight rows [0, rows) (rows <= 16; the panel's other rows are zero) of k values, row 0 at w, into a tile
// panel's form (kernels/tile.hpp): codes [k / 4][16][4], and the scale and offset of every 16 values of each row,
// [k / 16][16]. Exact: code - 128 times the scale, less the offset, is ggml's dequantized value. Returns the
// panel's shape; where it is symmetric the offsets may be left unwritten (nothing reads them).
using PanelDecodeFn = PanelShape (*)(const uint8_t* w, size_t row_bytes, int rows, int64_t k, uint8_t* codes,
                                     float* scales, float* offsets);

// Quantizes `rows` rows of k values (k a multiple of 32) into the integer fields of Activations.
using QuantizeActFn = void (*)(const float* x, int rows, int64_t k, int8_t* q, float* d, int16_t* qsum, float* sum);

// Weights stream through once, and decoding them is slow enough that the hardware prefetcher falls behind on a
// loaded machine (measured: K-quant gemv streams 40 % more with it): ask for the lines of a block 4 KB on (rows
// are contiguous, so that may be the next row). 4 KB rather than 2 lets TQ2_0 stream 20 % more; 8 KB gains nothing.
// (A prefetch never faults; the address is formed as an integer, as it may lie past the end of the weight.)
template <size_t kBytes>
inline void prefetch_ahead(const void* block) {
  constexpr uintptr_t kAhead = 4096;
  for (size_t at = 0; at < kBytes; at += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(block) + kAhead + at), _MM_HINT_T0);
  }
}

// Calls body.template operator()<NR>() with NR = rows (1 to kMaxGemvRows) as a compile-time constant, so that
// kernels keep one accumulator per row in registers.
template <class Body>
inline void with_rows(int rows, Body&& body) {
  switch (rows) {
    case 1: return body.template operator()<1>();
    case 2: return body.template operator()<2>();
    case 3: return body.template operator()<3>();
    case 4: return body.template operator()<4>();
    case 5: return body.template operator()<5>();
    case 6: return body.template operator()<6>();
    default: return body.template operator()<7>();
  }
}

inline constexpr size_t kTypeSlots = 40;  // one past the highest type id

struct IsaKernels {
  runtime::Isa isa;
  QuantizeActFn quantize_act;
  std::array<GemvFn, kTypeSlots> gemv{};  // null: no kernel for that type at this level
  std::array<PanelDecodeFn, kTypeSlots> panel{};  // null: panels decode through the format's own decoder
};

// Each level's table (defined in its own directory, compiled with its own flags).
const IsaKernels& scalar_kernels();
const IsaKernels& avx2_kernels();
const IsaKernels& avxvnni_kernels();
const IsaKernels& avx512_kernels();

const IsaKernels& kernels_for(runtime::Isa isa);
// The gemv kernel for a type at `isa`, or from the highest lower level that has one.
GemvFn find_gemv(runtime::Isa isa, Type type);
QuantizeActFn find_quantize_act(runtime::Isa isa);
// The panel decoder for a type at `isa` or the highest lower level that has one; null where none has.
PanelDecodeFn find_panel_decode(runtime::Isa isa, Type type);

}  // namespace ggufmm::kernels
