// The kernel interface: what every instruction-set variant provides, and how a call finds it.
// A kernel knows no file and no schedule: it computes a range of output columns for the rows it is given.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "ggufmm/types.hpp"
#include "runtime/cpu.hpp"

namespace ggufmm::kernels {

inline constexpr int kMaxGemvRows = 7;  // the decode regime: 1 to 7 activation rows
// The gemv kernels take up to 8 rows in one pass: the decode regime's 7, and 8 for the tiled path's row tiles
// (tiled.cpp), which decode each weight block once into registers for all 8.
inline constexpr int kMaxRowTileRows = 8;
inline constexpr int kGroup = 32;       // activations are quantized in groups of 32 values
inline constexpr int kSumGroup = 16;    // activation sums are kept per 16 (finest weight offset group)
// Outputs the paths recompute exactly (paths::recompute_doubtful) are those v with !(|v| <= kDoubtfulAbove): NaN,
// infinite, or within a factor 2 of the f32 range's edge, where the exact value may overflow and a fast one not.
inline constexpr float kDoubtfulAbove = std::numeric_limits<float>::max() / 2;

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

// y[r * ldy + o] = sum_i W[o][i] * X[r][i] (+ residual[r * ldy + o]) for o in [m0, m1) and every row r (1 to
// kMaxRowTileRows).
// w points at row 0 of the weight; rows are row_bytes apart.
using GemvFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                        int64_t ldy, const float* residual);

// How a panel's 16-value factors can be grouped: scales by 32 where every pair agrees bit for bit, offsets
// likewise, and whether any offset is set (not +-0). Scales may even agree across each run of 256 values (k a
// multiple of 256): Q2_K and Q3_K, their integer sub-scales folded into the codes, have one scale per block, and
// Q2_K offsets per 16.
struct PanelShape {
  bool scale_pairs = true;
  bool offset_pairs = true;
  bool asymmetric = false;
  bool scale_blocks = false;  // one scale per 256 values (with scale_pairs)
  PanelShape operator&(const PanelShape& o) const {
    return {scale_pairs && o.scale_pairs, offset_pairs && o.offset_pairs, asymmetric || o.asymmetric,
            scale_blocks && o.scale_blocks};
  }
  // Values per scale, and per offset (equal where there are none).
  int group() const { return scale_pairs ? 32 : 16; }
  int offset_group() const { return asymmetric && !offset_pairs ? 16 : group(); }
};

// Decodes weight rows [0, rows) (rows <= 16; the panel's other rows are zero) of k values, row 0 at w, into a tile
// panel's form (kernels/tile.hpp): codes [k / 4][16][4], and the scale and offset of every 16 values of each row,
// [k / 16][16]. Exact: code - 128 times the scale, less the offset, is ggml's dequantized value (a zero's sign
// aside, where a decoder folds signed scales into the codes: Q3_K). Returns the panel's shape; where it is
// symmetric the offsets may be left unwritten (nothing reads them). Meanwhile it streams the `ahead` bytes from
// `next` (the rows the next panel will read, or none) into L2, in step with its own progress.
using PanelDecodeFn = PanelShape (*)(const uint8_t* w, size_t row_bytes, int rows, int64_t k, uint8_t* codes,
                                     float* scales, float* offsets, const uint8_t* next, size_t ahead);

// Quantizes `rows` rows of k values (k a multiple of 32) into the integer fields of Activations.
using QuantizeActFn = void (*)(const float* x, int rows, int64_t k, int8_t* q, float* d, int16_t* qsum, float* sum);

// One past the highest type id.
inline constexpr size_t kTypeSlots = [] {
  size_t slots = 0;
#define GGUFMM_SLOT(TYPE, id, name) slots = std::max<size_t>(slots, size_t{id} + 1);
  GGUFMM_TYPES(GGUFMM_SLOT)
#undef GGUFMM_SLOT
  return slots;
}();

struct IsaKernels {
  runtime::Isa isa;
  QuantizeActFn quantize_act;
  std::array<GemvFn, kTypeSlots> gemv{};  // null: no kernel for that type at this level
  std::array<PanelDecodeFn, kTypeSlots> panel{};  // null: panels decode through the format's own decoder
  // Formats whose tiled path takes up to kMaxRowTileRows rows as one row tile (the gemv kernel over all of them,
  // each weight block decoded once into registers) rather than decoding panels: those whose blocks decode so
  // cheaply that the panel's transposes cost more than a pass over the weight saves. This level only: a row tile
  // measured here says nothing of another level's panels.
  std::array<bool, kTypeSlots> row_tiles{};
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
// Whether the tiled path at `isa` takes up to kMaxRowTileRows rows of a type as row tiles (IsaKernels::row_tiles).
bool prefers_row_tiles(runtime::Isa isa, Type type);

}  // namespace ggufmm::kernels
