// What several subcommands share: tensor references, f32 inputs, outputs, the common options, random weights.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ggufmm/gguf.hpp"

namespace ggufmm::cli {

// An f32 tensor loaded from "[FILE:]NAME", the file defaulting to the one the command was given.
struct F32Tensor {
  std::string label;  // "FILE: tensor NAME", for messages
  std::vector<int64_t> shape;
  std::vector<float> values;
};
F32Tensor load_f32(const gguf::File& default_file, const std::string& ref);

// Checks that `t` has the given shape (ggml order), trailing 1s ignored; throws Error(BadInput) otherwise.
void require_shape(const F32Tensor& t, std::vector<int64_t> want, const std::string& role);

// Raw little-endian f32, row-major; written whole or not at all.
void write_f32(const std::string& path, const std::vector<float>& values);

// --path and --threads, as every product command takes them.
struct ProductOptions {
  std::string path = "auto";
  int threads = 0;
  void add_to(CLI::App& cmd);
  Options resolve() const;  // throws Error(BadUsage) for an unknown path
};

// Random weights of any format, m rows of k values: quantized from random normal values where ggufmm can,
// else random blocks, redrawn until they dequantize to finite values of sane size (random bytes can spell a NaN
// or a huge scale).
std::vector<uint8_t> random_weights(const TypeInfo& t, int64_t m, int64_t k, std::mt19937& rng);

}  // namespace ggufmm::cli
