// Loops of independent arithmetic instructions that reach a core's peak rate, one set per instruction-set level.
// Each level's file is compiled for its instructions (CMakeLists.txt): call a loop only where runtime/cpu.hpp says
// the CPU has them.
#pragma once

#include <cstdint>

namespace ggufmm::cli::peaks {

struct PeakLoop {
  double ops_per_iteration;  // a multiply-add counts as 2
  // Runs the loop; returns a value that depends on every result, so that none of the work can be left out.
  double (*run)(int64_t iterations);
};

namespace avx2 {
extern const PeakLoop int8;  // vpmaddubsw + vpmaddwd + vpaddd, for CPUs without VNNI
extern const PeakLoop f32;   // vfmadd on 8 lanes
}  // namespace avx2

namespace avxvnni {
extern const PeakLoop int8;  // vpdpbusd on 256 bits
}  // namespace avxvnni

namespace avx512 {
extern const PeakLoop int8;  // VNNI vpdpbusd
extern const PeakLoop bf16;  // vdpbf16ps: only where the CPU has AVX512_BF16 besides the AVX-512 level
extern const PeakLoop f32;   // vfmadd on 16 lanes
}  // namespace avx512

}  // namespace ggufmm::cli::peaks
