// The CUDA backend: the device program compiled by nvcc at build time (sm_80 and sm_90 code, PTX for later GPUs,
// embedded as a fatbin), run through the driver API, which is loaded at run time (libcuda.so.1) so that the
// library loads and runs on the CPU where there is no NVIDIA driver.
#include <cublas_v2.h>
#include <cuda.h>
#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <span>
#include <unordered_map>
#include <vector>

#include "device/backend.hpp"
#include "device/driver.hpp"

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
    int shared = 0;
    check(api()->cuDeviceGetAttribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, device_), who(),
          "cuDeviceGetAttribute");
    local_bytes_ = static_cast<size_t>(shared);
    int units = 0;
    check(api()->cuDeviceGetAttribute(&units, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_), who(),
          "cuDeviceGetAttribute");
    compute_units_ = units;
  }
  ~CuBackend() override {
    {
      const Current current(context_);
      if (cublas_) blas()->cublasDestroy_v2(cublas_);
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

  std::shared_ptr<Buffer> scratch(size_t bytes) override {
    return std::make_shared<Scratch>(context_, stream_, bytes, who());
  }

  void copy(const void* from, void* to, size_t bytes) override {
    const Current current(context_);
    check(api()->cuMemcpyDtoDAsync_v2(pointer(to), pointer(from), bytes, stream_), who(), "cuMemcpyDtoDAsync");
  }

  // Device memory is passed as its pointer, values as they are.
  void launch(const std::string& name, Grid grid, std::span<const Arg> args) override {
    if (grid.y > kMaxGridY) {
      throw Error(Error::Kind::BadUsage, fmt::format("{}: {} work-groups in the second dimension of one launch; at "
                                                     "most {}", who(), grid.y, kMaxGridY));
    }
    const Current current(context_);
    const CUfunction f = function(name).f;
    std::vector<CUdeviceptr> pointers(args.size());
    std::vector<void*> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      pointers[i] = args[i].memory ? pointer(args[i].value) : 0;
      params[i] = args[i].memory ? static_cast<void*>(&pointers[i]) : const_cast<void*>(args[i].value);
    }
    check(api()->cuLaunchKernel(f, static_cast<unsigned>(grid.x), static_cast<unsigned>(grid.y), 1,
                                static_cast<unsigned>(grid.group), 1, 1, 0, stream_, params.data(), nullptr),
          who(), "launching " + name);
  }

  void finish() override {
    const Current current(context_);
    check(api()->cuStreamSynchronize(stream_), who(), "cuStreamSynchronize");
  }

  size_t local_memory() const override { return local_bytes_; }
  int group_limit(const std::string& name) override {
    const Current current(context_);
    return function(name).group_limit;
  }
  int64_t compute_units() const override { return compute_units_; }

  std::optional<Type> dense_type() override {
    std::lock_guard lock(mutex_);
    if (!cublas_ && blas()) {
      const Current current(context_);
      if (blas()->cublasCreate_v2(&cublas_) != CUBLAS_STATUS_SUCCESS) cublas_ = nullptr;
      if (cublas_) blas()->cublasSetStream_v2(cublas_, stream_);
    }
    return cublas_ ? std::optional(Type::F16) : std::nullopt;
  }

  // Column-major, as cuBLAS reads: y^T (m x rows) = W (k x m, read transposed) times x^T (k x rows); f16 in, f32
  // accumulation and out.
  void gemm(const Gemm& g) override {
    const Current current(context_);
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
  Function function(const std::string& name) {
    std::lock_guard lock(mutex_);
    if (const auto it = functions_.find(name); it != functions_.end()) return it->second;
    Function fn{nullptr, 0};
    check(api()->cuModuleGetFunction(&fn.f, module_, name.c_str()), who(), "cuModuleGetFunction " + name);
    check(api()->cuFuncGetAttribute(&fn.group_limit, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn.f), who(),
          "cuFuncGetAttribute " + name);
    return functions_.emplace(name, fn).first->second;
  }

  CUdevice device_;
  DeviceInfo info_;
  CUcontext context_ = nullptr;
  bool primary_ = false;
  CUstream stream_ = nullptr;
  bool own_stream_ = false;
  CUmodule module_ = nullptr;
  cublasHandle_t cublas_ = nullptr;  // made at the dense path's first use
  size_t local_bytes_ = 0;  // static shared memory per block
  int64_t compute_units_ = 1;
  std::mutex mutex_;  // the function table, the cuBLAS handle
  std::unordered_map<std::string, Function> functions_;
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
  if (major >= 8) info.capabilities.emplace_back("int8-mma");
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
