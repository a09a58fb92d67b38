// ggufmm: the command-line tool. Exit status 0 on success, 1 for bad input, 2 for bad usage.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ggufmm/ggufmm.hpp"

namespace {

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ggufmm: activations times GGUF-quantized weights, computed directly on the blocks"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ggufmm " GGUFMM_VERSION);
  ggufmm::cli::add_info(app);
  ggufmm::cli::add_devices(app);
  ggufmm::cli::add_dequant(app);
  ggufmm::cli::add_quantize(app);
  ggufmm::cli::add_matmul(app);
  ggufmm::cli::add_moe(app);
  ggufmm::cli::add_check(app);
  ggufmm::cli::add_bench(app);
  ggufmm::cli::add_calibrate(app);
  // A first word that names no subcommand (CLI11 would only say that one is required).
  if (const std::vector<std::string> names = subcommand_names(app);
      argc > 1 && argv[1][0] != '-' && std::ranges::find(names, argv[1]) == names.end()) {
    fmt::print(stderr, "ggufmm: unknown subcommand '{}'; the subcommands are {} (ggufmm --help)\n", argv[1],
               fmt::join(names, ", "));
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a subcommand's own failure status, already reported
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help and --version succeed
  } catch (const ggufmm::Error& e) {
    fmt::print(stderr, "ggufmm: {}\n", e.what());
    return e.kind() == ggufmm::Error::Kind::BadUsage ? 2 : 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "ggufmm: out of memory\n");
    return 1;
  }
  return 0;
}
