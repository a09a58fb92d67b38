// ggufmm devices: what each device is, and the names --device and GGUFMM_DEVICE take.
#include <fmt/format.h>

#include "commands.hpp"
#include "common.hpp"
#include "ggufmm/device.hpp"

namespace ggufmm::cli {

void add_devices(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("devices", "list the devices (cpu, cuda:N, opencl:N) with their memory and capabilities");
  cmd->callback([] {
    for (const DeviceInfo& d : devices()) {
      fmt::print("{:<10} {}\n", d.name, d.description);
      if (d.memory_bytes == 0) continue;
      fmt::print("{:<10} memory {:.1f} GiB, largest buffer {:.1f} GiB, capabilities: {}\n", "",
                 static_cast<double>(d.memory_bytes) / (1 << 30), static_cast<double>(d.max_allocation) / (1 << 30),
                 d.capabilities.empty() ? "portable kernels only" : fmt::format("{}", fmt::join(d.capabilities, ", ")));
    }
  });
}

}  // namespace ggufmm::cli
