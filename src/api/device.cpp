// Devices and resident weights: the CPU, and what the backends find.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include "api/checks.hpp"
#include "device/backend.hpp"
#include "device/dense_cache.hpp"
#include "device/product.hpp"
#include "ggufmm/device.hpp"
#include "ggufmm/ggufmm.hpp"
#include "paths/dense_cache.hpp"
#include "paths/profile.hpp"

namespace ggufmm {
namespace {

DeviceInfo cpu_info() { return {.name = "cpu", .description = "the host CPU (ggufmm's own kernels)"}; }

std::vector<device::Found> found_devices() {
  std::vector<device::Found> found{{cpu_info(), nullptr}};
#if GGUFMM_WITH_CUDA
  for (device::Found& f : device::cuda_devices()) found.push_back(std::move(f));
#endif
  for (device::Found& f : device::opencl_devices()) found.push_back(std::move(f));
  return found;
}

}  // namespace

std::vector<DeviceInfo> devices() {
  std::vector<DeviceInfo> out;
  for (const device::Found& f : found_devices()) out.push_back(f.info);
  return out;
}

Device::Device(DeviceInfo info, std::shared_ptr<device::Backend> backend)
    : info_(std::make_shared<const DeviceInfo>(std::move(info))), backend_(std::move(backend)) {
  if (!backend_) return;
  const size_t budget = paths::parse_cache_bytes(std::getenv("GGUFMM_DENSE_CACHE_BYTES"))
                            .value_or(static_cast<size_t>(info_->memory_bytes / 4));
  dense_cache_ = std::make_shared<device::DenseCache>(budget);
}

const DeviceInfo& Device::info() const { return *info_; }

Device Device::open(std::string_view name) {
  // Each device is opened once per process, at its first use, and shared from then on.
  // Kept to the process's end, not destroyed at exit, when a driver may already have torn itself down.
  static std::mutex mutex;
  static auto& opened = *new std::map<std::string, Device, std::less<>>;
  std::lock_guard lock(mutex);
  if (const auto it = opened.find(name); it != opened.end()) return it->second;
  std::vector<device::Found> found = found_devices();
  for (device::Found& f : found) {
    if (f.info.name != name) continue;
    Device device(f.info, f.open ? f.open() : nullptr);
    opened.emplace(std::string(name), device);
    return device;
  }
  std::string names;
  for (const device::Found& f : found) names += (names.empty() ? "" : ", ") + f.info.name;
  // Where the family asked for has no device at all, say why there may be none.
  const auto none_of = [&](std::string_view family) {
    return name.starts_with(family) &&
           std::ranges::none_of(found, [&](const device::Found& f) { return f.info.name.starts_with(family); });
  };
  std::string hint;
  if (none_of("opencl")) hint = " (no OpenCL driver or platform is installed)";
#if GGUFMM_WITH_CUDA
  if (none_of("cuda")) hint = " (no NVIDIA driver or GPU)";
#else
  if (none_of("cuda")) hint = " (this ggufmm was built without the CUDA toolkit)";
#endif
  throw Error(Error::Kind::BadInput, fmt::format("device {}: no such device{}; there is: {}", name, hint, names));
}

Device Device::from_environment() {
  const char* name = std::getenv("GGUFMM_DEVICE");
  return open(name && *name ? name : "cpu");
}

ResidentWeight::ResidentWeight(const Device& device, const Weight& w) : device_(device), weight_(w) {
  api::check_weight(w);
  if (!device_.backend_) return;
  // The blocks' last handle takes the weight's dense copy with it.
  std::shared_ptr<device::Buffer> uploaded = device_.backend_->upload(w.data, w.total_bytes());
  blocks_ = std::shared_ptr<device::Buffer>(
      uploaded.get(), [uploaded, cache = std::weak_ptr(device_.dense_cache_)](device::Buffer* blocks) {
        if (const auto c = cache.lock()) c->release(blocks);
      });
}

device::Backend* device::backend_of(const Device& device) { return device.backend_.get(); }

double Device::read_bandwidth(size_t bytes) const {
  if (!backend_) throw Error(Error::Kind::BadUsage, "read_bandwidth: the CPU's memory is measured by ggufmm bench");
  return static_cast<double>(bytes) / device::read_seconds(*backend_, bytes);
}

double Device::copy_bandwidth(size_t bytes) const {
  if (!backend_) throw Error(Error::Kind::BadUsage, "copy_bandwidth: a device's own copy; the CPU has none");
  return 2.0 * static_cast<double>(bytes) / device::copy_seconds(*backend_, bytes);
}

double Device::int8_peak(double ops) const {
  if (!backend_) throw Error(Error::Kind::BadUsage, "int8_peak: the CPU's peak is measured by ggufmm bench");
  return device::int8_peak_ops(*backend_, ops);
}

DenseCacheStats Device::dense_cache_stats() const {
  return dense_cache_ ? dense_cache_->stats() : ggufmm::dense_cache_stats();
}

void Device::set_dense_cache_budget(size_t bytes) const {
  dense_cache_ ? dense_cache_->set_budget(bytes) : ggufmm::set_dense_cache_budget(bytes);
}

void Device::clear_dense_cache() const { dense_cache_ ? dense_cache_->clear() : ggufmm::clear_dense_cache(); }

namespace {

// Host memory a call copies to the device, enqueued: the call's read of its outputs, the one wait of a call from
// host memory, waits for the copy too, and the caller's memory stays put until then.
std::shared_ptr<device::Buffer> stage(device::Backend& b, const void* data, size_t bytes) {
  auto buffer = b.allocate(bytes);
  b.enqueue_write(*buffer, data);
  return buffer;
}

// Where Auto moves from gemv sets to the tiles on a device (rows per weight matrix) without a calibrated profile.
constexpr int64_t kDeviceTiledFrom = 8;

// The kernels a device product of `rows` rows per matrix runs; `dense` for a matmul, which may take the dense path
// (mul_mat_id runs its expert-grouped kernels for it, as on the CPU). Auto's crossovers are the profile's for this
// device (calibrate --device), else tiled from 8 rows and dense from the prefill-dequant minimum.
device::Kernels device_kernels(device::Backend& b, const DeviceInfo& info, const device::DenseCache& cache,
                               const Weight& w, int64_t rows, Path asked, bool dense) {
  const std::optional<PathCrossover> measured = paths::device_crossover_for(info.description, w);
  const auto by_rows = [&] {
    const int64_t tiled_from = measured ? measured->tiled_from : kDeviceTiledFrom;
    return rows >= tiled_from ? device::Kernels::Tiled : device::Kernels::Gemv;
  };
  const auto refused = [&](std::string_view why) {
    return Error(Error::Kind::BadUsage, fmt::format("{} on {}: {}", api::label(w), info.name, why));
  };
  // A call asking for what the device lacks is refused; where GGUFMM_PATH forces it, Auto decides.
  if (asked == Path::Ref) throw refused("the ref path is not offered on devices (auto, gemv, tiled, dense)");
  if (asked == Path::Dense && !b.dense_type()) {
    throw refused("the dense path needs a GEMM library (cuBLAS; CLBlast on OpenCL): none loads");
  }
  switch (api::requested_path(asked)) {
    case Path::Gemv:
      return device::Kernels::Gemv;
    case Path::Tiled:
      return device::Kernels::Tiled;
    case Path::Dense:
      if (dense && b.dense_type()) return device::Kernels::Dense;
      return by_rows();
    case Path::Ref:
    case Path::Auto:
      break;
  }
  const int64_t dense_rows = paths::prefill_dequant_rows();
  const int64_t dense_from = std::max(dense_rows, measured ? measured->dense_from : 0);
  if (dense && dense_rows > 0 && rows >= dense_from && b.dense_type() &&
      cache.would_keep(device::dense_bytes(w, *b.dense_type()))) {
    return device::Kernels::Dense;
  }
  return by_rows();
}

}  // namespace

Device Device::from_cuda_stream(void* stream) {
#if GGUFMM_WITH_CUDA
  if (!stream) throw Error(Error::Kind::BadUsage, "from_cuda_stream: null stream");
  DeviceInfo info;
  std::shared_ptr<device::Backend> backend = device::cuda_on_stream(stream, info);
  return Device(std::move(info), std::move(backend));
#else
  (void)stream;
  throw Error(Error::Kind::BadInput, "from_cuda_stream: this ggufmm was built without the CUDA toolkit");
#endif
}

Device Device::from_opencl_queue(void* queue) {
  if (!queue) throw Error(Error::Kind::BadUsage, "from_opencl_queue: null queue");
  DeviceInfo info;
  std::shared_ptr<device::Backend> backend = device::opencl_on_queue(queue, info);
  return Device(std::move(info), std::move(backend));
}

device::Backend& ResidentWeight::backend() const {
  if (!blocks_) throw Error(Error::Kind::BadUsage, "the CPU has no device memory: use matmul, not enqueue_");
  return *device_.backend_;
}

void ResidentWeight::matmul(const float* x, int64_t rows, float* y, const float* residual,
                            const Options& options) const {
  if (!blocks_) return ggufmm::matmul(weight_, x, rows, y, residual, options);
  api::check_matmul(weight_, rows, !x || !y);
  if (rows == 0) return;
  device::Backend& b = backend();
  const auto xs = stage(b, x, static_cast<size_t>(rows * weight_.k) * sizeof(float));
  const size_t out_bytes = static_cast<size_t>(rows * weight_.m) * sizeof(float);
  const auto out = b.allocate(out_bytes);
  const auto add = residual ? stage(b, residual, out_bytes) : nullptr;
  enqueue_matmul(xs->handle(), rows, out->handle(), add ? add->handle() : nullptr, options);
  b.read(*out, y);
}

void ResidentWeight::mul_mat_id(const float* act, int64_t tokens, int64_t act_slots, const int32_t* ids,
                                int64_t slots, float* y, const float* residual, const Options& options) const {
  if (!blocks_) return ggufmm::mul_mat_id(weight_, act, tokens, act_slots, ids, slots, y, residual, options);
  api::check_mul_mat_id(weight_, tokens, act_slots, slots, !act || !ids || !y);
  if (tokens == 0) return;
  // From host memory the ids can be checked, and are, as on the CPU.
  api::check_expert_ids(weight_, ids, tokens, slots);
  device::Backend& b = backend();
  const auto xs = stage(b, act, static_cast<size_t>(tokens * act_slots * weight_.k) * sizeof(float));
  const auto routes = stage(b, ids, static_cast<size_t>(tokens * slots) * sizeof(int32_t));
  const size_t out_bytes = static_cast<size_t>(tokens * slots * weight_.m) * sizeof(float);
  const auto out = b.allocate(out_bytes);
  const auto add = residual ? stage(b, residual, out_bytes) : nullptr;
  enqueue_mul_mat_id(xs->handle(), tokens, act_slots, routes->handle(), slots, out->handle(),
                     add ? add->handle() : nullptr, options);
  b.read(*out, y);
}

void ResidentWeight::enqueue_matmul(const void* x, int64_t rows, void* y, const void* residual,
                                    const Options& options) const {
  device::Backend& b = backend();
  api::check_matmul(weight_, rows, !x || !y);
  if (rows == 0) return;
  const device::Kernels kernels =
      device_kernels(b, device_.info(), *device_.dense_cache_, weight_, rows, options.path, true);
  std::shared_ptr<const device::DenseCopy> dense;
  if (kernels == device::Kernels::Dense) {
    const Type element = *b.dense_type();
    dense = device_.dense_cache_->get(blocks_.get(), device::dense_bytes(weight_, element),
                                      [&] { return device::make_dense_copy(b, weight_, *blocks_, element); });
  }
  device::product(b, {.w = weight_, .blocks = *blocks_, .x = x, .act_rows = rows, .out_rows = rows,
                      .residual = residual, .y = y, .dense = dense.get()},
                  kernels);
}

void ResidentWeight::enqueue_mul_mat_id(const void* act, int64_t tokens, int64_t act_slots, const void* ids,
                                        int64_t slots, void* y, const void* residual, const Options& options) const {
  device::Backend& b = backend();
  api::check_mul_mat_id(weight_, tokens, act_slots, slots, !act || !ids || !y);
  if (tokens == 0) return;
  // The rows an expert gets on average decide between gemv sets and tiles.
  const int64_t per_expert = (tokens * slots + weight_.experts - 1) / weight_.experts;
  device::product(b, {.w = weight_, .blocks = *blocks_, .x = act, .act_rows = tokens * act_slots,
                      .out_rows = tokens * slots, .slots = slots, .act_slots = act_slots, .ids = ids,
                      .residual = residual, .y = y},
                  device_kernels(b, device_.info(), *device_.dense_cache_, weight_, per_expert, options.path,
                                 false));
}

void ResidentWeight::enqueue_dequantize(void* out) const {
  device::Backend& b = backend();
  if (!out) throw Error(Error::Kind::BadUsage, api::label(weight_) + ": dequantize: null output");
  device::dequantize(b, weight_.type, *blocks_, weight_.k * weight_.m * weight_.experts, out);
}

std::vector<float> ResidentWeight::dequantize() const {
  if (!blocks_) return ggufmm::dequantize(weight_);
  std::vector<float> values(static_cast<size_t>(weight_.k * weight_.m * weight_.experts));
  device::Backend& b = backend();
  const auto out = b.allocate(values.size() * sizeof(float));
  enqueue_dequantize(out->handle());
  b.read(*out, values.data());
  return values;
}

}  // namespace ggufmm
