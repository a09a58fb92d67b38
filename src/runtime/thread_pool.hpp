// A fixed pool of worker threads shared by every call; several callers may run jobs at once.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ggufmm::runtime {

class ThreadPool {
 public:
  explicit ThreadPool(int workers);
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

 private:
  struct Job;
  void worker_loop();
  static void work_on(Job& job);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ggufmm::runtime
