#include "runtime/thread_pool.hpp"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <exception>

#include "runtime/settings.hpp"

namespace ggufmm::runtime {

struct ThreadPool::Job {
  const std::function<void(int64_t)>* task;
  int64_t n;
  int helpers_wanted;  // workers that may join besides the caller
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex mutex;
  std::condition_variable finished;
  std::exception_ptr error;
  int caller_cpu = -1;
};

ThreadPool::ThreadPool(int workers, std::chrono::microseconds spin) : spin_(spin) {
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

namespace {

// Asked once: glibc reads it from sysfs every time (an open, a read and a close: 14 us of a 35 us call of
// mul_mat_id on small experts).
int cores() {
  static const int count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return count;
}

// Keeps a worker off its caller's core. A worker that the caller wakes may be placed on the caller's core, and
// both then share it for milliseconds: on the 2-core VM, Q8_0 mul_mat_id of one token after a 20 ms pause took
// 450 to 550 us a call, every call of the next 12, against 260 to 300 with the worker on the other core. So a worker
// may run anywhere the process may but on the core its job's caller was on (the mask is set again only when that
// core changes; where it is the only core, the worker keeps the process's cores).
class AwayFromCaller {
 public:
  AwayFromCaller() : known_(sched_getaffinity(0, sizeof allowed_, &allowed_) == 0) {}
  void apply(int caller_cpu) {
    if (!known_ || caller_cpu == avoided_ || caller_cpu < 0 || caller_cpu >= CPU_SETSIZE) return;
    avoided_ = caller_cpu;
    cpu_set_t mask = allowed_;
    CPU_CLR(caller_cpu, &mask);
    sched_setaffinity(0, sizeof mask, CPU_COUNT(&mask) > 0 ? &mask : &allowed_);
  }

 private:
  cpu_set_t allowed_;  // the cores the process may run on, as the worker started
  bool known_;
  int avoided_ = -1;
};

}  // namespace

ThreadPool& ThreadPool::global() {
  static ThreadPool pool(cores() - 1, parse_spin(std::getenv("GGUFMM_SPIN_US")));
  return pool;
}

std::chrono::microseconds ThreadPool::parse_spin(const char* value) {
  if (!value || !*value) return kDefaultSpin;
  return std::chrono::microseconds(parse_count(
      "GGUFMM_SPIN_US", value, "microseconds for idle threads to poll before they sleep (0: never poll)"));
}

template <class Ready>
bool ThreadPool::spin_until(Ready ready) const {
  if (spin_.count() == 0) return ready();
  const auto end = std::chrono::steady_clock::now() + spin_;
  // The clock is read every 64 polls: a read takes as long as a few polls.
  for (int poll = 1;; ++poll) {
    if (ready()) return true;
    _mm_pause();
    if (poll % 64 == 0 && std::chrono::steady_clock::now() >= end) return ready();
  }
}

int ThreadPool::resolve_threads(int requested) { return requested <= 0 ? cores() : std::min(requested, cores()); }

void ThreadPool::work_on(Job& job) {
  int64_t finished_here = 0;
  for (int64_t i; (i = job.next.fetch_add(1)) < job.n; ++finished_here) {
    try {
      (*job.task)(i);
    } catch (...) {
      std::lock_guard lock(job.mutex);
      if (!job.error) job.error = std::current_exception();
    }
  }
  if (finished_here > 0 && job.done.fetch_add(finished_here) + finished_here == job.n) {
    std::lock_guard lock(job.mutex);
    job.finished.notify_all();
  }
}

void ThreadPool::worker_loop() {
  AwayFromCaller placement;
  for (;;) {
    std::shared_ptr<Job> job;
    spin_until([&] { return queued_.load() > 0; });
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = jobs_.front();
      // Each job takes as many workers as it asked for; then it leaves the queue.
      if (--job->helpers_wanted == 0) {
        jobs_.pop_front();
        queued_.store(jobs_.size());
      }
    }
    placement.apply(job->caller_cpu);
    work_on(*job);
  }
}

void ThreadPool::run(int threads, int64_t n, const std::function<void(int64_t)>& task) {
  if (n <= 0) return;
  const int helpers = static_cast<int>(std::min<int64_t>({resolve_threads(threads) - 1,
                                                          static_cast<int64_t>(workers_.size()), n - 1}));
  if (helpers == 0) {
    for (int64_t i = 0; i < n; ++i) task(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->task = &task;
  job->n = n;
  job->helpers_wanted = helpers;
  job->caller_cpu = sched_getcpu();
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(job);
    queued_.store(jobs_.size());
  }
  if (helpers == 1) {
    wake_.notify_one();
  } else {
    wake_.notify_all();
  }
  work_on(*job);
  if (!spin_until([&] { return job->done.load() == job->n; })) {
    std::unique_lock lock(job->mutex);
    job->finished.wait(lock, [&] { return job->done.load() == job->n; });
  }
  // Workers that have not picked the job up yet find nothing left to claim; drop it from the queue.
  {
    std::lock_guard lock(mutex_);
    std::erase(jobs_, job);
    queued_.store(jobs_.size());
  }
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace ggufmm::runtime
