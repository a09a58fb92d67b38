// The dense path and its cache: accuracy of both forms against the exact product (golden files and random shapes),
// the row padding, the cache's counting, concurrency and eviction, when auto picks the path, the environment's
// settings, and the C API.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <latch>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "ggufmm/ggufmm.h"
#include "ggufmm/ggufmm.hpp"
#include "ggufmm/gguf.hpp"
#include "paths/paths.hpp"
#include "test_support.hpp"

namespace ggufmm {
namespace {

using paths::DenseCache;
using paths::DenseForm;
using test::exact_plus;
using test::random_values;
using test::RandomWeight;
using test::same_bits;

constexpr DenseForm kForms[] = {DenseForm::BF16, DenseForm::F32};

std::string_view form_name(DenseForm form) { return form == DenseForm::BF16 ? "bf16" : "f32"; }

// Products in bf16 round both operands to 8 bits of mantissa; in f32 only the order of the sums differs.
double tolerance(DenseForm form) { return form == DenseForm::BF16 ? 2e-5 : 1e-6; }

std::vector<float> run_dense(DenseCache& cache, DenseForm form, const Weight& w, const std::vector<float>& x,
                             int64_t rows, const float* residual = nullptr, int threads = 2) {
  std::vector<float> y(static_cast<size_t>(rows * w.m));
  paths::dense_matmul({w, x.data(), rows, y.data(), residual, threads}, cache, form);
  return y;
}

// --- the copies --------------------------------------------------------------------------------------------------

TEST(DensePadding, StrideSkipsMultiplesOf4KiB) {
  EXPECT_EQ(paths::dense_row_stride(2048, DenseForm::BF16) * 2, 4096 + 64);
  EXPECT_EQ(paths::dense_row_stride(1024, DenseForm::F32) * 4, 4096 + 64);
  EXPECT_EQ(paths::dense_row_stride(14336, DenseForm::BF16) * 2, 28672 + 64);
  EXPECT_EQ(paths::dense_row_stride(768, DenseForm::BF16), 768);
  EXPECT_EQ(paths::dense_row_stride(2048 + 32, DenseForm::BF16), 2048 + 32);
  const Weight w{.type = Type::Q4_K, .k = 2048, .m = 3, .data = nullptr};
  EXPECT_EQ(paths::dense_bytes(w, DenseForm::BF16), 3u * (4096 + 64));
}

TEST(DensePadding, CopyHoldsTheRowsAtTheStrideAligned) {
  std::mt19937 rng(7);
  const int64_t k = 2048, m = 5;
  const std::vector<float> source = random_values(static_cast<size_t>(m * k), rng);
  const std::vector<uint8_t> bytes = quantize(Type::BF16, source.data(), m, k);
  const Weight w{.type = Type::BF16, .k = k, .m = m, .data = bytes.data()};
  const paths::DenseWeight copy(w, DenseForm::BF16, 2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copy.data()) % 64, 0u);
  EXPECT_EQ(copy.stride(), k + 32);
  for (int64_t o = 0; o < m; ++o) {
    const auto* row = static_cast<const uint8_t*>(copy.data()) + o * copy.stride() * 2;
    EXPECT_EQ(std::memcmp(row, bytes.data() + o * k * 2, static_cast<size_t>(k * 2)), 0) << "row " << o;
  }
}

// --- accuracy ----------------------------------------------------------------------------------------------------

class DenseGolden : public ::testing::TestWithParam<Type> {};

TEST_P(DenseGolden, Bf16AndF32FormsMatchExactWithinTheirBounds) {
  GGUFMM_OPEN_GOLDEN(file, std::string(type_info(GetParam())->name) + ".gguf");
  const Weight w = file.weight("weight");
  DenseCache cache(1 << 30);
  for (const int n : {8, 37}) {
    const test::GoldenProduct golden = test::read_golden_product(file, n);
    for (const DenseForm form : kForms) {
      const std::vector<float> y = run_dense(cache, form, w, golden.act, n);
      const double error = nmse(y.data(), golden.exact.data(), y.size());
      RecordProperty(fmt::format("nmse_{}_n{}", form_name(form), n), fmt::format("{:.3e}", error));
      EXPECT_LE(error, tolerance(form)) << form_name(form) << " n=" << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DenseAllFormats, DenseGolden, ::testing::ValuesIn(test::weight_types()),
                         test::type_test_name);

class DenseRandom : public ::testing::TestWithParam<Type> {};

TEST_P(DenseRandom, ShapesWithAndWithoutResidualMatchExact) {
  const Type type = GetParam();
  const int64_t block = std::max<int64_t>(type_info(type)->block_size, 32);
  std::mt19937 rng(static_cast<unsigned>(type) + 1000);
  std::uniform_int_distribution<int64_t> rows_in(8, 600), m_in(1, 160), blocks_in(2, 8);
  DenseCache cache(1 << 30);
  for (int shape = 0; shape < 4; ++shape) {
    const int64_t rows = rows_in(rng), m = m_in(rng) | 1;  // odd m: a multiple of nothing the GEMM blocks by
    const int64_t k = (shape % 2 == 0 ? 1 : blocks_in(rng)) * block;
    const bool with_residual = shape >= 2;
    const RandomWeight weight(type, m, k, rng);
    const std::vector<float> x = random_values(static_cast<size_t>(rows * k), rng);
    const std::vector<float> residual = random_values(static_cast<size_t>(rows * m), rng);
    const float* r = with_residual ? residual.data() : nullptr;
    const std::vector<double> exact = exact_plus(weight.w, x.data(), rows, r);
    for (const DenseForm form : kForms) {
      const std::vector<float> y = run_dense(cache, form, weight.w, x, rows, r);
      EXPECT_LE(nmse(y.data(), exact.data(), y.size()), tolerance(form))
          << form_name(form) << " rows=" << rows << " m=" << m << " k=" << k << " residual=" << with_residual;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DenseAllFormats, DenseRandom, ::testing::ValuesIn(test::weight_types()),
                         test::type_test_name);

TEST(DenseResidual, MayBeTheOutputItself) {
  std::mt19937 rng(11);
  const int64_t rows = 40, m = 33, k = 512;
  const RandomWeight weight(Type::Q4_K, m, k, rng);
  const std::vector<float> x = random_values(static_cast<size_t>(rows * k), rng);
  const std::vector<float> residual = random_values(static_cast<size_t>(rows * m), rng);
  const std::vector<double> exact = exact_plus(weight.w, x.data(), rows, residual.data());
  DenseCache cache(1 << 30);
  for (const DenseForm form : kForms) {
    std::vector<float> y = residual;
    paths::dense_matmul({weight.w, x.data(), rows, y.data(), y.data(), 2}, cache, form);
    EXPECT_LE(nmse(y.data(), exact.data(), y.size()), tolerance(form)) << form_name(form);
  }
}

// --- the cache ---------------------------------------------------------------------------------------------------

TEST(DenseCaching, CountsHitsAndMisses) {
  std::mt19937 rng(1);
  const RandomWeight a(Type::Q8_0, 20, 256, rng), b(Type::Q8_0, 20, 256, rng);
  DenseCache cache(1 << 30);
  const auto first = cache.get(a.w, DenseForm::BF16, 1);
  EXPECT_EQ(cache.get(a.w, DenseForm::BF16, 1), first);  // the same copy, not another
  cache.get(b.w, DenseForm::BF16, 1);
  cache.get(a.w, DenseForm::F32, 1);  // another form is another copy
  const DenseCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.evictions, 0u);
  EXPECT_EQ(s.bytes_held, 2 * paths::dense_bytes(a.w, DenseForm::BF16) + paths::dense_bytes(a.w, DenseForm::F32));
  EXPECT_EQ(s.peak_bytes, s.bytes_held);
  cache.clear();
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().bytes_held, 0u);
  EXPECT_EQ(cache.stats().misses, 0u);
}

TEST(DenseCaching, ReleaseDropsTheCopiesOfWeightsStartingInTheRangeOnly) {
  std::mt19937 rng(3);
  const RandomWeight a(Type::Q8_0, 20, 256, rng), b(Type::Q8_0, 20, 256, rng);
  DenseCache cache(1 << 30);
  cache.get(a.w, DenseForm::BF16, 1);
  cache.get(a.w, DenseForm::F32, 1);
  cache.get(b.w, DenseForm::BF16, 1);
  cache.release(a.w.data, 1);  // a range holding only a's first byte still holds where a starts
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(cache.stats().bytes_held, paths::dense_bytes(b.w, DenseForm::BF16));
  cache.release(a.w.data, a.w.total_bytes());  // nothing of a's is left
  EXPECT_EQ(cache.stats().entries, 1u);
  cache.release(static_cast<const uint8_t*>(b.w.data) + 1, b.w.total_bytes());  // starts past b: b stays
  EXPECT_EQ(cache.stats().entries, 1u);
  cache.release(b.w.data, 0);  // an empty range holds nothing
  EXPECT_EQ(cache.stats().entries, 1u);
  cache.release(b.w.data, b.w.total_bytes());
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().bytes_held, 0u);
  cache.get(b.w, DenseForm::BF16, 1);  // made afresh, not served from a dropped entry
  EXPECT_EQ(cache.stats().misses, 4u);
}

TEST(DenseCaching, ConcurrentCallsOnTheSameAndDifferentWeightsDequantizeEachOnce) {
  std::mt19937 rng(2);
  const int64_t rows = 48, k = 512;
  std::vector<RandomWeight> weights;
  for (const int64_t m : {61, 17, 90}) weights.emplace_back(Type::Q4_K, m, k, rng);
  const std::vector<float> x = random_values(static_cast<size_t>(rows * k), rng);
  std::vector<std::vector<float>> expected;
  DenseCache solo(1 << 30);
  for (const auto& weight : weights) expected.push_back(run_dense(solo, DenseForm::BF16, weight.w, x, rows));

  constexpr int kThreads = 8;
  DenseCache shared(1 << 30);
  std::vector<std::vector<float>> got(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      got[t] = run_dense(shared, DenseForm::BF16, weights[t % weights.size()].w, x, rows);
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(same_bits(got[t], expected[t % weights.size()])) << "thread " << t;
  const DenseCacheStats s = shared.stats();
  EXPECT_EQ(s.misses, weights.size());
  EXPECT_EQ(s.hits, kThreads - weights.size());
}

TEST(DenseCaching, EvictsLeastRecentlyUsedAndGivesTheSameResultsAfter) {
  std::mt19937 rng(3);
  const int64_t rows = 33, m = 40, k = 256;
  std::vector<RandomWeight> weights;
  for (int i = 0; i < 3; ++i) weights.emplace_back(Type::Q6_K, m, k, rng);
  const std::vector<float> x = random_values(static_cast<size_t>(rows * k), rng);
  const size_t copy_bytes = paths::dense_bytes(weights[0].w, DenseForm::BF16);
  DenseCache cache(2 * copy_bytes);  // room for two copies

  const std::vector<float> first = run_dense(cache, DenseForm::BF16, weights[0].w, x, rows);
  run_dense(cache, DenseForm::BF16, weights[1].w, x, rows);
  run_dense(cache, DenseForm::BF16, weights[0].w, x, rows);  // 0 is now more recent than 1
  run_dense(cache, DenseForm::BF16, weights[2].w, x, rows);  // evicts 1
  DenseCacheStats s = cache.stats();
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.bytes_held, 2 * copy_bytes);
  EXPECT_EQ(s.peak_bytes, 2 * copy_bytes);
  run_dense(cache, DenseForm::BF16, weights[0].w, x, rows);
  EXPECT_EQ(cache.stats().hits, s.hits + 1) << "weight 0 should have stayed";

  cache.set_budget(copy_bytes / 2);  // below one copy: everything goes
  s = cache.stats();
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.bytes_held, 0u);
  EXPECT_EQ(s.evictions, 3u);
  cache.set_budget(2 * copy_bytes);
  EXPECT_TRUE(same_bits(run_dense(cache, DenseForm::BF16, weights[0].w, x, rows), first));
  EXPECT_EQ(cache.stats().misses, s.misses + 1);
}

TEST(DenseCaching, KeepsNothingLargerThanItsBudget) {
  std::mt19937 rng(4);
  const int64_t rows = 16, m = 24, k = 256;
  const RandomWeight weight(Type::Q4_0, m, k, rng);
  const std::vector<float> x = random_values(static_cast<size_t>(rows * k), rng);
  DenseCache cache(paths::dense_bytes(weight.w, DenseForm::F32) - 1);
  EXPECT_FALSE(cache.would_keep(paths::dense_bytes(weight.w, DenseForm::F32)));
  const std::vector<float> y = run_dense(cache, DenseForm::F32, weight.w, x, rows);
  EXPECT_LE(nmse(y.data(), exact_plus(weight.w, x.data(), rows, nullptr).data(), y.size()), 1e-6);
  const DenseCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.bytes_held, 0u);
  EXPECT_EQ(s.peak_bytes, 0u);
}

TEST(DenseCaching, ANewWeightAtAnOldAddressIsNotServedTheOldCopy) {
  std::mt19937 rng(5);
  const int64_t rows = 9, m = 15, k = 256;
  RandomWeight weight(Type::Q5_K, m, k, rng);
  const std::vector<float> x = random_values(static_cast<size_t>(rows * k), rng);
  DenseCache cache(1 << 30);
  run_dense(cache, DenseForm::F32, weight.w, x, rows);
  const RandomWeight other(Type::Q5_K, m, k, rng);
  std::copy(other.bytes.begin(), other.bytes.end(), weight.bytes.begin());
  const std::vector<float> y = run_dense(cache, DenseForm::F32, weight.w, x, rows);
  EXPECT_LE(nmse(y.data(), exact_plus(other.w, x.data(), rows, nullptr).data(), y.size()), 1e-6);
  EXPECT_EQ(cache.stats().misses, 2u);
  EXPECT_EQ(cache.stats().entries, 1u);
}

// --- the public API: when auto picks the path, the global cache, the C API ----------------------------------------

// Each test starts from an empty global cache with prefill dequant off, and leaves the settings as it found them.
class DenseApi : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_rows_ = paths::prefill_dequant_rows();
    saved_budget_ = DenseCache::global().budget();
    set_prefill_dequant(0);
    clear_dense_cache();
  }
  void TearDown() override {
    clear_dense_cache();
    set_prefill_dequant(saved_rows_);
    set_dense_cache_budget(saved_budget_);
  }

 private:
  int64_t saved_rows_ = 0;
  size_t saved_budget_ = 0;
};

TEST_F(DenseApi, DenseIsAnAvailablePathByNameAndNegativePrefillIsRefused) {
  EXPECT_EQ(path_from_name("dense"), Path::Dense);
  EXPECT_EQ(path_name(Path::Dense), "dense");
  const std::vector<Path> paths = available_paths();
  EXPECT_NE(std::find(paths.begin(), paths.end(), Path::Dense), paths.end());
  EXPECT_THROW(set_prefill_dequant(-1), Error);
}

TEST_F(DenseApi, NothingIsCachedUntilTheDensePathIsChosen) {
  std::mt19937 rng(6);
  const int64_t k = 256, m = 30;
  const RandomWeight weight(Type::Q4_K, m, k, rng);
  const auto run_auto = [&](int64_t rows) {
    const std::vector<float> x = random_values(static_cast<size_t>(rows * k), rng);
    std::vector<float> y(static_cast<size_t>(rows * m));
    matmul(weight.w, x.data(), rows, y.data(), nullptr, {.threads = 2});
    // Whichever path auto took; its own tests hold it to its own bound.
    EXPECT_LE(nmse(y.data(), exact_plus(weight.w, x.data(), rows, nullptr).data(), y.size()), 1e-3) << rows << " rows";
  };
  run_auto(64);  // prefill dequant off
  EXPECT_EQ(dense_cache_stats().misses, 0u);
  set_prefill_dequant(32);
  run_auto(31);
  run_auto(1);
  EXPECT_EQ(dense_cache_stats().misses, 0u);
  EXPECT_EQ(dense_cache_stats().entries, 0u);
  run_auto(32);
  run_auto(100);
  const DenseCacheStats s = dense_cache_stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.bytes_held, paths::dense_bytes(weight.w, paths::preferred_dense_form()));
}

TEST_F(DenseApi, AutoPassesOverAWeightLargerThanTheBudget) {
  std::mt19937 rng(7);
  const int64_t rows = 40, k = 256, m = 30;
  const RandomWeight weight(Type::Q8_0, m, k, rng);
  const std::vector<float> x = random_values(static_cast<size_t>(rows * k), rng);
  const std::vector<double> exact = exact_plus(weight.w, x.data(), rows, nullptr);
  std::vector<float> y(exact.size());
  set_prefill_dequant(32);
  set_dense_cache_budget(1024);
  matmul(weight.w, x.data(), rows, y.data(), nullptr, {.threads = 2});
  EXPECT_EQ(dense_cache_stats().misses, 0u);
  matmul(weight.w, x.data(), rows, y.data(), nullptr, {.path = Path::Dense, .threads = 2});
  EXPECT_LE(nmse(y.data(), exact.data(), y.size()), 2e-5);
  EXPECT_EQ(dense_cache_stats().misses, 1u);
  EXPECT_EQ(dense_cache_stats().entries, 0u);
}

TEST_F(DenseApi, ConcurrentCallsThroughTheApiCopyEachWeightOnce) {
  std::mt19937 rng(8);
  const int64_t rows = 64, k = 768;
  std::vector<RandomWeight> weights;
  for (const int64_t m : {45, 77}) weights.emplace_back(Type::IQ4_NL, m, k, rng);
  const std::vector<float> x = random_values(static_cast<size_t>(rows * k), rng);
  constexpr int kThreads = 4;
  std::vector<double> errors(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Weight& w = weights[static_cast<size_t>(t) % weights.size()].w;
      std::vector<float> y(static_cast<size_t>(rows * w.m));
      start.arrive_and_wait();
      matmul(w, x.data(), rows, y.data(), nullptr, {.path = Path::Dense, .threads = 1});
      errors[t] = nmse(y.data(), exact_plus(w, x.data(), rows, nullptr).data(), y.size());
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_LE(errors[t], 2e-5) << "thread " << t;
  EXPECT_EQ(dense_cache_stats().misses, weights.size());
  EXPECT_EQ(dense_cache_stats().hits, kThreads - weights.size());
}

TEST_F(DenseApi, CApiRunsTheDensePathAndReportsItsCache) {
  std::mt19937 rng(9);
  const int64_t rows = 37, k = 256, m = 21;
  const RandomWeight weight(Type::Q4_1, m, k, rng);
  const std::vector<float> x = random_values(static_cast<size_t>(rows * k), rng);
  const std::vector<double> exact = exact_plus(weight.w, x.data(), rows, nullptr);
  std::vector<float> y(exact.size());
  const ggufmm_weight w = {static_cast<uint32_t>(Type::Q4_1), k, m, 1, weight.bytes.data()};

  ASSERT_EQ(ggufmm_set_prefill_dequant(32), GGUFMM_OK);
  ASSERT_EQ(ggufmm_matmul(&w, x.data(), rows, y.data(), nullptr, nullptr), GGUFMM_OK) << ggufmm_last_error();
  EXPECT_LE(nmse(y.data(), exact.data(), y.size()), 2e-5);
  const ggufmm_options dense = {GGUFMM_PATH_DENSE, 2};
  ASSERT_EQ(ggufmm_matmul(&w, x.data(), rows, y.data(), nullptr, &dense), GGUFMM_OK) << ggufmm_last_error();
  EXPECT_LE(nmse(y.data(), exact.data(), y.size()), 2e-5);

  ggufmm_dense_cache_stats s;
  ASSERT_EQ(ggufmm_get_dense_cache_stats(&s), GGUFMM_OK);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.bytes_held, paths::dense_bytes(weight.w, paths::preferred_dense_form()));
  ASSERT_EQ(ggufmm_set_dense_cache_budget(0), GGUFMM_OK);
  ASSERT_EQ(ggufmm_get_dense_cache_stats(&s), GGUFMM_OK);
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.peak_bytes, paths::dense_bytes(weight.w, paths::preferred_dense_form()));
  ASSERT_EQ(ggufmm_set_dense_cache_budget(size_t{1} << 30), GGUFMM_OK);
  ASSERT_EQ(ggufmm_matmul(&w, x.data(), rows, y.data(), nullptr, &dense), GGUFMM_OK) << ggufmm_last_error();
  ASSERT_EQ(ggufmm_release_dense_copies(w.data, weight.w.total_bytes()), GGUFMM_OK);
  ASSERT_EQ(ggufmm_get_dense_cache_stats(&s), GGUFMM_OK);
  EXPECT_EQ(s.entries, 0u);
  ASSERT_EQ(ggufmm_clear_dense_cache(), GGUFMM_OK);
  ASSERT_EQ(ggufmm_get_dense_cache_stats(&s), GGUFMM_OK);
  EXPECT_EQ(s.misses, 0u);
  EXPECT_EQ(ggufmm_get_dense_cache_stats(nullptr), GGUFMM_BAD_USAGE);
  EXPECT_EQ(ggufmm_set_prefill_dequant(-5), GGUFMM_BAD_USAGE);
}

// --- the environment ---------------------------------------------------------------------------------------------

TEST(DenseEnv, PrefillDequantTakesRowCountsWhereOneMeans32AndRejectsOthers) {
  EXPECT_EQ(paths::parse_prefill_dequant(nullptr), 0);
  EXPECT_EQ(paths::parse_prefill_dequant(""), 0);
  EXPECT_EQ(paths::parse_prefill_dequant("0"), 0);
  EXPECT_EQ(paths::parse_prefill_dequant("1"), 32);
  EXPECT_EQ(paths::parse_prefill_dequant("64"), 64);
  for (const char* bad : {"-1", "on", "64rows", " 64"}) {
    EXPECT_THROW(paths::parse_prefill_dequant(bad), Error) << bad;
  }
}

TEST(DenseEnv, CacheBytesTakeKMGSuffixesAndRejectOthers) {
  EXPECT_EQ(paths::parse_cache_bytes(nullptr), std::nullopt);
  EXPECT_EQ(paths::parse_cache_bytes(""), std::nullopt);
  EXPECT_EQ(paths::parse_cache_bytes("0"), 0u);
  EXPECT_EQ(paths::parse_cache_bytes("123456"), 123456u);
  EXPECT_EQ(paths::parse_cache_bytes("2K"), 2048u);
  EXPECT_EQ(paths::parse_cache_bytes("512m"), 512u << 20);
  EXPECT_EQ(paths::parse_cache_bytes("8G"), size_t{8} << 30);
  for (const char* bad : {"-1", "8T", "8GB", "lots", "99999999999999999999G"}) {
    EXPECT_THROW(paths::parse_cache_bytes(bad), Error) << bad;
  }
}

}  // namespace
}  // namespace ggufmm
