// What the fuzzers (fuzz/) found, each once a crash or a sanitizer report, kept as a test of its own.
#include <gtest/gtest.h>

#include "ggufmm/gguf.hpp"
#include "temp_dir.hpp"

namespace ggufmm::gguf {
namespace {

// Writes `writer` to a file of its own and opens it; the mapping outlives the file and its directory.
File written(const Writer& writer) {
  const test::TempDir dir;
  writer.write(dir.file("w.gguf"));
  return File::open(dir.file("w.gguf"));
}

// gguf_route_fuzz: read_f32 gave an empty tensor's null buffer to memcpy (UBSan: null passed as a nonnull
// argument).
TEST(GgufFuzzRegress, EmptyFloatTensorsReadAsNoValues) {
  Writer writer;
  writer.add_tensor("f32", Type::F32, {4, 0}, {});
  writer.add_tensor("f16", Type::F16, {0}, {});
  writer.add_tensor("bf16", Type::BF16, {0, 3}, {});
  const File file = written(writer);
  for (const char* name : {"f32", "f16", "bf16"}) EXPECT_TRUE(file.read_f32(name).empty()) << name;
}

}  // namespace
}  // namespace ggufmm::gguf
