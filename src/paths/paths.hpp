// The kernel paths behind ggufmm::matmul and ggufmm::mul_mat_id. Arguments arrive validated.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "format/registry.hpp"
#include "ggufmm/types.hpp"
#include "kernels/kernels.hpp"
#include "paths/activations.hpp"
#include "paths/dense_cache.hpp"

namespace ggufmm::paths {

struct MatmulCall {
  const Weight& w;  // one matrix (experts == 1)
  const float* x;   // [rows, k]
  int64_t rows;
  float* y;               // [rows, m]
  const float* residual;  // [rows, m] or null
  int threads;
  runtime::Isa isa = runtime::active_isa();  // the kernel level (tests pick each one)
  std::optional<bool> row_tiles = {};         // tiled: up to 8 rows as row tiles, or panels (unset: the level's choice)
};

struct MulMatIdCall {
  const Weight& w;  // [experts, m, k]
  const float* act;  // [tokens, act_slots, k]
  int64_t tokens;
  int64_t act_slots;
  const int32_t* ids;  // [tokens, slots], each in [0, experts)
  int64_t slots;
  float* y;               // [tokens, slots, m]
  const float* residual;  // [tokens, slots, m] or null
  int threads;
  runtime::Isa isa = runtime::active_isa();
};

// Per output row, whether the column loops wrote a doubtful output there (see recompute_doubtful).
using DoubtfulRows = std::vector<std::atomic<bool>>;

// How many runs balanced_runs cuts `rows` rows into: as few of at most `most` as they need.
inline int64_t balanced_run_count(int64_t rows, int most) { return (rows + most - 1) / most; }

// Calls part(r0, n) for `rows` rows cut into as few runs of at most `most` as they need, of balanced heights
// (8 rows at most 7: 4 + 4, not 7 + 1, whose short run would cost nearly as much as the long one).
template <class Part>
void balanced_runs(int64_t rows, int most, Part part) {
  const int64_t runs = balanced_run_count(rows, most);
  for (int64_t i = 0, r0 = 0; i < runs; ++i) {
    const int n = static_cast<int>(rows / runs + (i < rows % runs ? 1 : 0));
    part(r0, n);
    r0 += n;
  }
}

// Reference: dequantizes a block at a time and accumulates in f32.
void ref_matmul(const MatmulCall& call);
void ref_mul_mat_id(const MulMatIdCall& call);

// Prefill: weights decoded once per call into cache-resident int8 panels shared by every activation row.
void tiled_matmul(const MatmulCall& call);

// Decode: int8 activations, integer dot products on the blocks, for 1 to 7 rows (more are taken 7 at a time;
// `most` 8 for the tiled path's row tiles).
void gemv_matmul(const MatmulCall& call, int most = kernels::kMaxGemvRows);

// Experts: rows grouped by expert (quantized once, before grouping), each group through the decode kernels
// (1 to 7 rows) or the tile kernels (more), so no row is ever computed for padding.
void moe_mul_mat_id(const MulMatIdCall& call);

// Outputs that are NaN, infinite or near the f32 range's edge, recomputed exactly (in double, as the reference
// does). Non-finite inputs reach every path's outputs as non-finite, but not always as the same kind: an integer
// dot product turns an infinite scale times a zero sum into NaN where the exact sum is infinite, and f32 partial
// sums overflow where a double sum does not. Recomputing these few outputs gives every path the reference's
// classification. Reads the residual again: it must not be y itself. The paths that write through OutputRows (gemv,
// tiled, experts) recompute the rows they flagged; the others' outputs are scanned (flagged null).
void recompute_doubtful(const MatmulCall& call, const DoubtfulRows* flagged = nullptr);
void recompute_doubtful(const MulMatIdCall& call, const DoubtfulRows* flagged = nullptr);

// Row o of a matrix (of w's row length and type), dequantized into out.
void dequantize_row(const format::Format& f, const Weight& w, const uint8_t* matrix, int64_t o, float* out);

// Where the outputs of activation row r go (kernels::TileOutput), and the rows given a doubtful output. The
// outputs are checked as they are written, while in cache, not scanned again after the call.
struct OutputRows : kernels::TileOutput {
  DoubtfulRows* flags = nullptr;  // raised for each output row given a doubtful output
  // Outputs [o0, o0 + n) of row r: values plus the residual.
  void put(int64_t r, int64_t o0, const float* values, int64_t n) const;
  // Asks for the lines of outputs [o0, o0 + n) of rows [r0, r0 + rows) ahead of their stores, which would otherwise
  // wait for the lines they store to.
  void prefetch(int64_t r0, int64_t rows, int64_t o0, int64_t n) const;
  // After the kernels wrote outputs [o0, o0 + n) of rows [r0, r0 + rows) in place.
  void check(int64_t r0, int64_t rows, int64_t o0, int64_t n) const;
  // Rows r0 + r for the bits r of `rows`, which a tile kernel found doubtful.
  void flag(int64_t r0, uint32_t rows) const;
};

// The column loops the paths share: outputs [m0, m1) of every row of x.
// gemv: the decode kernels write scattered rows into a small block of their own first, then put them in place.
// More rows than `most` (the decode regime's 7, or a row tile's 8) go in passes of balanced heights.
void gemv_columns(const Weight& w, const ActivationBuffer& x, int64_t m0, int64_t m1, const OutputRows& out,
                  runtime::Isa isa, int most = kernels::kMaxGemvRows);
// Tiled: m0 is a multiple of 32: the weight rows are decoded 32 at a time into panels, and the tile kernels store
// every row in place. Up to 8 rows may run as one row tile instead (row_tiles, or unset: the level's choice for
// the type, runs_row_tiles), through gemv_columns, which needs x's rows in order (not ActivationBuffer::mapped).
void tiled_columns(const Weight& w, const ActivationBuffer& x, int64_t m0, int64_t m1, const OutputRows& out,
                   runtime::Isa isa, std::optional<bool> row_tiles = {});
// Whether tiled_columns takes `rows` rows as one row tile.
bool runs_row_tiles(const Weight& w, int64_t rows, runtime::Isa isa, std::optional<bool> row_tiles = {});

// Prefill with memory to spare: the weight dequantized once into a dense copy (dense_cache.hpp) that later calls
// reuse, then a oneDNN GEMM. The copy is in the form measured fastest here; a weight larger than the cache's budget
// gets a copy for the call alone.
void dense_matmul(const MatmulCall& call);
// The same with a given cache and form.
void dense_matmul(const MatmulCall& call, DenseCache& cache, DenseForm form);
// The form dense copies take on this machine: bf16, or f32 where it multiplies clearly faster. Measured once.
DenseForm preferred_dense_form();
// Whether the global cache would keep a dense copy of w, i.e. later calls would find it there.
bool dense_would_keep(const Weight& w);

}  // namespace ggufmm::paths
