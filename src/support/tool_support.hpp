// What the tool needs beyond the public API: facts about this machine's kernel levels and threads, and random
// weight blocks of every format. Internal to the project (not installed); it keeps the tool off the library's
// internal headers.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ggufmm/device.hpp"
#include "ggufmm/types.hpp"

namespace ggufmm::support {

// The kernel levels, lowest first, each a superset of the one before.
enum class Level { Scalar, Avx2, AvxVnni, Avx512 };
// The highest level this CPU (and OS) can run.
Level highest_level();
// The name of the level calls use (the highest, lowered by GGUFMM_ISA), as path profiles record it.
std::string active_level_name();

// The threads a call asking for `requested` gets: all cores for 0, else at most the cores.
int resolve_threads(int requested);

// m rows of k values of `type` (k a multiple of its block size), as the tests and microbenchmarks draw them
// (format/random_blocks.hpp): finite, of sane size.
std::vector<uint8_t> random_weight(Type type, int64_t m, int64_t k, std::mt19937& rng);

// Device memory for the enqueue_ calls, so that timing a product on a device leaves host transfers out.
class DeviceMemory {
 public:
  DeviceMemory(const Device& device, size_t bytes);  // Error(BadUsage) on the CPU
  void* handle() const;
  void write(const void* data) const;  // all of it, waiting for the copy

 private:
  device::Backend* backend_;
  std::shared_ptr<device::Buffer> buffer_;
};

// Waits for everything enqueued on the device.
void finish(const Device& device);

// The device's GEMM library alone, as the dense path calls it: a dense copy of the weight made as the dense path
// makes one (its element type, its padded row stride), activations already in that type, outputs in f32; what
// the dense path is measured against. Error(BadUsage) where the device has no GEMM library.
class BareGemm {
 public:
  BareGemm(const Device& device, const Weight& w, int64_t rows);
  void enqueue() const;  // one GEMM, returning before it runs

 private:
  device::Backend* backend_;
  int64_t rows_, m_, k_, stride_;
  std::shared_ptr<device::Buffer> copy_, x_, y_;
};

}  // namespace ggufmm::support
