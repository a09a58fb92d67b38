// ggufmm bench [MODEL.gguf]: times products of activations and quantized weights, each against the limit of the
// machine that binds it: memory bandwidth for the few rows of decode, int8 arithmetic for batches. With --moe, the
// products are mixture-of-experts ones (mul_mat_id), their experts chosen afresh for every repeat.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <tuple>

#include "bench_limits.hpp"
#include "bench_report.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "timing.hpp"
#include "ggufmm/gguf.hpp"
#include "tool_support.hpp"

namespace ggufmm::cli {
namespace {


struct Shape {
  int64_t m, k;
  int64_t experts = 1, top_k = 1;  // a mixture of experts: `experts` matrices, `top_k` of them chosen per token
};

// The embedded default: today's common formats on the matrices of an 8B model's layers (attention and FFN
// down: 4096 x 4096 and 4096 x 14336; FFN up and gate: 14336 x 4096), at decode row counts and two prefill ones.
const std::vector<std::string> kDefaultTypes = {"q4_0", "q8_0", "q4_K", "q5_K", "q6_K", "iq2_xs", "iq3_xxs", "iq4_xs"};
constexpr Shape kDefaultShapes[] = {{4096, 4096}, {14336, 4096}, {4096, 14336}};
const std::vector<int64_t> kDefaultSizes = {4096, 14336};  // m or k, where only the other one is given
const std::vector<int64_t> kDefaultN = {1, 2, 4, 8, 512};
// On a device: decode (its gemv kernels take up to 7 rows at a time) and two prefill tiles' row counts.
const std::vector<int64_t> kDeviceN = {1, 4, 7, 64, 512};

// --moe: the two shapes of ggml's own MUL_MAT_ID performance cases, 128 experts top-8 and 32 experts top-4, from
// one token (decode) to a prefill batch.
const std::vector<std::string> kMoeTypes = {"q4_0", "q8_0", "q4_K", "q6_K", "iq2_xs", "iq3_xxs"};
constexpr Shape kMoeShapes[] = {{768, 2048, 128, 8}, {1792, 2048, 32, 4}};
const std::vector<int64_t> kMoeN = {1, 4, 8, 32, 64, 128, 256, 512};

// How the experts of a token are chosen: all equally likely, or expert e with weight 1 / (e + 1) (Zipf's law), as
// a few popular experts take most tokens. Either way a token's experts are distinct.
enum class Routing { Uniform, Skewed };
constexpr Routing kRoutings[] = {Routing::Uniform, Routing::Skewed};
std::string_view routing_name(Routing routing) { return routing == Routing::Uniform ? "uniform" : "skewed"; }

// Random weights repeat one pool of distinct blocks: quantizing from f32 takes seconds per million values for
// the searching quantizers, and a kernel's speed does not depend on which blocks it reads.
constexpr int64_t kPoolRows = 128;
constexpr int64_t kPoolBlocksPerRow = 16;

// Cold copies together span this many times the last-level cache, so that none is still cached at its turn.
constexpr size_t kColdCacheMultiple = 3;
constexpr size_t kCopyAlignment = 64;  // a cache line, as GGUF files align their tensors
// On a device: at most this many resident copies of a weight (so that a weight under a sixteenth of three times the
// device's cache is timed partly warm), and at least this many products enqueued per repeat, waited for once.
constexpr size_t kMostDeviceCopies = 16;
constexpr size_t kDeviceBatch = 8;

[[noreturn]] void bad_usage(const std::string& message) { throw Error(Error::Kind::BadUsage, message); }

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
  bool moe = false;
  std::string device;
};

// One weight to time: a matrix, or the matrices of a mixture of experts.
struct Subject {
  const TypeInfo* type;
  int64_t m, k;
  std::span<const uint8_t> source;  // its bytes: a tensor's in the model file, or a pool of random blocks to repeat
  int64_t experts = 1, top_k = 1;

  size_t matrix_bytes() const {
    return static_cast<size_t>(m * (k / type->block_size)) * static_cast<size_t>(type->block_bytes);
  }
  size_t bytes() const { return matrix_bytes() * static_cast<size_t>(experts); }
  std::string label() const {
    return experts == 1 ? fmt::format("{} {}x{}", type->name, m, k)
                        : fmt::format("{} {}x{}x{} top-{}", type->name, experts, m, k, top_k);
  }
};

std::vector<Path> parse_paths(const std::string& name, bool moe) {
  // mul_mat_id has two paths: the reference, and the expert-grouped kernels that pick gemv or tiled per expert.
  if (moe) {
    if (name == "all") return {Path::Auto, Path::Ref};
    if (name == "auto" || name == "ref") return {*path_from_name(name)};
    bad_usage(fmt::format("--moe: --path {} does not apply; mul_mat_id runs auto (experts grouped) or ref", name));
  }
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

// The shapes of random weights: the defaults, or with --m or --k every pair of their values. A dense one not given
// takes kDefaultSizes; a mixture of experts keeps its own, and its experts and top-k.
std::vector<Shape> random_shapes(const Settings& s) {
  if (!s.m.given() && !s.k.given()) {
    return s.moe ? std::vector<Shape>(std::begin(kMoeShapes), std::end(kMoeShapes))
                 : std::vector<Shape>(std::begin(kDefaultShapes), std::end(kDefaultShapes));
  }
  std::vector<Shape> shapes;
  const auto add_pairs = [&](const std::vector<int64_t>& ms, const std::vector<int64_t>& ks, int64_t experts,
                             int64_t top_k) {
    for (const int64_t m : s.m.given() ? s.m.sizes() : ms) {
      for (const int64_t k : s.k.given() ? s.k.sizes() : ks) shapes.push_back({m, k, experts, top_k});
    }
  };
  if (s.moe) {
    for (const Shape& base : kMoeShapes) add_pairs({base.m}, {base.k}, base.experts, base.top_k);
  } else {
    add_pairs(kDefaultSizes, kDefaultSizes, 1, 1);
  }
  return shapes;
}

// Random weights of every type asked for, in every shape; `pools` receives the blocks they repeat.
std::vector<Subject> random_subjects(const Settings& s, std::vector<std::vector<uint8_t>>& pools,
                                     const Progress& progress) {
  const auto types = parse_types(s.types.given() ? s.types.items() : s.moe ? kMoeTypes : kDefaultTypes);
  const std::vector<Shape> shapes = random_shapes(s);
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
    pools.push_back(support::random_weight(t->type, kPoolRows, kPoolBlocksPerRow * t->block_size, rng));
    for (const Shape& shape : shapes) {
      subjects.push_back({t, shape.m, shape.k, pools.back(), shape.experts, shape.top_k});
    }
  }
  return subjects;
}

// How many copies of a weight the repeats rotate through, to span kColdCacheMultiple times a cache of `cache_bytes`.
size_t copy_count(const Subject& subject, bool warm, size_t cache_bytes) {
  if (warm) return 1;
  const size_t cold_bytes = kColdCacheMultiple * cache_bytes;
  return std::max<size_t>(2, (cold_bytes + subject.bytes() - 1) / subject.bytes());
}

// A lone copy of bytes that hold a whole weight is those bytes themselves (a model file's mapping, say).
bool needs_copying(const Subject& subject, size_t copies) {
  return copies > 1 || subject.source.size() < subject.bytes();
}

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

// The experts of n tokens, top_k distinct ones each, as [tokens, top_k].
std::vector<int32_t> route(const Subject& subject, int64_t n, Routing routing, std::mt19937& rng) {
  std::vector<double> weights(static_cast<size_t>(subject.experts));
  for (size_t e = 0; e < weights.size(); ++e) {
    weights[e] = routing == Routing::Uniform ? 1.0 : 1.0 / static_cast<double>(e + 1);
  }
  std::discrete_distribution<int32_t> pick(weights.begin(), weights.end());
  std::vector<int32_t> ids;
  ids.reserve(static_cast<size_t>(n * subject.top_k));
  for (int64_t token = 0; token < n; ++token) {
    const auto first = static_cast<ptrdiff_t>(token * subject.top_k);
    while (std::ssize(ids) < first + subject.top_k) {
      const int32_t id = pick(rng);
      if (std::find(ids.begin() + first, ids.end(), id) == ids.end()) ids.push_back(id);
    }
  }
  return ids;
}

int64_t distinct_count(const std::vector<int32_t>& ids) {
  return std::ssize(std::set<int32_t>(ids.begin(), ids.end()));
}

// A case timed `seconds`, in which n tokens of top_k rows each read `matrices` of the subject's matrices.
BenchResult result_of(const Subject& subject, int64_t n, int64_t matrices, std::optional<Routing> routing, Path path,
                      double seconds, const MachineLimits& machine) {
  const int64_t rows = n * subject.top_k;
  const double gflops = 2.0 * static_cast<double>(subject.m * subject.k * rows) / seconds / 1e9;
  const double weight_gbps =
      static_cast<double>(subject.matrix_bytes() * static_cast<size_t>(matrices)) / seconds / 1e9;
  // Below 8 rows per matrix read a product is bound by reading its weight; from 8 rows on, by int8 arithmetic.
  const bool decode = rows < 8 * matrices;
  const double got = decode ? weight_gbps : gflops;
  const double roof = decode ? machine.read_gbps : machine.int8_gops;
  std::optional<MoeCase> moe;
  if (routing) moe = MoeCase{subject.experts, subject.top_k, std::string(routing_name(*routing))};
  return {std::string(subject.type->name), subject.m, subject.k, n, std::string(path_name(path)), machine.threads,
          seconds * 1e6, gflops, weight_gbps, roof > 0.0 ? got / roof : 0.0, moe};
}

// One case's product, timed on the weight's copies in turn.
struct Case {
  const Subject& subject;
  const std::string& label;
  const std::vector<const uint8_t*>& copies;
  const std::vector<float>& x;  // n rows; with experts, one per token, shared by its top_k slots
  int64_t n;
  Path path;
  int threads;

  Weight weight(size_t repeat) const {
    return {.type = subject.type->type, .k = subject.k, .m = subject.m, .experts = subject.experts,
            .data = copies[repeat % copies.size()], .name = label};
  }
};

BenchResult time_matmul(const Case& c, const MachineLimits& machine) {
  std::vector<float> y(static_cast<size_t>(c.n * c.subject.m));
  const std::vector<Repeat> repeats = time_repeats([&](size_t repeat) {
    matmul(c.weight(repeat), c.x.data(), c.n, y.data(), nullptr, {.path = c.path, .threads = c.threads});
  });
  return result_of(c.subject, c.n, 1, std::nullopt, c.path, median_repeat(repeats).seconds, machine);
}

// The experts are drawn again before every repeat, so that each one reads a fresh set of them as decoding does,
// and reports the bytes of the experts its median repeat read.
BenchResult time_mul_mat_id(const Case& c, Routing routing, std::mt19937& rng, const MachineLimits& machine) {
  std::vector<float> y(static_cast<size_t>(c.n * c.subject.top_k * c.subject.m));
  std::vector<int32_t> ids;
  std::vector<int64_t> touched;  // experts read, per call
  const std::vector<Repeat> repeats = time_repeats(
      [&](size_t repeat) {
        mul_mat_id(c.weight(repeat), c.x.data(), c.n, 1, ids.data(), c.subject.top_k, y.data(), nullptr,
                   {.path = c.path, .threads = c.threads});
      },
      [&](size_t) {
        ids = route(c.subject, c.n, routing, rng);
        touched.push_back(distinct_count(ids));
      });
  const Repeat& median = median_repeat(repeats);
  return result_of(c.subject, c.n, touched[median.number], routing, c.path, median.seconds, machine);
}

// The device's GEMM library alone on a dense copy padded as the dense path's, activations already in its type: a
// row of path "gemm", what the dense path is measured against. Its first call, which may build the library's
// kernels, is not timed.
BenchResult bare_gemm(const Device& device, const Weight& w, const Subject& subject, int64_t n,
                      const MachineLimits& machine) {
  const support::BareGemm gemm(device, w, n);
  const auto call = [&](size_t) {
    gemm.enqueue();
    support::finish(device);
  };
  call(0);
  BenchResult row = result_of(subject, n, 1, std::nullopt, Path::Dense, median_repeat(time_repeats(call)).seconds,
                              machine);
  row.path = "gemm";
  return row;
}

// On a device: its read bandwidth (a streaming kernel), its own copy's and its int8 peak, measured in the same run;
// per weight, the one-time upload (a row of path "upload"), then the products on device memory through the enqueue_
// calls, so that no host transfer is timed. Cold (unless --warm), the weight is resident as copies that together
// span three times the device's last-level cache (at most kMostDeviceCopies), and a repeat enqueues a product on
// each in turn (at least kDeviceBatch products) and waits once: its time per product. A dense product's first call,
// which makes the weight's dense copy, is a row of path "dense-copy" (with one product), and each dense row is
// followed by the bare GEMM's; mul_mat_id's experts are drawn afresh (and written to the device, untimed) before
// every repeat.
void measure_on(const Device& device, const Settings& s, const std::vector<Subject>& subjects,
                const std::vector<int64_t>& ns, const std::vector<Path>& paths,
                const std::vector<std::optional<Routing>>& routings, const Progress& progress, Report& report) {
  progress.show(fmt::format("measuring {}'s read bandwidth and int8 peak", device.info().name));
  MachineLimits machine;
  const size_t stream_bytes = s.quick_limits ? size_t{16} << 20 : size_t{256} << 20;
  machine.read_gbps = device.read_bandwidth(stream_bytes) / 1e9;
  machine.copy_gbps = device.copy_bandwidth(stream_bytes) / 1e9;
  machine.int8_gops = device.int8_peak(s.quick_limits ? 1e9 : 1e12) / 1e9;
  machine.threads = 0;
  machine.device = fmt::format("{} ({})", device.info().name, device.info().description);
  report.start(machine);
  size_t arena_size = 0;
  for (const Subject& subject : subjects) arena_size = std::max(arena_size, arena_bytes(subject, 1));
  const AlignedBytes arena = allocate_aligned(arena_size);
  std::mt19937 rng(20260102);
  std::normal_distribution<float> normal;
  for (const Subject& subject : subjects) {
    const std::string label = subject.label();
    progress.show(fmt::format("{}: uploading", label));
    const Weight w{.type = subject.type->type, .k = subject.k, .m = subject.m, .experts = subject.experts,
                   .data = place_copies(subject, 1, arena.get()).front(), .name = label};
    const auto start = std::chrono::steady_clock::now();
    std::vector<ResidentWeight> resident{ResidentWeight(device, w)};
    const double upload = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const size_t copies =
        std::min(kMostDeviceCopies, copy_count(subject, s.warm, static_cast<size_t>(device.info().cache_bytes)));
    while (resident.size() < copies) resident.emplace_back(device, w);
    const size_t batch = std::max(copies, kDeviceBatch);
    std::optional<MoeCase> experts;
    if (s.moe) experts = MoeCase{subject.experts, subject.top_k, "-"};
    report.add({std::string(subject.type->name), subject.m, subject.k, 0, "upload", 0, upload * 1e6, 0.0,
                static_cast<double>(subject.bytes()) / upload / 1e9, 0.0, experts});
    for (const int64_t n : ns) {
      const int64_t rows = n * subject.top_k;
      std::vector<float> xs(static_cast<size_t>(n * subject.k));
      for (float& v : xs) v = normal(rng);
      const support::DeviceMemory x(device, xs.size() * sizeof(float));
      const support::DeviceMemory y(device, static_cast<size_t>(rows * subject.m) * sizeof(float));
      const support::DeviceMemory ids(device, static_cast<size_t>(rows) * sizeof(int32_t));
      x.write(xs.data());
      for (const std::optional<Routing> routing : routings) {
        for (const Path path : paths) {
          progress.show(fmt::format("{} n={}{} {} on {}", label, n,
                                    routing ? fmt::format(" {}", routing_name(*routing)) : "", path_name(path),
                                    device.info().name));
          const Options options{.path = path};
          std::vector<int64_t> touched;  // experts read, per repeat
          const auto enqueue = [&](const ResidentWeight& r) {
            if (routing) {
              r.enqueue_mul_mat_id(x.handle(), n, 1, ids.handle(), subject.top_k, y.handle(), nullptr, options);
            } else {
              r.enqueue_matmul(x.handle(), n, y.handle(), nullptr, options);
            }
          };
          const auto call = [&](size_t) {
            for (size_t i = 0; i < batch; ++i) enqueue(resident[i % copies]);
            support::finish(device);
          };
          const auto draw = [&](size_t) {
            if (!routing) return;
            const std::vector<int32_t> drawn = route(subject, n, *routing, rng);
            ids.write(drawn.data());
            touched.push_back(distinct_count(drawn));
          };
          // The first call builds the kernels' programs where the device compiles at first use, and makes a dense
          // copy: untimed, but for the copy. Then a pass over every copy (making theirs), untimed.
          const uint64_t dense_copies = device.dense_cache_stats().misses;
          const auto first = std::chrono::steady_clock::now();
          draw(0);
          enqueue(resident.front());
          support::finish(device);
          const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - first).count();
          if (device.dense_cache_stats().misses > dense_copies) {
            report.add({std::string(subject.type->name), subject.m, subject.k, n, "dense-copy", 0, seconds * 1e6,
                        0.0, 0.0, 0.0, std::nullopt});
          }
          call(0);
          touched.clear();
          const Repeat median = median_repeat(time_repeats(call, draw));
          const int64_t matrices = routing ? touched[median.number] : 1;
          report.add(result_of(subject, n, matrices, routing, path, median.seconds / static_cast<double>(batch),
                               machine));
          if (path == Path::Dense && !routing) report.add(bare_gemm(device, w, subject, n, machine));
        }
      }
    }
  }
}

void measure(const Settings& s, const Progress& progress, Report& report) {
  const Device device = open_device(s.device);
  std::vector<Path> paths = parse_paths(s.path, s.moe);
  if (!device.is_cpu() && s.path == "all") std::erase(paths, Path::Ref);  // devices offer no reference path
  const std::vector<int64_t> ns = s.n.given()        ? s.n.sizes()
                                  : s.moe            ? kMoeN
                                  : device.is_cpu() ? kDefaultN
                                                     : kDeviceN;
  // Dense products have no routing.
  const std::vector<std::optional<Routing>> routings =
      s.moe ? std::vector<std::optional<Routing>>(std::begin(kRoutings), std::end(kRoutings))
            : std::vector<std::optional<Routing>>{std::nullopt};
  std::optional<gguf::File> file;
  std::vector<std::vector<uint8_t>> pools;
  std::vector<Subject> subjects;
  if (!s.model.empty()) {
    file.emplace(gguf::File::open(s.model));
    subjects = file_subjects(*file, s);
  } else {
    subjects = random_subjects(s, pools, progress);
  }

  if (!device.is_cpu()) return measure_on(device, s, subjects, ns, paths, routings, progress, report);
  progress.show("measuring the machine's limits");
  const MachineLimits machine = measure_limits(s.threads, s.quick_limits);
  report.start(machine);

  size_t arena_size = 0;
  for (const Subject& subject : subjects) {
    arena_size = std::max(arena_size, arena_bytes(subject, copy_count(subject, s.warm, last_level_cache_bytes())));
  }
  const AlignedBytes arena = allocate_aligned(arena_size);

  std::mt19937 rng(20260102);
  std::normal_distribution<float> normal;
  const size_t cases = subjects.size() * ns.size() * routings.size() * paths.size();
  for (const Subject& subject : subjects) {
    const std::string label = subject.label();
    progress.show(fmt::format("[{}/{}] {}: copying the weight", report.count() + 1, cases, label));
    const std::vector<const uint8_t*> copies =
        place_copies(subject, copy_count(subject, s.warm, last_level_cache_bytes()), arena.get());
    for (const int64_t n : ns) {
      std::vector<float> x(static_cast<size_t>(n * subject.k));
      for (float& v : x) v = normal(rng);
      for (const std::optional<Routing> routing : routings) {
        for (const Path path : paths) {
          progress.show(fmt::format("[{}/{}] {} n={}{} {}", report.count() + 1, cases, label, n,
                                    routing ? fmt::format(" {}", routing_name(*routing)) : "", path_name(path)));
          const Case c{subject, label, copies, x, n, path, s.threads};
          report.add(routing ? time_mul_mat_id(c, *routing, rng, machine) : time_matmul(c, machine));
        }
      }
    }
  }
}

}  // namespace

void add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "time products on random or a model's weights, against the machine's limits");
  static Settings s;
  auto* model = cmd->add_option("MODEL", s.model, "GGUF file whose weights to time (default: random weights)");
  cmd->add_flag("--moe", s.moe,
                "time mixtures of experts (mul_mat_id) on random weights, experts drawn afresh for every repeat")
      ->excludes(model);
  s.types.option = cmd->add_option(
      "--type", s.types.text,
      fmt::format("weight types, comma-separated (default: {}; with --moe: {})", fmt::join(kDefaultTypes, ","),
                  fmt::join(kMoeTypes, ",")));
  s.m.option = cmd->add_option("--m", s.m.text, "weight rows (output features), comma-separated");
  s.k.option = cmd->add_option("--k", s.k.text, "values per weight row, comma-separated");
  s.n.option = cmd->add_option(
      "--n", s.n.text,
      fmt::format("activation rows, comma-separated (default: {}; with --moe, tokens: {})", fmt::join(kDefaultN, ","),
                  fmt::join(kMoeN, ",")));
  cmd->add_option("--path", s.path, "kernel path: auto, a path's name, or all (with --moe: auto, ref or all)")
      ->capture_default_str();
  add_threads_option(*cmd, s.threads);
  add_device_option(*cmd, s.device);
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
      "narrow down.\nWith --moe, two mixtures of experts as ggml's MUL_MAT_ID performance cases have them: 128 "
      "experts top-8 of (m, k) = (768, 2048) and 32 experts top-4 of (1792, 2048), which --m and --k replace; n "
      "counts tokens, each one activation row shared by its top-k experts; those are distinct, drawn uniformly or "
      "skewed (expert e with weight 1/(e+1)), afresh before every repeat. gflops counts the real rows (tokens x "
      "top-k), weight_gbps the bytes of the experts a repeat read.\nroof_frac: below 8 activation rows per matrix "
      "read, the weight's read rate over the machine's memory bandwidth; from 8 rows on, the rate of arithmetic over "
      "the machine's int8 dot-product peak.\nWith --device (other than cpu), the products on device memory of each "
      "weight uploaded once (its upload timed as a row of its own, path \"upload\"; a dense copy's making as one of "
      "path \"dense-copy\"; the GEMM library alone on a copy padded the same way as one of path \"gemm\" after each "
      "dense row), n = 1,4,7,64,512 by default (with --moe as on the CPU), the roofs the device's read "
      "bandwidth and int8 peak, measured in the same run by a streaming kernel (16-byte loads, cold; the device's "
      "own device-to-device copy beside it, bytes read and written) and chains of tensor-core products (CUDA from "
      "sm_80) or 4-byte dot products. Cold, a weight is resident as copies spanning three times the device's "
      "last-level cache (at most 16), a product enqueued on each in turn and waited for once per repeat.");
  cmd->callback([] {
    const Progress progress;
    Report report(s.format, s.moe, progress);
    measure(s, progress, report);
    report.finish(open_device(s.device).dense_cache_stats());
  });
}

}  // namespace ggufmm::cli
