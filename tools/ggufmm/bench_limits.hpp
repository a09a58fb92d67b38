// What the machine can do at best, the yardstick `ggufmm bench` reports its results against.
#pragma once

#include <cstddef>
#include <string>

namespace ggufmm::cli {

struct MachineLimits {
  double read_gbps = 0.0;    // streaming reads from memory
  double int8_gops = 0.0;    // int8 dot products, 2 ops per multiply-add
  double bf16_gflops = 0.0;  // bf16 dot products; 0 where the CPU has none
  double f32_gflops = 0.0;   // f32 fused multiply-adds
  double copy_gbps = 0.0;    // a device's own copy, device to device: bytes read and written (devices only)
  int threads = 1;
  std::string device;  // a device's name and description, where the products ran there (read_gbps is its own)
};

// Measures with `threads` threads (0: all cores). `quick` uses small buffers and short loops: seconds less, and
// results only good as a smoke test.
MachineLimits measure_limits(int threads, bool quick);

// The size of the last-level cache; a guess where the system does not say.
size_t last_level_cache_bytes();

}  // namespace ggufmm::cli
