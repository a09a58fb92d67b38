// ggufmm dequant FILE TENSOR -o OUT.f32 [--device NAME]
#include "commands.hpp"
#include "common.hpp"
#include "ggufmm/device.hpp"

namespace ggufmm::cli {

void add_dequant(CLI::App& app) {
  auto* cmd = app.add_subcommand("dequant", "dequantize a tensor to raw little-endian f32");
  static std::string path, tensor, out, device;
  cmd->add_option("FILE", path, "GGUF file")->required();
  cmd->add_option("TENSOR", tensor, "tensor name")->required();
  cmd->add_option("-o,--output", out, "output file (raw f32)")->required();
  cmd->add_option("--device", device, "where to dequantize: cpu, opencl:N (default: $GGUFMM_DEVICE, else cpu)");
  cmd->callback([] {
    const auto file = gguf::File::open(path);
    const Device d = device.empty() ? Device::from_environment() : Device::open(device);
    write_f32(out, ResidentWeight(d, file.weight(tensor)).dequantize());
  });
}

}  // namespace ggufmm::cli
