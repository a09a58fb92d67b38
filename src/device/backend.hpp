// What a device backend offers the API (device.cpp): buffers and the kernels, behind one interface per device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ggufmm/device.hpp"
#include "ggufmm/types.hpp"

namespace ggufmm::device {

// Device memory, released with the object.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual size_t bytes() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // A copy of `bytes` bytes on the device. Throws Error(BadInput) when the device cannot hold them.
  virtual std::shared_ptr<Buffer> upload(const void* data, size_t bytes) = 0;
  // The values of `blocks`, a weight of `type` of `values` values, into host memory.
  virtual void dequantize(Type type, const Buffer& blocks, int64_t values, float* out) = 0;
  // y = x * W^T (+ residual) on the device, host memory in and out; `w` is the weight's shape and type (its data
  // is on the device, in `blocks`).
  virtual void matmul(const Weight& w, const Buffer& blocks, const float* x, int64_t rows, float* y,
                      const float* residual) = 0;
  virtual void mul_mat_id(const Weight& w, const Buffer& blocks, const float* act, int64_t tokens,
                          int64_t act_slots, const int32_t* ids, int64_t slots, float* y, const float* residual) = 0;
  // Seconds to read `bytes` bytes of device memory once, streaming (the best of a few runs).
  virtual double read_seconds(size_t bytes) = 0;
  // The activation quantization the int8 kernels run first, its results read back: `values` values (a multiple of
  // 32) into codes, a scale per 32 and the scaled sums per 16.
  virtual void quantize_activations(const float* x, int64_t values, int8_t* q, float* d, float* sum16) = 0;
};

// A device a backend found, and how to open it.
struct Found {
  DeviceInfo info;
  std::function<std::shared_ptr<Backend>()> open;
};

// The OpenCL devices (opencl:0, ...), in platform order. Empty where no OpenCL driver loads.
std::vector<Found> opencl_devices();

}  // namespace ggufmm::device
