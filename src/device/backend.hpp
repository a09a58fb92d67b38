// What a device backend offers the API (device.cpp): memory, and the kernels enqueued on the device's queue.
// Buffers are named by handles (a cl_mem, a device pointer), so that an engine's own memory goes where ours does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ggufmm/device.hpp"
#include "ggufmm/types.hpp"

namespace ggufmm::device {

// Device memory of our own, released with the object.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual size_t bytes() const = 0;
  virtual void* handle() const = 0;
};

// A gemv-family call: `out_rows` output rows of m, in sets of `rows` (kernels/args.h says how sets pick their
// matrix and activation rows). Handles are device memory: x (f32, act_rows x k), ids (int32, one per set; null for
// a matmul), residual (null: none), y.
struct GemvCall {
  const Weight& w;
  const Buffer& blocks;
  const void* x;
  int64_t act_rows;
  int rows;
  int64_t out_rows;
  int64_t slots = 1;
  int64_t act_slots = 1;
  const void* ids = nullptr;
  const void* residual = nullptr;
  void* y = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Throw Error(BadInput) when the device cannot hold `bytes` bytes.
  virtual std::shared_ptr<Buffer> allocate(size_t bytes) = 0;
  // Host to device and back, waiting for the copy (and for what the queue held before it).
  virtual void write(const Buffer& to, const void* from) = 0;
  virtual void read(const Buffer& from, void* to) = 0;

  // Enqueued on the device's queue; they return before the kernels finish.
  // The values of `blocks`, a weight of `type` of `values` values, into `out` (f32).
  virtual void dequantize(Type type, const Buffer& blocks, int64_t values, void* out) = 0;
  // The activation quantization the int8 kernels run first: `values` values (a multiple of 32) into codes, a scale
  // per 32 and the scaled sums per 16.
  virtual void quantize_activations(const void* x, int64_t values, void* q, void* d, void* sum16) = 0;
  // y = x * W^T (+ residual): the activations quantized (int8 formats), the gemv kernel, the exact recomputation of
  // the outputs it may have classified wrongly.
  virtual void gemv(const GemvCall& call) = 0;

  // Seconds to read `bytes` bytes of device memory once, streaming (the best of a few runs).
  virtual double read_seconds(size_t bytes) = 0;

  std::shared_ptr<Buffer> upload(const void* data, size_t bytes) {
    auto buffer = allocate(bytes);
    write(*buffer, data);
    return buffer;
  }
};

// A device a backend found, and how to open it.
struct Found {
  DeviceInfo info;
  std::function<std::shared_ptr<Backend>()> open;
};

// The OpenCL devices (opencl:0, ...), in platform order. Empty where no OpenCL driver loads.
std::vector<Found> opencl_devices();
// A backend on an engine's own command queue (a cl_command_queue): its context and device, our kernels.
std::shared_ptr<Backend> opencl_on_queue(void* queue, DeviceInfo& info);

// The same for CUDA (cuda:0, ...; a CUstream), where the library was built with the CUDA toolkit.
std::vector<Found> cuda_devices();
std::shared_ptr<Backend> cuda_on_stream(void* stream, DeviceInfo& info);

}  // namespace ggufmm::device
