// The shape of every peak loop, shared by the files compiled per instruction set (bench_peaks_*.cpp).
// Instantiated only with each file's own lambdas, so every instantiation stays private to the file that makes it
// and is compiled for that file's instruction set.
#pragma once

#include <cstdint>
#include <cstring>

namespace ggufmm::cli::peaks {

// Runs `Chains` independent accumulators through `step` for `iterations` rounds and returns the sum of all their
// lanes (in double, where it cannot overflow), a value that depends on every step.
template <typename Lane, int Chains, typename Start, typename Step>
double run_chains(int64_t iterations, Start start, Step step) {
  using Vector = decltype(start(0));
  Vector acc[Chains];
  // Distinct starting values keep the compiler from proving the chains equal and computing only one.
  for (int c = 0; c < Chains; ++c) acc[c] = start(c);
  for (int64_t i = 0; i < iterations; ++i) {
    for (auto& v : acc) v = step(v);
  }
  double sum = 0.0;
  for (const Vector v : acc) {  // by value: the accumulators themselves never need a memory address
    Lane lanes[sizeof(Vector) / sizeof(Lane)];
    std::memcpy(lanes, &v, sizeof v);
    for (const Lane lane : lanes) sum += static_cast<double>(lane);
  }
  return sum;
}

}  // namespace ggufmm::cli::peaks
