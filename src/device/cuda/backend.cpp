// The CUDA backend: the device program compiled by nvcc at build time (sm_80 and sm_90 code, PTX for later GPUs,
// embedded as a fatbin), run through the driver API, which is loaded at run time (libcuda.so.1) so that the
// library loads and runs on the CPU where there is no NVIDIA driver.
#include <cublas_v2.h>
#include <cuda.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "device/backend.hpp"
#include "device/driver.hpp"
#include "device/kernels/args.h"

// The fatbin (fatbin.cpp.in, as the build generates it).
extern const unsigned char ggufmm_cuda_fatbin[];

namespace ggufmm::device {
namespace {

// The driver entry points used, by their versioned symbol names.
#define GGUFMM_CU_FUNCTIONS(X)                                                                                    \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)  \
  X(cuDeviceTotalMem_v2) X(cuGetErrorName) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2)           \
  X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2) X(cuCtxGetDevice) X(cuModuleLoadData) X(cuModuleUnload)           \
  X(cuModuleGetFunction) X(cuFuncGetAttribute) X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemcpyHtoDAsync_v2)          \
  X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoDAsync_v2) X(cuMemAllocAsync) X(cuMemFreeAsync)                           \
  X(cuLaunchKernel) X(cuStreamCreate) X(cuStreamDestroy_v2) X(cuStreamSynchronize) X(cuStreamGetCtx)
GGUFMM_DRIVER_API(Api, GGUFMM_CU_FUNCTIONS);

// cuBLAS, for the dense path, loaded at its first use: from the library path, else from the toolkit the library
// was built with.
#define GGUFMM_CUBLAS_FUNCTIONS(X) X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) X(cublasGemmEx_64)
GGUFMM_DRIVER_API(Blas, GGUFMM_CUBLAS_FUNCTIONS);

const Blas* blas() {
  static const Blas* loaded = []() -> const Blas* {
    static Blas b;
    for (const char* library : {GGUFMM_CUBLAS_NAME, GGUFMM_CUBLAS_PATH}) {
      if (b.load(library)) return &b;
    }
    return nullptr;
  }();
  return loaded;
}

// Null where the driver, one of its functions, or a working cuInit is missing.
const Api* api() {
  static const Api* loaded = []() -> const Api* {
    static Api a;
    return a.load("libcuda.so.1") && a.cuInit(0) == CUDA_SUCCESS ? &a : nullptr;
  }();
  return loaded;
}

// The oldest driver the kernels and cuBLAS run on: one for the toolkit's CUDA major version (its minor versions run
// on the first's driver), which NVIDIA numbers by the driver's own version.
constexpr int kDriverNeeded = CUDA_VERSION / 1000 * 1000;
std::string driver_release(int cuda) {
  switch (cuda / 1000) {
    case 12:
      return " (NVIDIA driver 525 or newer)";
    case 13:
      return " (NVIDIA driver 580 or newer)";
    default:
      return "";
  }
}

std::string version_text(int version) { return fmt::format("{}.{}", version / 1000, version % 1000 / 10); }

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

// A context made current on this thread for the scope.
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

CUdeviceptr pointer(const void* handle) { return reinterpret_cast<CUdeviceptr>(handle); }

// What a backend holds of the driver, each released by its own destructor, so that a backend whose constructor
// throws part way releases what it had taken. The device's primary context (retained), or an engine's stream's
// context (borrowed).
class Context {
 public:
  Context(CUdevice device, CUstream stream, const std::string& who) {
    if (stream) {
      check(api()->cuStreamGetCtx(stream, &context_), who, "cuStreamGetCtx");
    } else {
      check(api()->cuDevicePrimaryCtxRetain(&context_, device), who, "cuDevicePrimaryCtxRetain");
      retained_ = device;
    }
  }
  ~Context() {
    if (retained_) api()->cuDevicePrimaryCtxRelease_v2(*retained_);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  CUcontext get() const { return context_; }

 private:
  CUcontext context_ = nullptr;
  std::optional<CUdevice> retained_;
};

// A stream of our own, or an engine's (borrowed).
class Stream {
 public:
  Stream(CUcontext context, CUstream stream, const std::string& who) : context_(context), stream_(stream) {
    if (stream_) return;
    const Current current(context_);
    check(api()->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), who, "cuStreamCreate");
    own_ = true;
  }
  ~Stream() {
    if (!own_) return;
    const Current current(context_);
    api()->cuStreamDestroy_v2(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return stream_; }

 private:
  CUcontext context_;
  CUstream stream_;
  bool own_ = false;
};

// The device program, loaded into the context.
class Module {
 public:
  Module(CUcontext context, const std::string& who) : context_(context) {
    const Current current(context_);
    check(api()->cuModuleLoadData(&module_, ggufmm_cuda_fatbin), who, "loading the kernels (cuModuleLoadData)");
  }
  ~Module() {
    const Current current(context_);
    api()->cuModuleUnload(module_);
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  CUmodule get() const { return module_; }

 private:
  CUcontext context_;
  CUmodule module_ = nullptr;
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

// Scratch, allocated and freed in the order of its stream: freeing it does not wait for the kernels that use it.
class Scratch final : public Buffer {
 public:
  Scratch(CUcontext context, CUstream stream, size_t bytes, const std::string& who)
      : context_(context), stream_(stream), bytes_(bytes) {
    const Current current(context_);
    check(api()->cuMemAllocAsync(&pointer_, std::max<size_t>(bytes, 1), stream_), who,
          fmt::format("allocating {} bytes", bytes));
  }
  ~Scratch() override {
    const Current current(context_);
    api()->cuMemFreeAsync(pointer_, stream_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  size_t bytes() const override { return bytes_; }
  void* handle() const override { return reinterpret_cast<void*>(pointer_); }

 private:
  CUcontext context_;
  CUstream stream_;
  size_t bytes_;
  CUdeviceptr pointer_ = 0;
};

int attribute(CUdevice device, CUdevice_attribute which) {
  int value = 0;
  api()->cuDeviceGetAttribute(&value, which, device);
  return value;
}

// major * 100 + minor * 10, as __CUDA_ARCH__ counts.
int architecture(CUdevice device) {
  return attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 100 +
         attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) * 10;
}

class CuBackend final : public Backend {
 public:
  // On the device's primary context and a stream of our own, or on an engine's stream (and its context).
  CuBackend(CUdevice device, DeviceInfo info, CUstream stream = nullptr)
      : info_(std::move(info)),
        context_(device, stream, who()),
        stream_(context_.get(), stream, who()),
        module_(context_.get(), who()),
        local_bytes_(static_cast<size_t>(attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK))),
        mma_(architecture(device) >= GM_MMA_ARCH) {}
  ~CuBackend() override {
    drop_scratch();
    const Current current(context_.get());
    if (cublas_) blas()->cublasDestroy_v2(cublas_);
  }
  CuBackend(const CuBackend&) = delete;
  CuBackend& operator=(const CuBackend&) = delete;

  std::shared_ptr<Buffer> allocate(size_t bytes) override {
    check_allocation(info_, bytes, who());
    const Current current(context_.get());
    CUdeviceptr p = 0;
    check(api()->cuMemAlloc_v2(&p, std::max<size_t>(bytes, 1)), who(), fmt::format("allocating {} bytes", bytes));
    return std::make_shared<CuBuffer>(context_.get(), p, bytes);
  }

  void write(const Buffer& to, const void* from) override {
    enqueue_write(to, from);
    finish();
  }

  void enqueue_write(const Buffer& to, const void* from) override {
    const Current current(context_.get());
    check(api()->cuMemcpyHtoDAsync_v2(pointer(to.handle()), from, to.bytes(), stream_.get()), who(),
          fmt::format("copying {} bytes to the device", to.bytes()));
  }

  void read(const Buffer& from, void* to) override {
    const Current current(context_.get());
    check(api()->cuMemcpyDtoHAsync_v2(to, pointer(from.handle()), from.bytes(), stream_.get()), who(),
          "copying from the device");
    check(api()->cuStreamSynchronize(stream_.get()), who(), "cuStreamSynchronize");
  }

  std::shared_ptr<Buffer> scratch(size_t bytes) override {
    check_allocation(info_, bytes, who());
    return std::make_shared<Scratch>(context_.get(), stream_.get(), bytes, who());
  }

  void copy(const void* from, void* to, size_t bytes) override {
    const Current current(context_.get());
    check(api()->cuMemcpyDtoDAsync_v2(pointer(to), pointer(from), bytes, stream_.get()), who(), "cuMemcpyDtoDAsync");
  }

  // Device memory is passed as its pointer, values as they are.
  void launch(const Kernel& kernel, Grid grid, std::span<const Arg> args) override {
    if (grid.y > kMaxGridY) {
      throw Error(Error::Kind::BadUsage, fmt::format("{}: {} work-groups in the second dimension of one launch; at "
                                                     "most {}", who(), grid.y, kMaxGridY));
    }
    const Current current(context_.get());
    const CUfunction f = function(kernel).f;
    std::vector<CUdeviceptr> pointers(args.size());
    std::vector<void*> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      pointers[i] = args[i].memory ? pointer(args[i].value) : 0;
      params[i] = args[i].memory ? static_cast<void*>(&pointers[i]) : const_cast<void*>(args[i].value);
    }
    check(api()->cuLaunchKernel(f, static_cast<unsigned>(grid.x), static_cast<unsigned>(grid.y), 1,
                                static_cast<unsigned>(grid.group), 1, 1, 0, stream_.get(), params.data(), nullptr),
          who(), "launching " + kernel.symbol());
  }

  void finish() override {
    const Current current(context_.get());
    check(api()->cuStreamSynchronize(stream_.get()), who(), "cuStreamSynchronize");
  }

  size_t local_memory() const override { return local_bytes_; }
  int group_limit(const Kernel& kernel) override {
    const Current current(context_.get());
    return function(kernel).group_limit;
  }
  int64_t compute_units() const override { return info_.compute_units; }
  size_t cache_bytes() const override { return info_.cache_bytes; }
  bool int8_mma() const override { return mma_; }

  std::optional<Type> dense_type() override {
    std::lock_guard lock(mutex_);
    if (!cublas_ && blas()) {
      const Current current(context_.get());
      if (blas()->cublasCreate_v2(&cublas_) != CUBLAS_STATUS_SUCCESS) cublas_ = nullptr;
      if (cublas_) blas()->cublasSetStream_v2(cublas_, stream_.get());
    }
    return cublas_ ? std::optional(Type::F16) : std::nullopt;
  }

  // Column-major, as cuBLAS reads: y^T (m x rows) = W (k x m, read transposed) times x^T (k x rows); f16 in, f32
  // accumulation and out.
  void gemm(const Gemm& g) override {
    const Current current(context_.get());
    const float alpha = 1.0f;
    const cublasStatus_t status = blas()->cublasGemmEx_64(
        cublas_, CUBLAS_OP_T, CUBLAS_OP_N, g.m, g.rows, g.k, &alpha, g.w, CUDA_R_16F, g.stride, g.x, CUDA_R_16F, g.k,
        &g.beta, g.y, CUDA_R_32F, g.m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) {
      throw Error(Error::Kind::BadInput, fmt::format("{}: cublasGemmEx failed (status {})", who(),
                                                     static_cast<int>(status)));
    }
  }

 private:
  static constexpr int64_t kMaxGridY = 65535;  // CUDA's limit on a grid's second dimension

  std::string who() const { return info_.name + " (" + info_.description + ")"; }

  // A kernel, and the most threads its blocks may have on this device (its registers may allow fewer).
  struct Function {
    CUfunction f;
    int group_limit;
  };

  // Looked up once per kernel (the context current).
  Function function(const Kernel& kernel) {
    std::lock_guard lock(mutex_);
    if (const auto it = functions_.find(kernel); it != functions_.end()) return it->second;
    const std::string symbol = kernel.symbol();
    Function fn{nullptr, 0};
    check(api()->cuModuleGetFunction(&fn.f, module_.get(), symbol.c_str()), who(), "cuModuleGetFunction " + symbol);
    check(api()->cuFuncGetAttribute(&fn.group_limit, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn.f), who(),
          "cuFuncGetAttribute " + symbol);
    return functions_.emplace(kernel, fn).first->second;
  }

  DeviceInfo info_;
  Context context_;
  Stream stream_;
  Module module_;
  size_t local_bytes_;  // static shared memory per block
  bool mma_;
  cublasHandle_t cublas_ = nullptr;  // made at the dense path's first use
  std::mutex mutex_;  // the function table, the cuBLAS handle
  std::map<Kernel, Function> functions_;
};

DeviceInfo describe(CUdevice device, int index) {
  char name[256] = {};
  api()->cuDeviceGetName(name, sizeof name, device);
  int driver = 0;
  api()->cuDriverGetVersion(&driver);
  size_t memory = 0;
  api()->cuDeviceTotalMem_v2(&memory, device);
  const int arch = architecture(device);
  DeviceInfo info{.name = fmt::format("cuda:{}", index),
                  .description = fmt::format("{}, compute capability {}.{}, CUDA driver {}", name, arch / 100,
                                             arch % 100 / 10, version_text(driver)),
                  .memory_bytes = memory,
                  .max_allocation = memory,
                  .compute_units = attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                  .cache_bytes = static_cast<uint64_t>(attribute(device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE))};
  // What the kernels use: doubles (the exact recomputation), warp shuffles (gemv's sums), 4-byte dot products
  // (gemv), int8 tensor cores (the tiles).
  info.capabilities = {"fp64", "warp-shuffle", "dp4a"};
  if (arch >= GM_MMA_ARCH) info.capabilities.emplace_back("int8-mma");
  if (driver < kDriverNeeded) {
    info.unusable = fmt::format("its driver supports CUDA {}; ggufmm's kernels and cuBLAS need CUDA {} or newer{}",
                                version_text(driver), version_text(kDriverNeeded), driver_release(kDriverNeeded));
  } else if (arch < GM_MMA_ARCH) {
    info.unusable = fmt::format("compute capability {}.{}; ggufmm's kernels are built for {}.{} and newer", arch / 100,
                                arch % 100 / 10, GM_MMA_ARCH / 100, GM_MMA_ARCH % 100 / 10);
  }
  return info;
}

std::shared_ptr<Backend> open_usable(CUdevice device, const DeviceInfo& info, CUstream stream) {
  if (!info.unusable.empty()) {
    throw Error(Error::Kind::BadInput, fmt::format("{} ({}): {}", info.name, info.description, info.unusable));
  }
  return std::make_shared<CuBackend>(device, info, stream);
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
    found.push_back({info, [device, info] { return open_usable(device, info, nullptr); }});
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
  return open_usable(device, info, s);
}

}  // namespace ggufmm::device
