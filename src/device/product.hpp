// The products on a device, in the backends' common code: which kernels of the device program run, on what, and in
// which order. A backend only allocates, copies and launches.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/backend.hpp"
#include "ggufmm/types.hpp"

namespace ggufmm::device {

// A weight dequantized once into a dense copy on the device: its values in `type` (the backend's dense_type()),
// rows `stride` elements apart.
struct DenseCopy {
  std::shared_ptr<Buffer> buffer;
  Type type;
  int64_t stride;
};

// Elements from one row of a dense copy to the next: k, plus a 128-byte line where k elements would make the
// stride a multiple of 4 KiB (rows that far apart share cache sets and memory channels).
int64_t dense_row_stride(int64_t k, Type type);
size_t dense_bytes(const Weight& w, Type type);
// A new dense copy of the weight whose blocks are `blocks`, dequantized on the device (enqueued).
DenseCopy make_dense_copy(Backend& backend, const Weight& w, const Buffer& blocks, Type type);

// y = x * W^T (+ residual) on device memory: `out_rows` rows of m outputs. A matmul (ids null) reads activation row
// r for output row r; mul_mat_id's output row token * slots + slot reads the token's row (act_slots 1) or the
// slot's own, and the matrix its id names.
struct ProductCall {
  const Weight& w;
  const Buffer& blocks;
  const void* x;  // f32, act_rows x k
  int64_t act_rows;
  int64_t out_rows;
  int64_t slots = 1;
  int64_t act_slots = 1;
  const void* ids = nullptr;  // int32, one per output row
  const void* residual = nullptr;
  void* y = nullptr;
  const DenseCopy* dense = nullptr;  // the weight's dense copy (Kernels::Dense, matmul only)
};

// The kernels a product runs: gemv sets of up to 7 rows, prefill tiles (quantized formats, where a tile fits the
// device; else gemv), or the backend's GEMM on a dense copy.
enum class Kernels { Gemv, Tiled, Dense };

// Enqueues the product: the activations quantized to int8 per 32 values (quantized formats), the routing of
// mul_mat_id's rows by expert (tiled), the kernels or the GEMM (its residual added by accumulating onto it), then
// the exact recomputation of the outputs they may have classified wrongly. Returns before the device has finished.
void product(Backend& backend, const ProductCall& call, Kernels kernels);

// The values of `blocks`, a weight of `type` of `values` values, into `out` (f32), enqueued.
void dequantize(Backend& backend, Type type, const Buffer& blocks, int64_t values, void* out);
// The activation quantization the int8 kernels run first: `values` values (a multiple of 32) into codes, a scale
// per 32 and the scaled sums per 16; enqueued.
void quantize_activations(Backend& backend, const void* x, int64_t values, void* q, void* d, void* sum16);

// Seconds to read `bytes` bytes of device memory once, streaming 16-byte words from enough work-groups to fill the
// device: the best of a few runs, each a batch of reads of buffers of `bytes` bytes in turn, as many as span three
// times the device's last-level cache, so that every read comes from memory.
double read_seconds(Backend& backend, size_t bytes);
// Seconds for the device's own copy (cudaMemcpy or clEnqueueCopyBuffer, device to device) of `bytes` bytes, which
// reads and writes them: the best of a few batches, as read_seconds.
double copy_seconds(Backend& backend, size_t bytes);
// The device's int8 rate in operations per second (2 per multiply-add) on the units the prefill tiles use
// (tensor cores where the device has them, else 4-byte dot products): a kernel of register chains, of up to `ops`
// operations (fewer where a run already takes 50 ms), the best of a few runs.
double int8_peak_ops(Backend& backend, double ops);

}  // namespace ggufmm::device
