// FNV-1a: a 64-bit hash that is the same in every run and on every machine, for fingerprints and file names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ggufmm::runtime {

inline constexpr uint64_t kFnvBasis = 0xcbf29ce484222325u;

// Continues `hash` (a previous result, or kFnvBasis) over n bytes. No default for `hash`: a call with a
// character pointer and a hash must take the text overload below.
inline uint64_t fnv1a(const void* bytes, size_t n, uint64_t hash) {
  const auto* p = static_cast<const uint8_t*>(bytes);
  for (size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 0x100000001b3u;
  return hash;
}

inline uint64_t fnv1a(std::string_view text, uint64_t hash = kFnvBasis) {
  return fnv1a(text.data(), text.size(), hash);
}

}  // namespace ggufmm::runtime
