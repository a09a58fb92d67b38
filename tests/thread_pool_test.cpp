// The thread pool: every task runs once whether idle threads poll or sleep, errors reach the caller, the polling
// time comes from GGUFMM_SPIN_US, and a worker keeps off its caller's core where it has another.
#include <gtest/gtest.h>
#include <sched.h>

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

TEST(PoolSpin, SpinParsesFromTheEnvironmentAndRejectsBadValues) {
  EXPECT_EQ(ThreadPool::parse_spin(nullptr), kDefaultSpin);
  EXPECT_EQ(ThreadPool::parse_spin(""), kDefaultSpin);
  EXPECT_EQ(ThreadPool::parse_spin("0"), microseconds(0));
  EXPECT_EQ(ThreadPool::parse_spin("1500"), microseconds(1500));
  for (const char* bad : {"-1", "fast", "200us", " 200"}) {
    EXPECT_THROW(ThreadPool::parse_spin(bad), ggufmm::Error) << bad;
  }
}

// Runs two tasks, each waiting until both have started, so that the caller runs one and a worker the other;
// returns the worker's affinity mask, read in its task.
cpu_set_t worker_mask(ThreadPool& pool) {
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> started{0};
  cpu_set_t mask;
  CPU_ZERO(&mask);
  pool.run(2, 2, [&](int64_t) {
    started.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    if (std::this_thread::get_id() != caller) sched_getaffinity(0, sizeof mask, &mask);
  });
  EXPECT_EQ(started.load(), 2);
  return mask;
}

TEST(PoolPlacement, AWorkerMayRunOnEveryCoreButItsCallers) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) {
    GTEST_SKIP() << "one core: a worker shares it";
  }
  ThreadPool pool(1, microseconds(0));
  const cpu_set_t mask = worker_mask(pool);
  EXPECT_EQ(CPU_COUNT(&mask), CPU_COUNT(&allowed) - 1);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mask)) {
      EXPECT_TRUE(CPU_ISSET(c, &allowed)) << c;
    }
  }
}

TEST(PoolPlacement, OnOneCoreAWorkerKeepsIt) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) {
      CPU_SET(c, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  {
    ThreadPool pool(1, microseconds(0));  // its worker starts with this thread's one core
    const cpu_set_t mask = worker_mask(pool);
    EXPECT_TRUE(CPU_EQUAL(&mask, &one));
  }
  sched_setaffinity(0, sizeof allowed, &allowed);
}

}  // namespace
