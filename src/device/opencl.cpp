// The OpenCL backend. The driver is loaded at run time (libOpenCL.so.1, the ICD loader), so that the library loads
// and runs on the CPU where there is none. The device program is the embedded kernel source (kernels/program.h),
// compiled per device and per format at the format's first use; each binary is cached on disk, keyed by the
// source, the options, the device and the driver.
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <clblast_c.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/backend.hpp"
#include "device/driver.hpp"
#include "format/registry.hpp"
#include "runtime/atomic_file.hpp"
#include "runtime/fnv.hpp"
#include "runtime/settings.hpp"

// The device program in parts (device_program.cpp, generated).
extern const char* const ggufmm_device_program[];
extern const size_t ggufmm_device_program_parts;

namespace ggufmm::device {
namespace {

// The entry points used, resolved from the ICD loader.
#define GGUFMM_CL_FUNCTIONS(X)                                                                                    \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext)             \
  X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue) X(clCreateProgramWithSource)            \
  X(clCreateProgramWithBinary) X(clBuildProgram) X(clGetProgramBuildInfo) X(clGetProgramInfo)                  \
  X(clReleaseProgram) X(clCreateKernel) X(clReleaseKernel) X(clSetKernelArg) X(clCreateBuffer)                 \
  X(clReleaseMemObject) X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer) X(clEnqueueNDRangeKernel) X(clFinish)    \
  X(clGetKernelWorkGroupInfo) X(clGetCommandQueueInfo) X(clRetainContext) X(clRetainCommandQueue)             \
  X(clEnqueueCopyBuffer)
GGUFMM_DRIVER_API(Api, GGUFMM_CL_FUNCTIONS);

// CLBlast's SGEMM, for the dense path; loaded at its first use.
#define GGUFMM_CLBLAST_FUNCTIONS(X) X(CLBlastSgemm)
GGUFMM_DRIVER_API(Blas, GGUFMM_CLBLAST_FUNCTIONS);

const Blas* blas() {
  static const Blas* loaded = []() -> const Blas* {
    static Blas b;
    return b.load("libclblast.so.1") ? &b : nullptr;
  }();
  return loaded;
}

// Null where the loader or one of its functions is missing.
const Api* api() {
  static const Api* loaded = []() -> const Api* {
    static Api a;
    return a.load("libOpenCL.so.1") ? &a : nullptr;
  }();
  return loaded;
}

[[noreturn]] void fail(const std::string& who, const std::string& what, cl_int status) {
  throw Error(Error::Kind::BadInput, fmt::format("{}: {} failed (OpenCL error {})", who, what, status));
}

void check(cl_int status, const std::string& who, const char* what) {
  if (status != CL_SUCCESS) fail(who, what, status);
}

// A string-valued property from one of OpenCL's info queries (clGetDeviceInfo, clGetPlatformInfo).
template <class Get, class Id, class Param>
std::string info_string(Get get, Id id, Param param) {
  size_t size = 0;
  if (get(id, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  get(id, param, size, s.data(), nullptr);
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  return s;
}

std::string device_string(cl_device_id id, cl_device_info param) {
  return info_string(api()->clGetDeviceInfo, id, param);
}

std::string platform_string(cl_platform_id id, cl_platform_info param) {
  return info_string(api()->clGetPlatformInfo, id, param);
}

template <class T>
T device_value(cl_device_id id, cl_device_info param) {
  T value{};
  api()->clGetDeviceInfo(id, param, sizeof value, &value, nullptr);
  return value;
}

uint64_t program_hash() {
  uint64_t h = runtime::kFnvBasis;
  for (size_t i = 0; i < ggufmm_device_program_parts; ++i) h = runtime::fnv1a(ggufmm_device_program[i], h);
  return h;
}

std::filesystem::path cache_dir() {
  if (const char* dir = std::getenv("GGUFMM_CACHE_DIR"); dir && *dir) return dir;
  return runtime::user_directory("XDG_CACHE_HOME", ".cache");
}

class ClBuffer final : public Buffer {
 public:
  ClBuffer(cl_mem mem, size_t bytes) : mem_(mem), bytes_(bytes) {}
  ~ClBuffer() override { api()->clReleaseMemObject(mem_); }
  ClBuffer(const ClBuffer&) = delete;
  ClBuffer& operator=(const ClBuffer&) = delete;
  size_t bytes() const override { return bytes_; }
  void* handle() const override { return mem_; }

 private:
  cl_mem mem_;
  size_t bytes_;
};

cl_mem mem(const void* handle) { return static_cast<cl_mem>(const_cast<void*>(handle)); }

class ClBackend final : public Backend {
 public:
  // On a context and queue of our own, or on an engine's queue (retained: the engine may release its own).
  ClBackend(cl_device_id device, DeviceInfo info, cl_command_queue queue = nullptr)
      : device_(device), info_(std::move(info)) {
    // The kernels' work-groups, and their local memory, within what the device allows (a CPU implementation
    // allows far more than a GPU: the limits are the device's, not what a launch happens to get away with).
    const auto group_limit = device_value<size_t>(device_, CL_DEVICE_MAX_WORK_GROUP_SIZE);
    const auto local_bytes = device_value<cl_ulong>(device_, CL_DEVICE_LOCAL_MEM_SIZE);
    if (group_limit < GM_GROUP || local_bytes < GM_GEMV_LOCAL_BYTES) {
      throw Error(Error::Kind::BadInput,
                  fmt::format("{}: work-groups of at most {} work-items and {} bytes of local memory; the kernels "
                              "need {} and {}", who(), group_limit, local_bytes, GM_GROUP, GM_GEMV_LOCAL_BYTES));
    }
    if (!device_value<cl_bool>(device_, CL_DEVICE_ENDIAN_LITTLE)) {
      throw Error(Error::Kind::BadInput, fmt::format("{}: a big-endian device; the kernels read the codebooks' "
                                                     "words little-endian", who()));
    }
    local_bytes_ = local_bytes;
    // Doubles for the exact recomputation where the device has them; division correctly rounded, as the
    // activation scales must be the CPU's bit for bit.
    options_ = "-cl-std=CL1.2";
    if (device_value<cl_device_fp_config>(device_, CL_DEVICE_DOUBLE_FP_CONFIG) != 0) options_ += " -DGM_HAS_FP64";
    if (device_value<cl_device_fp_config>(device_, CL_DEVICE_SINGLE_FP_CONFIG) &
        CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) {
      options_ += " -cl-fp32-correctly-rounded-divide-sqrt";
    }
    cl_int status = CL_SUCCESS;
    if (queue) {
      check(api()->clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context_, &context_, nullptr), who(),
            "clGetCommandQueueInfo");
      api()->clRetainContext(context_);
      api()->clRetainCommandQueue(queue);
      queue_ = queue;
      return;
    }
    context_ = api()->clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &status);
    check(status, who(), "clCreateContext");
    queue_ = api()->clCreateCommandQueue(context_, device_, 0, &status);
    if (status != CL_SUCCESS) {
      api()->clReleaseContext(context_);
      fail(who(), "clCreateCommandQueue", status);
    }
  }
  ~ClBackend() override {
    drop_scratch();
    for (auto& [id, kernel] : kernels_) api()->clReleaseKernel(kernel.kernel);
    for (auto& [define, program] : programs_) api()->clReleaseProgram(program);
    api()->clReleaseCommandQueue(queue_);
    api()->clReleaseContext(context_);
  }
  ClBackend(const ClBackend&) = delete;
  ClBackend& operator=(const ClBackend&) = delete;

  std::shared_ptr<Buffer> allocate(size_t bytes) override {
    check_allocation(info_, bytes, who());
    cl_int status = CL_SUCCESS;
    const cl_mem m = api()->clCreateBuffer(context_, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 1), nullptr, &status);
    if (status != CL_SUCCESS) fail(who(), fmt::format("allocating {} bytes", bytes), status);
    return std::make_shared<ClBuffer>(m, bytes);
  }

  void write(const Buffer& to, const void* from) override { write(to, from, CL_TRUE); }
  void enqueue_write(const Buffer& to, const void* from) override { write(to, from, CL_FALSE); }

  void read(const Buffer& from, void* to) override {
    check(api()->clEnqueueReadBuffer(queue_, mem(from.handle()), CL_TRUE, 0, from.bytes(), to, 0, nullptr, nullptr),
          who(), "clEnqueueReadBuffer");
  }

  std::shared_ptr<Buffer> scratch(size_t bytes) override { return allocate(bytes); }  // released when unused
  void copy(const void* from, void* to, size_t bytes) override {
    std::lock_guard lock(mutex_);
    check(api()->clEnqueueCopyBuffer(queue_, mem(from), mem(to), 0, 0, bytes, 0, nullptr, nullptr), who(),
          "clEnqueueCopyBuffer");
  }
  void launch(const Kernel& id, Grid grid, std::span<const Arg> args) override {
    std::lock_guard lock(mutex_);
    const auto [kernel, most_items] = kernel_locked(id);
    if (static_cast<size_t>(grid.group) > most_items) {
      throw Error(Error::Kind::BadUsage, fmt::format("{}: kernel {} runs at most {} work-items per group, not {}",
                                                     who(), id.symbol(), most_items, grid.group));
    }
    for (cl_uint i = 0; i < args.size(); ++i) {
      const cl_mem m = args[i].memory ? mem(args[i].value) : nullptr;
      const cl_int status = args[i].memory ? api()->clSetKernelArg(kernel, i, sizeof m, &m)
                                           : api()->clSetKernelArg(kernel, i, args[i].size, args[i].value);
      check(status, who(), "clSetKernelArg");
    }
    const size_t items[2] = {static_cast<size_t>(grid.x * grid.group), static_cast<size_t>(grid.y)};
    const size_t local[2] = {static_cast<size_t>(grid.group), 1};
    check(api()->clEnqueueNDRangeKernel(queue_, kernel, 2, nullptr, items, local, 0, nullptr, nullptr), who(),
          ("launching " + id.symbol()).c_str());
  }
  void finish() override { check(api()->clFinish(queue_), who(), "clFinish"); }
  std::optional<Type> dense_type() override { return blas() ? std::optional(Type::F32) : std::nullopt; }
  // Row-major: y = x * W^T, W's rows `stride` apart.
  void gemm(const Gemm& g) override {
    std::lock_guard lock(mutex_);
    cl_command_queue queue = queue_;
    const CLBlastStatusCode status = blas()->CLBlastSgemm(
        CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeYes, static_cast<size_t>(g.rows),
        static_cast<size_t>(g.m), static_cast<size_t>(g.k), 1.0f, mem(g.x), 0, static_cast<size_t>(g.k), mem(g.w), 0,
        static_cast<size_t>(g.stride), g.beta, mem(g.y), 0, static_cast<size_t>(g.m), &queue, nullptr);
    if (status != CLBlastSuccess) {
      throw Error(Error::Kind::BadInput, fmt::format("{}: CLBlast's SGEMM failed (status {})", who(),
                                                     static_cast<int>(status)));
    }
  }
  size_t local_memory() const override { return local_bytes_; }
  int group_limit(const Kernel& id) override {
    std::lock_guard lock(mutex_);
    return static_cast<int>(kernel_locked(id).group_limit);
  }
  int64_t compute_units() const override { return info_.compute_units; }
  size_t cache_bytes() const override { return info_.cache_bytes; }
  bool int8_mma() const override { return false; }

 private:
  void write(const Buffer& to, const void* from, cl_bool blocking) {
    const cl_int status = api()->clEnqueueWriteBuffer(queue_, mem(to.handle()), blocking, 0, to.bytes(), from, 0,
                                                      nullptr, nullptr);
    if (status != CL_SUCCESS) fail(who(), fmt::format("copying {} bytes to the device", to.bytes()), status);
  }

  std::string who() const { return info_.name + " (" + info_.description + ")"; }

  // A kernel, and the most work-items its work-groups may have on this device.
  struct Entry {
    cl_kernel kernel;
    size_t group_limit;
  };

  Entry kernel_locked(const Kernel& id) {
    if (const auto it = kernels_.find(id); it != kernels_.end()) return it->second;
    const std::string define = program_define(id), name = id.symbol();
    auto program = programs_.find(define);
    if (program == programs_.end()) program = programs_.emplace(define, build_program(options_ + " " + define)).first;
    cl_int status = CL_SUCCESS;
    const cl_kernel kernel = api()->clCreateKernel(program->second, name.c_str(), &status);
    check(status, who(), ("clCreateKernel " + name).c_str());
    size_t group_limit = 0;
    api()->clGetKernelWorkGroupInfo(kernel, device_, CL_KERNEL_WORK_GROUP_SIZE, sizeof group_limit, &group_limit,
                                    nullptr);
    if (group_limit < GM_GROUP) {
      api()->clReleaseKernel(kernel);
      throw Error(Error::Kind::BadInput, fmt::format("{}: kernel {} runs at most {} work-items per group, not {}",
                                                     who(), name, group_limit, GM_GROUP));
    }
    return kernels_.emplace(id, Entry{kernel, group_limit}).first->second;
  }

  // The program holding a kernel, as the option that selects its format (kernels/program.h).
  static std::string program_define(const Kernel& id) {
    if (!id.per_format()) return "-DGM_ONLY_NONE";
    return fmt::format("-DGM_ONLY_{}={}", format::find(id.type)->decode ? "QUANT" : "FLOAT", type_info(id.type)->name);
  }

  // From the disk cache when an entry matches, else from source (and then cached).
  cl_program build_program(const std::string& build_options) {
    const char* options = build_options.c_str();
    const std::string key = fmt::format(
        "{:016x}", runtime::fnv1a(info_.description, runtime::fnv1a(build_options, program_hash())));
    const std::filesystem::path dir = cache_dir(), file = dir.empty() ? dir : dir / ("opencl-" + key + ".bin");
    cl_int status = CL_SUCCESS;
    if (!file.empty()) {
      std::ifstream in(file, std::ios::binary);
      const std::string binary((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!binary.empty()) {
        const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
        const size_t size = binary.size();
        cl_int binary_status = CL_SUCCESS;
        cl_program program =
            api()->clCreateProgramWithBinary(context_, 1, &device_, &size, &bytes, &binary_status, &status);
        if (status == CL_SUCCESS && binary_status == CL_SUCCESS &&
            api()->clBuildProgram(program, 1, &device_, options, nullptr, nullptr) == CL_SUCCESS) {
          return program;
        }
        if (program) api()->clReleaseProgram(program);  // a stale or foreign entry: build afresh
      }
    }
    // Some drivers take seconds per program: said once, so that a first run does not look hung.
    const auto format = build_options.find("GM_ONLY_");
    const size_t named = build_options.find('=', format);
    fmt::print(stderr, "{}: compiling the device program for {} (first use; {})\n", info_.name,
               named == std::string::npos ? "the formats' shared kernels" : build_options.substr(named + 1),
               dir.empty() ? "not cached: no cache directory" : fmt::format("cached in {}", dir.string()));
    cl_program program = api()->clCreateProgramWithSource(
        context_, static_cast<cl_uint>(ggufmm_device_program_parts), const_cast<const char**>(ggufmm_device_program),
        nullptr, &status);
    check(status, who(), "clCreateProgramWithSource");
    if (api()->clBuildProgram(program, 1, &device_, options, nullptr, nullptr) != CL_SUCCESS) {
      size_t size = 0;
      api()->clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
      std::string log(size, '\0');
      api()->clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
      api()->clReleaseProgram(program);
      throw Error(Error::Kind::BadInput, fmt::format("{}: the kernels do not compile:\n{}", who(), log));
    }
    if (!file.empty()) save_binary(program, file);
    return program;
  }

  // Best effort: a cache that cannot be written only costs the next run a compilation.
  void save_binary(cl_program program, const std::filesystem::path& file) {
    size_t size = 0;
    if (api()->clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS ||
        size == 0) {
      return;
    }
    std::string binary(size, '\0');
    auto* bytes = reinterpret_cast<unsigned char*>(binary.data());
    if (api()->clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof bytes, &bytes, nullptr) != CL_SUCCESS) return;
    try {
      std::filesystem::create_directories(file.parent_path());
      runtime::AtomicFile out(file.string());
      out.write(binary.data(), binary.size());
      out.commit();
    } catch (const std::exception&) {
    }
  }

  cl_device_id device_;
  DeviceInfo info_;
  std::string options_;  // the programs' build options (each adds its format's)
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  size_t local_bytes_ = 0;
  std::mutex mutex_;  // the programs, the kernels (their arguments) and the queue's launches
  std::unordered_map<std::string, cl_program> programs_;  // by the option selecting their format
  std::map<Kernel, Entry> kernels_;
};

DeviceInfo describe(cl_platform_id platform, cl_device_id id, int index) {
  DeviceInfo info;
  info.name = fmt::format("opencl:{}", index);
  info.description = fmt::format("{}, {}, driver {}", device_string(id, CL_DEVICE_NAME),
                                 platform_string(platform, CL_PLATFORM_NAME), device_string(id, CL_DRIVER_VERSION));
  info.memory_bytes = device_value<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE);
  info.max_allocation = device_value<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  info.compute_units = static_cast<int>(device_value<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS));
  info.cache_bytes = device_value<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
  // What the kernels use: doubles, for the exact recomputation (OpenCL C 1.2 has no integer dot product, and the
  // kernels use no extension).
  if (device_value<cl_device_fp_config>(id, CL_DEVICE_DOUBLE_FP_CONFIG) != 0) info.capabilities = {"fp64"};
  return info;
}

}  // namespace

std::vector<Found> opencl_devices() {
  std::vector<Found> found;
  if (!api()) return found;
  cl_uint platforms = 0;
  if (api()->clGetPlatformIDs(0, nullptr, &platforms) != CL_SUCCESS || platforms == 0) return found;
  std::vector<cl_platform_id> platform_ids(platforms);
  api()->clGetPlatformIDs(platforms, platform_ids.data(), nullptr);
  for (const cl_platform_id platform : platform_ids) {
    cl_uint count = 0;
    if (api()->clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS) continue;
    std::vector<cl_device_id> ids(count);
    api()->clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr);
    for (const cl_device_id id : ids) {
      DeviceInfo info = describe(platform, id, static_cast<int>(found.size()));
      found.push_back({info, [id, info] { return std::make_shared<ClBackend>(id, info); }});
    }
  }
  return found;
}

std::shared_ptr<Backend> opencl_on_queue(void* queue, DeviceInfo& info) {
  if (!api()) throw Error(Error::Kind::BadInput, "an OpenCL queue was given, but no OpenCL driver loads");
  const auto q = static_cast<cl_command_queue>(queue);
  cl_device_id id = nullptr;
  cl_platform_id platform = nullptr;
  check(api()->clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof id, &id, nullptr), "OpenCL queue",
        "clGetCommandQueueInfo");
  check(api()->clGetDeviceInfo(id, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr), "OpenCL queue",
        "clGetDeviceInfo");
  info = describe(platform, id, 0);
  info.name = "opencl (the caller's queue)";
  return std::make_shared<ClBackend>(id, info, q);
}

}  // namespace ggufmm::device
