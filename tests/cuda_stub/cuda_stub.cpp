// A stand-in for NVIDIA's driver library, built as libcuda.so.1 for the tests that run the CUDA backend where there
// is no GPU (LD_LIBRARY_PATH=<its directory>): one sm_90 device with 132 multiprocessors, 80 GiB and a 50 MiB L2,
// every call succeeding, but for the one a test makes fail. Device memory is host memory, so that copies work;
// kernels do not run, and their outputs are whatever the memory held. What ggufmm did is counted, for tests to read
// in the process (the cuda_stub_* functions, found with dlsym) or, from a child process, in the file
// CUDA_STUB_REPORT names, written at exit. The environment sets the driver's CUDA version (CUDA_STUB_DRIVER_VERSION,
// as cuDriverGetVersion reports it: 13000 for 13.0, the default) and the call that fails (CUDA_STUB_FAIL).
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace {

constexpr size_t kMemory = size_t{80} << 30;

struct Function {
  std::string name;
};

// What a kernel's launches were: how many, the last one's grid, and the distinct buffers given first.
struct Launches {
  long count = 0;
  unsigned blocks = 0, threads = 0;
  std::set<CUdeviceptr> first_args;
};

struct State {
  std::mutex mutex;
  int driver = 13000;
  std::string failing;                       // the entry point that fails, or none
  std::map<std::string, long> calls;         // per entry point
  std::map<std::string, long> live;          // contexts, streams, modules, allocations
  std::map<CUdeviceptr, size_t> allocations;
  std::map<size_t, long> sizes;              // allocations made, by size
  size_t in_use = 0;
  std::map<std::string, std::unique_ptr<Function>> functions;
  std::map<std::string, Launches> launches;  // by kernel name
  std::string module;                        // the loaded image's bytes, where its kernels' names are found

  State() {
    if (const char* v = std::getenv("CUDA_STUB_DRIVER_VERSION")) driver = std::atoi(v);
    if (const char* v = std::getenv("CUDA_STUB_FAIL")) failing = v;
  }
  ~State() {
    const char* path = std::getenv("CUDA_STUB_REPORT");
    FILE* out = path ? std::fopen(path, "w") : nullptr;
    if (!out) return;
    for (const auto& [name, count] : calls) std::fprintf(out, "calls %s %ld\n", name.c_str(), count);
    for (const auto& [size, count] : sizes) std::fprintf(out, "allocations %zu %ld\n", size, count);
    for (const auto& [name, l] : launches) {
      std::fprintf(out, "launches %s %ld %u %u %zu\n", name.c_str(), l.count, l.blocks, l.threads,
                   l.first_args.size());
    }
    std::fclose(out);
  }
};

State& state() {
  static State s;
  return s;
}

// Counts a call of `name`: CUDA_ERROR_UNKNOWN where it is the one made to fail.
CUresult enter(const char* name) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  ++s.calls[name];
  return s.failing == name ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

void change_live(const char* what, long by) {
  std::lock_guard lock(state().mutex);
  state().live[what] += by;
}

// Handles are addresses of these, never dereferenced by the caller.
char g_context, g_module;

}  // namespace

extern "C" {

// The test's controls.
void cuda_stub_fail(const char* name) {
  std::lock_guard lock(state().mutex);
  state().failing = name ? name : "";
}
void cuda_stub_set_driver(int version) {
  std::lock_guard lock(state().mutex);
  state().driver = version;
}
long cuda_stub_calls(const char* name) {
  std::lock_guard lock(state().mutex);
  return state().calls[name];
}
long cuda_stub_live(const char* what) {
  std::lock_guard lock(state().mutex);
  return state().live[what];
}
long cuda_stub_launches(const char* kernel, unsigned* blocks, unsigned* threads, long* first_args) {
  std::lock_guard lock(state().mutex);
  const Launches& l = state().launches[kernel];
  *blocks = l.blocks;
  *threads = l.threads;
  *first_args = static_cast<long>(l.first_args.size());
  return l.count;
}

CUresult CUDAAPI cuInit(unsigned int) { return enter("cuInit"); }

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  const CUresult r = enter("cuDriverGetVersion");
  std::lock_guard lock(state().mutex);
  *version = state().driver;
  return r;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = 1;
  return enter("cuDeviceGetCount");
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? enter("cuDeviceGet") : CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice) {
  std::snprintf(name, static_cast<size_t>(len), "%s", "ggufmm test stub (no GPU)");
  return enter("cuDeviceGetName");
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *value = 48 * 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *value = 50 << 20;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    default:
      *value = 0;
  }
  return enter("cuDeviceGetAttribute");
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice) {
  *bytes = kMemory;
  return enter("cuDeviceTotalMem_v2");
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_SUCCESS:
      *name = "CUDA_SUCCESS";
      break;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *name = "CUDA_ERROR_OUT_OF_MEMORY";
      break;
    case CUDA_ERROR_NOT_FOUND:
      *name = "CUDA_ERROR_NOT_FOUND";
      break;
    case CUDA_ERROR_INVALID_DEVICE:
      *name = "CUDA_ERROR_INVALID_DEVICE";
      break;
    default:
      *name = "CUDA_ERROR_UNKNOWN";
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
  const CUresult r = enter("cuDevicePrimaryCtxRetain");
  if (r != CUDA_SUCCESS) return r;
  *context = reinterpret_cast<CUcontext>(&g_context);
  change_live("contexts", 1);
  return r;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice) {
  change_live("contexts", -1);
  return enter("cuDevicePrimaryCtxRelease_v2");
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext) { return enter("cuCtxPushCurrent_v2"); }
CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* context) {
  *context = reinterpret_cast<CUcontext>(&g_context);
  return enter("cuCtxPopCurrent_v2");
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  *device = 0;
  return enter("cuCtxGetDevice");
}

// The image is a fatbin: a header of its own size (at byte 6) and its payload's (at byte 8) before the payload.
CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  const CUresult r = enter("cuModuleLoadData");
  if (r != CUDA_SUCCESS) return r;
  const auto* bytes = static_cast<const unsigned char*>(image);
  uint16_t header = 0;
  uint64_t payload = 0;
  std::memcpy(&header, bytes + 6, sizeof header);
  std::memcpy(&payload, bytes + 8, sizeof payload);
  {
    std::lock_guard lock(state().mutex);
    state().module.assign(reinterpret_cast<const char*>(bytes), header + payload);
  }
  *module = reinterpret_cast<CUmodule>(&g_module);
  change_live("modules", 1);
  return r;
}

CUresult CUDAAPI cuModuleUnload(CUmodule) {
  change_live("modules", -1);
  return enter("cuModuleUnload");
}

// A kernel the image does not name (its symbol as a string of the image) is not found, as the driver would say.
CUresult CUDAAPI cuModuleGetFunction(CUfunction* function, CUmodule, const char* name) {
  const CUresult r = enter("cuModuleGetFunction");
  if (r != CUDA_SUCCESS) return r;
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.module.find(std::string(name) + '\0') == std::string::npos) return CUDA_ERROR_NOT_FOUND;
  auto& f = s.functions[name];
  if (!f) f = std::make_unique<Function>(Function{name});
  *function = reinterpret_cast<CUfunction>(f.get());
  return r;
}

CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction) {
  *value = attribute == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
  return enter("cuFuncGetAttribute");
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* pointer, size_t bytes) {
  const CUresult r = enter("cuMemAlloc_v2");
  if (r != CUDA_SUCCESS) return r;
  State& s = state();
  std::lock_guard lock(s.mutex);
  void* memory = bytes <= kMemory - s.in_use ? std::calloc(bytes, 1) : nullptr;
  if (!memory) return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  s.allocations[*pointer] = bytes;
  s.in_use += bytes;
  ++s.sizes[bytes];
  ++s.live["allocations"];
  return r;
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr pointer) {
  const CUresult r = enter("cuMemFree_v2");
  State& s = state();
  std::lock_guard lock(s.mutex);
  const auto it = s.allocations.find(pointer);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  s.in_use -= it->second;
  s.allocations.erase(it);
  --s.live["allocations"];
  std::free(reinterpret_cast<void*>(pointer));
  return r;
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* pointer, size_t bytes, CUstream) {
  const CUresult r = enter("cuMemAllocAsync");
  return r == CUDA_SUCCESS ? cuMemAlloc_v2(pointer, bytes) : r;
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr pointer, CUstream) {
  const CUresult r = enter("cuMemFreeAsync");
  return r == CUDA_SUCCESS ? cuMemFree_v2(pointer) : r;
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr to, const void* from, size_t bytes, CUstream) {
  std::memcpy(reinterpret_cast<void*>(to), from, bytes);
  return enter("cuMemcpyHtoDAsync_v2");
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void* to, CUdeviceptr from, size_t bytes, CUstream) {
  std::memcpy(to, reinterpret_cast<const void*>(from), bytes);
  return enter("cuMemcpyDtoHAsync_v2");
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream) {
  std::memmove(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from), bytes);
  return enter("cuMemcpyDtoDAsync_v2");
}

// Recorded, not run. The first parameter of every ggufmm kernel but int8_peak is a buffer.
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                                unsigned int block_x, unsigned int, unsigned int, unsigned int, CUstream,
                                void** params, void**) {
  const CUresult r = enter("cuLaunchKernel");
  if (r != CUDA_SUCCESS) return r;
  const std::string& name = reinterpret_cast<const Function*>(f)->name;
  std::lock_guard lock(state().mutex);
  Launches& l = state().launches[name];
  ++l.count;
  l.blocks = grid_x * grid_y * grid_z;
  l.threads = block_x;
  if (params && params[0]) l.first_args.insert(*static_cast<const CUdeviceptr*>(params[0]));
  return r;
}

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  const CUresult r = enter("cuStreamCreate");
  if (r != CUDA_SUCCESS) return r;
  *stream = reinterpret_cast<CUstream>(new char);
  change_live("streams", 1);
  return r;
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream stream) {
  delete reinterpret_cast<char*>(stream);
  change_live("streams", -1);
  return enter("cuStreamDestroy_v2");
}

CUresult CUDAAPI cuStreamSynchronize(CUstream) { return enter("cuStreamSynchronize"); }

CUresult CUDAAPI cuStreamGetCtx(CUstream, CUcontext* context) {
  *context = reinterpret_cast<CUcontext>(&g_context);
  return enter("cuStreamGetCtx");
}

}  // extern "C"
