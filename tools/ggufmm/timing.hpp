// What the measuring subcommands (bench, calibrate) share: repeated timing and a progress line.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ggufmm::cli {

// One timed call: its number among the calls of time_repeats, and its time.
struct Repeat {
  size_t number;
  double seconds;
};

// Calls timed(r), each after an untimed prepare(r), for r = 0, 1, ... The calls of the first 0.2 s (at most
// 1000 of them) warm up, untimed: the first call of a case pays for its scratch memory, and on a VM the calls
// after a pause (the bench placing copies of a weight) ran slower for a few tenths of a second (docs/performance.md,
// how to measure). The peers' harnesses time 1 s after their warm-up. A case whose first call takes 0.1 s or more
// times that call instead. Then the timed calls: until 0.3 s have passed and at least 3 calls ran, at most 200; a call so slow
// that the repeats reach 1 s stops there, after at least one.
std::vector<Repeat> time_repeats(const std::function<void(size_t)>& timed,
                                 const std::function<void(size_t)>& prepare = [](size_t) {});

// The repeat whose time is the median.
const Repeat& median_repeat(const std::vector<Repeat>& repeats);

// What is being measured, on stderr: on a terminal one line rewritten in place (cleared when it goes, error or not);
// elsewhere (a log, a pipe) one line per step, so that a long run is not silent.
class Progress {
 public:
  Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();
  void show(const std::string& text) const;

 private:
  bool tty_;
};

}  // namespace ggufmm::cli
