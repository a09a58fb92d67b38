// ggufmm calibrate: measures on this machine, or with --device on a device, the row counts at which the tiled path
// overtakes gemv (and, with --dense, at which the dense path overtakes both), per format and shape class, and saves
// them in the path profile Auto uses (ggufmm.hpp, PathProfile), the CPU's and each device's side by side.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <span>

#include "commands.hpp"
#include "common.hpp"
#include "ggufmm/device.hpp"
#include "ggufmm/ggufmm.hpp"
#include "tool_support.hpp"
#include "timing.hpp"

namespace ggufmm::cli {
namespace {

struct ShapeClass {
  bool large;
  int64_t m, k;
};
// One representative shape per class: an attention-sized matrix and an 8B model's FFN down projection.
constexpr ShapeClass kClasses[] = {{false, 2048, 4096}, {true, 4096, 14336}};
constexpr ShapeClass kQuickClasses[] = {{false, 64, 512}, {true, 64, 1024}};  // for tests: the mechanics only
const std::vector<int64_t> kLadder = {4, 5, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512};
const std::vector<int64_t> kQuickLadder = {8, 16};

// A path counts as faster from the first rung where it wins and wins again on one of the next two, so that one
// noisy rung, either way, does not move the crossover (8 rows of Q8_0 run tiled as one row tile, clearly faster
// than gemv's two passes, while at 12 rows panels and gemv tie); a win on the last rung counts alone. A path
// that never wins gets the rung past the ladder. Each rung is timed once at most, and at most two past the
// crossover.
int64_t crossover(const std::vector<int64_t>& ladder, const std::function<bool(int64_t)>& wins) {
  std::vector<std::optional<bool>> won(ladder.size());
  const auto at = [&](size_t i) {
    if (!won[i]) won[i] = wins(ladder[i]);
    return *won[i];
  };
  for (size_t i = 0; i < ladder.size(); ++i) {
    if (!at(i)) continue;
    if (i + 1 == ladder.size() || at(i + 1) || (i + 2 < ladder.size() && at(i + 2))) return ladder[i];
  }
  return ladder.back() + 1;
}

// m rows of k values that repeat a small pool of random blocks: quantizing a whole matrix from f32 would take
// minutes for the searching formats, and a kernel's speed does not depend on which blocks it reads.
std::vector<uint8_t> tile_pool(const TypeInfo& t, const std::vector<uint8_t>& pool, int64_t pool_rows,
                               int64_t pool_blocks, int64_t m, int64_t k) {
  const auto block = static_cast<size_t>(t.block_bytes);
  const int64_t blocks = k / t.block_size;
  std::vector<uint8_t> out(static_cast<size_t>(m * blocks) * block);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* from = pool.data() + static_cast<size_t>((r % pool_rows) * pool_blocks + b % pool_blocks) * block;
      std::memcpy(out.data() + static_cast<size_t>(r * blocks + b) * block, from, block);
    }
  }
  return out;
}

struct Settings {
  std::string types;
  std::string output;
  int threads = 0;
  bool dense = false;
  bool quick = false;
  std::string device;
};

// The profile already at `path`, to keep what this run does not measure; an unreadable one is replaced. Only a
// regular file holds one: standard output, a device or a FIFO is written, never read.
PathProfile existing_profile(const std::string& path) {
  std::error_code ignored;
  if (path == "-" || !std::filesystem::is_regular_file(path, ignored)) return {};
  try {
    return read_profile(path);
  } catch (const Error& e) {
    fmt::print(stderr, "replacing it: {}\n", e.what());
    return {};
  }
}

void calibrate(const Settings& s) {
  std::vector<const TypeInfo*> types;
  if (s.types.empty()) {
    for (const TypeInfo& t : all_types()) {
      if (t.is_weight && t.block_size > 1) types.push_back(type_info(t.type));  // floats have no tiled form
    }
  } else {
    for (size_t at = 0; at <= s.types.size();) {
      const size_t comma = std::min(s.types.find(',', at), s.types.size());
      const std::string name = s.types.substr(at, comma - at);
      const TypeInfo* t = type_info(name);
      if (!t || !t->is_weight) throw Error(Error::Kind::BadUsage, fmt::format("--type: unknown weight type '{}'", name));
      types.push_back(t);
      at = comma + 1;
    }
  }
  const std::vector<int64_t>& ladder = s.quick ? kQuickLadder : kLadder;
  const auto classes = s.quick ? std::span<const ShapeClass>(kQuickClasses) : std::span<const ShapeClass>(kClasses);
  const Progress progress;
  std::mt19937 rng(20261130);
  std::normal_distribution<float> normal;
  const Device device = open_device(s.device);
  std::vector<PathCrossover> measured;
  std::FILE* const report = s.output == "-" ? stderr : stdout;  // standard output may hold the profile itself
  fmt::print(report, "{:<8}  {:<5}  {:>5}  {:>6}  {:>10}  {:>10}\n", "type", "class", "m", "k", "tiled_from",
             "dense_from");
  for (const TypeInfo* t : types) {
    progress.show(fmt::format("{}: making random blocks", t->name));
    constexpr int64_t kPoolRows = 64, kPoolBlocks = 8;
    const std::vector<uint8_t> pool = support::random_weight(t->type, kPoolRows, kPoolBlocks * t->block_size, rng);
    for (const ShapeClass& c : classes) {
      const std::vector<uint8_t> bytes = tile_pool(*t, pool, kPoolRows, kPoolBlocks, c.m, c.k);
      const Weight w{.type = t->type, .k = c.k, .m = c.m, .data = bytes.data(), .name = "calibration"};
      std::vector<float> x(static_cast<size_t>(ladder.back() * c.k)), y(static_cast<size_t>(ladder.back() * c.m));
      for (float& v : x) v = normal(rng);
      // On a device, the products run on device memory, so that no host transfer is timed.
      const ResidentWeight resident(device, w);
      std::optional<support::DeviceMemory> xd, yd;
      std::set<Path> warmed;
      if (!device.is_cpu()) {
        xd.emplace(device, x.size() * sizeof(float));
        yd.emplace(device, y.size() * sizeof(float));
        xd->write(x.data());
      }
      auto seconds = [&](Path path, int64_t n) {
        progress.show(fmt::format("{} {}x{}: {} rows, {}", t->name, c.m, c.k, n, path_name(path)));
        const Options options{.path = path, .threads = s.threads};
        const auto call = [&](size_t) {
          if (device.is_cpu()) return matmul(w, x.data(), n, y.data(), nullptr, options);
          resident.enqueue_matmul(xd->handle(), n, yd->handle(), nullptr, options);
          support::finish(device);
        };
        // A path's first call may build its programs (a device) or make its dense copy: untimed.
        if (warmed.insert(path).second) call(0);
        return median_repeat(time_repeats(call)).seconds;
      };
      PathCrossover found{t->type, c.large, 0, 0};
      found.tiled_from = crossover(ladder, [&](int64_t n) { return seconds(Path::Tiled, n) <= seconds(Path::Gemv, n); });
      if (s.dense) {
        found.dense_from = crossover(ladder, [&](int64_t n) {
          const Path best = n < found.tiled_from ? Path::Gemv : Path::Tiled;
          return seconds(Path::Dense, n) < seconds(best, n);
        });
        device.clear_dense_cache();
      }
      progress.show("");
      fmt::print(report, "{:<8}  {:<5}  {:>5}  {:>6}  {:>10}  {:>10}\n", t->name, c.large ? "large" : "small", c.m,
                 c.k, found.tiled_from, s.dense ? fmt::format("{}", found.dense_from) : std::string("-"));
      measured.push_back(found);
    }
  }
  const std::string path = s.output.empty() ? default_profile_path() : s.output;
  if (path.empty()) throw Error(Error::Kind::BadUsage, "no place for the profile: give -o FILE (HOME is not set)");
  PathProfile profile = existing_profile(path);
  if (device.is_cpu()) {
    profile.isa = support::active_level_name();
    profile.threads = support::resolve_threads(s.threads);
    profile.crossovers = measured;
  } else {
    if (profile.isa.empty()) profile.isa = support::active_level_name();  // no CPU crossovers yet: built-in ones
    std::erase_if(profile.devices, [&](const DeviceCrossovers& d) { return d.device == device.info().description; });
    profile.devices.push_back({device.info().description, measured});
  }
  write_profile(path, profile);
  fmt::print(report, "profile written to {} (GGUFMM_PROFILE=none ignores it)\n",
             path == "-" ? "standard output" : path);
}

}  // namespace

void add_calibrate(CLI::App& app) {
  auto* cmd = app.add_subcommand("calibrate", "measure the row counts where the paths cross over; save them for auto");
  static Settings s;
  cmd->add_option("--type", s.types, "formats, comma-separated (default: every quantized format)");
  add_threads_option(*cmd, s.threads);
  cmd->add_flag("--dense", s.dense, "also measure where the dense path (a dequantized copy) overtakes the others");
  cmd->add_option("-o,--output", s.output, "profile file (default: " + default_profile_path() + ")");
  add_device_option(*cmd, s.device);
  cmd->add_flag("--quick", s.quick, "tiny shapes, two rungs: checks the mechanics only")->group("");
  cmd->callback([] { calibrate(s); });
}

}  // namespace ggufmm::cli
