// What a device backend offers: memory, and kernels of the device program launched on the device's queue. What the
// kernels compute, and in which order they run, is the backends' common code (product.hpp). Buffers are named by
// handles (a cl_mem, a device pointer), so that an engine's own memory goes where ours does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "device/kernels/args.h"
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

// A kernel of the device program (kernels/program.h): what it does and, for the per-format ones, the format (and
// a tile's activation rows), from which symbol() names its entry point, the one place names are made.
struct Kernel {
  enum class Kind {
    Dequantize, Gemv, Exact, Tiled,  // per format
    ToHalf, QuantizeActivations, RouteExperts, ReadBandwidth, Int8Peak
  };
  Kind kind;
  Type type = Type::F32;  // the per-format kernels' format
  int tile_rows = 0;      // Tiled: activation rows per tile

  bool per_format() const { return kind <= Kind::Tiled; }
  std::string symbol() const;
  auto operator<=>(const Kernel&) const = default;
};

// A launch: work-groups in dimensions 0 and 1, of `group` work-items (in dimension 0).
struct Grid {
  int64_t x;
  int64_t y = 1;
  int group = GM_GROUP;
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
  // Throw Error(BadInput) when the device cannot hold `bytes` bytes (check_allocation first).
  virtual std::shared_ptr<Buffer> allocate(size_t bytes) = 0;
  // Scratch: freed by the device once the kernels enqueued before its release have run, so that releasing it does
  // not wait for them.
  virtual std::shared_ptr<Buffer> scratch(size_t bytes) = 0;
  // Host to device, waiting for the copy (and for what the queue held before it), so that `from` may go at once.
  virtual void write(const Buffer& to, const void* from) = 0;
  // Host to device, enqueued: `from` must stay as it is until the queue's next read() or finish().
  virtual void enqueue_write(const Buffer& to, const void* from) = 0;
  // Device to host, waiting for the copy and everything enqueued before it.
  virtual void read(const Buffer& from, void* to) = 0;
  // Device to device, enqueued.
  virtual void copy(const void* from, void* to, size_t bytes) = 0;
  // Enqueues `kernel`; returns before it runs.
  virtual void launch(const Kernel& kernel, Grid grid, std::span<const Arg> args) = 0;
  // Waits for everything enqueued.
  virtual void finish() = 0;
  // Local (shared) memory a work-group may use, in bytes.
  virtual size_t local_memory() const = 0;
  // The most work-items a work-group of `kernel` may have on this device (its registers may allow fewer than the
  // device's limit).
  virtual int group_limit(const Kernel& kernel) = 0;
  // The device's compute units (OpenCL) or multiprocessors (CUDA): how many work-groups run at once, to a factor.
  virtual int64_t compute_units() const = 0;
  // The device's last-level cache in bytes (an NVIDIA GPU's L2), which cold timing reads past.
  virtual size_t cache_bytes() const = 0;
  // Whether the kernels multiply int8 on tensor cores here (GM_HAS_MMA), else by 4-byte dot products.
  virtual bool int8_mma() const = 0;
  // The element type of the dense copies the backend's GEMM library multiplies (F32: CLBlast's SGEMM; F16: cuBLAS,
  // accumulating in f32), or nullopt where no GEMM library loads.
  virtual std::optional<Type> dense_type() = 0;
  // Enqueues a GEMM (only where dense_type() is set).
  virtual void gemm(const Gemm& call) = 0;

  // The products' scratch (product.cpp), per backend and so per device and queue or stream: a buffer per use,
  // kept and grown (replaced by a larger one, the old one freed as scratch is) when a call needs more, so that a
  // product allocates nothing once one as large has run. A product holds lock_scratch() from its first enqueue to
  // its last, which also keeps the backend's products from interleaving their kernels.
  enum class Slot { ActCodes, ActScales, ActSums, Residual, HalfActivations, ExpertCounts, ExpertOrder, Tiles };
  std::unique_lock<std::mutex> lock_scratch() { return std::unique_lock(scratch_mutex_); }
  void* scratch_slot(Slot slot, size_t bytes);  // under lock_scratch()

  std::shared_ptr<Buffer> upload(const void* data, size_t bytes) {
    auto buffer = allocate(bytes);
    write(*buffer, data);
    return buffer;
  }

  // launch() with the arguments as they are: pointers are device memory handles, anything else a value.
  template <class... Args>
  void run(const Kernel& kernel, Grid grid, const Args&... args) {
    const Arg list[] = {as_arg(args)...};
    launch(kernel, grid, list);
  }

 protected:
  // Releases the scratch: a backend's destructor calls it first, while the queue or stream it is freed on lives.
  void drop_scratch() { scratch_slots_ = {}; }

 private:
  static constexpr size_t kSlots = static_cast<size_t>(Slot::Tiles) + 1;
  std::mutex scratch_mutex_;
  std::array<std::shared_ptr<Buffer>, kSlots> scratch_slots_;

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

// Throws Error(BadInput) where `bytes` is more than the device's largest allocation.
void check_allocation(const DeviceInfo& info, size_t bytes, const std::string& who);

// A device a backend found, and how to open it (which throws where info.unusable says why it cannot be used).
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
