// Devices and resident weights: the CPU, and what the backends find.
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "device/backend.hpp"
#include "ggufmm/device.hpp"
#include "ggufmm/ggufmm.hpp"

namespace ggufmm {
namespace {

DeviceInfo cpu_info() { return {.name = "cpu", .description = "the host CPU (ggufmm's own kernels)"}; }

std::vector<device::Found> found_devices() {
  std::vector<device::Found> found{{cpu_info(), nullptr}};
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
    : info_(std::make_shared<const DeviceInfo>(std::move(info))), backend_(std::move(backend)) {}

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
  std::string hint;
  if (name.starts_with("opencl") && found.size() == 1) hint = " (no OpenCL driver or platform is installed)";
  throw Error(Error::Kind::BadInput, fmt::format("device {}: no such device{}; there is: {}", name, hint, names));
}

Device Device::from_environment() {
  const char* name = std::getenv("GGUFMM_DEVICE");
  return open(name && *name ? name : "cpu");
}

ResidentWeight::ResidentWeight(const Device& device, const Weight& w) : device_(device), weight_(w) {
  const TypeInfo* info = type_info(w.type);
  if (!info || !info->is_weight) {
    throw Error(Error::Kind::BadUsage, fmt::format("{}: not a weight type", w.name.empty() ? "weight" : w.name));
  }
  if (w.k <= 0 || w.m <= 0 || w.experts <= 0 || w.k % info->block_size != 0 || !w.data) {
    throw Error(Error::Kind::BadUsage,
                fmt::format("{}: cannot upload a weight of shape [{}, {}, {}] ({}: k a multiple of {})",
                            w.name.empty() ? "weight" : w.name, w.k, w.m, w.experts, info->name, info->block_size));
  }
  if (device_.backend_) blocks_ = device_.backend_->upload(w.data, w.total_bytes());
}

device::Backend* device::backend_of(const Device& device) { return device.backend_.get(); }

double Device::read_bandwidth(size_t bytes) const {
  if (!backend_) throw Error(Error::Kind::BadUsage, "read_bandwidth: the CPU's memory is measured by ggufmm bench");
  return static_cast<double>(bytes) / backend_->read_seconds(bytes);
}

namespace {

[[noreturn]] void bad_usage(const Weight& w, const std::string& what) {
  throw Error(Error::Kind::BadUsage, fmt::format("{}: {}", w.name.empty() ? "weight" : w.name, what));
}

}  // namespace

void ResidentWeight::matmul(const float* x, int64_t rows, float* y, const float* residual) const {
  if (!blocks_) return ggufmm::matmul(weight_, x, rows, y, residual);
  if (weight_.experts != 1) bad_usage(weight_, fmt::format("matmul needs one matrix, not {} experts", weight_.experts));
  if (rows < 0) bad_usage(weight_, fmt::format("negative row count {}", rows));
  if (rows == 0) return;
  if (!x || !y) bad_usage(weight_, "null activations or output");
  device_.backend_->matmul(weight_, *blocks_, x, rows, y, residual);
}

void ResidentWeight::mul_mat_id(const float* act, int64_t tokens, int64_t act_slots, const int32_t* ids,
                                int64_t slots, float* y, const float* residual) const {
  if (!blocks_) return ggufmm::mul_mat_id(weight_, act, tokens, act_slots, ids, slots, y, residual);
  if (tokens < 0 || slots < 1 || (act_slots != 1 && act_slots != slots)) {
    bad_usage(weight_, fmt::format("mul_mat_id: {} tokens, {} slots, {} activation slots (1 or the slots)", tokens,
                                   slots, act_slots));
  }
  if (tokens == 0) return;
  if (!act || !ids || !y) bad_usage(weight_, "mul_mat_id: null activations, ids or output");
  for (int64_t i = 0; i < tokens * slots; ++i) {
    if (ids[i] < 0 || ids[i] >= weight_.experts) {
      bad_usage(weight_, fmt::format("mul_mat_id: id {} (token {}, slot {}) is not an expert in [0, {})", ids[i],
                                     i / slots, i % slots, weight_.experts));
    }
  }
  device_.backend_->mul_mat_id(weight_, *blocks_, act, tokens, act_slots, ids, slots, y, residual);
}

std::vector<float> ResidentWeight::dequantize() const {
  if (!blocks_) return ggufmm::dequantize(weight_);
  std::vector<float> out(static_cast<size_t>(weight_.k * weight_.m * weight_.experts));
  device_.backend_->dequantize(weight_.type, *blocks_, static_cast<int64_t>(out.size()), out.data());
  return out;
}

}  // namespace ggufmm
