#include "timing.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>

namespace ggufmm::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kBudgetSeconds = 0.3;
constexpr double kSlowCapSeconds = 1.0;
constexpr size_t kMinRepeats = 3;
constexpr size_t kMaxRepeats = 200;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

std::vector<double> time_repeats(const std::function<void(size_t)>& timed, const std::function<void(size_t)>& prepare) {
  std::vector<double> times;
  const auto start = Clock::now();
  for (;;) {
    prepare(times.size());
    const auto before = Clock::now();
    timed(times.size());
    times.push_back(seconds_since(before));
    const double spent = seconds_since(start);
    if (times.size() >= kMaxRepeats || spent >= kSlowCapSeconds ||
        (times.size() >= kMinRepeats && spent >= kBudgetSeconds)) {
      break;
    }
  }
  return times;
}

size_t median_repeat(const std::vector<double>& times) {
  std::vector<size_t> order(times.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const auto middle = order.begin() + static_cast<ptrdiff_t>(order.size() / 2);
  std::ranges::nth_element(order, middle, {}, [&](size_t repeat) { return times[repeat]; });
  return *middle;
}

Progress::Progress() : tty_(::isatty(STDERR_FILENO) != 0) {}
Progress::~Progress() { show(""); }
void Progress::show(const std::string& text) const {
  if (tty_) fmt::print(stderr, "\r\033[K{}", text);
}

}  // namespace ggufmm::cli
