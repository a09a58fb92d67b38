// GGUF files: a validating, memory-mapped reader (v2 and v3) and an atomic writer (v3).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ggufmm/export.h"
#include "ggufmm/types.hpp"

namespace ggufmm::gguf {

// The metadata value types, numbered as in the file.
enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
GGUFMM_API std::string_view value_type_name(ValueType type);

struct Value;

// An array holds values of one type. Kept as a vector of Values, each at least one byte in the file, so its
// memory is bounded by a small multiple of the file size.
struct Array {
  ValueType type = ValueType::U8;
  std::vector<Value> items;

  friend bool operator==(const Array&, const Array&) = default;
};

// A metadata value. Integers are widened to 64 bits, floats to double; `type` keeps the stored type so that a
// written file reproduces it.
struct Value {
  ValueType type = ValueType::U8;
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> data;

  static Value u8(uint8_t v) { return {ValueType::U8, uint64_t{v}}; }
  static Value u32(uint32_t v) { return {ValueType::U32, uint64_t{v}}; }
  static Value u64(uint64_t v) { return {ValueType::U64, v}; }
  static Value i32(int32_t v) { return {ValueType::I32, int64_t{v}}; }
  static Value i64(int64_t v) { return {ValueType::I64, v}; }
  static Value f32(float v) { return {ValueType::F32, double{v}}; }
  static Value f64(double v) { return {ValueType::F64, v}; }
  static Value boolean(bool v) { return {ValueType::Bool, v}; }
  static Value string(std::string v) { return {ValueType::String, std::move(v)}; }
  static Value array(Array v) { return {ValueType::Array, std::move(v)}; }

  // Readable form for `info`; long arrays are elided after `max_items` items.
  GGUFMM_API std::string to_string(size_t max_items = 8) const;

  // Same stored type and value; arrays compare item by item.
  friend bool operator==(const Value&, const Value&) = default;
};

struct TensorInfo {
  std::string name;
  Type type = Type::F32;
  std::vector<int64_t> shape;  // ggml order: shape[0] is the contiguous dimension
  uint64_t offset = 0;         // from the start of the data section
  uint64_t bytes = 0;
  const uint8_t* data = nullptr;  // inside the mapping; valid while the File lives

  GGUFMM_API int64_t elements() const;
};

class GGUFMM_API File {
 public:
  // Maps and validates a file. Throws Error(BadInput) naming the file (and tensor) and what is wrong.
  static File open(const std::string& path);
  // Validates a GGUF image already in memory (the bytes must outlive the File). `name` is used in errors.
  static File parse(std::span<const uint8_t> bytes, std::string name);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* find_metadata(std::string_view key) const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Throws Error(BadInput) "FILE: no tensor named NAME".
  const TensorInfo& tensor(std::string_view name) const;
  // A tensor as a weight: shape [k, m] or [k, m, experts] of a weight type. Throws Error(BadInput) otherwise.
  Weight weight(std::string_view name) const;
  // A tensor read as f32 values (f32, f16 or bf16 data). Throws Error(BadInput) for other types.
  std::vector<float> read_f32(std::string_view name) const;

 private:
  std::string path_;
  std::shared_ptr<const void> mapping_;  // keeps an mmap alive; null for parse()
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<TensorInfo> tensors_;
};

// Builds a GGUF v3 file. Tensor bytes are referenced, not copied: they must live until write() returns.
class GGUFMM_API Writer {
 public:
  void set(std::string key, Value value);  // replaces an existing key
  void add_tensor(std::string name, Type type, std::vector<int64_t> shape, std::span<const uint8_t> bytes);
  // Writes as write_file_atomic does (ggufmm/ggufmm.hpp): a file appears whole or not at all; "-" is stdout.
  void write(const std::string& path) const;

 private:
  std::vector<std::pair<std::string, Value>> metadata_;
  struct Tensor {
    std::string name;
    Type type;
    std::vector<int64_t> shape;
    std::span<const uint8_t> bytes;
  };
  std::vector<Tensor> tensors_;
};

}  // namespace ggufmm::gguf
