#include "timing.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>

namespace ggufmm::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kWarmupSeconds = 0.2;
constexpr size_t kWarmupCalls = 1000;
constexpr double kSlowCallSeconds = 0.1;
constexpr double kBudgetSeconds = 0.3;
constexpr double kSlowCapSeconds = 1.0;
constexpr size_t kMinRepeats = 3;
constexpr size_t kMaxRepeats = 200;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

std::vector<Repeat> time_repeats(const std::function<void(size_t)>& timed, const std::function<void(size_t)>& prepare) {
  std::vector<Repeat> repeats;
  size_t number = 0;
  const auto call = [&] {
    prepare(number);
    const auto before = Clock::now();
    timed(number);
    return Repeat{number++, seconds_since(before)};
  };
  auto start = Clock::now();
  if (const Repeat first = call(); first.seconds >= kSlowCallSeconds) {
    repeats.push_back(first);  // too slow to repeat for a warm-up: timed
  } else {
    while (number < kWarmupCalls && seconds_since(start) < kWarmupSeconds) call();
    start = Clock::now();
  }
  const auto done = [&] {
    const double spent = seconds_since(start);
    return repeats.size() >= kMaxRepeats || (!repeats.empty() && spent >= kSlowCapSeconds) ||
           (repeats.size() >= kMinRepeats && spent >= kBudgetSeconds);
  };
  while (!done()) repeats.push_back(call());
  return repeats;
}

const Repeat& median_repeat(const std::vector<Repeat>& repeats) {
  std::vector<size_t> order(repeats.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const auto middle = order.begin() + static_cast<ptrdiff_t>(order.size() / 2);
  std::ranges::nth_element(order, middle, {}, [&](size_t i) { return repeats[i].seconds; });
  return repeats[*middle];
}

Progress::Progress() : tty_(::isatty(STDERR_FILENO) != 0) {}
Progress::~Progress() { show(""); }
void Progress::show(const std::string& text) const {
  if (tty_) {
    fmt::print(stderr, "\r\033[K{}", text);
  } else if (!text.empty()) {
    fmt::print(stderr, "{}\n", text);
  }
}

}  // namespace ggufmm::cli
