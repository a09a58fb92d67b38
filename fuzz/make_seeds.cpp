// Writes the fuzzers' seed corpus with the project's own Writer: `gguf_make_seeds DIR`. Each file is small and
// shows the reader one structure (every metadata type, each weight type, experts, data-only types, odd shapes),
// so that mutations start from valid files. The bytes are fixed: fuzz/corpus holds this program's output.
#include <cstdio>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "ggufmm/gguf.hpp"

namespace {

using namespace ggufmm;
using gguf::Value;
using gguf::ValueType;

// Fixed pseudo-random bytes (no std distribution, whose output varies between standard libraries).
std::vector<uint8_t> bytes_for(Type type, std::vector<int64_t> shape, uint32_t seed) {
  const TypeInfo& t = *type_info(type);
  int64_t elements = 1;
  for (const int64_t d : shape) elements *= d;
  std::vector<uint8_t> out(static_cast<size_t>(elements / t.block_size * t.block_bytes));
  for (uint8_t& b : out) {
    seed = seed * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(seed >> 24);
  }
  return out;
}

Value array(ValueType type, std::vector<Value> items) { return Value::array({type, std::move(items)}); }

// The writer refers to tensor bytes until write(): they are kept here.
struct Seed {
  gguf::Writer writer;
  std::vector<std::vector<uint8_t>> data;

  void add(std::string name, Type type, std::vector<int64_t> shape) {
    data.push_back(bytes_for(type, shape, static_cast<uint32_t>(data.size() + 1)));
    writer.add_tensor(std::move(name), type, std::move(shape), data.back());
  }
};

void write_seeds(const std::string& dir) {
  gguf::Writer().write(dir + "/empty.gguf");

  Seed metadata;
  metadata.writer.set("general.alignment", Value::u32(64));
  metadata.writer.set("general.name", Value::string("seed \"metadata\"\n"));
  metadata.writer.set("t.u8", Value::u8(200));
  metadata.writer.set("t.i8", {ValueType::I8, int64_t{-100}});
  metadata.writer.set("t.u16", {ValueType::U16, uint64_t{65535}});
  metadata.writer.set("t.i16", {ValueType::I16, int64_t{-32768}});
  metadata.writer.set("t.u32", Value::u32(4000000000u));
  metadata.writer.set("t.i32", Value::i32(-2000000000));
  metadata.writer.set("t.f32", Value::f32(0.1f));
  metadata.writer.set("t.bool", Value::boolean(true));
  metadata.writer.set("t.u64", Value::u64(UINT64_MAX));
  metadata.writer.set("t.i64", Value::i64(INT64_MIN));
  metadata.writer.set("t.f64", Value::f64(-1e300));
  metadata.writer.set("t.strings", array(ValueType::String, {Value::string("a"), Value::string("")}));
  metadata.writer.set("t.u8s", array(ValueType::U8, {Value::u8(1), Value::u8(2), Value::u8(3)}));
  metadata.writer.set("t.nested", array(ValueType::Array, {array(ValueType::I32, {Value::i32(-2)}),
                                                           array(ValueType::Bool, {})}));
  metadata.add("weight", Type::Q8_0, {32, 2});
  metadata.writer.write(dir + "/metadata.gguf");

  // One file per weight type: a [k, m] weight of two blocks a row, three rows.
  for (const TypeInfo& t : all_types()) {
    if (!t.is_weight) continue;
    Seed seed;
    seed.writer.set("general.type", Value::string(std::string(t.name)));
    seed.add("weight", t.type, {2 * (t.block_size == 1 ? 16 : t.block_size), 3});
    seed.writer.write(dir + "/weight-" + std::string(t.name) + ".gguf");
  }

  Seed experts;
  experts.add("experts", Type::Q4_0, {32, 2, 3});
  experts.add("experts.4d", Type::Q8_0, {32, 2, 2, 1});
  experts.add("ids", Type::I32, {2, 2});
  experts.writer.write(dir + "/experts.gguf");

  // Types that are data, not weights, and shapes no weight has.
  Seed data;
  for (const Type type : {Type::I8, Type::I16, Type::I32, Type::I64, Type::F64}) {
    data.add(std::string(type_info(type)->name), type, {3, 2});
  }
  data.add("empty", Type::Q8_0, {32, 0});
  data.add("4d", Type::F16, {2, 2, 2, 2});
  data.add("vector", Type::BF16, {5});
  data.writer.write(dir + "/data.gguf");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    write_seeds(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
