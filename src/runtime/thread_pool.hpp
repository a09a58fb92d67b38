// A fixed pool of worker threads shared by every call; several callers may run jobs at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ggufmm::runtime {

// How long a thread left without work polls for more before it sleeps: a worker between jobs, and a caller whose
// helpers are still on its job. Waking a sleeping thread costs tens of microseconds on a virtual machine, whose
// idle core halts until the hypervisor resumes it; a decode step's product of a small matrix takes a few hundred.
inline constexpr std::chrono::microseconds kDefaultSpin{200};

class ThreadPool {
 public:
  explicit ThreadPool(int workers, std::chrono::microseconds spin = kDefaultSpin);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs task(i) for every i in [0, n) on at most `threads` threads, the calling thread included, and returns
  // when all are done. The first exception thrown by a task is rethrown here.
  void run(int threads, int64_t n, const std::function<void(int64_t)>& task);

  // The process-wide pool, with one thread per core (the caller counts as one).
  static ThreadPool& global();
  // The number of threads a call with `requested` threads gets: all cores for 0, else at most the cores.
  static int resolve_threads(int requested);
  // GGUFMM_SPIN_US: microseconds to poll (0: sleep at once); kDefaultSpin when unset or empty.
  static std::chrono::microseconds parse_spin(const char* value);

 private:
  struct Job;
  void worker_loop();
  static void work_on(Job& job);
  // Polls until ready() holds or the spin time has passed; returns ready().
  template <class Ready>
  bool spin_until(Ready ready) const;

  const std::chrono::microseconds spin_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::atomic<size_t> queued_{0};  // jobs_.size(), for polling without the lock
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ggufmm::runtime
