// Shapes at the edges of what matmul takes: rows of one block, one output, one and thousands of activation
// rows, thousands of outputs, a tensor more than 4 GiB into its file, and rows that are not whole blocks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "ggufmm/ggufmm.hpp"
#include "ggufmm/gguf.hpp"
#include "temp_dir.hpp"
#include "test_support.hpp"

namespace ggufmm {
namespace {

struct Case {
  Type type;
  int64_t m, k, rows;
};

// Multiplies a random weight by random activations on every path and checks each product against the exact one,
// within what int8 (or bf16) activations may cost: each x is off by at most max|x| / 254 (half a step of 127), so
// an output is off by at most sum|w| * max|x| / 254; checked with 4x room.
void check_every_path(const Case& c, std::mt19937& rng) {
  const std::vector<uint8_t> bytes = test::random_weight(c.type, c.m, c.k, rng);
  const Weight w{.type = c.type, .k = c.k, .m = c.m, .data = bytes.data(), .name = "edge"};
  const std::vector<float> x = test::random_values(static_cast<size_t>(c.rows * c.k), rng);
  const std::vector<double> exact = exact_matmul(w, x.data(), c.rows);
  const std::vector<float> dense = dequantize(w);
  std::vector<double> w_sum(static_cast<size_t>(c.m));
  for (int64_t o = 0; o < c.m; ++o) {
    for (int64_t i = 0; i < c.k; ++i) w_sum[static_cast<size_t>(o)] += std::fabs(dense[static_cast<size_t>(o * c.k + i)]);
  }
  std::vector<double> tolerance(exact.size());
  for (int64_t r = 0; r < c.rows; ++r) {
    float x_max = 0.0f;
    for (int64_t i = 0; i < c.k; ++i) x_max = std::max(x_max, std::fabs(x[static_cast<size_t>(r * c.k + i)]));
    for (int64_t o = 0; o < c.m; ++o) {
      tolerance[static_cast<size_t>(r * c.m + o)] = w_sum[static_cast<size_t>(o)] * x_max / 64 + 1e-5;
    }
  }
  for (const Path path : available_paths()) {
    std::vector<float> y(exact.size(), NAN);
    matmul(w, x.data(), c.rows, y.data(), nullptr, {.path = path});
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_NEAR(y[i], exact[i], tolerance[i])
          << type_info(c.type)->name << " path " << path_name(path) << " m=" << c.m << " k=" << c.k
          << " rows=" << c.rows << ": row " << i / static_cast<size_t>(c.m) << " column " << i % static_cast<size_t>(c.m);
    }
  }
}

TEST(EdgeShapes, OneBlockRowsOneOutputOneRowMatchExact) {
  std::mt19937 rng(1);
  for (const Type type : test::weight_types()) {
    const int64_t k = type_info(type)->block_size;  // one value for the float types
    for (const int64_t m : {1, 17}) {
      for (const int64_t rows : {1, 8}) check_every_path({type, m, k, rows}, rng);
    }
    check_every_path({type, 1, 2 * k, 1}, rng);
  }
}

TEST(EdgeShapes, ThousandsOfActivationRowsMatchExact) {
  std::mt19937 rng(2);
  for (const Type type : {Type::Q8_0, Type::Q4_K, Type::IQ2_XXS, Type::F16}) {
    check_every_path({type, 8, 256, 5000}, rng);
  }
}

TEST(EdgeShapes, ThousandsOfOutputsMatchExact) {
  std::mt19937 rng(3);
  for (const Type type : {Type::Q4_0, Type::IQ3_S, Type::BF16}) {
    for (const int64_t rows : {1, 9}) check_every_path({type, 4999, 256, rows}, rng);
  }
}

// A GGUF v3 header with no metadata and one tensor info, padded to the default alignment of 32.
std::vector<uint8_t> header_with(std::string_view name, Type type, std::vector<int64_t> shape, uint64_t offset) {
  std::vector<uint8_t> out;
  // resize and memcpy rather than insert, which GCC 12 misreads as an overflow (-Wstringop-overflow).
  const auto put_bytes = [&](const void* p, size_t n) {
    const size_t at = out.size();
    out.resize(at + n);
    std::memcpy(out.data() + at, p, n);
  };
  const auto put = [&](const auto& value) { put_bytes(&value, sizeof(value)); };
  put_bytes("GGUF", 4);
  put(uint32_t{3});
  put(uint64_t{1});  // tensors
  put(uint64_t{0});  // metadata
  put(uint64_t{name.size()});
  put_bytes(name.data(), name.size());
  put(static_cast<uint32_t>(shape.size()));
  for (const int64_t dim : shape) put(dim);
  put(static_cast<uint32_t>(type));
  put(offset);
  out.resize((out.size() + 31) / 32 * 32);
  return out;
}

TEST(EdgeShapes, TensorMoreThanFourGiBIntoTheFileGivesTheSameProducts) {
  constexpr uint64_t kOffset = (uint64_t{5} << 30) + 96;  // past 2^32, so a 32-bit offset would wrap
  constexpr int64_t kM = 5, kK = 64;
  std::mt19937 rng(4);
  const std::vector<uint8_t> bytes = test::random_weight(Type::Q8_0, kM, kK, rng);
  const std::vector<uint8_t> header = header_with("far", Type::Q8_0, {kK, kM}, kOffset);
  const test::TempDir dir;
  const std::string file_name = dir.file("w.gguf");
  {
    const int fd = ::open(file_name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << file_name << ": " << std::strerror(errno);
    const off_t end = static_cast<off_t>(header.size() + kOffset + bytes.size());
    const bool sparse = ::ftruncate(fd, end) == 0;
    struct stat st {};
    const bool written =
        sparse && ::pwrite(fd, header.data(), header.size(), 0) == static_cast<ssize_t>(header.size()) &&
        ::pwrite(fd, bytes.data(), bytes.size(), end - static_cast<off_t>(bytes.size())) ==
            static_cast<ssize_t>(bytes.size()) &&
        ::fstat(fd, &st) == 0;
    ::close(fd);
    // A file system without holes would have written gigabytes of zeros: not a test to run there.
    if (!written || st.st_blocks * 512 > (off_t{64} << 20)) {
      GTEST_SKIP() << file_name << ": the file system refuses a sparse file of " << end << " bytes";
    }
  }
  const gguf::File gguf = gguf::File::open(file_name);
  ASSERT_EQ(gguf.tensor("far").offset, kOffset);
  const Weight far = gguf.weight("far");
  const Weight near{.type = Type::Q8_0, .k = kK, .m = kM, .data = bytes.data()};
  EXPECT_EQ(dequantize(far), dequantize(near));
  const std::vector<float> x = test::random_values(3 * kK, rng);
  for (const Path path : available_paths()) {
    std::vector<float> got(3 * kM), want(3 * kM);
    matmul(far, x.data(), 3, got.data(), nullptr, {.path = path});
    matmul(near, x.data(), 3, want.data(), nullptr, {.path = path});
    EXPECT_EQ(got, want) << path_name(path);
  }
}

using test::input_error;

TEST(EdgeShapes, RowsThatAreNotWholeBlocksNameTheTensor) {
  // In a file: the reader refuses the tensor.
  const test::TempDir dir;
  const std::string file_name = dir.file("w.gguf");
  std::vector<uint8_t> image = header_with("blk.0.attn_q.weight", Type::Q4_0, {48, 2}, 0);
  image.resize(image.size() + 64);
  {
    const int fd = ::open(file_name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, image.data(), image.size()), static_cast<ssize_t>(image.size()));
    ::close(fd);
  }
  EXPECT_EQ(input_error([&] { gguf::File::open(file_name); }),
            file_name + ": tensor blk.0.attn_q.weight: row length 48 is not a multiple of the q4_0 block size 32");

  // Through the API: every call that takes the weight refuses it, before touching its data.
  const std::vector<uint8_t> bytes(2 * 144);
  const Weight w{.type = Type::Q4_K, .k = 300, .m = 2, .data = bytes.data(), .name = "blk.0.ffn_up.weight"};
  const std::string want = "tensor blk.0.ffn_up.weight: row length 300 is not a multiple of the q4_K block size 256";
  const std::vector<float> x(2 * 300);
  std::vector<float> y(2 * 2);
  for (const Path path : available_paths()) {
    EXPECT_EQ(input_error([&] { matmul(w, x.data(), 2, y.data(), nullptr, {.path = path}); }), want)
        << path_name(path);
  }
  EXPECT_EQ(input_error([&] { dequantize(w); }), want);
  const int32_t ids[] = {0};
  EXPECT_EQ(input_error([&] { mul_mat_id(w, x.data(), 1, 1, ids, 1, y.data()); }), want);
}

}  // namespace
}  // namespace ggufmm
