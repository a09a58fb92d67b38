// The CUDA backend: the device program compiled by nvcc at build time (sm_80 and sm_90 code, PTX for later GPUs,
// embedded as a fatbin), run through the driver API, which is loaded at run time (libcuda.so.1) so that the
// library loads and runs on the CPU where there is no NVIDIA driver.
#include <cuda.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "device/backend.hpp"
#include "device/driver.hpp"
#include "device/kernels/args.h"
#include "format/registry.hpp"

// The fatbin (fatbin.cpp.in, as the build generates it).
extern const unsigned char ggufmm_cuda_fatbin[];

namespace ggufmm::device {
namespace {

// The driver entry points used, by their versioned symbol names.
#define GGUFMM_CU_FUNCTIONS(X)                                                                                    \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)  \
  X(cuDeviceTotalMem_v2) X(cuGetErrorName) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2)           \
  X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2) X(cuCtxGetDevice) X(cuModuleLoadData) X(cuModuleUnload)           \
  X(cuModuleGetFunction) X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2)         \
  X(cuMemcpyDtoDAsync_v2) X(cuMemAllocAsync) X(cuMemFreeAsync)                                                  \
  X(cuLaunchKernel) X(cuStreamCreate) X(cuStreamDestroy_v2) X(cuStreamSynchronize) X(cuStreamGetCtx)
GGUFMM_DRIVER_API(Api, GGUFMM_CU_FUNCTIONS);

// Null where the driver, one of its functions, or a working cuInit is missing.
const Api* api() {
  static const Api* loaded = []() -> const Api* {
    static Api a;
    return a.load("libcuda.so.1") && a.cuInit(0) == CUDA_SUCCESS ? &a : nullptr;
  }();
  return loaded;
}

std::string error_name(CUresult status) {
  const char* name = nullptr;
  api()->cuGetErrorName(status, &name);
  return name ? name : fmt::format("CUDA error {}", static_cast<int>(status));
}

void check(CUresult status, const std::string& who, const std::string& what) {
  if (status != CUDA_SUCCESS) {
    throw Error(Error::Kind::BadInput, fmt::format("{}: {} failed ({})", who, what, error_name(status)));
  }
}

// The backend's context made current on this thread for the scope.
class Current {
 public:
  explicit Current(CUcontext context) { api()->cuCtxPushCurrent_v2(context); }
  ~Current() {
    CUcontext ignored = nullptr;
    api()->cuCtxPopCurrent_v2(&ignored);
  }
  Current(const Current&) = delete;
  Current& operator=(const Current&) = delete;
};

class CuBuffer final : public Buffer {
 public:
  CuBuffer(CUcontext context, CUdeviceptr pointer, size_t bytes)
      : context_(context), pointer_(pointer), bytes_(bytes) {}
  ~CuBuffer() override {
    const Current current(context_);
    api()->cuMemFree_v2(pointer_);
  }
  CuBuffer(const CuBuffer&) = delete;
  CuBuffer& operator=(const CuBuffer&) = delete;
  size_t bytes() const override { return bytes_; }
  void* handle() const override { return reinterpret_cast<void*>(pointer_); }

 private:
  CUcontext context_;
  CUdeviceptr pointer_;
  size_t bytes_;
};

CUdeviceptr pointer(const void* handle) { return reinterpret_cast<CUdeviceptr>(handle); }

// A call's scratch, allocated and freed in the order of its stream: freeing it does not wait for the kernels that
// use it, so that the call returns before they finish.
class Scratch {
 public:
  Scratch(CUcontext context, CUstream stream, size_t bytes, const std::string& who)
      : context_(context), stream_(stream) {
    const Current current(context_);
    check(api()->cuMemAllocAsync(&pointer_, std::max<size_t>(bytes, 1), stream_), who,
          fmt::format("allocating {} bytes", bytes));
  }
  ~Scratch() {
    const Current current(context_);
    api()->cuMemFreeAsync(pointer_, stream_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* handle() const { return reinterpret_cast<void*>(pointer_); }

 private:
  CUcontext context_;
  CUstream stream_;
  CUdeviceptr pointer_ = 0;
};

class CuBackend final : public Backend {
 public:
  // On the device's primary context and a stream of our own, or on an engine's stream (and its context).
  CuBackend(CUdevice device, DeviceInfo info, CUstream stream = nullptr) : device_(device), info_(std::move(info)) {
    if (stream) {
      check(api()->cuStreamGetCtx(stream, &context_), who(), "cuStreamGetCtx");
      stream_ = stream;
    } else {
      check(api()->cuDevicePrimaryCtxRetain(&context_, device_), who(), "cuDevicePrimaryCtxRetain");
      primary_ = true;
      const Current current(context_);
      check(api()->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), who(), "cuStreamCreate");
      own_stream_ = true;
    }
    const Current current(context_);
    check(api()->cuModuleLoadData(&module_, ggufmm_cuda_fatbin), who(), "loading the kernels (cuModuleLoadData)");
  }
  ~CuBackend() override {
    {
      const Current current(context_);
      api()->cuModuleUnload(module_);
      if (own_stream_) api()->cuStreamDestroy_v2(stream_);
    }
    if (primary_) api()->cuDevicePrimaryCtxRelease_v2(device_);
  }
  CuBackend(const CuBackend&) = delete;
  CuBackend& operator=(const CuBackend&) = delete;

  std::shared_ptr<Buffer> allocate(size_t bytes) override {
    const Current current(context_);
    CUdeviceptr p = 0;
    check(api()->cuMemAlloc_v2(&p, std::max<size_t>(bytes, 1)), who(), fmt::format("allocating {} bytes", bytes));
    return std::make_shared<CuBuffer>(context_, p, bytes);
  }

  void write(const Buffer& to, const void* from) override {
    const Current current(context_);
    check(api()->cuMemcpyHtoDAsync_v2(pointer(to.handle()), from, to.bytes(), stream_), who(),
          fmt::format("copying {} bytes to the device", to.bytes()));
    check(api()->cuStreamSynchronize(stream_), who(), "cuStreamSynchronize");
  }

  void read(const Buffer& from, void* to) override {
    const Current current(context_);
    check(api()->cuMemcpyDtoHAsync_v2(to, pointer(from.handle()), from.bytes(), stream_), who(),
          "copying from the device");
    check(api()->cuStreamSynchronize(stream_), who(), "cuStreamSynchronize");
  }

  void dequantize(Type type, const Buffer& blocks, int64_t values, void* out) override {
    const TypeInfo& t = *type_info(type);
    const gm_i64 items = quantized(type) ? values / 16 : values;
    const int block_bytes = t.block_bytes, subs = t.block_size / 16;
    launch(fmt::format("dequantize_{}", t.name), items, 1, blocks.handle(), out, items, block_bytes, subs);
  }

  void quantize_activations(const void* x, int64_t values, void* q, void* d, void* sum16) override {
    const gm_i64 groups = values / 32;
    launch("quantize_act", groups, 1, x, groups, q, d, sum16);
  }

  void gemv(const GemvCall& c) override {
    const TypeInfo& t = *type_info(c.w.type);
    const bool int8 = quantized(c.w.type);
    const size_t values = static_cast<size_t>(c.act_rows * c.w.k);
    // Scratch for the quantized activations (the float formats read x as it is).
    const Scratch xq(context_, stream_, int8 ? values : 1, who()),
        xd(context_, stream_, int8 ? values / 32 * sizeof(float) : 1, who()),
        xsum(context_, stream_, int8 ? values / 16 * sizeof(float) : 1, who());
    const int64_t sets = (c.out_rows + c.rows - 1) / c.rows;
    if (sets > kMaxGridY) {
      throw Error(Error::Kind::BadUsage, fmt::format("{}: {} sets of rows in one call; at most {}", who(), sets,
                                                     kMaxGridY));
    }
    const kernels::gm_gemv_args a{.k = c.w.k, .m = c.w.m, .row_bytes = static_cast<int64_t>(c.w.row_bytes()),
                                  .expert_bytes = c.ids ? static_cast<int64_t>(c.w.expert_bytes()) : 0,
                                  .experts = c.w.experts, .slots = c.slots, .act_slots = c.act_slots,
                                  .rows = c.rows, .out_rows = c.out_rows, .block_bytes = t.block_bytes,
                                  .subs_per_block = int8 ? t.block_size / 16 : 1,
                                  .has_residual = c.residual != nullptr};
    const void* ids = c.ids ? c.ids : c.y;
    // The exact recomputation reads the residual after y is written: a residual that is y is read from a copy.
    const size_t out_bytes = static_cast<size_t>(c.out_rows * c.w.m) * sizeof(float);
    const Scratch residual_copy(context_, stream_, c.residual == c.y ? out_bytes : 1, who());
    if (c.residual == c.y) {
      const Current current(context_);
      check(api()->cuMemcpyDtoDAsync_v2(pointer(residual_copy.handle()), pointer(c.y), out_bytes, stream_), who(),
            "cuMemcpyDtoDAsync");
    }
    const void* residual = c.residual == c.y ? residual_copy.handle() : c.residual ? c.residual : c.y;
    if (int8) {
      const gm_i64 groups = static_cast<gm_i64>(values / 32);
      launch("quantize_act", groups, 1, c.x, groups, xq.handle(), xd.handle(), xsum.handle());
    }
    launch(fmt::format("gemv_{}", t.name), c.w.m * kGroup, sets, c.blocks.handle(), ids, c.x, xq.handle(),
           xd.handle(), xsum.handle(), residual, c.y, a);
    launch(fmt::format("exact_{}", t.name), c.out_rows * c.w.m, 1, c.blocks.handle(), ids, c.x, residual, c.y, a);
  }

  double read_seconds(size_t bytes) override {
    const std::vector<uint8_t> pattern(bytes, 0x5a);
    const auto words = upload(pattern.data(), bytes), sink = allocate(sizeof(uint32_t));
    double best = 0;
    for (int repeat = 0; repeat < 5; ++repeat) {
      const auto start = std::chrono::steady_clock::now();
      launch("read_bandwidth", kStreamItems, 1, words->handle(), gm_i64(bytes / sizeof(uint32_t)), sink->handle());
      const Current current(context_);
      check(api()->cuStreamSynchronize(stream_), who(), "cuStreamSynchronize");
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = repeat == 0 ? seconds : std::min(best, seconds);
    }
    return best;
  }

 private:
  using gm_i64 = kernels::gm_i64;
  static constexpr int kGroup = 64;             // threads per block (GM_GEMV_GROUP for the gemv kernels)
  static constexpr gm_i64 kStreamItems = 1 << 16;  // the read_bandwidth kernel's threads
  static constexpr int64_t kMaxGridY = 65535;    // CUDA's limit on a grid's second dimension

  static bool quantized(Type type) { return format::find(type)->decode != nullptr; }

  std::string who() const { return info_.name + " (" + info_.description + ")"; }

  // `items` threads in dimension 0 (whole blocks of kGroup: the kernels check their bounds), `groups_y` blocks of
  // one in dimension 1. Device buffers are passed as pointers (handles), everything else by value.
  template <class... Args>
  void launch(const std::string& name, int64_t items, int64_t groups_y, const Args&... args) {
    const Current current(context_);
    const CUfunction f = function(name);
    const auto as_argument = [](const auto& arg) {
      using T = std::decay_t<decltype(arg)>;
      if constexpr (std::is_pointer_v<T>) {
        return reinterpret_cast<CUdeviceptr>(arg);
      } else {
        return arg;
      }
    };
    auto values = std::make_tuple(as_argument(args)...);
    std::apply(
        [&](auto&... v) {
          void* params[] = {static_cast<void*>(&v)...};
          check(api()->cuLaunchKernel(f, static_cast<unsigned>((items + kGroup - 1) / kGroup),
                                      static_cast<unsigned>(groups_y), 1, kGroup, 1, 1, 0, stream_, params, nullptr),
                who(), "launching " + name);
        },
        values);
  }

  CUfunction function(const std::string& name) {
    std::lock_guard lock(mutex_);
    if (const auto it = functions_.find(name); it != functions_.end()) return it->second;
    CUfunction f = nullptr;
    check(api()->cuModuleGetFunction(&f, module_, name.c_str()), who(), "cuModuleGetFunction " + name);
    functions_.emplace(name, f);
    return f;
  }

  CUdevice device_;
  DeviceInfo info_;
  CUcontext context_ = nullptr;
  bool primary_ = false;
  CUstream stream_ = nullptr;
  bool own_stream_ = false;
  CUmodule module_ = nullptr;
  std::mutex mutex_;  // the function table
  std::unordered_map<std::string, CUfunction> functions_;
};

DeviceInfo describe(CUdevice device, int index) {
  char name[256] = {};
  api()->cuDeviceGetName(name, sizeof name, device);
  int major = 0, minor = 0, driver = 0;
  api()->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  api()->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  api()->cuDriverGetVersion(&driver);
  size_t memory = 0;
  api()->cuDeviceTotalMem_v2(&memory, device);
  DeviceInfo info{.name = fmt::format("cuda:{}", index),
                  .description = fmt::format("{}, compute capability {}.{}, CUDA driver {}.{}", name, major, minor,
                                             driver / 1000, driver % 1000 / 10),
                  .memory_bytes = memory,
                  .max_allocation = memory};
  info.capabilities = {"fp16", "warp-shuffle"};
  if (major * 10 + minor >= 61) info.capabilities.emplace_back("dp4a");
  return info;
}

}  // namespace

std::vector<Found> cuda_devices() {
  std::vector<Found> found;
  int count = 0;
  if (!api() || api()->cuDeviceGetCount(&count) != CUDA_SUCCESS) return found;
  for (int i = 0; i < count; ++i) {
    CUdevice device = 0;
    if (api()->cuDeviceGet(&device, i) != CUDA_SUCCESS) continue;
    DeviceInfo info = describe(device, i);
    found.push_back({info, [device, info] { return std::make_shared<CuBackend>(device, info); }});
  }
  return found;
}

std::shared_ptr<Backend> cuda_on_stream(void* stream, DeviceInfo& info) {
  if (!api()) throw Error(Error::Kind::BadInput, "a CUDA stream was given, but no CUDA driver loads");
  const auto s = static_cast<CUstream>(stream);
  CUcontext context = nullptr;
  check(api()->cuStreamGetCtx(s, &context), "CUDA stream", "cuStreamGetCtx");
  CUdevice device = 0;
  {
    const Current current(context);
    check(api()->cuCtxGetDevice(&device), "CUDA stream", "cuCtxGetDevice");
  }
  info = describe(device, 0);
  info.name = "cuda (the caller's stream)";
  return std::make_shared<CuBackend>(device, info, s);
}

}  // namespace ggufmm::device
