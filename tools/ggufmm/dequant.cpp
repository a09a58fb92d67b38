// ggufmm dequant FILE TENSOR -o OUT.f32 [--device NAME]
#include "commands.hpp"
#include "common.hpp"

namespace ggufmm::cli {

void add_dequant(CLI::App& app) {
  auto* cmd = app.add_subcommand("dequant", "dequantize a tensor to raw little-endian f32");
  static std::string path, tensor, out, device;
  cmd->add_option("FILE", path, "GGUF file")->required();
  cmd->add_option("TENSOR", tensor, "tensor name")->required();
  cmd->add_option("-o,--output", out, "output file (raw f32)")->required();
  add_device_option(*cmd, device);
  cmd->callback([] {
    const auto file = gguf::File::open(path);
    write_f32(out, ResidentWeight(open_device(device), file.weight(tensor)).dequantize());
  });
}

}  // namespace ggufmm::cli
