// What the measuring subcommands (bench, calibrate) share: repeated timing and a progress line.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ggufmm::cli {

// The times in seconds of timed(repeat), each after an untimed prepare(repeat): until 0.3 s have passed and at
// least 3 calls ran, at most 200; a call so slow that the repeats reach 1 s stops there, after at least one.
std::vector<double> time_repeats(const std::function<void(size_t)>& timed,
                                 const std::function<void(size_t)>& prepare = [](size_t) {});

// The repeat whose time is the median.
size_t median_repeat(const std::vector<double>& times);

// One line on stderr, rewritten in place; nothing unless stderr is a terminal. Cleared when it goes, error or not.
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
