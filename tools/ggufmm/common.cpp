#include "common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <ranges>
#include <span>

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
}

Options ProductOptions::resolve() const {
  const auto p = path_from_name(path);
  if (!p) throw Error(Error::Kind::BadUsage, fmt::format("unknown --path {}", path));
  return {.path = *p, .threads = threads};
}

std::vector<uint8_t> random_weights(const TypeInfo& t, int64_t m, int64_t k, std::mt19937& rng) {
  if (t.can_quantize) {
    std::normal_distribution<float> normal;
    std::vector<float> values(static_cast<size_t>(m * k));
    for (auto& v : values) v = normal(rng);
    return quantize(t.type, values.data(), m, k);
  }
  const auto block_size = static_cast<size_t>(t.block_size);
  const auto block_bytes = static_cast<size_t>(t.block_bytes);
  std::vector<uint8_t> bytes(static_cast<size_t>(m * k) / block_size * block_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  const auto sane = [](float v) { return std::isfinite(v) && std::fabs(v) < 1e4f; };
  // Every round draws the blocks still missing and dequantizes them in one call; the rejected ones go round again.
  std::vector<size_t> missing(bytes.size() / block_bytes);
  std::iota(missing.begin(), missing.end(), size_t{0});
  while (!missing.empty()) {
    std::vector<uint8_t> drawn(missing.size() * block_bytes);
    for (auto& b : drawn) b = static_cast<uint8_t>(byte(rng));
    const std::vector<float> values = dequantize(
        {.type = t.type, .k = t.block_size, .m = static_cast<int64_t>(missing.size()), .data = drawn.data()});
    std::vector<size_t> rejected;
    for (size_t i = 0; i < missing.size(); ++i) {
      if (std::ranges::all_of(std::span(values).subspan(i * block_size, block_size), sane)) {
        std::memcpy(bytes.data() + missing[i] * block_bytes, drawn.data() + i * block_bytes, block_bytes);
      } else {
        rejected.push_back(missing[i]);
      }
    }
    missing = std::move(rejected);
  }
  return bytes;
}

}  // namespace ggufmm::cli
