// The CUDA backend against the test stub driver (tests/cuda_stub: libcuda.so.1 on LD_LIBRARY_PATH, as ctest's
// cuda_stub runs these), for what a first run on a GPU depends on besides the kernels' arithmetic, which the stub
// does not run: opening and failing to open a device, the driver it needs, every kernel a product names being in the
// program, scratch kept and calls that do not wait, and the reads that measure a device being cold. Elsewhere (a
// real driver, or none) they skip.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "device/backend.hpp"
#include "ggufmm/device.hpp"
#include "ggufmm/ggufmm.hpp"
#include "temp_dir.hpp"
#include "test_support.hpp"
#include "tool_runner.hpp"

#if GGUFMM_WITH_CUDA  // the CUDA backend is built
namespace ggufmm {
namespace {

// The stub's controls (tests/cuda_stub/cuda_stub.cpp), where the libcuda.so.1 ggufmm loaded is the stub.
struct Stub {
  void (*fail)(const char* name) = nullptr;  // the entry point that fails from now on (null: none)
  void (*set_driver)(int version) = nullptr;
  long (*calls)(const char* name) = nullptr;
  long (*live)(const char* what) = nullptr;  // contexts, streams, modules, allocations
  long (*launches)(const char* kernel, unsigned* blocks, unsigned* threads, long* first_args) = nullptr;

  long allocations() const { return calls("cuMemAlloc_v2"); }  // cuMemAllocAsync's too
  long waits() const { return calls("cuStreamSynchronize"); }
};

template <class F>
void resolve(void* library, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(library, name));
}

const Stub* stub() {
  static const Stub* loaded = []() -> const Stub* {
    devices();  // loads the driver, as ggufmm loads it
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    static Stub s;
    if (!library) return nullptr;
    resolve(library, "cuda_stub_fail", s.fail);
    resolve(library, "cuda_stub_set_driver", s.set_driver);
    resolve(library, "cuda_stub_calls", s.calls);
    resolve(library, "cuda_stub_live", s.live);
    resolve(library, "cuda_stub_launches", s.launches);
    return s.fail && s.set_driver && s.calls && s.live && s.launches ? &s : nullptr;
  }();
  return loaded;
}

#define GGUFMM_STUB(s)                                                                                        \
  const Stub* s = stub();                                                                                     \
  if (!s) GTEST_SKIP() << "libcuda.so.1 is not the test stub (ctest's cuda_stub runs these with tests/cuda_stub)"; \
  static_assert(true)

// A backend of its own on cuda:0, not the process's shared device.
std::shared_ptr<device::Backend> open_cuda0() {
  std::vector<device::Found> found = device::cuda_devices();
  if (found.empty()) throw Error(Error::Kind::BadInput, "no cuda:0");
  return found.front().open();
}

// A constructor that throws part way releases the context, stream and module it had taken.
TEST(DeviceCudaStub, AFailedOpenReleasesWhatItHadTaken) {
  GGUFMM_STUB(s);
  const auto held = [&] {
    return std::vector<long>{s->live("contexts"), s->live("streams"), s->live("modules"), s->live("allocations")};
  };
  const std::vector<long> before = held();
  for (const char* failing : {"cuDevicePrimaryCtxRetain", "cuStreamCreate", "cuModuleLoadData"}) {
    s->fail(failing);
    const std::string message = test::input_error([] { open_cuda0(); });
    s->fail(nullptr);
    EXPECT_NE(message.find(failing), std::string::npos) << message;
    EXPECT_NE(message.find("cuda:0"), std::string::npos) << message;
    EXPECT_EQ(held(), before) << "after " << failing << " failed";
  }
  open_cuda0();  // opened and released whole
  EXPECT_EQ(held(), before);
}

// A driver too old for the kernels and cuBLAS (CUDA 13 needs NVIDIA's 580): listed, saying so, and refused.
TEST(DeviceCudaStub, ADriverOlderThanTheKernelsNeedIsNamedAndRefused) {
  GGUFMM_STUB(s);
  s->set_driver(12080);
  const std::vector<DeviceInfo> listed = devices();
  const std::string message = test::input_error([] { open_cuda0(); });
  s->set_driver(13000);
  const auto cuda = std::ranges::find(listed, std::string("cuda:0"), &DeviceInfo::name);
  ASSERT_NE(cuda, listed.end());
  EXPECT_NE(cuda->unusable.find("12.8"), std::string::npos) << cuda->unusable;
  EXPECT_NE(cuda->unusable.find("580"), std::string::npos) << cuda->unusable;
  EXPECT_NE(message.find(cuda->unusable), std::string::npos) << message;
  const test::ToolRun tool = test::run_tool("devices", "CUDA_STUB_DRIVER_VERSION=12080");
  EXPECT_EQ(tool.status, 0) << tool.output;
  EXPECT_NE(tool.output.find("not usable: " + cuda->unusable), std::string::npos) << tool.output;
  for (const DeviceInfo& d : devices()) EXPECT_EQ(d.unusable, "") << d.name;
  // 13000 is CUDA 13.0: the oldest driver CUDA 13's code and cuBLAS run on.
}

// Every kernel a product, a dequantization or a dense copy names is in the program (the stub finds a kernel by its
// name in the loaded image, as the driver does): every format, every tile size, routing, the dense path.
TEST(DeviceCudaStub, EveryKernelTheProductsNameIsInTheProgram) {
  GGUFMM_STUB(s);
  const Device d = Device::open("cuda:0");
  std::mt19937 rng(51);
  const int64_t m = 64, k = 256, experts = 4;
  const std::vector<float> x = test::random_values(static_cast<size_t>(256 * k), rng);
  std::vector<float> y(static_cast<size_t>(256 * m * 2));
  std::vector<int32_t> ids(512);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % experts);
  for (const Type type : test::weight_types()) {
    SCOPED_TRACE(type_info(type)->name);
    const test::RandomWeight weight(type, m, k, rng), moe(type, m, k, rng, experts);
    const ResidentWeight resident(d, weight.w), resident_moe(d, moe.w);
    EXPECT_NO_THROW(resident.dequantize());
    for (const int64_t rows : {1, 16, 32, 64, 128, 256}) {
      EXPECT_NO_THROW(resident.matmul(x.data(), rows, y.data(), nullptr, {.path = Path::Tiled})) << rows;
    }
    EXPECT_NO_THROW(resident.matmul(x.data(), 9, y.data(), nullptr, {.path = Path::Dense}));
    EXPECT_NO_THROW(resident_moe.mul_mat_id(x.data(), 256, 1, ids.data(), 2, y.data(), nullptr,
                                            {.path = Path::Tiled}));
  }
  EXPECT_EQ(s->calls("cuModuleGetFunction"), s->calls("cuFuncGetAttribute"));
}

// A product's scratch is the backend's, kept from one call to the next (grown only for a larger one), and a product
// on device memory enqueues its kernels without waiting: only the call from host memory waits, once, for its outputs.
TEST(DeviceCudaStub, ProductsKeepTheirScratchAndOnlyHostCallsWait) {
  GGUFMM_STUB(s);
  const Device d = Device::open("cuda:0");
  device::Backend& b = *device::backend_of(d);
  std::mt19937 rng(52);
  const int64_t m = 64, k = 512, rows = 20;
  const test::RandomWeight weight(Type::Q4_K, m, k, rng);
  const ResidentWeight resident(d, weight.w);
  const auto x = b.allocate(static_cast<size_t>(rows * k) * sizeof(float));
  const auto y = b.allocate(static_cast<size_t>(rows * m) * sizeof(float));
  const auto largest = [&] { resident.enqueue_matmul(x->handle(), rows, y->handle(), y->handle()); };
  largest();  // makes the scratch
  const long allocations = s->allocations(), waits = s->waits(), launches = s->calls("cuLaunchKernel");
  resident.enqueue_matmul(x->handle(), 3, y->handle());  // gemv: quantization, the sets, the exact recomputation
  EXPECT_EQ(s->calls("cuLaunchKernel") - launches, 3);
  largest();
  resident.enqueue_matmul(x->handle(), rows, y->handle(), nullptr, {.path = Path::Tiled});
  EXPECT_EQ(s->allocations(), allocations) << "a product allocated scratch again";
  EXPECT_EQ(s->waits(), waits) << "a product on device memory waited";
  std::vector<float> xs(static_cast<size_t>(rows * k), 1.0f), out(static_cast<size_t>(rows * m));
  resident.matmul(xs.data(), rows, out.data());
  EXPECT_EQ(s->waits(), waits + 1) << "a product from host memory waits once, for its outputs";
}

// The read bandwidth streams from more work-groups than the device has multiprocessors, of 256 work-items, through
// as many buffers as span three times the L2 (the stub's: 50 MiB), so that no read finds its data cached.
TEST(DeviceCudaStub, ReadBandwidthFillsTheDeviceAndReadsPastItsCache) {
  GGUFMM_STUB(s);
  const Device d = Device::open("cuda:0");
  const size_t bytes = size_t{4} << 20;
  EXPECT_GT(d.read_bandwidth(bytes), 0.0);
  unsigned blocks = 0, threads = 0;
  long buffers = 0;
  ASSERT_GT(s->launches("read_bandwidth", &blocks, &threads, &buffers), 0);
  EXPECT_GE(blocks, 4u * static_cast<unsigned>(d.info().compute_units));
  EXPECT_EQ(threads, 256u);
  EXPECT_GE(static_cast<size_t>(buffers) * bytes, 3 * d.info().cache_bytes);
  EXPECT_TRUE(std::isfinite(d.copy_bandwidth(bytes)));
}

// The bench times a device's products cold, as the CPU's: a weight of 4096 x 14336 q4_0 (31.5 MiB, which a 50 MiB
// L2 holds) is resident five times over, and each repeat reads every copy; --warm keeps one.
TEST(DeviceCudaStub, TheBenchRotatesWeightCopiesPastTheCache) {
  GGUFMM_STUB(s);
  test::TempDir dir;
  const size_t weight_bytes = size_t{4096} * (14336 / 32) * 18;
  const auto copies_made = [&](const std::string& option) {
    const std::string report = dir.file("report");
    const test::ToolRun bench = test::run_tool(
        "bench --device cuda:0 --type q4_0 --m 4096 --k 14336 --n 1 --quick-limits --format csv " + option,
        "CUDA_STUB_REPORT=" + report);
    EXPECT_EQ(bench.status, 0) << bench.output;
    std::ifstream in(report);
    std::string kind, size;
    long count = 0;
    while (in >> kind >> size >> count) {
      if (kind == "allocations" && size == std::to_string(weight_bytes)) return count;
      in.ignore(1 << 10, '\n');
    }
    return 0L;
  };
  EXPECT_EQ(copies_made(""), 5);
  EXPECT_EQ(copies_made("--warm"), 1);
}

}  // namespace
}  // namespace ggufmm
#endif
