#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <type_traits>
#include <utility>

#include "ggufmm/gguf.hpp"
#include "gguf/layout.hpp"
#include "runtime/atomic_file.hpp"

namespace ggufmm::gguf {
namespace {

[[noreturn]] void bad_usage(const std::string& message) { throw Error(Error::Kind::BadUsage, message); }

// The header, metadata and tensor infos, built in memory so that a bad value fails before any file exists.
class Buffer {
 public:
  template <class T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&value, sizeof(T));
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    append(s.data(), s.size());
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  // resize and memcpy rather than insert, which GCC 12 misreads as an overflow (-Wstringop-overflow).
  void append(const void* p, size_t n) {
    const size_t at = bytes_.size();
    bytes_.resize(at + n);
    if (n > 0) std::memcpy(bytes_.data() + at, p, n);
  }

  std::vector<uint8_t> bytes_;
};

// Checks a value against its type as it is written. `what` is "FILE: metadata KEY", for errors.
class ValueWriter {
 public:
  ValueWriter(Buffer& out, std::string_view what) : out_(out), what_(what) {}

  void put(const Value& v) {
    switch (v.type) {
      case ValueType::U8:
        return put_integer<uint8_t>(v);
      case ValueType::I8:
        return put_integer<int8_t>(v);
      case ValueType::U16:
        return put_integer<uint16_t>(v);
      case ValueType::I16:
        return put_integer<int16_t>(v);
      case ValueType::U32:
        return put_integer<uint32_t>(v);
      case ValueType::I32:
        return put_integer<int32_t>(v);
      case ValueType::U64:
        return put_integer<uint64_t>(v);
      case ValueType::I64:
        return put_integer<int64_t>(v);
      case ValueType::F32:
        return out_.put(static_cast<float>(held<double>(v)));
      case ValueType::F64:
        return out_.put(held<double>(v));
      case ValueType::Bool:
        return out_.put(static_cast<uint8_t>(held<bool>(v)));
      case ValueType::String:
        return out_.put_string(held<std::string>(v));
      case ValueType::Array:
        return put_array(held<Array>(v));
    }
    bad_usage(fmt::format("{}: unknown value type {}", what_, static_cast<uint32_t>(v.type)));
  }

 private:
  template <class Held>
  const Held& held(const Value& v) const {
    if (const auto* h = std::get_if<Held>(&v.data)) return *h;
    bad_usage(fmt::format("{}: a {} value holds the wrong kind of data", what_, value_type_name(v.type)));
  }

  template <class T>
  void put_integer(const Value& v) {
    const auto wide = held<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(v);
    if (!std::in_range<T>(wide)) {
      bad_usage(fmt::format("{}: {} does not fit in a {}", what_, wide, value_type_name(v.type)));
    }
    out_.put(static_cast<T>(wide));
  }

  void put_array(const Array& array) {
    out_.put(static_cast<uint32_t>(array.type));
    out_.put<uint64_t>(array.items.size());
    for (size_t i = 0; i < array.items.size(); ++i) {
      if (array.items[i].type != array.type) {
        bad_usage(fmt::format("{}: array item {} is a {} in an array of {}", what_, i,
                              value_type_name(array.items[i].type), value_type_name(array.type)));
      }
      put(array.items[i]);
    }
  }

  Buffer& out_;
  std::string_view what_;
};

uint64_t alignment_of(const std::vector<std::pair<std::string, Value>>& metadata, const std::string& path) {
  const auto it =
      std::ranges::find(metadata, layout::kAlignmentKey, [](const auto& kv) -> std::string_view { return kv.first; });
  if (it == metadata.end()) return layout::kDefaultAlignment;
  const Value& value = it->second;
  const auto* alignment = std::get_if<uint64_t>(&value.data);
  if (value.type != ValueType::U32 || !alignment || !std::has_single_bit(*alignment) || *alignment > UINT32_MAX) {
    bad_usage(fmt::format("{}: metadata {} must be a u32 power of two, not the {} {}", path, layout::kAlignmentKey,
                          value_type_name(value.type), value.to_string()));
  }
  return *alignment;
}

// Padding comes from a fixed block of zeros: an alignment may be as large as 2^31.
void write_zeros(runtime::AtomicFile& file, uint64_t n) {
  static constexpr std::array<uint8_t, 4096> kZeros{};
  while (n > 0) {
    const uint64_t chunk = std::min<uint64_t>(n, kZeros.size());
    file.write(kZeros.data(), chunk);
    n -= chunk;
  }
}

}  // namespace

void Writer::set(std::string key, Value value) {
  if (key.empty()) bad_usage("gguf writer: empty metadata key");
  const auto it = std::ranges::find(metadata_, key, &std::pair<std::string, Value>::first);
  if (it != metadata_.end()) {
    it->second = std::move(value);
  } else {
    metadata_.emplace_back(std::move(key), std::move(value));
  }
}

void Writer::add_tensor(std::string name, Type type, std::vector<int64_t> shape, std::span<const uint8_t> bytes) {
  const std::string who = fmt::format("gguf writer: tensor {}", name);
  if (std::ranges::find(tensors_, name, &Tensor::name) != tensors_.end())
    bad_usage(fmt::format("{}: added twice", who));
  const uint64_t want = layout::tensor_bytes(type, shape, Error::Kind::BadUsage, who);
  if (bytes.size() != want) {
    bad_usage(fmt::format("{}: {} bytes given, but {} [{}] takes {}", who, bytes.size(), type_info(type)->name,
                          fmt::join(shape, ", "), want));
  }
  tensors_.push_back({std::move(name), type, std::move(shape), bytes});
}

void Writer::write(const std::string& path) const {
  const uint64_t alignment = alignment_of(metadata_, path);
  Buffer head;
  head.put(std::to_array(layout::kMagic));
  head.put(layout::kWriteVersion);
  head.put<uint64_t>(tensors_.size());
  head.put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    head.put_string(key);
    head.put(static_cast<uint32_t>(value.type));
    ValueWriter(head, fmt::format("{}: metadata {}", path, key)).put(value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    head.put_string(t.name);
    head.put(static_cast<uint32_t>(t.shape.size()));
    for (const int64_t dim : t.shape) head.put(dim);
    head.put(static_cast<uint32_t>(t.type));
    head.put(offset);
    offset = layout::align_up(offset + t.bytes.size(), alignment);
  }

  runtime::AtomicFile file(path);
  file.write(head.bytes().data(), head.bytes().size());
  write_zeros(file, layout::align_up(head.bytes().size(), alignment) - head.bytes().size());
  for (const Tensor& t : tensors_) {
    file.write(t.bytes.data(), t.bytes.size());
    write_zeros(file, layout::align_up(t.bytes.size(), alignment) - t.bytes.size());
  }
  file.commit();
}

}  // namespace ggufmm::gguf
