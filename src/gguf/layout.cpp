#include "gguf/layout.hpp"

#include <fmt/format.h>

#include "format/registry.hpp"

namespace ggufmm::gguf::layout {

size_t min_size(ValueType type) {
  switch (type) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::Bool:
      return 1;
    case ValueType::U16:
    case ValueType::I16:
      return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32:
      return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
      return 8;
    case ValueType::String:
      return sizeof(uint64_t);
    case ValueType::Array:
      return sizeof(uint32_t) + sizeof(uint64_t);
  }
  return 1;  // not a value type; no smaller than any
}

void check_rank(uint64_t n_dims, Error::Kind kind, std::string_view who) {
  if (n_dims < 1 || n_dims > kMaxDims) {
    throw Error(kind, fmt::format("{}: {} dimensions (must be 1 to {})", who, n_dims, kMaxDims));
  }
}

uint64_t tensor_bytes(Type type, std::span<const int64_t> shape, Error::Kind kind, std::string_view who) {
  const format::Format* f = format::find(type);
  if (!f) throw Error(kind, fmt::format("{}: unknown tensor type id {}", who, static_cast<uint32_t>(type)));
  check_rank(shape.size(), kind, who);
  int64_t elements = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) throw Error(kind, fmt::format("{}: dimension {} is negative ({})", who, i, shape[i]));
    if (__builtin_mul_overflow(elements, shape[i], &elements)) {
      throw Error(kind, fmt::format("{}: shape [{}] has more than 2^63 elements", who, fmt::join(shape, ", ")));
    }
  }
  const TypeInfo& info = f->info;
  if (shape[0] % info.block_size != 0) {
    throw Error(kind, fmt::format("{}: row length {} is not a multiple of the {} block size {}", who, shape[0],
                                  info.name, info.block_size));
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(elements / info.block_size), static_cast<uint64_t>(info.block_bytes),
                             &bytes)) {
    throw Error(kind,
                fmt::format("{}: {} shape [{}] takes more than 2^64 bytes", who, info.name, fmt::join(shape, ", ")));
  }
  return bytes;
}

}  // namespace ggufmm::gguf::layout
