// What a device backend offers: memory, and kernels of the device program launched on the device's queue. What the
// kernels compute, and in which order they run, is the backends' common code (product.hpp). Buffers are named by
// handles (a cl_mem, a device pointer), so that an engine's own memory goes where ours does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
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

// The kernels' work-groups are this many work-items, but for the larger prefill tiles' (kernels/program.h).
inline constexpr int kGroupSize = 64;

// A launch: work-groups in dimensions 0 and 1, of `group` work-items (in dimension 0).
struct Grid {
  int64_t x;
  int64_t y = 1;
  int group = kGroupSize;
};

// A kernel argument: device memory (`value` is the handle itself) or a value of `size` bytes at `value`.
struct Arg {
  const void* value;
  size_t size;
  bool memory;
};

// A GEMM on a dense copy: y[rows, m] = x[rows, k] * W^T + beta * y, W's m rows `stride` elements apart. Elements
// of `type`, the backend's dense_type() (x in it too; y in f32).
struct Gemm {
  const void* w;
  int64_t stride;
  const void* x;
  int64_t rows;
  int64_t m;
  int64_t k;
  float beta;
  void* y;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Throw Error(BadInput) when the device cannot hold `bytes` bytes.
  virtual std::shared_ptr<Buffer> allocate(size_t bytes) = 0;
  // A call's scratch: released as soon as the last kernel using it has been enqueued, freed by the device once
  // that kernel has run, so that a call returns without waiting.
  virtual std::shared_ptr<Buffer> scratch(size_t bytes) = 0;
  // Host to device and back, waiting for the copy (and for what the queue held before it).
  virtual void write(const Buffer& to, const void* from) = 0;
  virtual void read(const Buffer& from, void* to) = 0;
  // Device to device, enqueued.
  virtual void copy(const void* from, void* to, size_t bytes) = 0;
  // Enqueues kernel `name` of the device program; returns before it runs.
  virtual void launch(const std::string& name, Grid grid, std::span<const Arg> args) = 0;
  // Waits for everything enqueued.
  virtual void finish() = 0;
  // Local (shared) memory a work-group may use, in bytes.
  virtual size_t local_memory() const = 0;
  // The most work-items a work-group of kernel `name` may have on this device (its registers may allow fewer than
  // the device's limit).
  virtual int group_limit(const std::string& name) = 0;
  // The device's compute units (OpenCL) or multiprocessors (CUDA): how many work-groups run at once, to a factor.
  virtual int64_t compute_units() const = 0;
  // The element type of the dense copies the backend's GEMM library multiplies (F32: CLBlast's SGEMM; F16: cuBLAS,
  // accumulating in f32), or nullopt where no GEMM library loads.
  virtual std::optional<Type> dense_type() = 0;
  // Enqueues a GEMM (only where dense_type() is set).
  virtual void gemm(const Gemm& call) = 0;

  std::shared_ptr<Buffer> upload(const void* data, size_t bytes) {
    auto buffer = allocate(bytes);
    write(*buffer, data);
    return buffer;
  }

  // launch() with the arguments as they are: pointers are device memory handles, anything else a value.
  template <class... Args>
  void run(const std::string& name, Grid grid, const Args&... args) {
    const Arg list[] = {as_arg(args)...};
    launch(name, grid, list);
  }

 private:
  template <class T>
  static Arg as_arg(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    if constexpr (std::is_pointer_v<T>) {
      return {static_cast<const void*>(value), sizeof(void*), true};
    } else {
      return {&value, sizeof(T), false};
    }
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
