// Random weights of any weight type whose values are all finite and of sane size, for tests that compare
// products: quantized from normal values where ggufmm can quantize, else random blocks with a bounded scale.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "ggufmm/ggufmm.hpp"

namespace ggufmm::test {

inline std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// m rows of k values (k a multiple of the type's block size).
inline std::vector<uint8_t> random_weight(Type type, int64_t m, int64_t k, std::mt19937& rng) {
  const TypeInfo& t = *type_info(type);
  if (t.can_quantize) return quantize(type, random_values(static_cast<size_t>(m * k), rng).data(), m, k);
  // The codebook formats: random codes, and a scale whose exponent keeps every value far from inf.
  std::vector<uint8_t> bytes(static_cast<size_t>(m * k / t.block_size * t.block_bytes));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  for (size_t at = 0; at < bytes.size(); at += static_cast<size_t>(t.block_bytes)) {
    if (type == Type::IQ1_M) {
      for (int j = 0; j < 4; ++j) bytes[at + 48 + 2 * j + 1] &= 0x3f;  // the f16 scale is spread over 4 nibbles
    } else {
      bytes[at + 1] = static_cast<uint8_t>(0x20 + byte(rng) % 0x10);  // f16 d in [2^-7, 2^-3)
    }
  }
  return bytes;
}

}  // namespace ggufmm::test
