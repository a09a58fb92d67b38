// ggufmm dequant FILE TENSOR -o OUT.f32
#include "commands.hpp"
#include "common.hpp"

namespace ggufmm::cli {

void add_dequant(CLI::App& app) {
  auto* cmd = app.add_subcommand("dequant", "dequantize a tensor to raw little-endian f32");
  static std::string path, tensor, out;
  cmd->add_option("FILE", path, "GGUF file")->required();
  cmd->add_option("TENSOR", tensor, "tensor name")->required();
  cmd->add_option("-o,--output", out, "output file (raw f32)")->required();
  cmd->callback([] {
    const auto file = gguf::File::open(path);
    write_f32(out, dequantize(file.weight(tensor)));
  });
}

}  // namespace ggufmm::cli
