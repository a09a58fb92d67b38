#include <fmt/format.h>

#include <algorithm>

#include "ggufmm/gguf.hpp"

namespace ggufmm::gguf {
namespace {

// Quotes a string so that control characters and quotes cannot garble a line of `info` output.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (const auto u = static_cast<unsigned char>(c); u < 0x20 || u == 0x7f) {
          out += fmt::format("\\x{:02x}", u);
        } else {
          out += c;
        }
    }
  }
  return out + '"';
}

std::string array_to_string(const Array& array, size_t max_items) {
  const size_t shown = std::min(array.items.size(), max_items);
  std::string out = "[";
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out += ", ";
    out += array.items[i].to_string(max_items);
  }
  if (shown < array.items.size()) out += fmt::format("{}... ({} items)", shown > 0 ? ", " : "", array.items.size());
  return out + ']';
}

}  // namespace

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::U8:
      return "u8";
    case ValueType::I8:
      return "i8";
    case ValueType::U16:
      return "u16";
    case ValueType::I16:
      return "i16";
    case ValueType::U32:
      return "u32";
    case ValueType::I32:
      return "i32";
    case ValueType::F32:
      return "f32";
    case ValueType::Bool:
      return "bool";
    case ValueType::String:
      return "string";
    case ValueType::Array:
      return "array";
    case ValueType::U64:
      return "u64";
    case ValueType::I64:
      return "i64";
    case ValueType::F64:
      return "f64";
  }
  return "unknown";
}

std::string Value::to_string(size_t max_items) const {
  if (const auto* d = std::get_if<double>(&data)) {
    // An f32 prints as the shortest text that reads back as the same float, not as its widened double.
    return type == ValueType::F32 ? fmt::format("{}", static_cast<float>(*d)) : fmt::format("{}", *d);
  }
  if (const auto* b = std::get_if<bool>(&data)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&data)) return quoted(*s);
  if (const auto* a = std::get_if<Array>(&data)) return array_to_string(*a, max_items);
  if (const auto* u = std::get_if<uint64_t>(&data)) return fmt::format("{}", *u);
  return fmt::format("{}", std::get<int64_t>(data));
}

}  // namespace ggufmm::gguf
