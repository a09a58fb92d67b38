// The products on a device: the kernels of the device program (kernels/program.h) in the order they run.
#include "device/product.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <vector>

#include "device/kernels/args.h"
#include "format/registry.hpp"

namespace ggufmm::device {
namespace {

using Kind = Kernel::Kind;
using Slot = Backend::Slot;

bool quantized(Type type) { return format::find(type)->decode != nullptr; }

int64_t groups_for(int64_t items) { return (items + GM_GROUP - 1) / GM_GROUP; }

constexpr int64_t kUnitItems = 1024;          // work-items a compute unit keeps in flight, to a factor
constexpr int64_t kStreamGroupsPerUnit = 8;   // read_bandwidth's work-groups per compute unit
constexpr size_t kColdCacheMultiple = 3;      // cold reads span this many times the last-level cache
constexpr int kTimedBatch = 8;                // launches a timed batch holds at least, so that its wait is amortized

// What the host computes from the kernels' sizes (kernels/args.h), held to what the kernels assume: every tile a
// whole number of warps, each warp's activation rows whole column blocks within the kernel's accumulators, and the
// largest tile's local memory within the 48 KiB any CUDA block has without opting in to more.
constexpr bool tiles_fit() {
  for (int tn = GM_TILE_LEAST; tn <= GM_TILE_MOST; tn *= 2) {
    if (GM_TILE_GROUP(tn) % 32 != 0 || GM_TILE_CB(tn) < 1 || GM_TILE_CB(tn) > GM_TILE_MOST_CB ||
        GM_TILE_CB(tn) * 8 * (GM_TILE_GROUP(tn) / 32) != tn) {
      return false;
    }
  }
  return GM_TILE_LOCAL_BYTES(GM_TILE_MOST) <= 48 * 1024;
}
static_assert(tiles_fit());
static_assert(GM_GROUP % 32 == 0 && GM_MAX_ROWS <= GM_GROUP && GM_STREAM_GROUP % 32 == 0);

// The tiled kernel of `tn` activation rows for `type`.
Kernel tiled_kernel(int tn, Type type) { return {.kind = Kind::Tiled, .type = type, .tile_rows = tn}; }

// The activation rows of the tiles a product of `rows` rows per matrix of `type` takes on this device (the smallest
// tile the rows fit, else the largest, within the device's local memory and the kernel's work-group limit), or 0
// where no tile fits the device or `type` has no tiled kernels (the float formats).
int tile_rows(Backend& backend, Type type, int64_t rows) {
  if (!quantized(type)) return 0;
  int tn = GM_TILE_LEAST;
  while (tn < rows && tn < GM_TILE_MOST) tn *= 2;
  for (; tn >= GM_TILE_LEAST; tn /= 2) {
    const bool fits = static_cast<size_t>(GM_TILE_LOCAL_BYTES(tn)) <= backend.local_memory() &&
                      GM_TILE_GROUP(tn) <= backend.group_limit(tiled_kernel(tn, type));
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
  b.run({.kind = Kind::Dequantize, .type = type}, Grid{groups_for(items)}, blocks.handle(), out, items,
        int{t.block_bytes}, int{t.block_size / 16}, k, stride, int{element == Type::F16});
}

// The exact recomputation's arguments for a product that reads activation row r for output row r.
kernels::gm_gemv_args row_args(const ProductCall& c) {
  const TypeInfo& t = *type_info(c.w.type);
  return {.k = c.w.k, .m = c.w.m, .row_bytes = static_cast<int64_t>(c.w.row_bytes()), .expert_bytes = 0,
          .experts = 1, .slots = 1, .act_slots = 1, .rows = 1, .out_rows = c.out_rows, .block_bytes = t.block_bytes,
          .subs_per_block = quantized(c.w.type) ? t.block_size / 16 : 1, .has_residual = c.residual != nullptr};
}

// The residual the exact recomputation reads, which it reads after y is written: a residual that is y is read from
// a copy. Buffers a kernel does not read (a missing residual) stand in as y: no argument is null.
const void* residual_for(Backend& b, const ProductCall& c) {
  if (c.residual != c.y) return c.residual ? c.residual : c.y;
  const size_t bytes = static_cast<size_t>(c.out_rows * c.w.m) * sizeof(float);
  void* copy = b.scratch_slot(Slot::Residual, bytes);
  b.copy(c.y, copy, bytes);
  return copy;
}

// A matmul as the backend's GEMM on the dense copy, accumulating onto the residual where there is one.
void dense_product(Backend& b, const ProductCall& c) {
  const DenseCopy& copy = *c.dense;
  const void* residual = residual_for(b, c);
  if (c.residual && c.residual != c.y) b.copy(c.residual, c.y, static_cast<size_t>(c.out_rows * c.w.m) * sizeof(float));
  const void* x = c.x;
  if (copy.type == Type::F16) {
    const int64_t n = c.act_rows * c.w.k;
    void* x16 = b.scratch_slot(Slot::HalfActivations, static_cast<size_t>(n) * 2);
    b.run({.kind = Kind::ToHalf}, Grid{groups_for(n)}, c.x, n, x16);
    x = x16;
  }
  b.gemm({.w = copy.buffer->handle(), .stride = copy.stride, .x = x, .rows = c.out_rows, .m = c.w.m, .k = c.w.k,
          .beta = c.residual ? 1.0f : 0.0f, .y = c.y});
  b.run({.kind = Kind::Exact, .type = c.w.type}, Grid{groups_for(c.out_rows * c.w.m)}, c.blocks.handle(), c.y, c.x,
        residual, c.y, row_args(c));
}

// Seconds for `launches` calls of `enqueue(i)`, enqueued back to back and waited for once.
template <class Enqueue>
double batch_seconds(Backend& b, int launches, const Enqueue& enqueue) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) enqueue(i);
  b.finish();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / launches;
}

// Buffers of `bytes` bytes, each written with a pattern (so that no page is left to a zero page), as many as span
// kColdCacheMultiple times the device's last-level cache.
std::vector<std::shared_ptr<Buffer>> cold_buffers(Backend& b, size_t bytes) {
  const size_t cold = kColdCacheMultiple * b.cache_bytes();
  const size_t count = std::max<size_t>(1, (cold + bytes - 1) / bytes);
  const std::vector<uint8_t> pattern(bytes, 0x5a);
  std::vector<std::shared_ptr<Buffer>> buffers;
  for (size_t i = 0; i < count; ++i) buffers.push_back(b.upload(pattern.data(), bytes));
  return buffers;
}

// The best of a few batches of calls of `enqueue(i)`, cycling through `count` buffers.
template <class Enqueue>
double best_batch(Backend& b, size_t count, const Enqueue& enqueue) {
  const int launches = static_cast<int>(std::max<size_t>(kTimedBatch, count));
  double best = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    const double seconds = batch_seconds(b, launches, enqueue);
    best = repeat == 0 ? seconds : std::min(best, seconds);
  }
  return best;
}

}  // namespace

std::string Kernel::symbol() const {
  const std::string_view name = type_info(type)->name;
  switch (kind) {
    case Kind::Dequantize:
      return fmt::format("dequantize_{}", name);
    case Kind::Gemv:
      return fmt::format("gemv_{}", name);
    case Kind::Exact:
      return fmt::format("exact_{}", name);
    case Kind::Tiled:
      return fmt::format("tiled{}_{}", tile_rows, name);
    case Kind::ToHalf:
      return "to_half";
    case Kind::QuantizeActivations:
      return "quantize_act";
    case Kind::RouteExperts:
      return "route_experts";
    case Kind::ReadBandwidth:
      return "read_bandwidth";
    case Kind::Int8Peak:
      return "int8_peak";
  }
  return {};
}

void* Backend::scratch_slot(Slot slot, size_t bytes) {
  std::shared_ptr<Buffer>& buffer = scratch_slots_[static_cast<size_t>(slot)];
  if (!buffer || buffer->bytes() < bytes) buffer = scratch(std::bit_ceil(std::max<size_t>(bytes, 256)));
  return buffer->handle();
}

void check_allocation(const DeviceInfo& info, size_t bytes, const std::string& who) {
  if (bytes > info.max_allocation) {
    throw Error(Error::Kind::BadInput, fmt::format("{}: {} bytes is more than its largest allocation, {} bytes", who,
                                                   bytes, info.max_allocation));
  }
}

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
  const auto scratch = b.lock_scratch();
  if (kernels == Kernels::Dense) return dense_product(b, c);
  const TypeInfo& t = *type_info(c.w.type);
  const bool int8 = quantized(c.w.type), moe = c.ids != nullptr;
  const int tn = kernels == Kernels::Tiled ? tile_rows(b, c.w.type, (c.out_rows + c.w.experts - 1) / c.w.experts) : 0;
  const size_t values = static_cast<size_t>(c.act_rows * c.w.k);
  // A gemv matmul's set j reads activation rows from GM_MAX_ROWS * j; every other product one row per output row.
  const bool sets = !tn && !moe;
  const kernels::gm_gemv_args a{.k = c.w.k, .m = c.w.m, .row_bytes = static_cast<int64_t>(c.w.row_bytes()),
                                .expert_bytes = moe ? static_cast<int64_t>(c.w.expert_bytes()) : 0,
                                .experts = c.w.experts, .slots = c.slots, .act_slots = sets ? GM_MAX_ROWS : c.act_slots,
                                .rows = sets ? GM_MAX_ROWS : 1, .out_rows = c.out_rows, .block_bytes = t.block_bytes,
                                .subs_per_block = int8 ? t.block_size / 16 : 1,
                                .has_residual = c.residual != nullptr};
  const void* residual = residual_for(b, c);
  // The quantized activations (the float formats read x as it is, and y stands in for them: no argument is null).
  void* xq = c.y;
  void* xd = c.y;
  void* xsum = c.y;
  if (int8) {
    xq = b.scratch_slot(Slot::ActCodes, values);
    xd = b.scratch_slot(Slot::ActScales, values / 32 * sizeof(float));
    xsum = b.scratch_slot(Slot::ActSums, values / 16 * sizeof(float));
    quantize_activations(b, c.x, static_cast<int64_t>(values), xq, xd, xsum);
  }
  const void* ids = moe ? c.ids : c.y;
  if (!tn) {
    const int64_t count = sets ? (c.out_rows + GM_MAX_ROWS - 1) / GM_MAX_ROWS : c.out_rows;
    b.run({.kind = Kind::Gemv, .type = c.w.type}, Grid{c.w.m, count}, c.blocks.handle(), ids, c.x, xq, xd, xsum,
          residual, c.y, a);
  } else {
    // A matmul's tiles are its rows in order, a work-group each. mul_mat_id's rows are grouped by expert on the
    // device, whose work-groups then take its tiles in turn: as many as keep the device busy, at most one a tile.
    const int64_t weight_tiles = (c.w.m + GM_TILE_M - 1) / GM_TILE_M;
    int64_t groups = (c.out_rows + tn - 1) / tn;
    const void* tiles = c.y;
    const void* order = c.y;
    if (moe) {
      const int64_t most_tiles = c.out_rows / tn + std::min(c.w.experts, c.out_rows);  // a partial one per expert
      const int64_t busy = b.compute_units() * kUnitItems / GM_TILE_GROUP(tn);
      groups = std::clamp((busy + weight_tiles - 1) / weight_tiles, int64_t{1}, most_tiles);
      void* counts = b.scratch_slot(Slot::ExpertCounts, static_cast<size_t>(c.w.experts) * sizeof(int32_t));
      void* rows = b.scratch_slot(Slot::ExpertOrder, static_cast<size_t>(c.out_rows) * sizeof(int32_t));
      void* list = b.scratch_slot(Slot::Tiles, static_cast<size_t>(1 + 3 * most_tiles) * sizeof(int32_t));
      b.run({.kind = Kind::RouteExperts}, Grid{1}, c.ids, c.out_rows, c.w.experts, int64_t{tn}, c.w.m, counts, rows,
            list, c.y);
      tiles = list;
      order = rows;
    }
    b.run(tiled_kernel(tn, c.w.type), Grid{weight_tiles, groups, GM_TILE_GROUP(tn)}, c.blocks.handle(), tiles, order,
          xq, xd, xsum, residual, c.y, a);
  }
  b.run({.kind = Kind::Exact, .type = c.w.type}, Grid{groups_for(c.out_rows * c.w.m)}, c.blocks.handle(), ids, c.x,
        residual, c.y, a);
}

void dequantize(Backend& b, Type type, const Buffer& blocks, int64_t values, void* out) {
  dequantize_rows(b, type, blocks, values, values, values, Type::F32, out);
}

void quantize_activations(Backend& b, const void* x, int64_t values, void* q, void* d, void* sum16) {
  const int64_t groups = values / 32;
  b.run({.kind = Kind::QuantizeActivations}, Grid{groups_for(groups)}, x, groups, q, d, sum16);
}

double int8_peak_ops(Backend& b, double ops) {
  constexpr int64_t kGroups = 1024;
  constexpr double kLongEnough = 0.05;
  const auto sink = b.allocate(sizeof(int32_t));
  const auto run = [&](int rounds, int seed) {
    return batch_seconds(b, 1, [&](int) {
      b.run({.kind = Kind::Int8Peak}, Grid{kGroups}, rounds, seed, sink->handle());
    });
  };
  const double per_round = static_cast<double>(kGroups * GM_GROUP) * (b.int8_mma() ? GM_PEAK_OPS_MMA : GM_PEAK_OPS_DOT);
  // Rounds grow until a run takes long enough to time, or reaches `ops`: a slow device is not kept minutes.
  const int most = static_cast<int>(std::clamp(ops / per_round, 16.0, 1e6));
  int rounds = 16;
  double seconds = run(rounds, 0);
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
  bytes = std::max<size_t>(bytes / 16 * 16, 16);
  const auto buffers = cold_buffers(b, bytes);
  const auto sink = b.allocate(sizeof(uint32_t));
  const int group = std::min(GM_STREAM_GROUP, b.group_limit({.kind = Kind::ReadBandwidth}));
  const Grid grid{b.compute_units() * kStreamGroupsPerUnit, 1, group};
  const auto words = static_cast<int64_t>(bytes / 16);
  return best_batch(b, buffers.size(), [&](int i) {
    b.run({.kind = Kind::ReadBandwidth}, grid, buffers[static_cast<size_t>(i) % buffers.size()]->handle(), words,
          sink->handle());
  });
}

double copy_seconds(Backend& b, size_t bytes) {
  const auto buffers = cold_buffers(b, bytes);
  const auto target = b.allocate(bytes);
  return best_batch(b, buffers.size(), [&](int i) {
    b.copy(buffers[static_cast<size_t>(i) % buffers.size()]->handle(), target->handle(), bytes);
  });
}

}  // namespace ggufmm::device
