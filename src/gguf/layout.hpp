// What the GGUF reader and writer agree on: constants, value sizes and the rules a tensor's shape must follow.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <string_view>

#include "ggufmm/gguf.hpp"

namespace ggufmm::gguf::layout {

static_assert(std::endian::native == std::endian::little,
              "GGUF files are little-endian, as is the host we map them on");

inline constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
inline constexpr uint32_t kWriteVersion = 3;
inline constexpr std::string_view kAlignmentKey = "general.alignment";
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr size_t kMaxDims = 4;

inline constexpr uint64_t align_up(uint64_t offset, uint64_t alignment) {
  return (offset + alignment - 1) / alignment * alignment;
}

inline constexpr bool is_value_type(uint32_t id) { return id <= static_cast<uint32_t>(ValueType::F64); }

// The fewest bytes one value of this type takes in the file: a string its length, an array its item type and
// count, any other type its fixed size.
size_t min_size(ValueType type);

// Throws Error(kind, "WHO: ...") unless a tensor may have `n_dims` dimensions.
void check_rank(uint64_t n_dims, Error::Kind kind, std::string_view who);

// The byte size of a tensor of this type and shape. Throws Error(kind, "WHO: ...") for an unknown type, a
// negative dimension, a row that is not whole blocks, or a size that overflows.
uint64_t tensor_bytes(Type type, std::span<const int64_t> shape, Error::Kind kind, std::string_view who);

}  // namespace ggufmm::gguf::layout
