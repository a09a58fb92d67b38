// The prefill (tiled) interface. A panel is 16 weight rows decoded once into a cache-resident int8 form; a tile
// kernel runs a block of activation rows against one or two panels. Format-blind: any format that decodes to
// Int8Block feeds the same kernels.
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/prefetch.hpp"

namespace ggufmm::kernels {

inline constexpr int kPanelRows = 16;  // weight rows per panel: one 512-bit register of int32 lanes
inline constexpr int kMaxTileRows = 6;  // activation rows per tile kernel call, at most

// 16 weight rows of k values, decoded exactly: value = scale * (code - 128) - offset, scales per group of S
// values, offsets per O (S, or 16 where S is 32).
// Codes are the int8 values plus 128 (unsigned, for the u8 x s8 dot product), 4 consecutive values of one row
// per 32-bit lane, the 16 rows side by side: codes[(i / 4) * 64 + row * 4 + i % 4]. Offsets stay exact (the m of
// w = d*q - m), multiplied by the sums of the quantized activations.
struct Panel {
  int group = 32;                  // S: 32 where every pair of 16-value scales agree, else 16
  int offset_group = 32;           // O: S where every pair of offsets agree too, else 16
  const uint8_t* codes = nullptr;  // [k / 4][16][4]
  const float* scales = nullptr;   // [k / S][16]
  const float* offsets = nullptr;  // [k / O][16]; null for symmetric weights
  int reach = 128;                 // every level q = code - 128 lies in [-reach, reach): 16, 32, 64 or 128
};

// What a tile kernel needs of a group of S activation values besides their codes, side by side so that a tile
// of rows reads one stream per row, not three.
struct TileGroup {
  int32_t bias = 0;  // -128 times the sum of the codes: undoes the weight codes' +128
  float d = 0.0f;    // the codes' scale (that of their group of 32)
  float sum = 0.0f;  // d * (sum of the codes): the offset term
};

// Activation rows prepared for the tile kernels of one panel form: groups of the finer of S and O. Row r of a
// call may be another row of q and group (an expert's rows are read where their tokens were quantized).
struct TileActivations {
  int64_t k = 0;
  const int8_t* q = nullptr;          // [rows][k] codes (as for gemv)
  const TileGroup* group = nullptr;  // [rows][k / min(S, O)]
  const int64_t* at = nullptr;       // row r is row at[r] of q and group; null: row r
  int64_t row(int64_t r) const { return at ? at[r] : r; }
  const int8_t* codes(int64_t r) const { return q + row(r) * k; }
  // Row r's groups, of `values` values each.
  const TileGroup* groups(int64_t r, int values) const { return group + row(r) * (k / values); }
};

// Where the outputs of activation row r go: y + offset(r), rows ldy apart, or scattered (an expert's rows land at
// their (token, slot) places); the residual, if any, is added from the same place. y and residual point at row 0's
// first output of the call.
struct TileOutput {
  float* y = nullptr;
  int64_t ldy = 0;
  const float* residual = nullptr;
  const int64_t* at = nullptr;  // row r goes to output row at[r]; null: row r
  int64_t row(int64_t r) const { return at ? at[r] : r; }
  int64_t offset(int64_t r) const { return row(r) * ldy; }
  // The same rows' outputs from column o0 on.
  TileOutput from_column(int64_t o0) const { return {y + o0, ldy, residual ? residual + o0 : nullptr, at}; }
};

// The tile kernels' forms: S/O of the panel, O = 0 for symmetric weights. S = 256 panels keep their scales per
// 32 (Panel::group 32), all 8 of a run the same, which kernels may read once per run or as S = 32.
enum class TileForm { S16, S16O16, S32, S32O32, S32O16, S256, S256O16 };
inline constexpr int kTileForms = 7;
inline TileForm tile_form(const PanelShape& shape) {
  const bool blocks = shape.scale_pairs && shape.scale_blocks;
  if (!shape.asymmetric) return blocks ? TileForm::S256 : shape.group() == 32 ? TileForm::S32 : TileForm::S16;
  if (shape.group() == 16) return TileForm::S16O16;
  if (shape.offset_group() == 32) return TileForm::S32O32;
  return blocks ? TileForm::S256O16 : TileForm::S32O16;
}

// Output l of row r0 + r (out, from the tile's first weight row) = sum_i W[l][i] * X[r0 + r][i] (+ its residual)
// for r < nr and the weight rows l < valid of `panels` (1 or 2) consecutive panels. Returns the rows given a
// doubtful output (bit r: kDoubtfulAbove), judged in registers, as the outputs are stored. Meanwhile `ahead` (or
// none) steps once per group: the weights of the next panels, streamed while the arithmetic leaves memory idle.
using TileFn = uint32_t (*)(const Panel* panels, int panel_count, int valid, const TileActivations& x, int64_t r0,
                            int nr, const TileOutput& out, L2Stream* ahead);

// A tile kernel and the activation rows it holds in registers at once: calls of more rows (up to kMaxTileRows)
// run in turns, so callers cut rows into runs of `rows`.
struct TileKernel {
  TileFn run = nullptr;
  int rows = kMaxTileRows;
};

// Packing into a panel: 32 values (int8) of each of 16 weight rows, rows[l][0..31], go out as the 8 chunks of
// 64 codes that hold them: chunks[c * 64 + l * 4 + j] = rows[l][4c + j] + 128.
using PackFn = void (*)(const int8_t* const (&rows)[kPanelRows], uint8_t* chunks);

// Each level's tile kernels, by TileForm, and its packing.
namespace scalar {
extern const TileKernel tile_int8[kTileForms];
extern const PackFn pack_panel;
}
namespace avx2 {
extern const TileKernel tile_int8[kTileForms];
extern const PackFn pack_panel;
}
namespace avxvnni {
extern const TileKernel tile_int8[kTileForms];
extern const PackFn pack_panel;
}
namespace avx512 {
extern const TileKernel tile_int8[kTileForms];  // (no packing: every format has an AVX-512 panel decoder)
}

// The tile kernel of a level for a panel's shape.
TileKernel find_tile(runtime::Isa isa, const PanelShape& shape);
// The packing of a level.
PackFn find_pack(runtime::Isa isa);

}  // namespace ggufmm::kernels
