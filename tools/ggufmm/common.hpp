// What several subcommands share: tensor references, f32 inputs, outputs, the common options.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "ggufmm/device.hpp"
#include "ggufmm/ggufmm.hpp"
#include "ggufmm/gguf.hpp"

namespace ggufmm::cli {

// An f32 tensor loaded from "[FILE:]NAME": FILE is the longest part before a ':' that names an existing file, else
// the file the command was given holds the tensor NAME. A FILE:NAME whose file is missing says so.
struct F32Tensor {
  std::string label;  // "FILE: tensor NAME", for messages
  std::vector<int64_t> shape;
  std::vector<float> values;
};
F32Tensor load_f32(const gguf::File& default_file, const std::string& ref);

// Whether `t` has the given shape (ggml order), trailing 1s ignored.
bool has_shape(const F32Tensor& t, std::vector<int64_t> want);
// Throws Error(BadInput) "FILE: tensor NAME is [SHAPE], but NEED", NEED saying in words what the use takes.
[[noreturn]] void wrong_shape(const F32Tensor& t, const std::string& need);

// Raw little-endian f32, row-major; written whole or not at all.
void write_f32(const std::string& path, const std::vector<float>& values);

// --threads N, as every command that computes on the CPU takes it: 0 (all cores) or more.
void add_threads_option(CLI::App& cmd, int& threads);

// --device NAME, as every command that computes takes it: default $GGUFMM_DEVICE, else the CPU.
void add_device_option(CLI::App& cmd, std::string& device);
Device open_device(const std::string& name);

// --path, --threads and --device, as every product command takes them.
struct ProductOptions {
  std::string path = "auto";
  int threads = 0;
  std::string device;
  void add_to(CLI::App& cmd);
  Options resolve() const;  // throws Error(BadUsage) for an unknown path

  // The product on the chosen device, by the path --path names (a device refuses ref).
  void matmul(const Weight& w, const float* x, int64_t rows, float* y, const float* residual) const;
  void mul_mat_id(const Weight& w, const float* act, int64_t tokens, int64_t act_slots, const int32_t* ids,
                  int64_t slots, float* y) const;
};

}  // namespace ggufmm::cli
