#include "bench_limits.hpp"

#include <cpuinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "bench_peaks.hpp"
#include "tool_support.hpp"

namespace ggufmm::cli {
namespace {

using Clock = std::chrono::steady_clock;

// How hard to try: the full measurement, or the quick one for tests. Passes are short, as the products timed
// later are, so that the best of them shows the machine's rate even while other work takes turns on its cores.
struct Effort {
  size_t read_bytes;
  size_t segment_bytes;  // what one read pass reads
  int read_rounds;       // passes over the whole buffer
  double peak_seconds;   // the least time one peak loop runs for
  int peak_passes;
};

// The measured loops' results end here, so that none of them can be dropped as unused.
std::atomic<double> g_sink{0.0};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Threads started once and kept running between passes, as the library's pool keeps its workers between calls.
// Threads started for each pass shared one virtual CPU often enough that the limits came out at one core's worth
// while the products ran on all: int8 1070 GOPS with two threads as with one, reads 31 to 66 GB/s where a team
// kept running read 67 to 72 (2 cores of the Zen 5 VM), and the products' roof_frac rose above 1. Waiting threads
// spin for a while, as the pool's do, then sleep, so that one that shares its core with the thread it waits for
// lets that one run.
class Team {
 public:
  explicit Team(int threads) {
    for (int t = 1; t < threads; ++t) helpers_.emplace_back([this, t] { serve(t); });
  }
  ~Team() {
    stop_ = true;
    generation_.fetch_add(1);
    generation_.notify_all();
  }
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  int size() const { return static_cast<int>(helpers_.size()) + 1; }

  // Runs body(t) for every t in [0, threads) at once, t = 0 on the calling thread; returns the seconds from their
  // release to the last one's end.
  double run(const std::function<void(int)>& body) {
    body_ = &body;
    done_.store(0);
    const auto start = Clock::now();
    generation_.fetch_add(1);
    generation_.notify_all();
    body(0);
    for (int64_t done; (done = done_.load()) < std::ssize(helpers_);) await(done_, done);
    return seconds_since(start);
  }

 private:
  static constexpr double kSpinSeconds = 200e-6;  // the library's default (GGUFMM_SPIN_US)

  // Returns once `value` is no longer `old`.
  template <class T>
  static void await(const std::atomic<T>& value, T old) {
    const auto start = Clock::now();
    while (value.load() == old) {
      if (seconds_since(start) > kSpinSeconds) return value.wait(old);
    }
  }

  void serve(int t) {
    for (uint64_t seen = 0;;) {
      await(generation_, seen);
      seen = generation_.load();
      if (stop_) return;
      (*body_)(t);
      done_.fetch_add(1);
      done_.notify_one();
    }
  }

  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int)>* body_ = nullptr;
  std::vector<std::jthread> helpers_;  // last: joined first, while the rest is still there
};

// Independent sums, which the compiler vectorizes: a single chain of adds takes one load a cycle and capped
// the measure below what wide loads read.
uint64_t sum_words(std::span<const uint64_t> words) {
  constexpr size_t kLanes = 16;
  uint64_t sums[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= words.size(); i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) sums[j] += words[i + j];
  }
  uint64_t sum = 0;
  for (; i < words.size(); ++i) sum += words[i];
  for (const uint64_t s : sums) sum += s;
  return sum;
}

double measure_read_gbps(Team& team, const Effort& effort) {
  const auto threads = static_cast<size_t>(team.size());
  const size_t segment_words = effort.segment_bytes / sizeof(uint64_t);
  const size_t segments = (effort.read_bytes + effort.segment_bytes - 1) / effort.segment_bytes;
  const auto buffer = std::make_unique_for_overwrite<uint64_t[]>(segments * segment_words);
  const auto share = [&](size_t segment, int t) {  // thread t's part of a segment
    uint64_t* start = buffer.get() + segment * segment_words;
    return std::span(start + segment_words * static_cast<size_t>(t) / threads,
                     start + segment_words * static_cast<size_t>(t + 1) / threads);
  };
  // Each thread writes its parts first, so that their pages exist (and sit near the thread that reads them).
  team.run([&](int t) {
    for (size_t segment = 0; segment < segments; ++segment) std::ranges::fill(share(segment, t), uint64_t{1});
  });
  // Segments in turn: each one is read after all the others, long gone from the caches.
  double best = std::numeric_limits<double>::infinity();
  for (int round = 0; round < effort.read_rounds; ++round) {
    for (size_t segment = 0; segment < segments; ++segment) {
      best = std::min(best, team.run([&](int t) { g_sink += static_cast<double>(sum_words(share(segment, t))); }));
    }
  }
  return static_cast<double>(effort.segment_bytes) / best / 1e9;
}

double measure_peak(Team& team, const peaks::PeakLoop& loop, const Effort& effort) {
  // Iterations enough for one run to last peak_seconds, so that releasing and awaiting the team cost next to nothing.
  int64_t iterations = 1024;
  for (;;) {
    const auto start = Clock::now();
    g_sink += loop.run(iterations);
    if (seconds_since(start) >= effort.peak_seconds) break;
    iterations *= 2;
  }
  double best = std::numeric_limits<double>::infinity();
  for (int pass = 0; pass < effort.peak_passes; ++pass) {
    best = std::min(best, team.run([&](int) { g_sink += loop.run(iterations); }));
  }
  return loop.ops_per_iteration * static_cast<double>(iterations) * team.size() / best / 1e9;
}

}  // namespace

size_t last_level_cache_bytes() {
  if (cpuinfo_initialize() && cpuinfo_get_l3_caches_count() > 0) {
    size_t total = 0;  // over all sockets: a copy must be out of every one of them
    for (uint32_t i = 0; i < cpuinfo_get_l3_caches_count(); ++i) total += cpuinfo_get_l3_cache(i)->size;
    return total;
  }
  if (const long size = ::sysconf(_SC_LEVEL3_CACHE_SIZE); size > 0) return static_cast<size_t>(size);
  return size_t{32} << 20;
}

MachineLimits measure_limits(int threads, bool quick) {
  // The full read buffer is far beyond the last-level cache, so that the reads come from memory.
  const Effort effort = quick ? Effort{size_t{64} << 20, size_t{16} << 20, 1, 0.001, 2}
                              : Effort{std::max(size_t{1} << 30, 4 * last_level_cache_bytes()), size_t{64} << 20, 3,
                                       0.005, 10};
  MachineLimits limits{.threads = support::resolve_threads(threads)};
  Team team(limits.threads);
  limits.read_gbps = measure_read_gbps(team, effort);
  const support::Level level = support::highest_level();
  if (level >= support::Level::Avx512) {
    limits.int8_gops = measure_peak(team, peaks::avx512::int8, effort);
    limits.f32_gflops = measure_peak(team, peaks::avx512::f32, effort);
    if (__builtin_cpu_supports("avx512bf16")) {
      limits.bf16_gflops = measure_peak(team, peaks::avx512::bf16, effort);
    }
  } else if (level >= support::Level::Avx2) {
    const peaks::PeakLoop& int8 = level >= support::Level::AvxVnni ? peaks::avxvnni::int8 : peaks::avx2::int8;
    limits.int8_gops = measure_peak(team, int8, effort);
    limits.f32_gflops = measure_peak(team, peaks::avx2::f32, effort);
  }
  return limits;
}

}  // namespace ggufmm::cli
