#include "common.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace ggufmm::cli {

F32Tensor load_f32(const gguf::File& default_file, const std::string& ref) {
  // "FILE:NAME" only when FILE exists, since tensor names may contain ':' themselves.
  if (const auto colon = ref.find(':'); colon != std::string::npos && colon > 0) {
    const std::string file = ref.substr(0, colon);
    if (std::filesystem::is_regular_file(file)) {
      const auto other = gguf::File::open(file);
      return load_f32(other, ref.substr(colon + 1));
    }
  }
  const gguf::TensorInfo& info = default_file.tensor(ref);
  return {fmt::format("{}: tensor {}", default_file.path(), ref), info.shape, default_file.read_f32(ref)};
}

void require_shape(const F32Tensor& t, std::vector<int64_t> want, const std::string& role) {
  auto trimmed = [](std::vector<int64_t> s) {
    while (s.size() > 1 && s.back() == 1) s.pop_back();
    return s;
  };
  if (trimmed(t.shape) != trimmed(want)) {
    throw Error(Error::Kind::BadInput, fmt::format("{}: shape [{}] does not fit as {}: need [{}]", t.label,
                                                   fmt::join(t.shape, ", "), role, fmt::join(want, ", ")));
  }
}

void write_f32(const std::string& path, const std::vector<float>& values) {
  static_assert(std::endian::native == std::endian::little, "OUT.f32 is little-endian");
  write_file_atomic(path, values.data(), values.size() * sizeof(float));
}

void ProductOptions::add_to(CLI::App& cmd) {
  std::string names;
  for (const Path p : available_paths()) names += fmt::format("|{}", path_name(p));
  cmd.add_option("--path", path, fmt::format("kernel path: auto{}", names))->capture_default_str();
  cmd.add_option("--threads", threads, "threads (0: all cores)")->check(CLI::NonNegativeNumber);
  add_device_option(cmd, device);
}

void add_device_option(CLI::App& cmd, std::string& device) {
  cmd.add_option("--device", device,
                 "where to compute: cpu, cuda:N, opencl:N (`ggufmm devices`; default: $GGUFMM_DEVICE, else cpu)");
}

Device open_device(const std::string& name) { return name.empty() ? Device::from_environment() : Device::open(name); }

void ProductOptions::matmul(const Weight& w, const float* x, int64_t rows, float* y, const float* residual) const {
  ResidentWeight(open_device(device), w).matmul(x, rows, y, residual, resolve());
}

void ProductOptions::mul_mat_id(const Weight& w, const float* act, int64_t tokens, int64_t act_slots,
                                const int32_t* ids, int64_t slots, float* y) const {
  ResidentWeight(open_device(device), w).mul_mat_id(act, tokens, act_slots, ids, slots, y, nullptr, resolve());
}

Options ProductOptions::resolve() const {
  const auto p = path_from_name(path);
  if (!p) throw Error(Error::Kind::BadUsage, fmt::format("unknown --path {}", path));
  return {.path = *p, .threads = threads};
}

}  // namespace ggufmm::cli
