#include "format/random_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <span>

#include "format/registry.hpp"

namespace ggufmm::format {

std::vector<uint8_t> random_weight(Type type, int64_t m, int64_t k, std::mt19937& rng) {
  const Format& f = *find(type);
  const auto block_size = static_cast<size_t>(f.info.block_size);
  const auto block_bytes = static_cast<size_t>(f.info.block_bytes);
  std::vector<uint8_t> bytes(static_cast<size_t>(m * k) / block_size * block_bytes);
  if (f.quantize) {
    // Blocks quantize independently, so the rows may go in as one run.
    std::normal_distribution<float> normal;
    std::vector<float> values(static_cast<size_t>(m * k));
    for (auto& v : values) v = normal(rng);
    f.quantize(values.data(), bytes.data(), m * k);
    return bytes;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  // A block's largest magnitude between 1/2 and 4, the range normal values quantize to: within a few of the f16
  // scale's 30 binades, no block vanishes next to the others or swamps them.
  const auto sane = [](std::span<const float> block) {
    float largest = 0.0f;
    for (const float v : block) {
      if (!std::isfinite(v)) return false;
      largest = std::max(largest, std::fabs(v));
    }
    return largest >= 0.5f && largest < 4.0f;
  };
  // Every round draws the blocks still missing and dequantizes them in one call; the rejected ones go round again.
  std::vector<size_t> missing(bytes.size() / block_bytes);
  std::iota(missing.begin(), missing.end(), size_t{0});
  std::vector<float> values;
  while (!missing.empty()) {
    std::vector<uint8_t> drawn(missing.size() * block_bytes);
    for (auto& b : drawn) b = static_cast<uint8_t>(byte(rng));
    values.resize(missing.size() * block_size);
    f.dequantize(drawn.data(), values.data(), static_cast<int64_t>(values.size()));
    std::vector<size_t> rejected;
    for (size_t i = 0; i < missing.size(); ++i) {
      if (sane(std::span<const float>(values).subspan(i * block_size, block_size))) {
        std::memcpy(bytes.data() + missing[i] * block_bytes, drawn.data() + i * block_bytes, block_bytes);
      } else {
        rejected.push_back(missing[i]);
      }
    }
    missing = std::move(rejected);
  }
  return bytes;
}

}  // namespace ggufmm::format
