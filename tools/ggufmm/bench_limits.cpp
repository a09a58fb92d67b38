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

// Runs body(t) for every t in [0, threads), each on a thread of its own, all at once; returns the seconds it took.
double run_together(int threads, const std::function<void(int)>& body) {
  const auto start = Clock::now();
  {
    std::vector<std::jthread> team;
    for (int t = 0; t < threads; ++t) team.emplace_back(body, t);
  }
  return seconds_since(start);
}

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

double measure_read_gbps(int threads, const Effort& effort) {
  const size_t segment_words = effort.segment_bytes / sizeof(uint64_t);
  const size_t segments = (effort.read_bytes + effort.segment_bytes - 1) / effort.segment_bytes;
  const auto buffer = std::make_unique_for_overwrite<uint64_t[]>(segments * segment_words);
  const auto share = [&](size_t segment, int t) {  // thread t's part of a segment
    uint64_t* start = buffer.get() + segment * segment_words;
    return std::span(start + segment_words * static_cast<size_t>(t) / static_cast<size_t>(threads),
                     start + segment_words * static_cast<size_t>(t + 1) / static_cast<size_t>(threads));
  };
  // Each thread writes its parts first, so that their pages exist (and sit near the thread that reads them).
  run_together(threads, [&](int t) {
    for (size_t segment = 0; segment < segments; ++segment) std::ranges::fill(share(segment, t), uint64_t{1});
  });
  // Segments in turn: each one is read after all the others, long gone from the caches.
  double best = std::numeric_limits<double>::infinity();
  for (int round = 0; round < effort.read_rounds; ++round) {
    for (size_t segment = 0; segment < segments; ++segment) {
      best = std::min(best, run_together(threads, [&](int t) {
        g_sink += static_cast<double>(sum_words(share(segment, t)));
      }));
    }
  }
  return static_cast<double>(effort.segment_bytes) / best / 1e9;
}

double measure_peak(const peaks::PeakLoop& loop, int threads, const Effort& effort) {
  // Iterations enough for one run to last peak_seconds, so that starting the threads costs next to nothing.
  int64_t iterations = 1024;
  for (;;) {
    const auto start = Clock::now();
    g_sink += loop.run(iterations);
    if (seconds_since(start) >= effort.peak_seconds) break;
    iterations *= 2;
  }
  double best = std::numeric_limits<double>::infinity();
  for (int pass = 0; pass < effort.peak_passes; ++pass) {
    best = std::min(best, run_together(threads, [&](int) { g_sink += loop.run(iterations); }));
  }
  return loop.ops_per_iteration * static_cast<double>(iterations) * threads / best / 1e9;
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
  limits.read_gbps = measure_read_gbps(limits.threads, effort);
  const support::Level level = support::highest_level();
  if (level >= support::Level::Avx512) {
    limits.int8_gops = measure_peak(peaks::avx512::int8, limits.threads, effort);
    limits.f32_gflops = measure_peak(peaks::avx512::f32, limits.threads, effort);
    if (__builtin_cpu_supports("avx512bf16")) {
      limits.bf16_gflops = measure_peak(peaks::avx512::bf16, limits.threads, effort);
    }
  } else if (level >= support::Level::Avx2) {
    const peaks::PeakLoop& int8 = level >= support::Level::AvxVnni ? peaks::avxvnni::int8 : peaks::avx2::int8;
    limits.int8_gops = measure_peak(int8, limits.threads, effort);
    limits.f32_gflops = measure_peak(peaks::avx2::f32, limits.threads, effort);
  }
  return limits;
}

}  // namespace ggufmm::cli
