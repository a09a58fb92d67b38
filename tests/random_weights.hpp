// Random inputs for tests that compare products: normal values for activations, and the library's random
// weights (format/random_blocks.hpp), finite and of sane size in every weight type.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "format/random_blocks.hpp"
#include "ggufmm/ggufmm.hpp"

namespace ggufmm::test {

inline std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// m rows of k values of any weight type, finite and of sane size.
using format::random_weight;

}  // namespace ggufmm::test
