// ggufmm quantize IN.gguf OUT.gguf --type TYPE [--tensor NAME ...]: converts float tensors, copies the rest.
#include <fmt/format.h>

#include <algorithm>

#include "commands.hpp"
#include "common.hpp"

namespace ggufmm::cli {

void add_quantize(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize", "quantize the f32/f16/bf16 tensors of a GGUF file");
  static std::string in, out, type_name;
  static std::vector<std::string> only;
  cmd->add_option("IN", in, "input GGUF file")->required();
  cmd->add_option("OUT", out, "output GGUF file")->required();
  cmd->add_option("--type", type_name, "target type, e.g. q4_K")->required();
  cmd->add_option("--tensor", only, "quantize only these tensors (default: every f32/f16/bf16 tensor)");
  cmd->callback([] {
    const TypeInfo* target = type_info(type_name);
    if (!target || !target->can_quantize) {
      throw Error(Error::Kind::BadUsage, fmt::format("--type {}: not a type ggufmm can quantize to", type_name));
    }
    const auto file = gguf::File::open(in);
    for (const auto& name : only) file.tensor(name);  // every named tensor must exist

    gguf::Writer writer;
    for (const auto& [key, value] : file.metadata()) writer.set(key, value);
    std::vector<std::vector<uint8_t>> converted;  // kept alive until the write
    converted.reserve(file.tensors().size());
    for (const auto& t : file.tensors()) {
      const TypeInfo& info = *type_info(t.type);
      const bool is_float = info.is_weight && info.block_size == 1;  // floats are the weights of one-value blocks
      const bool chosen = only.empty() ? is_float : std::ranges::find(only, t.name) != only.end();
      if (!chosen) {
        writer.add_tensor(t.name, t.type, t.shape, {t.data, t.bytes});
        continue;
      }
      if (!is_float) {
        throw Error(Error::Kind::BadInput, fmt::format("{}: tensor {}: type {} is not a float type to quantize", in,
                                                       t.name, type_info(t.type)->name));
      }
      if (t.shape[0] % target->block_size != 0) {
        const std::string why = fmt::format("{}: tensor {}: row length {} is not a multiple of the {} block size {}",
                                            in, t.name, t.shape[0], target->name, target->block_size);
        // Named tensors must convert; of "all float tensors", those that cannot are kept as they are.
        if (!only.empty()) throw Error(Error::Kind::BadInput, why);
        fmt::print(stderr, "{}; kept as {}\n", why, type_info(t.type)->name);
        writer.add_tensor(t.name, t.type, t.shape, {t.data, t.bytes});
        continue;
      }
      const std::vector<float> values = file.read_f32(t.name);
      const int64_t k = t.shape[0];
      converted.push_back(quantize(target->type, values.data(), static_cast<int64_t>(values.size()) / k, k));
      writer.add_tensor(t.name, target->type, t.shape, converted.back());
    }
    writer.write(out);
  });
}

}  // namespace ggufmm::cli
