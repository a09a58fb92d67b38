// ggufmm bench [MODEL.gguf]: times products of activations and quantized weights, each against the limit of the
// machine that binds it: memory bandwidth for the few rows of decode, int8 arithmetic for batches.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <tuple>

#include "bench_limits.hpp"
#include "bench_report.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "ggufmm/gguf.hpp"

namespace ggufmm::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  int64_t m, k;
};

// The embedded default: today's common formats on the matrices of an 8B model's layers (attention and FFN
// down: 4096 x 4096 and 4096 x 14336; FFN up and gate: 14336 x 4096), at decode row counts.
const std::vector<std::string> kDefaultTypes = {"q4_0", "q8_0", "q4_K", "q5_K", "q6_K", "iq2_xs", "iq3_xxs", "iq4_xs"};
constexpr Shape kDefaultShapes[] = {{4096, 4096}, {14336, 4096}, {4096, 14336}};
const std::vector<int64_t> kDefaultSizes = {4096, 14336};  // m or k, where only the other one is given
const std::vector<int64_t> kDefaultN = {1, 2, 4};

// Repeats of one case: until kBudgetSeconds have passed and kMinRepeats calls ran, at most kMaxRepeats; a case so
// slow that it reaches kSlowCapSeconds stops there, after at least one call.
constexpr double kBudgetSeconds = 0.3;
constexpr double kSlowCapSeconds = 1.0;
constexpr size_t kMinRepeats = 3;
constexpr size_t kMaxRepeats = 200;

// Random weights repeat one pool of distinct blocks: quantizing from f32 takes seconds per million values for
// the searching quantizers, and a kernel's speed does not depend on which blocks it reads.
constexpr int64_t kPoolRows = 128;
constexpr int64_t kPoolBlocksPerRow = 16;

// Cold copies together span this many times the last-level cache, so that none is still cached at its turn.
constexpr size_t kColdCacheMultiple = 3;
constexpr size_t kCopyAlignment = 64;  // a cache line, as GGUF files align their tensors

[[noreturn]] void bad_usage(const std::string& message) { throw Error(Error::Kind::BadUsage, message); }

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// A comma-separated list option.
struct ListOption {
  std::string text;
  CLI::Option* option = nullptr;

  bool given() const { return option->count() > 0; }

  std::vector<std::string> items() const {
    if (text.empty()) bad_usage(fmt::format("{}: empty list", option->get_name()));
    std::vector<std::string> out;
    for (size_t at = 0; at <= text.size();) {
      const size_t comma = std::min(text.find(',', at), text.size());
      out.push_back(text.substr(at, comma - at));
      if (out.back().empty()) bad_usage(fmt::format("{}: empty item in '{}'", option->get_name(), text));
      at = comma + 1;
    }
    return out;
  }

  // Positive integers.
  std::vector<int64_t> sizes() const {
    std::vector<int64_t> out;
    for (const std::string& item : items()) {
      int64_t value = 0;
      const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
      if (error != std::errc() || end != item.data() + item.size() || value <= 0) {
        bad_usage(fmt::format("{}: '{}' is not a positive integer", option->get_name(), item));
      }
      out.push_back(value);
    }
    return out;
  }
};

struct Settings {
  std::string model;
  ListOption types, m, k, n;
  std::string path = "auto";
  int threads = 0;
  bool warm = false;
  std::string format = "table";
  bool quick_limits = false;
};

// One weight matrix to time.
struct Subject {
  const TypeInfo* type;
  int64_t m, k;
  std::span<const uint8_t> source;  // its bytes: a tensor's in the model file, or a pool of random blocks to repeat

  size_t bytes() const {
    return static_cast<size_t>(m * (k / type->block_size)) * static_cast<size_t>(type->block_bytes);
  }
};

// One line on stderr, rewritten in place; nothing unless stderr is a terminal. Cleared when it goes, error or not.
class Progress {
 public:
  Progress() = default;
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { show(""); }
  void show(const std::string& text) const {
    if (tty_) fmt::print(stderr, "\r\033[K{}", text);
  }

 private:
  bool tty_ = ::isatty(STDERR_FILENO) != 0;
};

std::vector<Path> parse_paths(const std::string& name) {
  if (name == "all") return available_paths();
  if (const auto path = path_from_name(name)) return {*path};
  std::string names;
  for (const Path p : available_paths()) names += fmt::format("|{}", path_name(p));
  bad_usage(fmt::format("unknown --path {}: use auto{}|all", name, names));
}

std::vector<const TypeInfo*> parse_types(const std::vector<std::string>& names) {
  std::vector<const TypeInfo*> types;
  for (const std::string& name : names) {
    const TypeInfo* t = type_info(name);
    if (!t) bad_usage(fmt::format("unknown --type {}", name));
    if (!t->is_weight) bad_usage(fmt::format("--type {} is not a weight format", name));
    types.push_back(t);
  }
  return types;
}

// Every distinct (type, m, k) among the file's weights that the options select; a 3-D tensor of experts counts as
// its first matrix.
std::vector<Subject> file_subjects(const gguf::File& file, const Settings& s) {
  const auto types = s.types.given() ? parse_types(s.types.items()) : std::vector<const TypeInfo*>{};
  const auto ms = s.m.given() ? s.m.sizes() : std::vector<int64_t>{};
  const auto ks = s.k.given() ? s.k.sizes() : std::vector<int64_t>{};
  const auto selected = [](const auto& wanted, const auto& value) {
    return wanted.empty() || std::ranges::find(wanted, value) != wanted.end();
  };
  std::vector<Subject> subjects;
  std::set<std::tuple<Type, int64_t, int64_t>> seen;
  for (const gguf::TensorInfo& t : file.tensors()) {
    const TypeInfo* info = type_info(t.type);
    if (!info->is_weight || (t.shape.size() != 2 && t.shape.size() != 3)) continue;
    Subject subject{info, t.shape[1], t.shape[0], {}};
    if (!selected(types, info) || !selected(ms, subject.m) || !selected(ks, subject.k)) continue;
    if (!seen.emplace(t.type, subject.m, subject.k).second) continue;
    subject.source = {t.data, subject.bytes()};
    subjects.push_back(subject);
  }
  if (subjects.empty()) {
    const bool selective = s.types.given() || s.m.given() || s.k.given();
    throw Error(selective ? Error::Kind::BadUsage : Error::Kind::BadInput,
                fmt::format("{}: no 2-D or 3-D weight tensor{}", file.path(),
                            selective ? " of the --type, --m and --k given" : ""));
  }
  return subjects;
}

// Random weights of every type asked for, in every shape; `pools` receives the blocks they repeat.
std::vector<Subject> random_subjects(const Settings& s, std::vector<std::vector<uint8_t>>& pools,
                                     const Progress& progress) {
  const auto types = parse_types(s.types.given() ? s.types.items() : kDefaultTypes);
  std::vector<Shape> shapes(std::begin(kDefaultShapes), std::end(kDefaultShapes));
  if (s.m.given() || s.k.given()) {
    shapes.clear();
    for (const int64_t m : s.m.given() ? s.m.sizes() : kDefaultSizes) {
      for (const int64_t k : s.k.given() ? s.k.sizes() : kDefaultSizes) shapes.push_back({m, k});
    }
  }
  for (const TypeInfo* t : types) {
    for (const Shape& shape : shapes) {
      if (shape.k % t->block_size != 0) {
        bad_usage(fmt::format("--k {} is not a multiple of the {} block size {}", shape.k, t->name, t->block_size));
      }
    }
  }
  std::mt19937 rng(20260101);
  std::vector<Subject> subjects;
  for (const TypeInfo* t : types) {
    progress.show(fmt::format("making random {} blocks", t->name));
    pools.push_back(random_weights(*t, kPoolRows, kPoolBlocksPerRow * t->block_size, rng));
    for (const Shape& shape : shapes) subjects.push_back({t, shape.m, shape.k, pools.back()});
  }
  return subjects;
}

// How many copies of a weight the repeats rotate through.
size_t copy_count(const Subject& subject, bool warm) {
  if (warm) return 1;
  const size_t cold_bytes = kColdCacheMultiple * last_level_cache_bytes();
  return std::max<size_t>(2, (cold_bytes + subject.bytes() - 1) / subject.bytes());
}

// A lone copy of bytes that hold a whole weight is those bytes themselves (a model file's mapping, say).
bool needs_copying(const Subject& subject, size_t copies) { return copies > 1 || subject.source.size() < subject.bytes(); }

size_t arena_bytes(const Subject& subject, size_t copies) {
  return needs_copying(subject, copies) ? copies * round_up(subject.bytes(), kCopyAlignment) : 0;
}

// Lays out the copies in `arena`, each the subject's source repeated to the weight's size.
std::vector<const uint8_t*> place_copies(const Subject& subject, size_t copies, uint8_t* arena) {
  if (!needs_copying(subject, copies)) return {subject.source.data()};
  std::vector<const uint8_t*> placed;
  for (size_t c = 0; c < copies; ++c) {
    uint8_t* copy = arena + c * round_up(subject.bytes(), kCopyAlignment);
    for (size_t at = 0; at < subject.bytes(); at += subject.source.size()) {
      std::memcpy(copy + at, subject.source.data(), std::min(subject.source.size(), subject.bytes() - at));
    }
    placed.push_back(copy);
  }
  return placed;
}

// Allocated without being touched, so that untouched room costs nothing.
using AlignedBytes = std::unique_ptr<uint8_t[], decltype([](uint8_t* p) { std::free(p); })>;
AlignedBytes allocate_aligned(size_t bytes) {
  void* memory = std::aligned_alloc(kCopyAlignment, round_up(std::max<size_t>(bytes, 1), kCopyAlignment));
  if (!memory) throw std::bad_alloc();
  return AlignedBytes(static_cast<uint8_t*>(memory));
}

// The median time of call(repeat), repeated as kMinRepeats and the others say.
double median_seconds(const std::function<void(size_t)>& call) {
  std::vector<double> times;
  const auto start = Clock::now();
  for (;;) {
    const auto before = Clock::now();
    call(times.size());
    times.push_back(seconds_since(before));
    const double spent = seconds_since(start);
    if (times.size() >= kMaxRepeats || spent >= kSlowCapSeconds ||
        (times.size() >= kMinRepeats && spent >= kBudgetSeconds)) {
      break;
    }
  }
  std::ranges::nth_element(times, times.begin() + static_cast<ptrdiff_t>(times.size() / 2));
  return times[times.size() / 2];
}

BenchResult result_of(const Subject& subject, int64_t n, Path path, double seconds, const MachineLimits& machine) {
  const double gflops = 2.0 * static_cast<double>(subject.m * subject.k * n) / seconds / 1e9;
  const double weight_gbps = static_cast<double>(subject.bytes()) / seconds / 1e9;
  // Below 8 rows a product is bound by reading its weight; from 8 rows on, by int8 arithmetic.
  const double got = n < 8 ? weight_gbps : gflops;
  const double roof = n < 8 ? machine.read_gbps : machine.int8_gops;
  return {std::string(subject.type->name), subject.m, subject.k, n, std::string(path_name(path)), machine.threads,
          seconds * 1e6, gflops, weight_gbps, roof > 0.0 ? got / roof : 0.0};
}

struct Measurements {
  MachineLimits machine;
  std::vector<BenchResult> results;
};

Measurements measure(const Settings& s) {
  const std::vector<Path> paths = parse_paths(s.path);
  const std::vector<int64_t> ns = s.n.given() ? s.n.sizes() : kDefaultN;
  const Progress progress;
  std::optional<gguf::File> file;
  std::vector<std::vector<uint8_t>> pools;
  std::vector<Subject> subjects;
  if (!s.model.empty()) {
    file.emplace(gguf::File::open(s.model));
    subjects = file_subjects(*file, s);
  } else {
    subjects = random_subjects(s, pools, progress);
  }

  progress.show("measuring the machine's limits");
  Measurements out{measure_limits(s.threads, s.quick_limits), {}};

  size_t arena_size = 0;
  for (const Subject& subject : subjects) {
    arena_size = std::max(arena_size, arena_bytes(subject, copy_count(subject, s.warm)));
  }
  const AlignedBytes arena = allocate_aligned(arena_size);

  std::mt19937 rng(20260102);
  std::normal_distribution<float> normal;
  const size_t cases = subjects.size() * ns.size() * paths.size();
  for (const Subject& subject : subjects) {
    const std::string label = fmt::format("{} {}x{}", subject.type->name, subject.m, subject.k);
    progress.show(fmt::format("[{}/{}] {}: copying the weight", out.results.size() + 1, cases, label));
    const std::vector<const uint8_t*> copies = place_copies(subject, copy_count(subject, s.warm), arena.get());
    for (const int64_t n : ns) {
      std::vector<float> x(static_cast<size_t>(n * subject.k)), y(static_cast<size_t>(n * subject.m));
      for (float& v : x) v = normal(rng);
      for (const Path path : paths) {
        progress.show(fmt::format("[{}/{}] {} n={} {}", out.results.size() + 1, cases, label, n, path_name(path)));
        const double seconds = median_seconds([&](size_t repeat) {
          const Weight w{.type = subject.type->type, .k = subject.k, .m = subject.m,
                         .data = copies[repeat % copies.size()], .name = label};
          matmul(w, x.data(), n, y.data(), nullptr, {.path = path, .threads = s.threads});
        });
        out.results.push_back(result_of(subject, n, path, seconds, out.machine));
      }
    }
  }
  return out;
}

}  // namespace

void add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "time products on random or a model's weights, against the machine's limits");
  static Settings s;
  cmd->add_option("MODEL", s.model, "GGUF file whose weights to time (default: random weights)");
  s.types.option = cmd->add_option("--type", s.types.text,
                                   fmt::format("weight types, comma-separated (default: {})", fmt::join(kDefaultTypes, ",")));
  s.m.option = cmd->add_option("--m", s.m.text, "weight rows (output features), comma-separated");
  s.k.option = cmd->add_option("--k", s.k.text, "values per weight row, comma-separated");
  s.n.option = cmd->add_option("--n", s.n.text, "activation rows, comma-separated (default: 1,2,4)");
  cmd->add_option("--path", s.path, "kernel path: auto, a path's name, or all")->capture_default_str();
  cmd->add_option("--threads", s.threads, "threads (0: all cores)")->check(CLI::NonNegativeNumber);
  auto* cold = cmd->add_flag("--cold")->description(
      "rotate through copies of each weight too large together to stay in cache (the default), as a model far "
      "larger than the caches is read");
  cmd->add_flag("--warm", s.warm, "reuse one copy of each weight, which may stay in cache")->excludes(cold);
  cmd->add_option("--format", s.format, "output format")
      ->check(CLI::IsMember(kReportFormats))
      ->capture_default_str();
  // For tests: a machine-limit measurement in a fraction of a second, too short to be accurate.
  cmd->add_flag("--quick-limits", s.quick_limits, "measure the machine's limits briefly")->group("");
  cmd->footer(
      "Without MODEL the weights are random, of shapes (m, k) = (4096, 4096), (14336, 4096), (4096, 14336); with "
      "--m or --k, every pair of their values, the one not given taking 4096,14336. With MODEL, every distinct "
      "(type, m, k) among its 2-D and 3-D weights (an expert tensor as one matrix), which --type, --m and --k "
      "narrow down.\nroof_frac: below 8 activation rows, the weight's read rate over the machine's memory "
      "bandwidth; from 8 rows on, the rate of arithmetic over the machine's int8 dot-product peak.");
  cmd->callback([] {
    const Measurements m = measure(s);
    print_report(s.format, m.machine, m.results);
  });
}

}  // namespace ggufmm::cli
