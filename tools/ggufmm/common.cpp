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
}

Options ProductOptions::resolve() const {
  const auto p = path_from_name(path);
  if (!p) throw Error(Error::Kind::BadUsage, fmt::format("unknown --path {}", path));
  return {.path = *p, .threads = threads};
}

}  // namespace ggufmm::cli
