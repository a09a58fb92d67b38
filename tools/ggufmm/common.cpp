#include "common.hpp"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>

namespace ggufmm::cli {

F32Tensor load_f32(const gguf::File& default_file, const std::string& ref) {
  // "FILE:NAME" where FILE exists, the longest such prefix: file names and tensor names may both hold ':'.
  for (size_t colon = ref.rfind(':'); colon != std::string::npos && colon > 0; colon = ref.rfind(':', colon - 1)) {
    const std::string file = ref.substr(0, colon);
    if (std::filesystem::is_regular_file(file)) {
      const std::string name = ref.substr(colon + 1);
      const auto other = gguf::File::open(file);
      return {fmt::format("{}: tensor {}", file, name), other.tensor(name).shape, other.read_f32(name)};
    }
  }
  if (ref.find(':') != std::string::npos && !default_file.find_tensor(ref)) {
    throw Error(Error::Kind::BadInput, fmt::format("{}: no such file as {} (nor a tensor of that whole name in {})",
                                                   ref, ref.substr(0, ref.rfind(':')), default_file.path()));
  }
  const gguf::TensorInfo& info = default_file.tensor(ref);
  return {fmt::format("{}: tensor {}", default_file.path(), ref), info.shape, default_file.read_f32(ref)};
}

bool has_shape(const F32Tensor& t, std::vector<int64_t> want) {
  auto trimmed = [](std::vector<int64_t> s) {
    while (s.size() > 1 && s.back() == 1) s.pop_back();
    return s;
  };
  return trimmed(t.shape) == trimmed(std::move(want));
}

void wrong_shape(const F32Tensor& t, const std::string& need) {
  throw Error(Error::Kind::BadInput, fmt::format("{} is [{}], but {}", t.label, fmt::join(t.shape, ", "), need));
}

void write_f32(const std::string& path, const std::vector<float>& values) {
  static_assert(std::endian::native == std::endian::little, "OUT.f32 is little-endian");
  write_file_atomic(path, values.data(), values.size() * sizeof(float));
}

void ProductOptions::add_to(CLI::App& cmd) {
  std::string names;
  for (const Path p : available_paths()) names += fmt::format("|{}", path_name(p));
  cmd.add_option("--path", path, fmt::format("kernel path: auto{}", names))->capture_default_str();
  add_threads_option(cmd, threads);
  add_device_option(cmd, device);
}

void add_threads_option(CLI::App& cmd, int& threads) {
  // CLI11's NonNegativeNumber would print the largest double as the bound.
  const CLI::Validator count(
      [](std::string& value) {
        int n = 0;
        const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
        const bool good = error == std::errc() && end == value.data() + value.size() && n >= 0;
        return good ? std::string() : fmt::format("'{}' is not a thread count: 0 (all cores) or more", value);
      },
      "N >= 0");
  cmd.add_option("--threads", threads, "threads (0: all cores)")->check(count);
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
