// ggufmm info FILE: metadata and a table of tensors.
#include <fmt/format.h>

#include "commands.hpp"
#include "ggufmm/gguf.hpp"

namespace ggufmm::cli {

void add_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "print a GGUF file's metadata and tensors");
  static std::string path;
  cmd->add_option("FILE", path, "GGUF file")->required();
  cmd->callback([] {
    const auto file = gguf::File::open(path);
    fmt::print("{}: GGUF v{}, alignment {}, {} metadata keys, {} tensors\n", path, file.version(), file.alignment(),
               file.metadata().size(), file.tensors().size());
    for (const auto& [key, value] : file.metadata()) {
      fmt::print("  {} ({}) = {}\n", key, gguf::value_type_name(value.type), value.to_string());
    }
    size_t width = 4;
    for (const auto& t : file.tensors()) width = std::max(width, t.name.size());
    fmt::print("\n{:<{}}  {:<8}  {:<24}  {:>12}  {:>12}\n", "name", width, "type", "shape", "bytes", "offset");
    for (const auto& t : file.tensors()) {
      fmt::print("{:<{}}  {:<8}  {:<24}  {:>12}  {:>12}\n", t.name, width, type_info(t.type)->name,
                 fmt::format("[{}]", fmt::join(t.shape, ", ")), t.bytes, t.offset);
    }
  });
}

}  // namespace ggufmm::cli
