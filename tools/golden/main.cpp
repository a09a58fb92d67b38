// ggufmm_golden: writes the golden files with ggml, or compares two sets of them.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"
#include "golden.hpp"

namespace {

constexpr const char* kUsage =
    "usage: ggufmm_golden write DIR [--inputs DIR] [--seed N] [NAME...]\n"
    "         writes each named file (a format, q4_K, or a file's stem, moe-q4_K-shared; all of them when none is\n"
    "         named) into DIR, its inputs drawn from the generator seeded by N (1), or read from the file of the\n"
    "         same name in --inputs DIR\n"
    "       ggufmm_golden compare WANT_DIR GOT_DIR\n"
    "         compares every file of WANT_DIR with GOT_DIR's, per file and tensor; exits 1 when any differs\n"
    "       ggufmm_golden check DIR\n"
    "         writes every file of DIR again from its inputs into a temporary directory and compares\n";

int write(const std::vector<std::string>& args) {
  if (args.empty()) throw std::runtime_error("write needs an output directory");
  std::string inputs;
  uint32_t seed = 1;
  std::vector<golden::FileSpec> files;
  for (size_t i = 1; i < args.size(); ++i) {
    if ((args[i] == "--inputs" || args[i] == "--seed") && i + 1 == args.size()) {
      throw std::runtime_error(args[i] + " needs a value");
    }
    if (args[i] == "--inputs") {
      inputs = args[++i];
    } else if (args[i] == "--seed") {
      seed = static_cast<uint32_t>(std::stoul(args[++i]));
    } else {
      files.push_back(golden::file_named(args[i]));
    }
  }
  if (files.empty()) files = golden::all_files();
  for (const golden::FileSpec& file : files) golden::write_file(file, args[0], inputs, seed);
  ggml_quantize_free();
  return 0;
}

// Regenerates `dir`'s files from their own inputs in a temporary directory, and compares.
int check(const std::string& dir) {
  struct TempDir {
    std::string path = (std::filesystem::temp_directory_path() / "ggufmm-golden-XXXXXX").string();
    TempDir() {
      if (mkdtemp(path.data()) == nullptr) throw std::runtime_error("cannot make a temporary directory");
    }
    ~TempDir() { std::filesystem::remove_all(path); }
  } temp;
  std::vector<std::string> args = {temp.path, "--inputs", dir};
  for (const std::filesystem::directory_entry& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".gguf") args.push_back(entry.path().stem().string());
  }
  write(args);
  return golden::compare_dirs(dir, temp.path) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    ggml_cpu_init();
    if (args.size() >= 1 && args[0] == "write") return write({args.begin() + 1, args.end()});
    if (args.size() == 3 && args[0] == "compare") return golden::compare_dirs(args[1], args[2]) ? 0 : 1;
    if (args.size() == 2 && args[0] == "check") return check(args[1]);
    std::fputs(kUsage, stderr);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ggufmm_golden: %s\n", e.what());
    return 1;
  }
}
