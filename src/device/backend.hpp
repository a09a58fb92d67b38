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
};

// A device a backend found, and how to open it.
struct Found {
  DeviceInfo info;
  std::function<std::shared_ptr<Backend>()> open;
};

// The OpenCL devices (opencl:0, ...), in platform order. Empty where no OpenCL driver loads.
std::vector<Found> opencl_devices();

}  // namespace ggufmm::device
