// Devices: the CPU, and GPUs through CUDA (NVIDIA) and OpenCL (any other). A weight is uploaded to a device once,
// as stored, and stays resident until its last handle goes; later calls never copy it again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ggufmm/export.h"
#include "ggufmm/types.hpp"

namespace ggufmm {

class Device;
namespace device {
class Backend;
class Buffer;
class DenseCache;
Backend* backend_of(const Device& device);  // null for the CPU (device/backend.hpp)
}  // namespace device

struct DeviceInfo {
  std::string name;         // what --device and GGUFMM_DEVICE take: "cpu", "cuda:0", "opencl:0", ...
  std::string description;  // the device's, its platform's and its driver's names
  uint64_t memory_bytes = 0;
  uint64_t max_allocation = 0;            // the largest single buffer
  int compute_units = 0;                  // its multiprocessors (CUDA) or compute units (OpenCL)
  uint64_t cache_bytes = 0;               // its last-level cache (a GPU's L2)
  std::vector<std::string> capabilities;  // those the kernels use on it ("fp64", "dp4a", "int8-mma", ...)
  std::string unusable;                   // why it cannot be opened (an outdated driver, say), else empty
};

// Every device: the CPU, then CUDA's, then OpenCL's. Without a driver (no libcuda, no OpenCL ICD loader or
// platform) only the CPU is listed.
GGUFMM_API std::vector<DeviceInfo> devices();

// A device, opened once and shared by every handle to it.
class GGUFMM_API Device {
 public:
  // By name, as devices() lists them. Throws Error(BadInput) naming the device and what there is instead.
  static Device open(std::string_view name);
  // The device $GGUFMM_DEVICE names, else the CPU.
  static Device from_environment();
  // For engines with an OpenCL queue of their own (a cl_command_queue): weights uploaded through this device live
  // in the queue's context, and the enqueue_ calls run on that queue.
  static Device from_opencl_queue(void* queue);
  // The same for a CUDA stream (a CUstream; buffers are device pointers), where ggufmm was built with CUDA.
  static Device from_cuda_stream(void* stream);

  const DeviceInfo& info() const;
  bool is_cpu() const { return backend_ == nullptr; }
  // The device's memory read rate in bytes per second: a streaming kernel reading buffers of `bytes` bytes in 16-byte
  // words, cold (the buffers read in turn span three times its last-level cache), the best of a few runs. Throws
  // Error(BadUsage) on the CPU (ggufmm bench measures the host's memory itself).
  double read_bandwidth(size_t bytes) const;
  // The rate of the device's own copy of `bytes` bytes, device to device (cudaMemcpy, clEnqueueCopyBuffer), in bytes
  // read and written per second, as NVIDIA's bandwidthTest counts it: a check on read_bandwidth. Error(BadUsage) on
  // the CPU.
  double copy_bandwidth(size_t bytes) const;
  // The device's int8 rate in operations per second (2 per multiply-add) on the units its prefill tiles use:
  // tensor-core mma chains on CUDA from sm_80, else chains of 4-byte dot products (dp4a on CUDA), of up to `ops`
  // operations in all (fewer where a run already takes 50 ms), the best of a few runs. Error(BadUsage) on the CPU.
  double int8_peak(double ops) const;

  // The device's cache of dense copies (the dense path): one per resident weight, dequantized on the device, kept
  // within a byte budget (GGUFMM_DENSE_CACHE_BYTES, else a quarter of the device's memory), the least recently used
  // dropped past it; a copy goes with its resident weight. On the CPU these are the process's cache (ggufmm.hpp).
  DenseCacheStats dense_cache_stats() const;
  void set_dense_cache_budget(size_t bytes) const;
  void clear_dense_cache() const;

 private:
  friend class ResidentWeight;
  friend device::Backend* device::backend_of(const Device& device);
  Device(DeviceInfo info, std::shared_ptr<device::Backend> backend);
  std::shared_ptr<const DeviceInfo> info_;
  std::shared_ptr<device::Backend> backend_;  // null for the CPU
  std::shared_ptr<device::DenseCache> dense_cache_;  // null for the CPU
};

// A weight resident on a device. Uploading copies the blocks once; on the CPU it only refers to the host weight,
// which must then outlive it. Throws Error(BadInput) when the device cannot hold it (nothing stays resident).
class GGUFMM_API ResidentWeight {
 public:
  ResidentWeight(const Device& device, const Weight& w);

  const Device& device() const { return device_; }
  const Weight& weight() const { return weight_; }  // its type and shape (data: the host copy it came from)
  // All values, in order (experts * m * k floats), computed on the device: bit for bit ggml's dequantization.
  std::vector<float> dequantize() const;
  // matmul and mul_mat_id (ggufmm.hpp) on the device, from and to host memory: the activations quantized to int8
  // per 32 values there as on the CPU (bit for bit), the same int8 product, the residual added in the store, and
  // outputs classified as the exact product classifies them.
  // Paths on a device: gemv takes rows up to 7 at a time, each weight block decoded once per set; tiled (quantized
  // formats; the float formats run gemv) decodes each block once per tile of 16 to 256 rows into local memory, and
  // mul_mat_id groups its rows by expert on the device first; dense (matmul) multiplies the weight's dense copy (the
  // device's cache) with the GEMM library the device has: cuBLAS on f16 copies accumulating in f32 (CUDA), CLBlast's
  // SGEMM on f32 copies (OpenCL). Auto takes gemv below 8 rows per weight matrix (for mul_mat_id, on average per
  // expert), tiled from there, and dense where set_prefill_dequant's minimum is on and reached and the copy fits the
  // cache's budget; the path profile's crossovers for this device, where calibrate --device measured them, replace the
  // 8 and raise the dense minimum as on the CPU; mul_mat_id runs its expert-grouped kernels for dense as on the CPU.
  // GGUFMM_PATH forces a path as on the CPU. Ref is not offered on devices, nor dense where no GEMM library loads
  // (Error(BadUsage)). options.threads is the CPU's only.
  void matmul(const float* x, int64_t rows, float* y, const float* residual = nullptr,
              const Options& options = {}) const;
  void mul_mat_id(const float* act, int64_t tokens, int64_t act_slots, const int32_t* ids, int64_t slots, float* y,
                  const float* residual = nullptr, const Options& options = {}) const;

  // The same on device memory, for engines: buffers are the device's handles (cl_mem), in the layouts above (ids:
  // int32 on the device; an id naming no expert makes that slot's outputs NaN, as it cannot be checked from here).
  // Enqueued on the device's queue; they return without waiting, and the caller synchronizes on its queue.
  // Throws Error(BadUsage) on the CPU, which has no device memory.
  void enqueue_matmul(const void* x, int64_t rows, void* y, const void* residual = nullptr,
                      const Options& options = {}) const;
  void enqueue_mul_mat_id(const void* act, int64_t tokens, int64_t act_slots, const void* ids, int64_t slots,
                          void* y, const void* residual = nullptr, const Options& options = {}) const;
  void enqueue_dequantize(void* out) const;

 private:
  device::Backend& backend() const;  // throws on the CPU

  Device device_;
  Weight weight_;
  std::shared_ptr<device::Buffer> blocks_;  // null on the CPU
};

}  // namespace ggufmm
