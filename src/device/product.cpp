// The products on a device: the kernels of the device program (kernels/program.h) in the order they run.
#include "device/product.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "device/kernels/args.h"
#include "format/registry.hpp"

namespace ggufmm::device {
namespace {

bool quantized(Type type) { return format::find(type)->decode != nullptr; }

int64_t groups_for(int64_t items) { return (items + kGroupSize - 1) / kGroupSize; }

constexpr int kSetRows = 7;   // the gemv kernels' most rows per set (GM_MAX_ROWS)
constexpr int kTileM = 64;    // the tiled kernels' weight rows per tile (GM_TILE_M)
constexpr int kMostTileRows = 256;      // their largest tile's activation rows
constexpr int64_t kUnitItems = 1024;    // work-items a compute unit keeps in flight, to a factor
constexpr int64_t kStreamGroups = 1024;  // the read_bandwidth kernel's work-groups

// The work-items of a tiled kernel of `tn` activation rows (GM_TILE_GROUP).
int tile_group(int tn) { return std::max(kTileM, tn); }

// The local memory of a tiled kernel of `tn` activation rows: two buffers of the step's decoded weight rows (32
// codes, 2 scales, 2 offsets each) and activation rows (32 codes, a scale, 2 sums each), and the rows' indices.
size_t tile_local_bytes(int tn) {
  const size_t weights = kTileM * (32 + 4 * sizeof(float)), activations = tn * (32 + 3 * sizeof(float));
  return 2 * (weights + activations) + tn * sizeof(int64_t);
}

// The tiled kernel of `tn` activation rows for `type`.
std::string tiled_kernel(int tn, Type type) { return fmt::format("tiled{}_{}", tn, type_info(type)->name); }

// The activation rows of the tiles a product of `rows` rows per matrix of `type` takes on this device (16 to 256:
// the smallest the rows fit, else 256, within the device's local memory and the kernel's work-group limit), or 0
// where no tile fits the device or `type` has no tiled kernels (the float formats).
int tile_rows(Backend& backend, Type type, int64_t rows) {
  if (!quantized(type)) return 0;
  int tn = 16;
  while (tn < rows && tn < kMostTileRows) tn *= 2;
  for (; tn >= 16; tn /= 2) {
    const bool fits = tile_local_bytes(tn) <= backend.local_memory() &&
                      tile_group(tn) <= backend.group_limit(tiled_kernel(tn, type));
    if (fits) return tn;
  }
  return 0;
}

// The values of `blocks` into rows of k values `stride` elements apart, of f32 or f16 elements.
void dequantize_rows(Backend& b, Type type, const Buffer& blocks, int64_t values, int64_t k, int64_t stride,
                     Type element, void* out) {
  const TypeInfo& t = *type_info(type);
  // Quantized formats: a work-item per 16 values; floats: per value.
  const int64_t items = quantized(type) ? values / 16 : values;
  b.run(fmt::format("dequantize_{}", t.name), Grid{groups_for(items)}, blocks.handle(), out, items,
        int{t.block_bytes}, int{t.block_size / 16}, k, stride, int{element == Type::F16});
}

// The exact recomputation's arguments for a product that reads activation row r for output row r.
kernels::gm_gemv_args row_args(const ProductCall& c) {
  const TypeInfo& t = *type_info(c.w.type);
  return {.k = c.w.k, .m = c.w.m, .row_bytes = static_cast<int64_t>(c.w.row_bytes()), .expert_bytes = 0,
          .experts = 1, .slots = 1, .act_slots = 1, .rows = 1, .out_rows = c.out_rows, .block_bytes = t.block_bytes,
          .subs_per_block = quantized(c.w.type) ? t.block_size / 16 : 1, .has_residual = c.residual != nullptr};
}

// A matmul as the backend's GEMM on the dense copy, accumulating onto the residual where there is one.
void dense_product(Backend& b, const ProductCall& c) {
  const DenseCopy& copy = *c.dense;
  const size_t out_bytes = static_cast<size_t>(c.out_rows * c.w.m) * sizeof(float);
  // The exact recomputation reads the residual after y is written: a residual that is y is read from a copy.
  const auto residual_copy = c.residual == c.y ? b.scratch(out_bytes) : nullptr;
  if (residual_copy) b.copy(c.y, residual_copy->handle(), out_bytes);
  if (c.residual && c.residual != c.y) b.copy(c.residual, c.y, out_bytes);
  const void* residual = residual_copy ? residual_copy->handle() : c.residual ? c.residual : c.y;
  std::shared_ptr<Buffer> x16;
  if (copy.type == Type::F16) {
    const int64_t n = c.act_rows * c.w.k;
    x16 = b.scratch(static_cast<size_t>(n) * 2);
    b.run("to_half", Grid{groups_for(n)}, c.x, n, x16->handle());
  }
  b.gemm({.w = copy.buffer->handle(), .stride = copy.stride, .x = x16 ? x16->handle() : c.x, .rows = c.out_rows,
          .m = c.w.m, .k = c.w.k, .beta = c.residual ? 1.0f : 0.0f, .y = c.y});
  b.run(fmt::format("exact_{}", type_info(c.w.type)->name), Grid{groups_for(c.out_rows * c.w.m)},
        c.blocks.handle(), c.y, c.x, residual, c.y, row_args(c));
}

// Seconds one launch of kernel `name` takes, waited for.
template <class... Args>
double launch_seconds(Backend& b, const std::string& name, Grid grid, const Args&... args) {
  const auto start = std::chrono::steady_clock::now();
  b.run(name, grid, args...);
  b.finish();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int64_t dense_row_stride(int64_t k, Type type) {
  const int64_t element = type_info(type)->block_bytes;
  return k * element % 4096 == 0 ? k + 128 / element : k;
}

size_t dense_bytes(const Weight& w, Type type) {
  return static_cast<size_t>(w.m * w.experts * dense_row_stride(w.k, type) * type_info(type)->block_bytes);
}

DenseCopy make_dense_copy(Backend& b, const Weight& w, const Buffer& blocks, Type type) {
  DenseCopy copy{.buffer = b.allocate(dense_bytes(w, type)), .type = type, .stride = dense_row_stride(w.k, type)};
  dequantize_rows(b, w.type, blocks, w.k * w.m * w.experts, w.k, copy.stride, type, copy.buffer->handle());
  return copy;
}

void product(Backend& b, const ProductCall& c, Kernels kernels) {
  if (kernels == Kernels::Dense) return dense_product(b, c);
  const TypeInfo& t = *type_info(c.w.type);
  const bool int8 = quantized(c.w.type), moe = c.ids != nullptr;
  const int tn = kernels == Kernels::Tiled ? tile_rows(b, c.w.type, (c.out_rows + c.w.experts - 1) / c.w.experts) : 0;
  const size_t values = static_cast<size_t>(c.act_rows * c.w.k);
  // The quantized activations (the float formats read x as it is).
  const auto xq = b.scratch(int8 ? values : 1), xd = b.scratch(int8 ? values / 32 * sizeof(float) : 1),
             xsum = b.scratch(int8 ? values / 16 * sizeof(float) : 1);
  // A gemv matmul's set j reads activation rows from 7 * j; every other product reads one row per output row.
  const bool sets = !tn && !moe;
  const kernels::gm_gemv_args a{.k = c.w.k, .m = c.w.m, .row_bytes = static_cast<int64_t>(c.w.row_bytes()),
                                .expert_bytes = moe ? static_cast<int64_t>(c.w.expert_bytes()) : 0,
                                .experts = c.w.experts, .slots = c.slots, .act_slots = sets ? kSetRows : c.act_slots,
                                .rows = sets ? kSetRows : 1, .out_rows = c.out_rows, .block_bytes = t.block_bytes,
                                .subs_per_block = int8 ? t.block_size / 16 : 1,
                                .has_residual = c.residual != nullptr};
  // The exact recomputation reads the residual after y is written: a residual that is y is read from a copy.
  const size_t out_bytes = static_cast<size_t>(c.out_rows * c.w.m) * sizeof(float);
  const auto residual_copy = c.residual == c.y ? b.scratch(out_bytes) : nullptr;
  if (residual_copy) b.copy(c.y, residual_copy->handle(), out_bytes);
  // Buffers a kernel does not read (ids of a matmul, a missing residual) stand in as y: no argument is null.
  const void* residual = residual_copy ? residual_copy->handle() : c.residual ? c.residual : c.y;
  const void* ids = moe ? c.ids : c.y;
  if (int8) quantize_activations(b, c.x, static_cast<int64_t>(values), xq->handle(), xd->handle(), xsum->handle());
  if (!tn) {
    const int64_t count = sets ? (c.out_rows + kSetRows - 1) / kSetRows : c.out_rows;
    b.run(fmt::format("gemv_{}", t.name), Grid{c.w.m, count}, c.blocks.handle(), ids, c.x, xq->handle(),
          xd->handle(), xsum->handle(), residual, c.y, a);
  } else {
    // A matmul's tiles are its rows in order, a work-group each. mul_mat_id's rows are grouped by expert on the
    // device, whose work-groups then take its tiles in turn: as many as keep the device busy, at most one a tile.
    const int64_t weight_tiles = (c.w.m + kTileM - 1) / kTileM;
    int64_t groups = (c.out_rows + tn - 1) / tn;
    std::shared_ptr<Buffer> counts, order, list;
    if (moe) {
      const int64_t most_tiles = c.out_rows / tn + std::min(c.w.experts, c.out_rows);  // a partial one per expert
      const int64_t busy = b.compute_units() * kUnitItems / tile_group(tn);
      groups = std::clamp((busy + weight_tiles - 1) / weight_tiles, int64_t{1}, most_tiles);
      counts = b.scratch(static_cast<size_t>(c.w.experts) * sizeof(int32_t));
      order = b.scratch(static_cast<size_t>(c.out_rows) * sizeof(int32_t));
      list = b.scratch(static_cast<size_t>(1 + 3 * most_tiles) * sizeof(int32_t));
      b.run("route_experts", Grid{1}, c.ids, c.out_rows, c.w.experts, int64_t{tn}, c.w.m, counts->handle(),
            order->handle(), list->handle(), c.y);
    }
    b.run(tiled_kernel(tn, c.w.type), Grid{weight_tiles, groups, tile_group(tn)}, c.blocks.handle(),
          moe ? list->handle() : c.y, moe ? order->handle() : c.y, xq->handle(), xd->handle(), xsum->handle(),
          residual, c.y, a);
  }
  b.run(fmt::format("exact_{}", t.name), Grid{groups_for(c.out_rows * c.w.m)}, c.blocks.handle(), ids, c.x,
        residual, c.y, a);
}

void dequantize(Backend& b, Type type, const Buffer& blocks, int64_t values, void* out) {
  dequantize_rows(b, type, blocks, values, values, values, Type::F32, out);
}

void quantize_activations(Backend& b, const void* x, int64_t values, void* q, void* d, void* sum16) {
  const int64_t groups = values / 32;
  b.run("quantize_act", Grid{groups_for(groups)}, x, groups, q, d, sum16);
}

double int8_peak_ops(Backend& b, double ops) {
  constexpr int64_t kGroups = 1024;
  constexpr double kLongEnough = 0.05;
  const auto sink = b.allocate(2 * sizeof(int32_t));
  const auto run = [&](int rounds, int seed) {
    return launch_seconds(b, "int8_peak", Grid{kGroups}, rounds, seed, sink->handle());
  };
  int rounds = 16;
  double seconds = run(rounds, 0);
  // The kernel says how many operations a work-item does per round: tensor cores and dot products differ.
  int32_t counts[2] = {};
  b.read(*sink, counts);
  if (counts[1] <= 0) throw Error(Error::Kind::BadInput, "int8_peak: the kernel counted no operations");
  const double per_round = static_cast<double>(kGroups * kGroupSize) * counts[1];
  // Rounds grow until a run takes long enough to time, or reaches `ops`: a slow device is not kept minutes.
  const int most = static_cast<int>(std::clamp(ops / per_round, 16.0, 1e6));
  while (seconds < kLongEnough && rounds < most) {
    rounds = std::min(most, rounds * 4);
    seconds = run(rounds, 0);
  }
  double best = 0;
  for (int repeat = 1; repeat <= 3; ++repeat) {
    seconds = run(rounds, repeat);
    best = repeat == 1 ? seconds : std::min(best, seconds);
  }
  return per_round * rounds / best;
}

double read_seconds(Backend& b, size_t bytes) {
  const std::vector<uint8_t> pattern(bytes, 0x5a);
  const auto words = b.upload(pattern.data(), bytes), sink = b.allocate(sizeof(uint32_t));
  const int64_t n = static_cast<int64_t>(bytes / sizeof(uint32_t));
  double best = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    const double seconds = launch_seconds(b, "read_bandwidth", Grid{kStreamGroups}, words->handle(), n, sink->handle());
    best = repeat == 0 ? seconds : std::min(best, seconds);
  }
  return best;
}

}  // namespace ggufmm::device
