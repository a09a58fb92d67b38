// The subcommands of the ggufmm tool. Each adds itself to the app and runs when chosen.
#pragma once

#include <CLI/CLI.hpp>

namespace ggufmm::cli {

void add_info(CLI::App& app);
void add_devices(CLI::App& app);
void add_dequant(CLI::App& app);
void add_quantize(CLI::App& app);
void add_matmul(CLI::App& app);
void add_moe(CLI::App& app);
void add_check(CLI::App& app);
void add_bench(CLI::App& app);
void add_calibrate(CLI::App& app);

}  // namespace ggufmm::cli
