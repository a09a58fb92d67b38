// The GGUF reader and writer: round trips, the golden files, and hostile or broken images.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <tuple>

#include "ggufmm/ggufmm.hpp"
#include "ggufmm/gguf.hpp"
#include "temp_dir.hpp"
#include "test_support.hpp"

namespace ggufmm::gguf {
namespace {

namespace fs = std::filesystem;

using test::input_error;
using test::read_bytes;
using test::TempDir;
using test::usage_error;

std::vector<uint8_t> image_of(const Writer& writer) {
  const TempDir dir;
  writer.write(dir.file("image.gguf"));
  return read_bytes(dir.file("image.gguf"));
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(seed + 7 * i);
  return bytes;
}

// Succeeds when parsing `image` throws a BadInput error whose message holds every one of `parts`.
::testing::AssertionResult rejected(std::span<const uint8_t> image, std::initializer_list<std::string_view> parts) {
  try {
    File::parse(image, "test.gguf");
  } catch (const Error& e) {
    const std::string message = e.what();
    if (e.kind() != Error::Kind::BadInput) return ::testing::AssertionFailure() << "not BadInput: " << message;
    for (const std::string_view part : parts) {
      if (message.find(part) == std::string::npos) {
        return ::testing::AssertionFailure() << "\"" << part << "\" missing from: " << message;
      }
    }
    return ::testing::AssertionSuccess() << message;
  }
  return ::testing::AssertionFailure() << "the image parsed";
}

template <class T, size_t N>
std::span<const uint8_t> bytes_of(const T (&array)[N]) {
  return {reinterpret_cast<const uint8_t*>(array), sizeof(array)};
}

Value array_of(ValueType type, std::vector<Value> items) { return Value::array({type, std::move(items)}); }

// Every metadata type, nested arrays included, in the order a reader must give them back.
std::vector<std::pair<std::string, Value>> every_metadata_type() {
  return {
      {"t.u8", Value::u8(200)},
      {"t.i8", {ValueType::I8, int64_t{-100}}},
      {"t.u16", {ValueType::U16, uint64_t{65535}}},
      {"t.i16", {ValueType::I16, int64_t{-32768}}},
      {"t.u32", Value::u32(4000000000u)},
      {"t.i32", Value::i32(-2000000000)},
      {"t.f32", Value::f32(0.1f)},
      {"t.bool", Value::boolean(true)},
      {"t.string", Value::string("h\"llo\n\xc3\xa9")},
      {"t.empty_string", Value::string("")},
      {"t.u64", Value::u64(UINT64_MAX)},
      {"t.i64", Value::i64(INT64_MIN)},
      {"t.f64", Value::f64(-1e300)},
      {"t.array.u8", array_of(ValueType::U8, {Value::u8(1), Value::u8(2), Value::u8(3)})},
      {"t.array.strings", array_of(ValueType::String, {Value::string("a"), Value::string(""), Value::string("ccc")})},
      {"t.array.bools", array_of(ValueType::Bool, {Value::boolean(false), Value::boolean(true)})},
      {"t.array.empty", array_of(ValueType::F64, {})},
      {"t.array.nested",
       array_of(ValueType::Array, {array_of(ValueType::I32, {Value::i32(1), Value::i32(-2)}),
                                   array_of(ValueType::I32, {}), array_of(ValueType::I32, {Value::i32(3)})})},
      {"t.array.deep", array_of(ValueType::Array,
                                {array_of(ValueType::Array, {array_of(ValueType::String, {Value::string("deep")})})})},
  };
}

struct TensorCase {
  std::string name;
  Type type;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

std::vector<TensorCase> several_tensors() {
  return {
      {"f32.matrix", Type::F32, {4, 3}, pattern(48, 1)},
      {"q4_0.weight", Type::Q4_0, {64, 2}, pattern(2 * 2 * 18, 2)},
      {"f16.odd", Type::F16, {3}, pattern(6, 3)},
      {"q4_K.experts", Type::Q4_K, {256, 2, 3}, pattern(6 * 144, 4)},
      {"ids", Type::I32, {4, 29}, pattern(4 * 29 * 4, 5)},
      {"bf16.4d", Type::BF16, {2, 1, 1, 1}, pattern(4, 6)},
  };
}

// The writer refers to the tensors' bytes: `tensors` must outlive its write().
Writer writer_with(const std::vector<std::pair<std::string, Value>>& metadata, const std::vector<TensorCase>& tensors) {
  Writer writer;
  for (const auto& [key, value] : metadata) writer.set(key, value);
  for (const auto& t : tensors) writer.add_tensor(t.name, t.type, t.shape, t.bytes);
  return writer;
}

// A GGUF image put together field by field, to break one thing at a time.
class Image {
 public:
  template <class T>
  Image& put(T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  Image& str(std::string_view s) {
    put<uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  Image& header(uint64_t tensors, uint64_t metadata, uint32_t version = 3) {
    bytes_.insert(bytes_.end(), {'G', 'G', 'U', 'F'});
    return put(version).put(tensors).put(metadata);
  }
  Image& key(std::string_view name, ValueType type) { return str(name).put(static_cast<uint32_t>(type)); }
  Image& array_head(ValueType item_type, uint64_t count) { return put(static_cast<uint32_t>(item_type)).put(count); }
  Image& tensor(std::string_view name, std::vector<int64_t> shape, Type type, uint64_t offset) {
    str(name).put(static_cast<uint32_t>(shape.size()));
    for (const int64_t dim : shape) put(dim);
    return put(static_cast<uint32_t>(type)).put(offset);
  }
  Image& pad(size_t alignment = 32) {
    bytes_.resize((bytes_.size() + alignment - 1) / alignment * alignment);
    return *this;
  }
  Image& zeros(size_t n) {
    bytes_.resize(bytes_.size() + n);
    return *this;
  }
  operator std::span<const uint8_t>() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// An image holding one tensor, named w, with 64 bytes of data after its info.
Image one_tensor(std::vector<int64_t> shape, Type type, uint64_t offset) {
  return std::move(Image().header(1, 0).tensor("w", std::move(shape), type, offset).pad().zeros(64));
}

constexpr uint64_t kHuge = uint64_t{1} << 62;

// --- Round trips -----------------------------------------------------------------------------------------------

TEST(GgufRoundTrip, EveryMetadataTypeAndSeveralTensorTypesComeBackAsWritten) {
  const auto metadata = every_metadata_type();
  const auto tensors = several_tensors();
  const std::vector<uint8_t> image = image_of(writer_with(metadata, tensors));
  const File file = File::parse(image, "round.gguf");

  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.alignment(), 32u);
  ASSERT_EQ(file.metadata().size(), metadata.size());
  for (size_t i = 0; i < metadata.size(); ++i) {
    EXPECT_EQ(file.metadata()[i].first, metadata[i].first);
    EXPECT_TRUE(file.metadata()[i].second == metadata[i].second)
        << metadata[i].first << ": got " << file.metadata()[i].second.to_string(SIZE_MAX);
  }
  ASSERT_EQ(file.tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& got = file.tensors()[i];
    const TensorCase& want = tensors[i];
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.type, want.type) << want.name;
    EXPECT_EQ(got.shape, want.shape) << want.name;
    EXPECT_EQ(got.bytes, want.bytes.size()) << want.name;
    EXPECT_EQ(got.offset % 32, 0u) << want.name;
    EXPECT_EQ((got.data - image.data()) % 32, 0) << want.name;
    EXPECT_EQ(std::memcmp(got.data, want.bytes.data(), want.bytes.size()), 0) << want.name;
    EXPECT_EQ(&file.tensor(want.name), &got);
  }
  EXPECT_EQ(file.find_tensor("absent"), nullptr);
  ASSERT_NE(file.find_metadata("t.u16"), nullptr);
  EXPECT_EQ(std::get<uint64_t>(file.find_metadata("t.u16")->data), 65535u);
  EXPECT_EQ(file.find_metadata("absent"), nullptr);
}

TEST(GgufRoundTrip, OpenMapsTheWrittenFile) {
  const TempDir dir;
  const auto tensors = several_tensors();
  writer_with(every_metadata_type(), tensors).write(dir.file("model.gguf"));
  const File file = File::open(dir.file("model.gguf"));
  EXPECT_EQ(file.path(), dir.file("model.gguf"));
  EXPECT_EQ(file.metadata().size(), every_metadata_type().size());
  for (const auto& want : tensors) {
    const TensorInfo& got = file.tensor(want.name);
    EXPECT_EQ(std::memcmp(got.data, want.bytes.data(), want.bytes.size()), 0) << want.name;
  }
}

TEST(GgufRoundTrip, CopiesShareTheMapping) {
  const TempDir dir;
  const auto tensors = several_tensors();
  writer_with({}, tensors).write(dir.file("model.gguf"));
  auto original = std::make_optional(File::open(dir.file("model.gguf")));
  const File copy = *original;
  const uint8_t* data = original->tensor("ids").data;
  original.reset();
  EXPECT_EQ(copy.tensor("ids").data, data);
  EXPECT_EQ(std::memcmp(data, tensors[4].bytes.data(), tensors[4].bytes.size()), 0);
}

TEST(GgufRoundTrip, TensorsAlignToTheAlignmentInTheMetadata) {
  const std::vector<uint8_t> image = image_of(writer_with({{"general.alignment", Value::u32(256)}}, several_tensors()));
  const File file = File::parse(image, "aligned.gguf");
  EXPECT_EQ(file.alignment(), 256u);
  for (const TensorInfo& t : file.tensors()) {
    EXPECT_EQ(t.offset % 256, 0u) << t.name;
    EXPECT_EQ((t.data - image.data()) % 256, 0) << t.name;
  }
}

TEST(GgufRoundTrip, FilesWithNoTensorsOrZeroSizedTensorsParse) {
  EXPECT_TRUE(File::parse(image_of(Writer()), "empty.gguf").tensors().empty());

  // ggml's reader admits zero-sized dimensions, so this one does too; such a tensor is no weight.
  const std::vector<uint8_t> image = image_of(writer_with({}, {{"empty", Type::Q8_0, {32, 0}, {}}}));
  const File file = File::parse(image, "zero.gguf");
  EXPECT_EQ(file.tensor("empty").bytes, 0u);
  EXPECT_EQ(file.tensor("empty").elements(), 0);
  EXPECT_TRUE(file.tensor("empty").data != nullptr);
  EXPECT_THROW(file.weight("empty"), Error);
}

TEST(GgufRoundTrip, SetReplacesAKeyInPlace) {
  Writer writer;
  writer.set("a", Value::u32(1));
  writer.set("b", Value::string("x"));
  writer.set("a", Value::string("replaced"));
  const File file = File::parse(image_of(writer), "set.gguf");
  ASSERT_EQ(file.metadata().size(), 2u);
  EXPECT_EQ(file.metadata()[0].first, "a");
  EXPECT_EQ(file.metadata()[0].second.to_string(), "\"replaced\"");
  EXPECT_EQ(file.metadata()[1].first, "b");
}

TEST(GgufRoundTrip, ReadsVersion2) {
  Image image;
  image.header(1, 1, 2).key("k", ValueType::U8).put<uint8_t>(7).tensor("w", {32, 2}, Type::Q8_0, 0).pad().zeros(68);
  const File file = File::parse(image, "v2.gguf");
  EXPECT_EQ(file.version(), 2u);
  EXPECT_EQ(file.tensor("w").bytes, 68u);
}

// --- Writer errors and atomicity -------------------------------------------------------------------------------

TEST(GgufWriter, RejectsTensorsThatDoNotMatchTheirShape) {
  const std::vector<uint8_t> bytes(72);
  Writer writer;
  EXPECT_NE(usage_error([&] {
              writer.add_tensor("w", Type::Q4_0, {64, 2}, std::span(bytes).first(71));
            }).find("71 bytes given, but q4_0 [64, 2] takes 72"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              writer.add_tensor("w", Type::Q4_0, {48, 3}, bytes);
            }).find("row length 48"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { writer.add_tensor("w", Type::F32, {}, bytes); }).find("0 dimensions"), std::string::npos);
  EXPECT_NE(usage_error([&] {
              writer.add_tensor("w", Type::F32, {2, -1}, bytes);
            }).find("negative"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { writer.add_tensor("w", static_cast<Type>(99), {2}, bytes); }).find("type id 99"),
            std::string::npos);
  writer.add_tensor("w", Type::Q4_0, {64, 2}, bytes);
  EXPECT_NE(usage_error([&] {
              writer.add_tensor("w", Type::Q4_0, {64, 2}, bytes);
            }).find("added twice"),
            std::string::npos);
}

TEST(GgufWriter, RejectsValuesThatDoNotFitTheirType) {
  const TempDir dir;
  const auto error_writing = [&](Value value) {
    Writer writer;
    writer.set("bad", std::move(value));
    return usage_error([&] { writer.write(dir.file("bad.gguf")); });
  };
  EXPECT_NE(error_writing({ValueType::U8, uint64_t{300}}).find("300 does not fit in a u8"), std::string::npos);
  EXPECT_NE(error_writing({ValueType::I16, int64_t{-40000}}).find("does not fit in a i16"), std::string::npos);
  EXPECT_NE(error_writing({ValueType::U32, int64_t{1}}).find("wrong kind of data"), std::string::npos);
  EXPECT_NE(error_writing({ValueType::String, uint64_t{1}}).find("metadata bad"), std::string::npos);
  EXPECT_NE(error_writing(array_of(ValueType::U8, {Value::u8(1), Value::i32(2)})).find("item 1 is a i32"),
            std::string::npos);
  EXPECT_NE(error_writing({static_cast<ValueType>(13), uint64_t{1}}).find("unknown value type 13"), std::string::npos);

  Writer aligned;
  aligned.set("general.alignment", Value::u32(48));
  EXPECT_NE(usage_error([&] { aligned.write(dir.file("bad.gguf")); }).find("power of two"), std::string::npos);
  aligned.set("general.alignment", Value::u64(64));
  EXPECT_NE(usage_error([&] { aligned.write(dir.file("bad.gguf")); }).find("u32"), std::string::npos);
  EXPECT_TRUE(dir.entries().empty()) << "a failed write left a file behind";
}

TEST(GgufWriter, FailedWriteLeavesNothingBehind) {
  const TempDir dir;
  const std::string path = dir.file("missing-dir/model.gguf");
  try {
    writer_with(every_metadata_type(), several_tensors()).write(path);
    FAIL() << "wrote into a directory that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(dir.entries().empty());
}

TEST(GgufWriter, ReplacesAnExistingFileWhole) {
  const TempDir dir;
  const std::string path = dir.file("model.gguf");
  writer_with({{"which", Value::string("first")}}, several_tensors()).write(path);
  writer_with({{"which", Value::string("second")}}, {}).write(path);
  EXPECT_EQ(File::open(path).find_metadata("which")->to_string(), "\"second\"");
  EXPECT_TRUE(File::open(path).tensors().empty());

  // A write that fails on a bad value leaves the old file as it was.
  Writer bad;
  bad.set("which", {ValueType::U8, uint64_t{1000}});
  EXPECT_THROW(bad.write(path), Error);
  EXPECT_EQ(File::open(path).find_metadata("which")->to_string(), "\"second\"");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.gguf"});
}

// --- Values ----------------------------------------------------------------------------------------------------

TEST(GgufValue, ToStringQuotesStringsAndElidesLongArrays) {
  EXPECT_EQ(Value::u8(7).to_string(), "7");
  EXPECT_EQ(Value::i64(-5).to_string(), "-5");
  EXPECT_EQ(Value::u64(UINT64_MAX).to_string(), "18446744073709551615");
  EXPECT_EQ(Value::f32(0.1f).to_string(), "0.1");
  EXPECT_EQ(Value::f64(0.1).to_string(), "0.1");
  EXPECT_EQ(Value::boolean(false).to_string(), "false");
  EXPECT_EQ(Value::string("say \"hi\"\n\x01").to_string(), R"("say \"hi\"\n\x01")");

  std::vector<Value> many;
  for (uint32_t i = 1; i <= 10; ++i) many.push_back(Value::u32(i));
  const Value ten = array_of(ValueType::U32, many);
  EXPECT_EQ(ten.to_string(3), "[1, 2, 3, ... (10 items)]");
  EXPECT_EQ(ten.to_string(10), "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]");
  EXPECT_EQ(ten.to_string(0), "[... (10 items)]");
  EXPECT_EQ(array_of(ValueType::String, {}).to_string(), "[]");
  const Value nested = array_of(ValueType::Array, {array_of(ValueType::String, {Value::string("a")}), ten});
  EXPECT_EQ(nested.to_string(2), R"([["a"], [1, 2, ... (10 items)]])");
}

TEST(GgufValue, EveryValueTypeHasItsShortName) {
  const std::pair<ValueType, std::string_view> names[] = {
      {ValueType::U8, "u8"},         {ValueType::I8, "i8"},       {ValueType::U16, "u16"}, {ValueType::I16, "i16"},
      {ValueType::U32, "u32"},       {ValueType::I32, "i32"},     {ValueType::F32, "f32"}, {ValueType::Bool, "bool"},
      {ValueType::String, "string"}, {ValueType::Array, "array"}, {ValueType::U64, "u64"}, {ValueType::I64, "i64"},
      {ValueType::F64, "f64"},
  };
  for (const auto& [type, name] : names) EXPECT_EQ(value_type_name(type), name);
}

// --- Tensors as weights and floats -----------------------------------------------------------------------------

TEST(GgufFile, WeightsTakeKMAndExpertsFromTheTensorShape) {
  const auto tensors = several_tensors();
  const std::vector<uint8_t> image = image_of(writer_with({}, tensors));
  const File file = File::parse(image, "w.gguf");

  const Weight matrix = file.weight("q4_0.weight");
  EXPECT_EQ(matrix.type, Type::Q4_0);
  EXPECT_EQ(matrix.k, 64);
  EXPECT_EQ(matrix.m, 2);
  EXPECT_EQ(matrix.experts, 1);
  EXPECT_EQ(matrix.name, "q4_0.weight");
  EXPECT_EQ(matrix.data, file.tensor("q4_0.weight").data);
  EXPECT_EQ(matrix.total_bytes(), file.tensor("q4_0.weight").bytes);

  const Weight experts = file.weight("q4_K.experts");
  EXPECT_EQ(experts.k, 256);
  EXPECT_EQ(experts.m, 2);
  EXPECT_EQ(experts.experts, 3);

  const Weight row = file.weight("f16.odd");
  EXPECT_EQ(row.k, 3);
  EXPECT_EQ(row.m, 1);
  const Weight four = file.weight("bf16.4d");
  EXPECT_EQ(four.k, 2);
  EXPECT_EQ(four.experts, 1);

  EXPECT_EQ(input_error([&] { file.weight("ids"); }), "w.gguf: tensor ids: type i32 is not a weight type");
  EXPECT_EQ(input_error([&] { file.weight("absent"); }), "w.gguf: no tensor named absent");
  EXPECT_EQ(input_error([&] { file.tensor("absent"); }), "w.gguf: no tensor named absent");
}

TEST(GgufFile, FourDimensionalWeightNeedsUnitLastDimension) {
  const std::vector<uint8_t> bytes(2 * 2 * 4);
  const std::vector<uint8_t> image = image_of(writer_with({}, {{"w", Type::F32, {2, 1, 1, 2}, bytes}}));
  const File file = File::parse(image, "4d.gguf");
  EXPECT_EQ(input_error([&] { file.weight("w"); }),
            "4d.gguf: tensor w: shape [2, 1, 1, 2] is not a weight's [k, m] or [k, m, experts]");
}

TEST(GgufFile, ReadF32RefusesOtherTypes) {
  const std::vector<uint8_t> image = image_of(writer_with({}, several_tensors()));
  const File file = File::parse(image, "f.gguf");
  EXPECT_EQ(input_error([&] { file.read_f32("q4_0.weight"); }),
            "f.gguf: tensor q4_0.weight: type q4_0 cannot be read as f32 values (only f32, f16 and bf16)");
  EXPECT_NE(input_error([&] { file.read_f32("ids"); }).find("type i32 cannot be read"), std::string::npos);
}

// Needs the f32, f16 and bf16 formats of the registry.
TEST(GgufReadF32, ReadsEachFloatType) {
  const float f32[] = {1.5f, -2.0f, 0.0f, 3.25f};
  const uint16_t f16[] = {0x3e00, 0xc000, 0x0000, 0x4280};   // the same values as f16
  const uint16_t bf16[] = {0x3fc0, 0xc000, 0x0000, 0x4050};  // and as bf16
  Writer writer;
  writer.add_tensor("f32", Type::F32, {2, 2}, bytes_of(f32));
  writer.add_tensor("f16", Type::F16, {4}, bytes_of(f16));
  writer.add_tensor("bf16", Type::BF16, {4, 1}, bytes_of(bf16));
  const std::vector<uint8_t> image = image_of(writer);
  const File file = File::parse(image, "floats.gguf");
  for (const char* name : {"f32", "f16", "bf16"}) {
    EXPECT_EQ(file.read_f32(name), std::vector<float>(std::begin(f32), std::end(f32))) << name;
  }
}

TEST(GgufFile, OpenErrorsNameTheFileAndTheProblem) {
  const TempDir dir;
  const auto open_error = [](const std::string& path) { return input_error([&] { File::open(path); }); };
  EXPECT_NE(open_error(dir.file("absent.gguf")).find("absent.gguf: cannot open"), std::string::npos);
  fs::create_directory(dir.file("sub"));
  EXPECT_NE(open_error(dir.file("sub")).find("not a regular file"), std::string::npos);
  std::ofstream(dir.file("empty.gguf")).close();
  EXPECT_NE(open_error(dir.file("empty.gguf")).find("empty.gguf: header: truncated"), std::string::npos);
}

// --- Golden files from ggml ------------------------------------------------------------------------------------

// ggml writes no trailing dimensions of 1: act.1 is stored as [768], not [768, 1].
std::vector<int64_t> without_trailing_ones(std::vector<int64_t> shape) {
  while (shape.size() > 1 && shape.back() == 1) shape.pop_back();
  return shape;
}

void expect_tensor(const File& file, std::string_view name, std::string_view type, std::vector<int64_t> shape) {
  const TensorInfo* t = file.find_tensor(name);
  ASSERT_NE(t, nullptr) << file.path() << ": " << name;
  EXPECT_EQ(type_info(t->type)->name, type) << name;
  EXPECT_EQ(t->shape, without_trailing_ones(std::move(shape))) << name;
  const TypeInfo& info = *type_info(t->type);
  EXPECT_EQ(t->bytes, static_cast<uint64_t>(t->elements() / info.block_size * info.block_bytes)) << name;
}

std::string metadata_string(const File& file, std::string_view key) {
  const Value* v = file.find_metadata(key);
  return v && v->type == ValueType::String ? std::get<std::string>(v->data) : "(missing)";
}

class GgufGoldenDense : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufGoldenDense, TensorsHaveTheDocumentedShapes) {
  GGUFMM_OPEN_GOLDEN(file, GetParam() + ".gguf");
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(metadata_string(file, "golden.kind"), "dense");
  EXPECT_EQ(metadata_string(file, "golden.type"), GetParam());
  expect_tensor(file, "source", "f32", {768, 48});
  expect_tensor(file, "weight", GetParam(), {768, 48});
  expect_tensor(file, "dequant", "f32", {768, 48});
  for (const int64_t n : test::kGoldenRows) {
    expect_tensor(file, fmt::format("act.{}", n), "f32", {768, n});
    expect_tensor(file, fmt::format("ggml_out.{}", n), "f32", {48, n});
    expect_tensor(file, fmt::format("exact_out.{}", n), "f32", {48, n});
  }
  const Weight w = file.weight("weight");
  EXPECT_EQ(w.k, 768);
  EXPECT_EQ(w.m, 48);
  EXPECT_EQ(w.experts, 1);
  EXPECT_EQ(w.total_bytes(), file.tensor("weight").bytes);
  for (const auto& [key, value] : file.metadata()) EXPECT_FALSE(value.to_string().empty()) << key;
}

INSTANTIATE_TEST_SUITE_P(GgufGolden, GgufGoldenDense, ::testing::ValuesIn(test::kGoldenTypes), test::string_test_name);

class GgufGoldenMoe : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(GgufGoldenMoe, TensorsHaveTheDocumentedShapes) {
  const auto& [type, routing] = GetParam();
  GGUFMM_OPEN_GOLDEN(file, fmt::format("moe-{}-{}.gguf", type, routing));
  EXPECT_EQ(metadata_string(file, "golden.kind"), "moe");
  EXPECT_EQ(metadata_string(file, "golden.type"), type);
  expect_tensor(file, "weight", type, {256, 48, 8});
  expect_tensor(file, "dequant", "f32", {256, 48, 8});
  expect_tensor(file, "act", "f32", {256, routing == "shared" ? 1 : 4, 29});
  expect_tensor(file, "ids", "i32", {4, 29});
  expect_tensor(file, "ggml_out", "f32", {48, 4, 29});
  expect_tensor(file, "exact_out", "f32", {48, 4, 29});
  const Weight w = file.weight("weight");
  EXPECT_EQ(w.k, 256);
  EXPECT_EQ(w.m, 48);
  EXPECT_EQ(w.experts, 8);
  EXPECT_THROW(file.weight("ids"), Error);
  EXPECT_THROW(file.read_f32("ids"), Error);
}

INSTANTIATE_TEST_SUITE_P(GgufGolden, GgufGoldenMoe,
                         ::testing::Combine(::testing::ValuesIn(test::kMoeGoldenTypes),
                                            ::testing::Values(std::string("shared"), std::string("perslot"))),
                         [](const auto& test) {
                           return fmt::format("{}_{}", std::get<0>(test.param), std::get<1>(test.param));
                         });

// --- Hostile and broken images ---------------------------------------------------------------------------------

TEST(GgufHostile, BaselineImagesParse) {
  // The hand-built images below each break one thing in these.
  EXPECT_EQ(File::parse(one_tensor({32, 2}, Type::Q4_0, 0), "ok.gguf").tensor("w").bytes, 36u);
  Image image;
  image.header(0, 2).key("a", ValueType::Array).array_head(ValueType::U8, 2).put<uint16_t>(0x0102);
  image.key("general.alignment", ValueType::U32).put<uint32_t>(64);
  EXPECT_EQ(File::parse(image, "ok.gguf").alignment(), 64u);
}

TEST(GgufHostile, BadMagicIsRejectedShowingItsBytes) {
  Image image;
  image.put<uint32_t>(0x4c4d4747).put<uint32_t>(3).put<uint64_t>(0).put<uint64_t>(0);
  EXPECT_TRUE(rejected(image, {"test.gguf: header: not a GGUF file", "47 47 4d 4c"}));
}

TEST(GgufHostile, UnsupportedVersionsAreRejected) {
  EXPECT_TRUE(rejected(Image().header(0, 0, 1), {"GGUF version 1 is not supported"}));
  EXPECT_TRUE(rejected(Image().header(0, 0, 4), {"unknown GGUF version 4"}));
  EXPECT_TRUE(rejected(Image().header(0, 0, 0), {"unknown GGUF version 0"}));
}

TEST(GgufHostile, BigEndianHeaderIsRejectedAsByteSwapped) {
  EXPECT_TRUE(rejected(Image().header(0, 0, 0x03000000), {"byte-swapped", "big-endian"}));
  EXPECT_TRUE(rejected(Image().header(0, 0, 0x02000000), {"big-endian"}));
}

TEST(GgufHostile, TruncatedHeaderIsRejectedSayingWhatIsMissing) {
  const Image image = std::move(Image().header(0, 0));
  const std::span<const uint8_t> bytes = image;
  EXPECT_TRUE(rejected(bytes.first(10), {"header: truncated: 8 bytes needed at offset 8, but the file ends at 10"}));
  EXPECT_TRUE(rejected(bytes.first(0), {"header: truncated"}));
}

TEST(GgufHostile, TruncatedKeysAndValuesAreRejectedNamingThem) {
  EXPECT_TRUE(
      rejected(Image().header(0, 1).str("general.name").put<uint32_t>(8).put<uint64_t>(5).put('a'),
               {"metadata general.name", "a string of 5 bytes", "runs past the end of the file (1 bytes left)"}));
  EXPECT_TRUE(rejected(Image().header(0, 1).put<uint64_t>(100).zeros(20), {"metadata key 0", "string of 100 bytes"}));
  const std::string filler(40, 'x');
  EXPECT_TRUE(
      rejected(Image().header(0, 2).key("a", ValueType::String).str(filler).key("n", ValueType::U64).put<uint32_t>(1),
               {"metadata n: truncated"}));
  EXPECT_TRUE(rejected(Image().header(0, 2).key("a", ValueType::String).str(filler).put<uint32_t>(1),
                       {"metadata key 1: truncated: 8 bytes needed"}));
}

TEST(GgufHostile, TruncatedArrayIsRejected) {
  Image image;
  image.header(0, 1).key("a", ValueType::Array).array_head(ValueType::U32, 3).put<uint32_t>(1).put<uint32_t>(2);
  EXPECT_TRUE(rejected(image, {"metadata a", "3 items of at least 4 bytes each cannot fit in the 8 bytes left"}));
}

TEST(GgufHostile, HugeCountsFailBeforeAllocating) {
  EXPECT_TRUE(rejected(Image().header(0, kHuge), {"metadata:", "cannot fit"}));
  EXPECT_TRUE(rejected(Image().header(kHuge, 0), {"tensor infos", "cannot fit"}));
  EXPECT_TRUE(rejected(Image().header(UINT64_MAX, UINT64_MAX), {"cannot fit"}));
  for (const ValueType item : {ValueType::U8, ValueType::U64, ValueType::String, ValueType::Array}) {
    Image image;
    image.header(0, 1).key("tokens", ValueType::Array).array_head(item, kHuge).zeros(64);
    EXPECT_TRUE(rejected(image, {"metadata tokens", fmt::format("{} items", kHuge), "cannot fit"}))
        << value_type_name(item);
  }
  // A string length near 2^64 must not wrap around the bounds check.
  EXPECT_TRUE(rejected(Image().header(0, 1).put<uint64_t>(UINT64_MAX).zeros(16), {"runs past the end"}));
}

TEST(GgufHostile, ArrayNestingIsBounded) {
  const auto nested = [](int depth) {
    Image image;
    image.header(0, 1).key("bomb", ValueType::Array);
    for (int i = 1; i < depth; ++i) image.array_head(ValueType::Array, 1);
    image.array_head(ValueType::U8, 1).put<uint8_t>(42);
    return image;
  };
  const File ok = File::parse(nested(8), "deep.gguf");
  EXPECT_NE(ok.metadata()[0].second.to_string().find("[[[[[[[[42]]]]]]]]"), std::string::npos);
  EXPECT_TRUE(rejected(nested(9), {"metadata bomb", "nested more than 8 deep"}));
  EXPECT_TRUE(rejected(nested(100000), {"nested more than 8 deep"}));
}

TEST(GgufHostile, UnknownValueTypesAndBadBoolsAreRejected) {
  EXPECT_TRUE(rejected(Image().header(0, 1).key("k", static_cast<ValueType>(13)).zeros(8),
                       {"metadata k: unknown value type 13"}));
  Image image;
  image.header(0, 1).key("k", ValueType::Array).array_head(static_cast<ValueType>(0x80000000), 1).zeros(8);
  EXPECT_TRUE(rejected(image, {"metadata k: unknown value type 2147483648"}));
  EXPECT_TRUE(rejected(Image().header(0, 1).key("flag", ValueType::Bool).put<uint8_t>(2), {"flag", "bool value 2"}));
}

TEST(GgufHostile, DuplicateAndEmptyKeysAreRejected) {
  Image duplicate;
  duplicate.header(0, 3).key("a", ValueType::U8).put<uint8_t>(1).key("b", ValueType::U8).put<uint8_t>(1);
  duplicate.key("a", ValueType::U8).put<uint8_t>(2);
  EXPECT_TRUE(rejected(duplicate, {"metadata a: duplicate key (entries 0 and 2)"}));
  EXPECT_TRUE(rejected(Image().header(0, 1).key("", ValueType::U8).put<uint8_t>(1), {"metadata key 0: empty key"}));
}

TEST(GgufHostile, AlignmentMustBeAU32PowerOfTwo) {
  const auto with_alignment = [](ValueType type, uint64_t value) {
    Image image;
    image.header(0, 1).key("general.alignment", type);
    return type == ValueType::U32 ? std::move(image.put(static_cast<uint32_t>(value))) : std::move(image.put(value));
  };
  EXPECT_TRUE(rejected(with_alignment(ValueType::U32, 0), {"general.alignment", "0 is not a power of two"}));
  EXPECT_TRUE(rejected(with_alignment(ValueType::U32, 48), {"48 is not a power of two"}));
  EXPECT_TRUE(rejected(with_alignment(ValueType::U64, 32), {"general.alignment", "is a u64, must be a u32"}));
}

TEST(GgufHostile, BadDimensionCountsAndSizesAreRejected) {
  for (const uint32_t n_dims : {0u, 5u, 0xffffffffu}) {
    Image image;
    image.header(1, 0).str("w").put(n_dims).zeros(64);
    EXPECT_TRUE(rejected(image, {"tensor w", fmt::format("{} dimensions (must be 1 to 4)", n_dims)}));
  }
  EXPECT_TRUE(rejected(one_tensor({32, -1}, Type::F32, 0), {"tensor w: dimension 1 is negative (-1)"}));
  EXPECT_TRUE(rejected(one_tensor({int64_t{1} << 32, int64_t{1} << 32}, Type::F32, 0),
                       {"tensor w", "more than 2^63 elements"}));
  EXPECT_TRUE(
      rejected(one_tensor({int64_t{1} << 31, int64_t{1} << 31}, Type::F64, 0), {"tensor w", "more than 2^64 bytes"}));
  EXPECT_TRUE(rejected(one_tensor({48, 2}, Type::Q4_0, 0),
                       {"tensor w: row length 48 is not a multiple of the q4_0 block size 32"}));
}

TEST(GgufHostile, UnknownTensorTypesAreRejected) {
  EXPECT_TRUE(rejected(one_tensor({32}, static_cast<Type>(99), 0), {"tensor w: unknown tensor type id 99"}));
  EXPECT_TRUE(rejected(one_tensor({32}, static_cast<Type>(15), 0), {"unknown tensor type id 15"}));  // q8_K
}

TEST(GgufHostile, DuplicateTensorNamesAreRejected) {
  Image image;
  image.header(2, 0).tensor("w", {32}, Type::F32, 0).tensor("w", {32}, Type::F32, 128).pad().zeros(256);
  EXPECT_TRUE(rejected(image, {"tensor w: duplicate tensor name"}));
}

TEST(GgufHostile, MisalignedOverlappingOrMissingDataIsRejected) {
  EXPECT_TRUE(rejected(one_tensor({32, 2}, Type::Q4_0, 16),
                       {"tensor w", "data offset 16 is not a multiple of the alignment 32"}));
  EXPECT_TRUE(rejected(one_tensor({32, 2}, Type::Q4_0, 32),
                       {"tensor w: data [offset 32, 36 bytes] runs past the end of the file", "holds 64 bytes"}));
  EXPECT_TRUE(rejected(one_tensor({32, 2}, Type::Q4_0, UINT64_MAX - 31), {"runs past the end of the file"}));
  EXPECT_TRUE(rejected(one_tensor({32, 4}, Type::Q4_0, 0), {"data [offset 0, 72 bytes] runs past the end"}));
  Image overlap;
  overlap.header(2, 0).tensor("a", {32, 2}, Type::F32, 0).tensor("b", {32}, Type::F32, 224).pad().zeros(512);
  EXPECT_TRUE(rejected(overlap, {"tensor b: data [offset 224, 128 bytes] overlaps tensor a [offset 0, 256 bytes]"}));
  Image no_data;
  no_data.header(1, 0).tensor("w", {32}, Type::F32, 0);
  EXPECT_TRUE(rejected(no_data, {"data section: starts at offset 64, past the end of the file (57 bytes)"}));
}

TEST(GgufHostile, TruncatedTensorInfoIsRejected) {
  // Long enough that the count check passes and the read itself finds the end.
  EXPECT_TRUE(rejected(Image().header(1, 0).put<uint64_t>(40).zeros(20), {"tensor info 0", "string of 40 bytes"}));
  Image image;
  image.header(1, 0).str(std::string(30, 'w')).put<uint32_t>(4).put<int64_t>(32).put<int64_t>(1);
  EXPECT_TRUE(rejected(image, {fmt::format("tensor {}: truncated", std::string(30, 'w'))}));
}

// Every prefix of a valid file that cuts into a tensor infos or data is an error, never a crash.
TEST(GgufHostile, EveryTruncationBeforeTheDataEndIsRejected) {
  const auto tensors = several_tensors();
  const std::vector<uint8_t> image = image_of(writer_with(every_metadata_type(), tensors));
  const File whole = File::parse(image, "whole.gguf");
  uint64_t data_end = 0;
  for (const TensorInfo& t : whole.tensors()) {
    data_end = std::max<uint64_t>(data_end, static_cast<uint64_t>(t.data - image.data()) + t.bytes);
  }
  ASSERT_GT(data_end, 0u);
  for (size_t size = 0; size <= image.size(); ++size) {
    // A copy of exactly `size` bytes, so that the address sanitizer sees any read past it.
    const std::vector<uint8_t> prefix(image.begin(), image.begin() + static_cast<ptrdiff_t>(size));
    if (size < data_end) {
      ASSERT_TRUE(rejected(prefix, {"test.gguf: "})) << "size " << size;
    } else {
      // Only the padding after the last tensor is missing.
      ASSERT_NO_THROW(File::parse(prefix, "test.gguf")) << "size " << size;
    }
  }
}

// Corrupted bytes anywhere give a parsed file or a BadInput error, never a crash, hang or huge allocation.
TEST(GgufHostile, CorruptedBytesParseOrAreRejectedCleanly) {
  const std::vector<uint8_t> image = image_of(writer_with(every_metadata_type(), several_tensors()));
  const auto survives = [](const std::vector<uint8_t>& bytes) {
    try {
      File::parse(bytes, "test.gguf");
    } catch (const Error& e) {
      ASSERT_EQ(e.kind(), Error::Kind::BadInput) << e.what();
    }
  };
  for (size_t i = 0; i < image.size(); ++i) {
    for (const uint8_t flip : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> bytes = image;
      bytes[i] ^= flip;
      survives(bytes);
    }
  }
  std::mt19937 rng(1234);
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> bytes = image;
    for (int hits = 0; hits < 4; ++hits) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    survives(bytes);
  }
}

}  // namespace
}  // namespace ggufmm::gguf
