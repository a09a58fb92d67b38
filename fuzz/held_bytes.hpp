// The heap memory a parsed File holds, counted from its containers' capacities (allocator overhead aside), so
// that a fuzz target can hold the reader to its bound.
#pragma once

#include <cstddef>
#include <string>
#include <variant>

#include "ggufmm/gguf.hpp"

namespace ggufmm::fuzz {

// gguf.hpp's promise: an item of an array takes at least one byte of the file and one Value in memory, and
// nothing else costs more per byte of file.
inline constexpr size_t kMaxHeldPerByte = sizeof(gguf::Value);

inline size_t held_bytes(const std::string& s) {
  return s.capacity() > std::string().capacity() ? s.capacity() + 1 : 0;  // short strings live inside
}

inline size_t held_bytes(const gguf::Value& v) {
  if (const auto* s = std::get_if<std::string>(&v.data)) return held_bytes(*s);
  const auto* array = std::get_if<gguf::Array>(&v.data);
  if (!array) return 0;
  size_t n = array->items.capacity() * sizeof(gguf::Value);
  for (const gguf::Value& item : array->items) n += held_bytes(item);
  return n;
}

inline size_t held_bytes(const gguf::File& file) {
  size_t n = held_bytes(file.path());
  n += file.metadata().capacity() * sizeof(file.metadata()[0]);
  for (const auto& [key, value] : file.metadata()) n += held_bytes(key) + held_bytes(value);
  n += file.tensors().capacity() * sizeof(gguf::TensorInfo);
  for (const gguf::TensorInfo& t : file.tensors()) {
    n += held_bytes(t.name) + t.shape.capacity() * sizeof(t.shape[0]);
  }
  return n;
}

}  // namespace ggufmm::fuzz
