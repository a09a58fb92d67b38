// ggufmm: the command-line tool. Exit status 0 on success, 1 for bad input, 2 for bad usage.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <exception>

#include "commands.hpp"
#include "ggufmm/ggufmm.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ggufmm: activations times GGUF-quantized weights, computed directly on the blocks"};
  app.require_subcommand(1);
  ggufmm::cli::add_info(app);
  ggufmm::cli::add_devices(app);
  ggufmm::cli::add_dequant(app);
  ggufmm::cli::add_quantize(app);
  ggufmm::cli::add_matmul(app);
  ggufmm::cli::add_moe(app);
  ggufmm::cli::add_check(app);
  ggufmm::cli::add_bench(app);
  ggufmm::cli::add_calibrate(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a subcommand's own failure status, already reported
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const ggufmm::Error& e) {
    fmt::print(stderr, "ggufmm: {}\n", e.what());
    return e.kind() == ggufmm::Error::Kind::BadUsage ? 2 : 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "ggufmm: out of memory\n");
    return 1;
  }
  return 0;
}
