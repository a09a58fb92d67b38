// The thread pool: every task runs once whether idle threads poll or sleep, errors reach the caller, and the
// polling time comes from GGUFMM_SPIN_US.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ggufmm/ggufmm.hpp"
#include "runtime/thread_pool.hpp"

namespace {

using ggufmm::runtime::kDefaultSpin;
using ggufmm::runtime::ThreadPool;
using std::chrono::microseconds;

class PoolSpin : public ::testing::TestWithParam<int> {};

TEST_P(PoolSpin, EveryTaskRunsOnceInBackToBackJobs) {
  ThreadPool pool(3, microseconds(GetParam()));
  for (int64_t n : {1, 2, 3, 7, 64, 1000}) {
    for (int job = 0; job < 20; ++job) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      pool.run(4, n, [&](int64_t i) { runs[static_cast<size_t>(i)].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << n << " " << i;
    }
  }
}

TEST_P(PoolSpin, JobsFromSeveralCallersAllFinish) {
  ThreadPool pool(2, microseconds(GetParam()));
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int job = 0; job < 50; ++job) pool.run(3, 17, [&](int64_t i) { total.fetch_add(i); });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 50 * (16 * 17 / 2));
}

TEST_P(PoolSpin, ATaskErrorReachesTheCaller) {
  ThreadPool pool(2, microseconds(GetParam()));
  std::atomic<int> runs{0};
  EXPECT_THROW(pool.run(3, 100,
                        [&](int64_t i) {
                          runs.fetch_add(1);
                          if (i == 37) throw std::runtime_error("task 37");
                        }),
               std::runtime_error);
  // The other tasks still ran, and the pool takes the next job.
  EXPECT_EQ(runs.load(), 100);
  pool.run(3, 5, [&](int64_t) { runs.fetch_add(1); });
  EXPECT_EQ(runs.load(), 105);
}

INSTANTIATE_TEST_SUITE_P(SleepAtOnceOrPoll, PoolSpin, ::testing::Values(0, 200, 5000));

TEST(PoolSpin, SettingFromTheEnvironment) {
  EXPECT_EQ(ThreadPool::parse_spin(nullptr), kDefaultSpin);
  EXPECT_EQ(ThreadPool::parse_spin(""), kDefaultSpin);
  EXPECT_EQ(ThreadPool::parse_spin("0"), microseconds(0));
  EXPECT_EQ(ThreadPool::parse_spin("1500"), microseconds(1500));
  for (const char* bad : {"-1", "fast", "200us", " 200"}) {
    EXPECT_THROW(ThreadPool::parse_spin(bad), ggufmm::Error) << bad;
  }
}

}  // namespace
