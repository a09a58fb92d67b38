// ggufmm devices: what each device is, and the names --device and GGUFMM_DEVICE take.
#include <fmt/format.h>

#include "commands.hpp"
#include "common.hpp"
#include "ggufmm/device.hpp"

namespace ggufmm::cli {

void add_devices(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "devices", "list the devices (cpu, cuda:N, opencl:N) with their memory and the capabilities the kernels use");
  cmd->callback([] {
    constexpr double kGiB = 1 << 30, kMiB = 1 << 20;
    for (const DeviceInfo& d : devices()) {
      fmt::print("{:<10} {}\n", d.name, d.description);
      if (d.memory_bytes == 0) continue;
      fmt::print("{:<10} {} compute units, memory {:.1f} GiB, largest buffer {:.1f} GiB, last-level cache {:.1f} MiB, "
                 "capabilities: {}\n",
                 "", d.compute_units, static_cast<double>(d.memory_bytes) / kGiB,
                 static_cast<double>(d.max_allocation) / kGiB, static_cast<double>(d.cache_bytes) / kMiB,
                 d.capabilities.empty() ? "portable kernels only" : fmt::format("{}", fmt::join(d.capabilities, ", ")));
      if (!d.unusable.empty()) fmt::print("{:<10} not usable: {}\n", "", d.unusable);
    }
  });
}

}  // namespace ggufmm::cli
