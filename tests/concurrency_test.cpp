// Several threads at once through the public API: products with shared and separate weights on every path,
// and files opened and parsed side by side. Every result must equal the one a single thread computes; run
// under ThreadSanitizer (GGUFMM_SANITIZE=thread), a data race fails the test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <random>
#include <thread>

#include "ggufmm/ggufmm.hpp"
#include "ggufmm/gguf.hpp"
#include "paths/dense_cache.hpp"
#include "test_support.hpp"

namespace ggufmm {
namespace {

constexpr int kThreads = 6;
constexpr int64_t kMaxRows = 40;  // gemv (1 to 7 rows) and beyond
// Room for the dense copies of some of the weights below, not all: threads evict each other's copies.
constexpr size_t kDenseCacheBudget = size_t{32} << 10;

// A file of a few weights, written once; every test thread reads the same mapping.
class Concurrency : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    struct Spec {
      Type type;
      int64_t m, k;
    };
    std::mt19937 rng(7);
    std::vector<std::vector<uint8_t>> data;  // referred to by the writer until write()
    gguf::Writer writer;
    writer.set("general.name", gguf::Value::string("concurrency"));
    for (const Spec& s : {Spec{Type::Q4_0, 33, 256}, {Type::Q4_K, 20, 512}, {Type::IQ3_S, 16, 256},
                          {Type::F16, 24, 96}}) {
      data.push_back(test::random_weight(s.type, s.m, s.k, rng));
      writer.add_tensor(fmt::format("{}.weight", type_info(s.type)->name), s.type, {s.k, s.m}, data.back());
    }
    writer.write(path());
    saved_budget_ = paths::DenseCache::global().budget();
    set_dense_cache_budget(kDenseCacheBudget);
    clear_dense_cache();
  }
  static void TearDownTestSuite() {
    std::filesystem::remove(path());
    clear_dense_cache();
    set_dense_cache_budget(saved_budget_);
  }

  static std::string path() {
    return (std::filesystem::temp_directory_path() / fmt::format("ggufmm-concurrency-{}.gguf", ::getpid())).string();
  }

 private:
  static inline size_t saved_budget_ = 0;
};

// Runs body(t) on kThreads threads at once and waits for them.
template <class Body>
void on_threads(Body&& body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(body, t);
  for (std::thread& thread : threads) thread.join();
}

// One product: a weight, a path, a row count and how many pool threads the call may use.
struct Job {
  const Weight* w;
  Path path;
  int64_t rows;
  int threads;
};

std::vector<float> run(const Job& job, const std::vector<float>& x, int threads) {
  std::vector<float> y(static_cast<size_t>(job.rows * job.w->m));
  matmul(*job.w, x.data(), job.rows, y.data(), nullptr, {.path = job.path, .threads = threads});
  return y;
}

TEST_F(Concurrency, ProductsOnEveryPathEqualASingleThreadedRun) {
  const gguf::File file = gguf::File::open(path());
  std::vector<Weight> weights;
  for (const gguf::TensorInfo& t : file.tensors()) weights.push_back(file.weight(t.name));
  std::mt19937 rng(8);
  int64_t k_max = 0;
  for (const Weight& w : weights) k_max = std::max(k_max, w.k);
  const std::vector<float> x = test::random_values(static_cast<size_t>(kMaxRows * k_max), rng);

  std::vector<Job> jobs;
  for (const Weight& w : weights) {
    for (const Path path : available_paths()) {
      for (int64_t rows = 1; rows <= kMaxRows; ++rows) {
        jobs.push_back({&w, path, rows, static_cast<int>(rows % 3)});  // 0: all cores, 1: the caller alone, 2
      }
    }
  }
  std::vector<std::vector<float>> want;
  for (const Job& job : jobs) want.push_back(run(job, x, 1));

  // Each job runs on two threads, every thread in its own order, so that the same weight, path and pool meet.
  std::vector<std::string> failures(kThreads);
  on_threads([&](int t) {
    for (size_t n = 0; n < jobs.size(); ++n) {
      const size_t i = (n * 7 + static_cast<size_t>(t) * 131) % jobs.size();
      if (static_cast<int>(i % (kThreads / 2)) != t % (kThreads / 2)) continue;
      if (run(jobs[i], x, jobs[i].threads) != want[i]) {
        failures[t] += fmt::format("{} {} rows {} threads {}; ", jobs[i].w->name, path_name(jobs[i].path),
                                   jobs[i].rows, jobs[i].threads);
      }
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST_F(Concurrency, FilesOpenedAndParsedSideBySideAreTheSame) {
  const std::vector<uint8_t> image = test::read_bytes(path());
  const gguf::File want = gguf::File::parse(image, "image.gguf");
  std::vector<int> mismatches(kThreads);
  on_threads([&](int t) {
    for (int round = 0; round < 20; ++round) {
      const gguf::File got = round % 2 == t % 2 ? gguf::File::open(path()) : gguf::File::parse(image, "image.gguf");
      bool same = got.metadata() == want.metadata() && got.tensors().size() == want.tensors().size();
      for (size_t i = 0; same && i < got.tensors().size(); ++i) {
        const gguf::TensorInfo& a = got.tensors()[i];
        const gguf::TensorInfo& b = want.tensors()[i];
        same = a.name == b.name && a.shape == b.shape && a.bytes == b.bytes && std::memcmp(a.data, b.data, a.bytes) == 0;
      }
      mismatches[t] += !same;
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace ggufmm
