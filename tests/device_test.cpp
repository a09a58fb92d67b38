// The devices other than the CPU (OpenCL: PoCL in CI): dequantization bit for bit, activation quantization bit for
// bit, gemv for every format, 1 to 7 rows and more, with and without a residual, on shapes that leave work-groups
// partly idle; mixtures of experts; outputs classified as the exact product classifies them; the bad cases. Every
// test runs on every such device (or those GGUFMM_TEST_DEVICES lists); where there is none, it skips saying so, or
// fails under GGUFMM_REQUIRE_DEVICE=1.
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "device/backend.hpp"
#include "device/product.hpp"
#include "paths/dense_cache.hpp"
#include "ggufmm/device.hpp"
#include "ggufmm/ggufmm.h"
#include "ggufmm/gguf.hpp"
#include "ggufmm/ggufmm.hpp"
#include "kernels/scalar/scalar.hpp"
#include "temp_dir.hpp"
#include "test_support.hpp"
#include "tool_runner.hpp"

namespace ggufmm {
namespace {

// Whether the device tests take the device named `name`: every device but the CPU (and those a driver too old leaves
// unusable), or those GGUFMM_TEST_DEVICES names (comma-separated), which fail to open where they cannot be used.
bool tested(const DeviceInfo& info) {
  const char* only = std::getenv("GGUFMM_TEST_DEVICES");
  if (!only) return info.name != "cpu" && info.unusable.empty();
  const std::string wanted = "," + std::string(only) + ",", item = "," + info.name + ",";
  return info.name != "cpu" && wanted.find(item) != std::string::npos;
}

std::vector<Device> accelerators() {
  std::vector<Device> out;
  for (const DeviceInfo& info : devices()) {
    if (tested(info)) out.push_back(Device::open(info.name));
  }
  return out;
}

bool device_required() {
  const char* v = std::getenv("GGUFMM_REQUIRE_DEVICE");
  return v && *v && std::string(v) != "0";
}

// Declares `list`, the devices to test; skips (or fails, where required) when there is none.
#define GGUFMM_DEVICES(list)                                                                         \
  const std::vector<Device> list = accelerators();                                                  \
  if (list.empty()) {                                                                               \
    if (device_required()) FAIL() << "no device besides the CPU, and GGUFMM_REQUIRE_DEVICE is set"; \
    GTEST_SKIP() << "no device besides the CPU (install an OpenCL driver, e.g. pocl-opencl-icd)";   \
  }                                                                                                 \
  static_assert(true)

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// The CPU's int8 product in double: the dequantized weights times the activations as the CPU quantizes them.
std::vector<double> int8_product(const Weight& w, const float* x, int64_t rows, const float* residual) {
  const bool floats = test::is_float(w.type);
  std::vector<float> xs(x, x + rows * w.k);
  if (!floats) {
    std::vector<int8_t> q(xs.size());
    std::vector<float> d(xs.size() / 32), sum(xs.size() / 16);
    std::vector<int16_t> qsum(xs.size() / 32);
    kernels::scalar::quantize_act(x, static_cast<int>(rows), w.k, q.data(), d.data(), qsum.data(), sum.data());
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = d[i / 32] * static_cast<float>(q[i]);
  }
  const std::vector<float> wf = dequantize(w);
  std::vector<double> y(static_cast<size_t>(rows * w.m));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < w.m; ++o) {
      double s = residual ? residual[r * w.m + o] : 0.0;
      for (int64_t i = 0; i < w.k; ++i) {
        // d * q is exact in f32 (q has 8 bits): the product of f32 values in double is exact too.
        s += static_cast<double>(wf[static_cast<size_t>(o * w.k + i)]) * xs[static_cast<size_t>(r * w.k + i)];
      }
      y[static_cast<size_t>(r * w.m + o)] = s;
    }
  }
  return y;
}

// --- devices -----------------------------------------------------------------------------------------------------

TEST(Devices, TheCpuComesFirstAndAnUnknownNameIsAnErrorNamingWhatThereIs) {
  const std::vector<DeviceInfo> all = devices();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front().name, "cpu");
  EXPECT_TRUE(Device::open("cpu").is_cpu());
  const std::string message = test::input_error([] { Device::open("opencl:99"); });
  EXPECT_NE(message.find("opencl:99"), std::string::npos) << message;
  EXPECT_NE(message.find("cpu"), std::string::npos) << message;
  // cuda:0 opens where it is listed and usable, and is an error naming it where not.
  const auto cuda = std::ranges::find(all, std::string("cuda:0"), &DeviceInfo::name);
  if (cuda != all.end() && cuda->unusable.empty()) {
    EXPECT_FALSE(Device::open("cuda:0").is_cpu());
  } else {
    EXPECT_NE(test::input_error([] { Device::open("cuda:0"); }).find("cuda:0"), std::string::npos);
  }
}

// The roofs bench divides by: a streaming read, and the int8 peak on the units the tiles use (the kernel counting
// its own operations); the CPU measures its own in bench and refuses both here.
TEST(Devices, ReadBandwidthAndInt8PeakAreMeasuredOnADevice) {
  GGUFMM_DEVICES(list);
  for (const Device& d : list) {
    const double read = d.read_bandwidth(size_t{1} << 20), peak = d.int8_peak(1e8);
    EXPECT_TRUE(std::isfinite(read) && read > 0) << d.info().name << ": " << read;
    EXPECT_TRUE(std::isfinite(peak) && peak > 0) << d.info().name << ": " << peak;
  }
  const Device cpu = Device::open("cpu");
  EXPECT_THROW(cpu.int8_peak(1e8), Error);
  EXPECT_THROW(cpu.read_bandwidth(size_t{1} << 20), Error);
}

// No OpenCL platform (the ICD loader finds no driver): only the CPU, and asking for a device says so.
TEST(Devices, WithoutAnOpenCLDriverTheToolRunsOnTheCpuAndNamesWhatIsMissing) {
  test::TempDir empty;
  const std::string env = "OCL_ICD_VENDORS=" + empty.path().string() + " OCL_ICD_FILENAMES=";
  const test::ToolRun list = test::run_tool("devices", env);
  EXPECT_EQ(list.status, 0) << list.output;
  EXPECT_EQ(list.output.find("opencl"), std::string::npos) << list.output;
  GGUFMM_GOLDEN_PATH(q4, "q4_0.gguf");
  const test::ToolRun run =
      test::run_tool("dequant " + q4 + " weight -o " + (empty.path() / "out.f32").string() + " --device opencl:0", env);
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("no OpenCL driver"), std::string::npos) << run.output;
  const test::ToolRun cpu =
      test::run_tool("dequant " + q4 + " weight -o " + (empty.path() / "out.f32").string() + " --device cpu", env);
  EXPECT_EQ(cpu.status, 0) << cpu.output;
}

// --- every format ------------------------------------------------------------------------------------------------

class DeviceFormat : public ::testing::TestWithParam<Type> {};

TEST_P(DeviceFormat, DequantizesTheGoldenFileAsGgmlBitForBit) {
  GGUFMM_DEVICES(list);
  GGUFMM_OPEN_GOLDEN(file, std::string(type_info(GetParam())->name) + ".gguf");
  const std::vector<float> want = file.read_f32("dequant");
  for (const Device& d : list) {
    const std::vector<float> got = ResidentWeight(d, file.weight("weight")).dequantize();
    ASSERT_EQ(got.size(), want.size());
    const auto [mismatches, first] = test::bit_mismatches(got, want);
    EXPECT_EQ(mismatches, 0u) << d.info().name << ": first at " << first;
  }
}

// 1 to 7 rows (one launch) and 9 (two), with and without a residual; m odd and k such that a row has fewer
// sub-blocks than a work-group has work-items (and, for floats, a k that is no multiple of 16).
TEST_P(DeviceFormat, GemvIsTheCpusInt8Product) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(static_cast<uint32_t>(GetParam()) + 7);
  const int64_t m = 37, k = test::is_float(GetParam()) ? 100 : 768;
  const test::RandomWeight weight(GetParam(), m, k, rng);
  for (const Device& d : list) {
    const ResidentWeight resident(d, weight.w);
    for (const int64_t rows : {1, 2, 3, 4, 5, 6, 7, 9}) {
      const std::vector<float> x = test::random_values(static_cast<size_t>(rows * k), rng);
      const std::vector<float> residual = test::random_values(static_cast<size_t>(rows * m), rng);
      for (const bool with_residual : {false, true}) {
        const float* add = with_residual ? residual.data() : nullptr;
        std::vector<float> y(static_cast<size_t>(rows * m));
        resident.matmul(x.data(), rows, y.data(), add);
        const std::vector<double> want = int8_product(weight.w, x.data(), rows, add);
        EXPECT_LE(nmse(y.data(), want.data(), y.size()), 1e-10)
            << d.info().name << ": " << rows << " rows" << (with_residual ? ", residual" : "");
      }
    }
  }
}

// The prefill tiles at every size (16, 32 and 64 activation rows), with partial tiles at the row edge and, as m is
// 70, at the weight-row edge; with and without a residual. The float formats have no tiles: they run gemv.
TEST_P(DeviceFormat, TiledIsTheCpusInt8ProductAtEveryTileSize) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(static_cast<uint32_t>(GetParam()) + 17);
  const int64_t m = 70, k = test::is_float(GetParam()) ? 100 : 512;
  const test::RandomWeight weight(GetParam(), m, k, rng);
  for (const Device& d : list) {
    const ResidentWeight resident(d, weight.w);
    for (const int64_t rows : {8, 13, 16, 17, 32, 33, 64, 100, 200, 300}) {
      const std::vector<float> x = test::random_values(static_cast<size_t>(rows * k), rng);
      const std::vector<float> residual = test::random_values(static_cast<size_t>(rows * m), rng);
      const float* add = rows % 2 ? residual.data() : nullptr;
      std::vector<float> y(static_cast<size_t>(rows * m));
      resident.matmul(x.data(), rows, y.data(), add, {.path = Path::Tiled});
      const std::vector<double> want = int8_product(weight.w, x.data(), rows, add);
      EXPECT_LE(nmse(y.data(), want.data(), y.size()), 1e-10) << d.info().name << ": " << rows << " rows";
    }
  }
}

// The dense path: the weight's dense copy times the f32 activations through the device's GEMM library, against the
// exact product. Its error is the copy's rounding: none for f32 copies but the f32 sums' (NMSE within 1e-10); f16
// copies (cuBLAS) round weights and activations to 11 bits (NMSE within 1e-6). k = 1024 makes f32 rows 4 KiB, which
// the copy pads. With a residual, and with the output as its own residual.
TEST_P(DeviceFormat, DenseIsTheExactProductWithinItsCopysRounding) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(static_cast<uint32_t>(GetParam()) + 31);
  const int64_t m = 70, k = 1024;
  const test::RandomWeight weight(GetParam(), m, k, rng);
  for (const Device& d : list) {
    const std::optional<Type> element = device::backend_of(d)->dense_type();
    if (!element) {
      ADD_FAILURE() << d.info().name << " has no GEMM library (install libclblast-dev for OpenCL)";
      continue;
    }
    const double bound = *element == Type::F32 ? 1e-10 : 1e-6;
    const ResidentWeight resident(d, weight.w);
    for (const int64_t rows : {8, 33, 20}) {
      const std::vector<float> x = test::random_values(static_cast<size_t>(rows * k), rng);
      std::vector<float> residual = test::random_values(static_cast<size_t>(rows * m), rng);
      const float* add = rows == 8 ? nullptr : residual.data();
      const std::vector<double> want = test::exact_plus(weight.w, x.data(), rows, add);
      std::vector<float> y(static_cast<size_t>(rows * m));
      if (rows == 20) {
        resident.matmul(x.data(), rows, residual.data(), residual.data(), {.path = Path::Dense});
        y = residual;
      } else {
        resident.matmul(x.data(), rows, y.data(), add, {.path = Path::Dense});
      }
      EXPECT_LE(nmse(y.data(), want.data(), y.size()), bound) << d.info().name << ": " << rows << " rows";
    }
  }
}

// ggml's activations and exact products: the device errs no more than the CPU's gemv path.
TEST_P(DeviceFormat, NoWorseThanTheCpuAgainstTheExactProduct) {
  GGUFMM_DEVICES(list);
  GGUFMM_OPEN_GOLDEN(file, std::string(type_info(GetParam())->name) + ".gguf");
  const Weight w = file.weight("weight");
  for (const Device& d : list) {
    const ResidentWeight resident(d, w);
    for (const int n : test::kGoldenRows) {
      const std::vector<float> x = file.read_f32(fmt::format("act.{}", n));
      const std::vector<float> exact = file.read_f32(fmt::format("exact_out.{}", n));
      std::vector<float> got(exact.size()), cpu(exact.size());
      resident.matmul(x.data(), n, got.data());
      matmul(w, x.data(), n, cpu.data(), nullptr, {.path = Path::Gemv});
      EXPECT_LE(nmse(got.data(), exact.data(), got.size()), nmse(cpu.data(), exact.data(), cpu.size()) * 1.01 + 1e-12)
          << d.info().name << ": " << n << " rows";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, DeviceFormat, ::testing::ValuesIn(test::weight_types()), test::type_test_name);

// --- activations -------------------------------------------------------------------------------------------------

TEST(DeviceActivations, QuantizedBitForBitAsTheCpuQuantizesThem) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(11);
  const int64_t k = 32 * 24;
  std::vector<float> x = test::random_values(static_cast<size_t>(2 * k), rng);
  // Groups of edge cases: zeros; values too small for 127 / amax to be finite; a NaN; infinities; huge values;
  // exact ties (x * 127 / amax = n + 0.5).
  std::fill_n(x.begin() + 32, 32, 0.0f);
  std::fill_n(x.begin() + 64, 32, 1e-38f);
  x[96 + 5] = std::numeric_limits<float>::quiet_NaN();
  x[128 + 7] = std::numeric_limits<float>::infinity();
  x[160 + 9] = -std::numeric_limits<float>::infinity();
  std::fill_n(x.begin() + 192, 32, 3e38f);
  x[224] = 127.0f;
  for (int i = 1; i < 32; ++i) x[224 + static_cast<size_t>(i)] = static_cast<float>(i) + 0.5f;
  std::vector<int8_t> q(x.size()), dq(x.size());
  std::vector<float> d(x.size() / 32), dd(x.size() / 32), sum(x.size() / 16), dsum(x.size() / 16);
  std::vector<int16_t> qsum(x.size() / 32);
  kernels::scalar::quantize_act(x.data(), 2, k, q.data(), d.data(), qsum.data(), sum.data());
  for (const Device& device : list) {
    device::Backend& b = *device::backend_of(device);
    const auto xs = b.upload(x.data(), x.size() * sizeof(float));
    const auto bq = b.allocate(dq.size()), bd = b.allocate(dd.size() * sizeof(float)),
               bsum = b.allocate(dsum.size() * sizeof(float));
    device::quantize_activations(b, xs->handle(), 2 * k, bq->handle(), bd->handle(), bsum->handle());
    b.read(*bq, dq.data());
    b.read(*bd, dd.data());
    b.read(*bsum, dsum.data());
    EXPECT_EQ(dq, q) << device.info().name;
    for (size_t g = 0; g < d.size(); ++g) EXPECT_EQ(bits(dd[g]), bits(d[g])) << device.info().name << " group " << g;
    for (size_t h = 0; h < sum.size(); ++h) EXPECT_EQ(bits(dsum[h]), bits(sum[h])) << device.info().name << " " << h;
  }
}

// NaN and infinite activations, a NaN scale in the weight, and sums that overflow: classified as the exact product
// classifies them (NaN where it is NaN, infinite of its sign where it is infinite, finite where finite).
TEST(DeviceClassification, OutputsAreClassifiedAsTheExactProductClassifiesThem) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(12);
  const int64_t m = 9, k = 256, rows = 5;
  test::RandomWeight weight(Type::Q8_0, m, k, rng);
  auto* blocks = const_cast<uint8_t*>(static_cast<const uint8_t*>(weight.w.data));
  blocks[3 * weight.w.row_bytes()] = 0x00;  // row 3, block 0: scale NaN (binary16 0x7e00)
  blocks[3 * weight.w.row_bytes() + 1] = 0x7e;
  std::vector<float> x = test::random_values(static_cast<size_t>(rows * k), rng);
  x[static_cast<size_t>(1 * k + 10)] = std::numeric_limits<float>::infinity();
  x[static_cast<size_t>(2 * k + 20)] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = 0; i < k; ++i) x[static_cast<size_t>(4 * k + i)] = 3e37f;  // row 4: sums past the f32 range
  const std::vector<double> exact = ggufmm::exact_matmul(weight.w, x.data(), rows);
  for (const Device& d : list) {
    std::vector<float> y(static_cast<size_t>(rows * m));
    ResidentWeight(d, weight.w).matmul(x.data(), rows, y.data());
    for (size_t i = 0; i < y.size(); ++i) {
      const float e = static_cast<float>(exact[i]);
      EXPECT_EQ(std::isnan(y[i]), std::isnan(e)) << d.info().name << " output " << i << ": " << y[i] << " vs " << e;
      EXPECT_EQ(std::isinf(y[i]), std::isinf(e)) << d.info().name << " output " << i << ": " << y[i] << " vs " << e;
      if (std::isinf(e)) {
        EXPECT_EQ(std::signbit(y[i]), std::signbit(e)) << d.info().name << " output " << i;
      }
    }
  }
}

// --- mixtures of experts -----------------------------------------------------------------------------------------

class DeviceMoe : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceMoe, NoWorseThanTheCpuAgainstTheExactProduct) {
  GGUFMM_DEVICES(list);
  GGUFMM_OPEN_GOLDEN(file, GetParam() + ".gguf");
  const Weight w = file.weight("weight");
  const gguf::TensorInfo& act = file.tensor("act");
  const gguf::TensorInfo& ids_info = file.tensor("ids");
  const std::vector<float> x = file.read_f32("act"), exact = file.read_f32("exact_out");
  const int64_t tokens = act.shape[2], act_slots = act.shape[1], slots = ids_info.shape[0];
  const auto* ids = reinterpret_cast<const int32_t*>(ids_info.data);
  std::vector<float> cpu(exact.size());
  mul_mat_id(w, x.data(), tokens, act_slots, ids, slots, cpu.data(), nullptr, {.path = Path::Gemv});
  for (const Device& d : list) {
    std::vector<float> got(exact.size());
    const std::vector<float> residual(exact.size(), 0.5f);
    ResidentWeight(d, w).mul_mat_id(x.data(), tokens, act_slots, ids, slots, got.data());
    EXPECT_LE(nmse(got.data(), exact.data(), got.size()), nmse(cpu.data(), exact.data(), cpu.size()) * 1.01 + 1e-12)
        << d.info().name;
    std::vector<float> plus(exact.size());
    ResidentWeight(d, w).mul_mat_id(x.data(), tokens, act_slots, ids, slots, plus.data(), residual.data());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(plus[i], got[i] + 0.5f) << d.info().name << " output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, DeviceMoe, ::testing::ValuesIn(test::kMoeGoldenFiles), test::string_test_name);

// Routings the device groups by expert: every expert alike, most rows to one, all to one, and experts that get none;
// tokens sharing one activation row or a row per slot. Gemv and the tiles against the CPU's int8 product, which
// differs from theirs only in the order of f32 sums.
TEST(DeviceMoeRouting, EveryRoutingThroughGemvAndTilesIsTheCpusProduct) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(23);
  const int64_t experts = 6, m = 70, k = 256, tokens = 60, slots = 2;
  const std::vector<std::pair<std::string, std::function<int32_t(int64_t, int64_t)>>> routings = {
      {"uniform", [&](int64_t t, int64_t s) { return static_cast<int32_t>((t * slots + s) % experts); }},
      {"skewed", [&](int64_t t, int64_t s) { return static_cast<int32_t>(t % 10 == 0 ? 1 + s : 0); }},
      {"one expert", [&](int64_t, int64_t) { return int32_t{3}; }},
      {"empty experts", [&](int64_t t, int64_t s) { return static_cast<int32_t>((t + s) % 2 ? 1 : 4); }}};
  for (const Type type : {Type::Q4_K, Type::Q4_1, Type::IQ2_XS, Type::F16}) {
    const test::RandomWeight weight(type, m, k, rng, experts);
    for (const int64_t act_slots : {int64_t{1}, slots}) {
      const std::vector<float> x = test::random_values(static_cast<size_t>(tokens * act_slots * k), rng);
      for (const auto& [name, route] : routings) {
        std::vector<int32_t> ids(static_cast<size_t>(tokens * slots));
        for (int64_t t = 0; t < tokens; ++t) {
          for (int64_t s = 0; s < slots; ++s) ids[static_cast<size_t>(t * slots + s)] = route(t, s);
        }
        std::vector<float> cpu(static_cast<size_t>(tokens * slots * m));
        mul_mat_id(weight.w, x.data(), tokens, act_slots, ids.data(), slots, cpu.data(), nullptr,
                   {.path = Path::Gemv});
        for (const Device& d : list) {
          const ResidentWeight resident(d, weight.w);
          for (const Path path : {Path::Gemv, Path::Tiled, Path::Auto}) {
            std::vector<float> got(cpu.size());
            resident.mul_mat_id(x.data(), tokens, act_slots, ids.data(), slots, got.data(), nullptr,
                                {.path = path});
            EXPECT_LE(nmse(got.data(), cpu.data(), got.size()), 1e-10)
                << d.info().name << ", " << type_info(type)->name << ", " << name << ", act_slots " << act_slots
                << ", " << path_name(path);
          }
        }
      }
    }
  }
}

// mul_mat_id's tile work-groups are sized to the device (about 1024 work-items per compute unit), not to the tiles:
// a weight as wide as 16 x 64 rows per compute unit leaves one work-group per 64 weight rows, which then takes every
// tile of the routing in turn (16-row tiles: experts of up to 16 rows on average).
TEST(DeviceMoeRouting, AWorkGroupTakesEveryTileInTurn) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(37);
  const int64_t experts = 6, k = 256, tokens = 48, slots = 2;
  std::vector<int32_t> ids(static_cast<size_t>(tokens * slots));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % 5 == 0 ? 1 + i % 3 : 0);  // skewed
  for (const Device& d : list) {
    const int64_t m = 64 * 16 * device::backend_of(d)->compute_units() + 5;
    const test::RandomWeight weight(Type::Q4_K, m, k, rng, experts);
    const std::vector<float> x = test::random_values(static_cast<size_t>(tokens * k), rng);
    std::vector<float> cpu(static_cast<size_t>(tokens * slots * m)), got(cpu.size());
    mul_mat_id(weight.w, x.data(), tokens, 1, ids.data(), slots, cpu.data(), nullptr, {.path = Path::Gemv});
    ResidentWeight(d, weight.w).mul_mat_id(x.data(), tokens, 1, ids.data(), slots, got.data(), nullptr,
                                           {.path = Path::Tiled});
    EXPECT_LE(nmse(got.data(), cpu.data(), got.size()), 1e-10) << d.info().name;
  }
}

TEST(DevicePaths, RefIsRefusedOnADevice) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(29);
  const test::RandomWeight weight(Type::Q4_0, 8, 64, rng);
  const std::vector<float> x(64 * 8, 1.0f);
  std::vector<float> y(8 * 8);
  for (const Device& d : list) {
    const ResidentWeight resident(d, weight.w);
    const std::string message =
        test::usage_error([&] { resident.matmul(x.data(), 8, y.data(), nullptr, {.path = Path::Ref}); });
    EXPECT_NE(message.find("not offered on devices"), std::string::npos) << message;
  }
}

// Auto takes the dense path from the prefill-dequant minimum on (a copy made is a cache miss), and not below it nor
// where it is off; mul_mat_id asked for dense runs its expert-grouped kernels, as on the CPU.
TEST(DevicePaths, AutoTakesTheDensePathFromThePrefillDequantMinimum) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(37);
  const int64_t m = 40, k = 256, rows = 16;
  const test::RandomWeight weight(Type::Q5_K, m, k, rng);
  const std::vector<float> x = test::random_values(static_cast<size_t>(rows * k), rng);
  const int64_t saved = paths::prefill_dequant_rows();
  for (const Device& d : list) {
    d.clear_dense_cache();
    const ResidentWeight resident(d, weight.w);
    std::vector<float> y(static_cast<size_t>(rows * m));
    const auto copies_after = [&](int64_t minimum, int64_t n) {
      set_prefill_dequant(minimum);
      resident.matmul(x.data(), n, y.data());
      return d.dense_cache_stats().misses;
    };
    EXPECT_EQ(copies_after(0, rows), 0u) << d.info().name << ": dense while off";
    EXPECT_EQ(copies_after(rows + 1, rows), 0u) << d.info().name << ": dense below the minimum";
    EXPECT_EQ(copies_after(rows, rows), 1u) << d.info().name << ": not dense at the minimum";
    const std::vector<double> want = test::exact_plus(weight.w, x.data(), rows, nullptr);
    EXPECT_LE(nmse(y.data(), want.data(), y.size()), 1e-6) << d.info().name;
  }
  set_prefill_dequant(saved);

  const test::RandomWeight experts(Type::Q4_K, m, k, rng, 4);
  const std::vector<int32_t> ids = {0, 3, 3, 1, 2, 0, 1, 1};
  std::vector<float> cpu(ids.size() * m), got(ids.size() * m);
  mul_mat_id(experts.w, x.data(), 4, 1, ids.data(), 2, cpu.data(), nullptr, {.path = Path::Gemv});
  for (const Device& d : list) {
    const ResidentWeight resident(d, experts.w);
    resident.mul_mat_id(x.data(), 4, 1, ids.data(), 2, got.data(), nullptr, {.path = Path::Dense});
    EXPECT_LE(nmse(got.data(), cpu.data(), got.size()), 1e-10) << d.info().name;
  }
}

// A device's calibrated crossovers steer Auto on that device alone: here the dense path from 32 rows, though the
// prefill-dequant minimum says 8. calibrate --device writes them beside the CPU's, keeping those.
TEST(DevicePaths, AutoFollowsTheDevicesCalibratedCrossovers) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(43);
  const int64_t m = 40, k = 256;
  const test::RandomWeight weight(Type::Q4_K, m, k, rng);
  const std::vector<float> x = test::random_values(static_cast<size_t>(32 * k), rng);
  std::vector<float> y(static_cast<size_t>(32 * m));
  const int64_t saved = paths::prefill_dequant_rows();
  set_prefill_dequant(8);
  for (const Device& d : list) {
    set_profile(PathProfile{"any", 2, {}, {{d.info().description, {{Type::Q4_K, false, 8, 32}}}}});
    d.clear_dense_cache();
    const ResidentWeight resident(d, weight.w);
    resident.matmul(x.data(), 16, y.data());
    EXPECT_EQ(d.dense_cache_stats().misses, 0u) << d.info().name << ": dense below the device's crossover";
    resident.matmul(x.data(), 32, y.data());
    EXPECT_EQ(d.dense_cache_stats().misses, 1u) << d.info().name << ": not dense from the device's crossover";
  }
  set_profile(std::nullopt);
  set_prefill_dequant(saved);

  test::TempDir dir;
  const std::string path = dir.file("profile.json");
  ASSERT_EQ(test::run_tool(fmt::format("calibrate --type q4_0 --quick -o {}", path)).status, 0);
  for (const Device& d : list) {
    const test::ToolRun r =
        test::run_tool(fmt::format("calibrate --device {} --type q8_0 --quick --dense -o {}", d.info().name, path));
    ASSERT_EQ(r.status, 0) << r.output;
  }
  const PathProfile p = read_profile(path);
  EXPECT_EQ(p.crossovers.size(), 2u) << "the CPU's crossovers kept";
  ASSERT_EQ(p.devices.size(), list.size());
  for (const DeviceCrossovers& d : p.devices) {
    ASSERT_EQ(d.crossovers.size(), 2u) << d.device;
    for (const PathCrossover& c : d.crossovers) {
      EXPECT_EQ(c.type, Type::Q8_0);
      EXPECT_GE(c.dense_from, 8) << d.device;
    }
  }
}

// The dense cache within a budget of two copies: the least recently used goes first, a released weight's copy goes
// with it, and a copy past the whole budget serves its call alone. Every product stays the exact one.
TEST(DeviceDenseCache, EvictsTheLeastRecentlyUsedWithinASmallBudget) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(41);
  const int64_t m = 64, k = 256, rows = 8;
  std::vector<test::RandomWeight> weights;
  for (int i = 0; i < 3; ++i) weights.emplace_back(Type::Q4_0, m, k, rng);
  const std::vector<float> x = test::random_values(static_cast<size_t>(rows * k), rng);
  for (const Device& d : list) {
    const std::optional<Type> element = device::backend_of(d)->dense_type();
    if (!element) {
      ADD_FAILURE() << d.info().name << " has no GEMM library";
      continue;
    }
    const size_t copy = device::dense_bytes(weights[0].w, *element);
    d.clear_dense_cache();
    d.set_dense_cache_budget(2 * copy);
    std::vector<std::optional<ResidentWeight>> resident;
    for (const test::RandomWeight& w : weights) resident.emplace_back(std::in_place, d, w.w);
    const auto use = [&](size_t i) {
      std::vector<float> y(static_cast<size_t>(rows * m));
      resident[i]->matmul(x.data(), rows, y.data(), nullptr, {.path = Path::Dense});
      const std::vector<double> want = test::exact_plus(weights[i].w, x.data(), rows, nullptr);
      EXPECT_LE(nmse(y.data(), want.data(), y.size()), 1e-6) << d.info().name << ": weight " << i;
    };
    for (const size_t i : {0, 1, 0, 2, 0, 1}) use(i);  // 2 evicts 1 (the least recent), then 1 evicts 2
    DenseCacheStats s = d.dense_cache_stats();
    EXPECT_EQ(s.hits, 2u);
    EXPECT_EQ(s.misses, 4u);
    EXPECT_EQ(s.evictions, 2u);
    EXPECT_EQ(s.entries, 2u);
    EXPECT_EQ(s.bytes_held, 2 * copy);
    EXPECT_EQ(s.peak_bytes, 2 * copy);

    resident[0].reset();  // weight 0 released: its copy with it
    s = d.dense_cache_stats();
    EXPECT_EQ(s.entries, 1u);
    EXPECT_EQ(s.bytes_held, copy);

    d.set_dense_cache_budget(copy / 2);  // drops the last; copies now serve one call each
    use(1);
    use(1);
    s = d.dense_cache_stats();
    EXPECT_EQ(s.evictions, 3u);
    EXPECT_EQ(s.misses, 6u);
    EXPECT_EQ(s.entries, 0u);
    EXPECT_EQ(s.bytes_held, 0u);
    d.set_dense_cache_budget(size_t{1} << 30);
  }
}

// --- bad cases ---------------------------------------------------------------------------------------------------

TEST(DeviceErrors, WrongShapesAndIdsAreRefusedAsOnTheCpu) {
  GGUFMM_DEVICES(list);
  std::mt19937 rng(13);
  const test::RandomWeight weight(Type::Q4_0, 8, 64, rng), experts(Type::Q4_0, 8, 64, rng, 3);
  const std::vector<float> x(64 * 2, 1.0f);
  std::vector<float> y(8 * 4);
  for (const Device& d : list) {
    const ResidentWeight one(d, weight.w), three(d, experts.w);
    EXPECT_NE(test::usage_error([&] { one.matmul(x.data(), -1, y.data()); }).find("negative"), std::string::npos);
    EXPECT_NE(test::usage_error([&] { three.matmul(x.data(), 1, y.data()); }).find("experts"), std::string::npos);
    const int32_t bad_ids[2] = {0, 3};
    EXPECT_NE(test::input_error([&] { three.mul_mat_id(x.data(), 1, 1, bad_ids, 2, y.data()); }).find("id 3"),
              std::string::npos);
    EXPECT_NE(test::usage_error([&] { three.mul_mat_id(x.data(), 1, 3, bad_ids, 2, y.data()); }).find("slots"),
              std::string::npos);
  }
}

// More than the device can hold in one buffer: a clear error before a byte is read, nothing left resident.
TEST(DeviceErrors, AWeightPastTheLargestAllocationIsACleanError) {
  GGUFMM_DEVICES(list);
  for (const Device& d : list) {
    const int64_t k = 256 * 1024;
    const int64_t m = static_cast<int64_t>(d.info().max_allocation / (k / 32 * 34)) + 1;
    const uint8_t byte = 0;
    const Weight huge{.type = Type::Q8_0, .k = k, .m = m, .data = &byte, .name = "huge"};  // never read
    const std::string message = test::input_error([&] { ResidentWeight(d, huge); });
    EXPECT_NE(message.find("largest allocation"), std::string::npos) << message;
  }
}

// --- an engine's own queue ---------------------------------------------------------------------------------------

// An engine's OpenCL objects on the first device, released at the end.
struct EngineQueue {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  EngineQueue() {
    cl_platform_id platform = nullptr;
    cl_device_id device = nullptr;
    if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS) return;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS) return;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, nullptr);
    queue = clCreateCommandQueue(context, device, 0, nullptr);
  }
  ~EngineQueue() {
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }
  EngineQueue(const EngineQueue&) = delete;
  EngineQueue& operator=(const EngineQueue&) = delete;

  cl_mem buffer(size_t bytes, const void* from = nullptr) const {
    return clCreateBuffer(context, CL_MEM_READ_WRITE | (from ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                          const_cast<void*>(from), nullptr);
  }
};

// Weights uploaded through the engine's queue, products enqueued on it between the engine's own buffers: the same
// values as through host memory; an id naming no expert makes its slot NaN.
TEST(DeviceEngine, ProductsOnTheCallersQueueAndBuffers) {
  GGUFMM_DEVICES(list);
  if (std::ranges::none_of(list, [](const Device& d) { return d.info().name.starts_with("opencl"); })) {
    GTEST_SKIP() << "no OpenCL device among those tested";
  }
  const EngineQueue engine;
  ASSERT_NE(engine.queue, nullptr);
  const Device device = Device::from_opencl_queue(engine.queue);
  std::mt19937 rng(14);
  const int64_t m = 19, k = 512, rows = 10, experts = 3;
  const test::RandomWeight weight(Type::Q4_K, m, k, rng), moe(Type::Q4_K, m, k, rng, experts);
  const ResidentWeight resident(device, weight.w), resident_moe(device, moe.w);
  const std::vector<float> x = test::random_values(static_cast<size_t>(rows * k), rng);
  const std::vector<float> residual = test::random_values(static_cast<size_t>(rows * m), rng);
  std::vector<float> want(residual.size()), got(residual.size());
  resident.matmul(x.data(), rows, want.data(), residual.data());

  const cl_mem bx = engine.buffer(x.size() * sizeof(float), x.data());
  const cl_mem br = engine.buffer(residual.size() * sizeof(float), residual.data());
  const cl_mem by = engine.buffer(got.size() * sizeof(float));
  resident.enqueue_matmul(bx, rows, by, br);
  ASSERT_EQ(clEnqueueReadBuffer(engine.queue, by, CL_TRUE, 0, got.size() * sizeof(float), got.data(), 0, nullptr,
                                nullptr),
            CL_SUCCESS);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(bits(got[i]), bits(want[i])) << "output " << i;

  // In place (the residual is y), with an infinite activation whose outputs are recomputed exactly after y is
  // written: the residual they add is still the one given.
  std::vector<float> xinf = x;
  xinf[3] = std::numeric_limits<float>::infinity();
  resident.matmul(xinf.data(), rows, want.data(), residual.data());
  const cl_mem bxinf = engine.buffer(xinf.size() * sizeof(float), xinf.data());
  const cl_mem inplace = engine.buffer(residual.size() * sizeof(float), residual.data());
  resident.enqueue_matmul(bxinf, rows, inplace, inplace);
  ASSERT_EQ(clEnqueueReadBuffer(engine.queue, inplace, CL_TRUE, 0, got.size() * sizeof(float), got.data(), 0,
                                nullptr, nullptr),
            CL_SUCCESS);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(bits(got[i]), bits(want[i])) << "in place, output " << i;
  clReleaseMemObject(bxinf);
  clReleaseMemObject(inplace);

  const int32_t ids[4] = {2, 0, 7, 1};  // 2 tokens, 2 slots; 7 names no expert
  const cl_mem bids = engine.buffer(sizeof ids, ids);
  std::vector<float> routed(4 * static_cast<size_t>(m));
  resident_moe.enqueue_mul_mat_id(bx, 2, 1, bids, 2, by);
  ASSERT_EQ(clEnqueueReadBuffer(engine.queue, by, CL_TRUE, 0, routed.size() * sizeof(float), routed.data(), 0,
                                nullptr, nullptr),
            CL_SUCCESS);
  const int32_t valid[4] = {2, 0, 0, 1};
  std::vector<float> host(routed.size());
  resident_moe.mul_mat_id(x.data(), 2, 1, valid, 2, host.data());
  for (size_t i = 0; i < routed.size(); ++i) {
    if (i / static_cast<size_t>(m) == 2) {
      EXPECT_TRUE(std::isnan(routed[i])) << "output " << i;
    } else {
      EXPECT_EQ(bits(routed[i]), bits(host[i])) << "output " << i;
    }
  }
  for (const cl_mem b : {bx, br, by, bids}) clReleaseMemObject(b);
  EXPECT_NE(test::usage_error([&] { ResidentWeight(Device::open("cpu"), weight.w).enqueue_matmul(bx, 1, by); })
                .find("CPU"),
            std::string::npos);
}

// --- the C API ---------------------------------------------------------------------------------------------------

TEST(DeviceCApi, UploadMultiplyDequantizeAndRelease) {
  const int count = ggufmm_device_count();
  ASSERT_GE(count, 1);
  EXPECT_STREQ(ggufmm_device_name(0), "cpu");
  EXPECT_EQ(ggufmm_device_name(count), nullptr);
  ggufmm_device* missing = nullptr;
  EXPECT_EQ(ggufmm_device_open("opencl:99", &missing), GGUFMM_BAD_INPUT);
  EXPECT_NE(std::string(ggufmm_last_error()).find("opencl:99"), std::string::npos);
  std::mt19937 rng(15);
  const int64_t m = 11, k = 256, rows = 3;
  const test::RandomWeight weight(Type::Q6_K, m, k, rng);
  const ggufmm_weight w{static_cast<uint32_t>(Type::Q6_K), k, m, 1, weight.w.data};
  const std::vector<float> x = test::random_values(static_cast<size_t>(rows * k), rng);
  std::vector<float> want(static_cast<size_t>(rows * m));
  ResidentWeight(Device::open("cpu"), weight.w).matmul(x.data(), rows, want.data());
  const std::vector<DeviceInfo> all = devices();
  for (int i = 0; i < count; ++i) {
    const std::string name = ggufmm_device_name(i);
    if (name != "cpu" && !tested(all[static_cast<size_t>(i)])) continue;
    ggufmm_device* device = nullptr;
    ASSERT_EQ(ggufmm_device_open(name.c_str(), &device), GGUFMM_OK) << ggufmm_last_error();
    ggufmm_resident* resident = nullptr;
    ASSERT_EQ(ggufmm_upload(device, &w, &resident), GGUFMM_OK) << ggufmm_last_error();
    std::vector<float> y(want.size()), values(static_cast<size_t>(m * k));
    ASSERT_EQ(ggufmm_resident_matmul(resident, x.data(), rows, y.data(), nullptr, nullptr), GGUFMM_OK)
        << ggufmm_last_error();
    EXPECT_LE(nmse(y.data(), want.data(), y.size()), 1e-10) << name;
    ASSERT_EQ(ggufmm_resident_dequantize(resident, values.data()), GGUFMM_OK) << ggufmm_last_error();
    EXPECT_EQ(values, dequantize(weight.w)) << name;
    EXPECT_EQ(ggufmm_resident_matmul(resident, x.data(), -1, y.data(), nullptr, nullptr), GGUFMM_BAD_USAGE) << name;
    // The dense path through the options, its copy counted in the device's cache.
    ASSERT_EQ(ggufmm_device_clear_dense_cache(device), GGUFMM_OK) << ggufmm_last_error();
    const ggufmm_options dense{.path = GGUFMM_PATH_DENSE, .threads = 0};
    ASSERT_EQ(ggufmm_resident_matmul(resident, x.data(), rows, y.data(), nullptr, &dense), GGUFMM_OK)
        << ggufmm_last_error();
    const std::vector<double> exact = test::exact_plus(weight.w, x.data(), rows, nullptr);
    EXPECT_LE(nmse(y.data(), exact.data(), y.size()), 1e-4) << name;  // 1e-4: the CPU's copy is bf16
    ggufmm_dense_cache_stats stats{};
    ASSERT_EQ(ggufmm_device_get_dense_cache_stats(device, &stats), GGUFMM_OK) << ggufmm_last_error();
    EXPECT_EQ(stats.misses, 1u) << name;
    EXPECT_EQ(ggufmm_device_get_dense_cache_stats(nullptr, &stats), GGUFMM_BAD_USAGE);
    ggufmm_resident_release(resident);
    ggufmm_device_close(device);
  }
}

// --- the tool ----------------------------------------------------------------------------------------------------

TEST(DeviceTool, MatmulCheckAndBenchRunOnADevice) {
  GGUFMM_DEVICES(list);
  GGUFMM_GOLDEN_PATH(golden, "q4_K.gguf");
  test::TempDir dir;
  for (const Device& d : list) {
    const std::string name = d.info().name;
    const test::ToolRun product = test::run_tool(fmt::format(
        "matmul {} --weight weight --act act.3 --residual exact_out.3 -o {} --device {}", golden, dir.file("y"), name));
    EXPECT_EQ(product.status, 0) << product.output;
    EXPECT_EQ(std::filesystem::file_size(dir.file("y")), 3 * 48 * sizeof(float));
    // The environment names the device where the option does not.
    const test::ToolRun check = test::run_tool("check", "GGUFMM_DEVICE=" + name);
    EXPECT_EQ(check.status, 0) << check.output;
    EXPECT_NE(check.output.find(name), std::string::npos);
    EXPECT_NE(check.output.find("dequant"), std::string::npos);
    const test::ToolRun bench = test::run_tool(
        fmt::format("bench --device {} --type q8_0 --m 64 --k 256 --n 1,3 --quick-limits --format csv", name));
    EXPECT_EQ(bench.status, 0) << bench.output;
    EXPECT_NE(bench.output.find("upload"), std::string::npos) << bench.output;
    EXPECT_NE(bench.output.find("q8_0,64,256,3,auto"), std::string::npos) << bench.output;
    // Every path but the reference, the dense copy's making a row of its own, and the GEMM library alone on a copy
    // padded the same way (what the dense path is held to); experts drawn per repeat.
    const test::ToolRun paths = test::run_tool(fmt::format(
        "bench --device {} --type q4_K --m 64 --k 256 --n 9 --path all --quick-limits --format csv", name));
    EXPECT_EQ(paths.status, 0) << paths.output;
    for (const char* path : {",gemv,", ",tiled,", ",dense-copy,", ",dense,", ",gemm,"}) {
      EXPECT_NE(paths.output.find(path), std::string::npos) << path << "\n" << paths.output;
    }
    EXPECT_EQ(paths.output.find(",ref,"), std::string::npos) << paths.output;
    const test::ToolRun experts = test::run_tool(fmt::format(
        "bench --moe --device {} --type q4_0 --m 64 --k 256 --n 2 --quick-limits --format csv", name));
    EXPECT_EQ(experts.status, 0) << experts.output;
    EXPECT_NE(experts.output.find("q4_0,64,256,128,8,skewed,2,auto"), std::string::npos) << experts.output;
    for (const char* path : {"tiled", "dense"}) {
      const test::ToolRun forced = test::run_tool(fmt::format(
          "matmul {} --weight weight --act act.3 -o {} --device {} --path {}", golden, dir.file("y"), name, path));
      EXPECT_EQ(forced.status, 0) << forced.output;
    }
    const test::ToolRun ref = test::run_tool(fmt::format(
        "matmul {} --weight weight --act act.3 -o {} --device {} --path ref", golden, dir.file("y"), name));
    EXPECT_EQ(ref.status, 2) << ref.output;
    EXPECT_NE(ref.output.find("not offered on devices"), std::string::npos) << ref.output;
  }
  const test::ToolRun missing = test::run_tool(fmt::format("matmul {} --weight weight --act act.3 -o {} --device nope",
                                                           golden, dir.file("y")));
  EXPECT_EQ(missing.status, 1) << missing.output;
  EXPECT_NE(missing.output.find("device nope"), std::string::npos) << missing.output;
}

// An OpenCL device compiles a format's program at its first use, seconds on some drivers: said once, on stderr,
// with where it is cached; the next run loads it from there and says nothing.
TEST(DeviceTool, AFormatsFirstCompilationIsSaidOnce) {
  GGUFMM_DEVICES(list);
  GGUFMM_GOLDEN_PATH(golden, "q4_0.gguf");
  for (const Device& d : list) {
    const std::string name = d.info().name;
    if (!name.starts_with("opencl:")) continue;  // CUDA's program is compiled with the library
    test::TempDir cache;
    const std::string env = "GGUFMM_CACHE_DIR=" + cache.path().string();
    const std::string args = fmt::format("dequant {} weight -o /dev/null --device {}", golden, name);
    const test::ToolRun first = test::run_tool(args, env);
    ASSERT_EQ(first.status, 0) << first.output;
    EXPECT_NE(first.output.find(fmt::format("{}: compiling the device program for q4_0 (first use; cached in {})\n",
                                            name, cache.path().string())),
              std::string::npos)
        << first.output;
    const test::ToolRun second = test::run_tool(args, env);
    ASSERT_EQ(second.status, 0) << second.output;
    EXPECT_EQ(second.output.find("compiling"), std::string::npos) << second.output;
  }
}

}  // namespace
}  // namespace ggufmm
