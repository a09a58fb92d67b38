#include "paths/profile.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "kernels/kernels.hpp"
#include "runtime/cpu.hpp"

namespace ggufmm {
namespace {

constexpr int kProfileVersion = 1;

// Without a profile: the crossovers `ggufmm calibrate` measured on the development machines (2 threads). Where the
// level decodes panels with SIMD (AVX-512), tiled beats gemv from 8 rows for every format and both shape classes
// (two calibrations on an Intel Xeon, 2026-11-30). Elsewhere panels come from the formats' portable decoders; the
// table holds, for weights of up to 2^23 values and for larger ones, the later of two measurements: at the AVX2
// level (GGUFMM_ISA=avx2 on an AMD EPYC, Zen 4; the geometric mean of two calibrations, 2026-12-02) and, earlier,
// with AVX-512 tile kernels over portable panels on the Xeon. Calibrate times dense shapes; experts' shorter rows
// favour gemv longer (at the AVX2 level, Q6_K experts at 64 tokens ran 0.6 to 0.9 times as fast with tiled from
// the 12 rows its dense shape gave). Formats not listed (the floats) have no tiled form. Other machines, and AVX2
// ones above all, should run calibrate.
constexpr int64_t kSimdTiledFrom = 8;
// With AVX-512 the codebook formats' gemv spends most of its time decoding blocks, which panels do once for all
// rows, so tiles overtake it below 8 rows (Zen 5, 2 threads, tiled over gemv: dense 768 x 2048 and 4096 x 4096,
// IQ2_XXS 1.12 to 1.24 at 4 rows, IQ2_XS 1.01 to 1.09 at 4, IQ3_XXS and IQ3_S 1.02 to 1.12 at 5; experts at 32
// and 64 tokens 1.09 to 1.18 as fast): the table's last column. With AVX2 tiles run 0.3 to 0.6 times as fast as
// gemv below 8 rows, so that level keeps kSimdTiledFrom.
struct BuiltIn {
  Type type;
  int64_t small, large;             // portable panels, by shape class
  int64_t avx512 = kSimdTiledFrom;  // SIMD panels at the AVX-512 level
};
constexpr BuiltIn kBuiltIn[] = {
    {Type::Q4_0, 256, 64},      {Type::Q4_1, 64, 96},       {Type::Q5_0, 64, 64},       {Type::Q5_1, 96, 64},
    {Type::Q8_0, 48, 24},       {Type::Q2_K, 32, 32},       {Type::Q3_K, 48, 32},       {Type::Q4_K, 24, 24},
    {Type::Q5_K, 32, 24},       {Type::Q6_K, 32, 24},       {Type::IQ2_XXS, 24, 24, 4}, {Type::IQ2_XS, 32, 32, 4},
    {Type::IQ2_S, 32, 32},      {Type::IQ3_XXS, 24, 24, 5}, {Type::IQ3_S, 32, 32, 5},   {Type::IQ1_S, 24, 24},
    {Type::IQ1_M, 24, 24},      {Type::IQ4_NL, 64, 64},     {Type::IQ4_XS, 96, 64},     {Type::TQ1_0, 256, 384},
    {Type::TQ2_0, 64, 128},     {Type::MXFP4, 64, 128}};

[[noreturn]] void bad_profile(const std::string& path, const std::string& what) {
  throw Error(Error::Kind::BadInput, fmt::format("path profile {}: {}", path, what));
}

struct Active {
  std::mutex mutex;
  std::once_flag loaded;
  std::shared_ptr<const PathProfile> profile;  // null: fixed thresholds
};

Active& active() {
  static Active a;
  return a;
}

// $GGUFMM_PROFILE (empty or "none": no profile), else the default file where it exists.
std::optional<PathProfile> initial_profile() {
  if (const char* env = std::getenv("GGUFMM_PROFILE")) {
    const std::string path = env;
    if (path.empty() || path == "none") return std::nullopt;
    return read_profile(path);
  }
  const std::string path = default_profile_path();
  std::error_code ignored;
  if (path.empty() || !std::filesystem::exists(path, ignored)) return std::nullopt;
  return read_profile(path);
}

std::shared_ptr<const PathProfile> current() {
  Active& a = active();
  std::call_once(a.loaded, [&] {
    std::optional<PathProfile> p = initial_profile();
    const std::lock_guard lock(a.mutex);
    if (p) a.profile = std::make_shared<const PathProfile>(std::move(*p));
  });
  const std::lock_guard lock(a.mutex);
  return a.profile;
}

}  // namespace

std::string default_profile_path() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return fmt::format("{}/ggufmm/profile.json", xdg);
  if (const char* home = std::getenv("HOME"); home && *home) return fmt::format("{}/.config/ggufmm/profile.json", home);
  return {};
}

PathProfile read_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad_profile(path, "cannot be read");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    bad_profile(path, fmt::format("not JSON ({})", e.what()));
  }
  PathProfile p;
  try {
    if (j.at("ggufmm_profile").get<int>() != kProfileVersion) {
      bad_profile(path, fmt::format("version {} (this build reads {})", j.at("ggufmm_profile").dump(), kProfileVersion));
    }
    p.isa = j.at("isa").get<std::string>();
    p.threads = j.at("threads").get<int>();
    for (const auto& c : j.at("crossovers")) {
      const std::string type = c.at("type").get<std::string>();
      const TypeInfo* t = type_info(type);
      if (!t || !t->is_weight) bad_profile(path, fmt::format("unknown weight type '{}'", type));
      const std::string shape = c.at("class").get<std::string>();
      if (shape != "small" && shape != "large") bad_profile(path, fmt::format("shape class '{}' (small or large)", shape));
      const PathCrossover x{t->type, shape == "large", c.at("tiled_from").get<int64_t>(), c.at("dense_from").get<int64_t>()};
      if (x.tiled_from < 1 || x.dense_from < 0) {
        bad_profile(path, fmt::format("{} {}: tiled_from {} or dense_from {} out of range", type, shape, x.tiled_from,
                                      x.dense_from));
      }
      p.crossovers.push_back(x);
    }
  } catch (const nlohmann::json::exception& e) {
    bad_profile(path, fmt::format("missing or mistyped field ({})", e.what()));
  }
  return p;
}

void write_profile(const std::string& path, const PathProfile& profile) {
  nlohmann::json crossovers = nlohmann::json::array();
  for (const PathCrossover& c : profile.crossovers) {
    crossovers.push_back({{"type", type_info(c.type)->name},
                          {"class", c.large ? "large" : "small"},
                          {"tiled_from", c.tiled_from},
                          {"dense_from", c.dense_from}});
  }
  const nlohmann::json j = {{"ggufmm_profile", kProfileVersion},
                            {"isa", profile.isa},
                            {"threads", profile.threads},
                            {"crossovers", crossovers}};
  const std::string text = j.dump(2) + "\n";
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!dir.empty()) std::filesystem::create_directories(dir, error);
  write_file_atomic(path, text.data(), text.size());
}

void set_profile(std::optional<PathProfile> profile) {
  Active& a = active();
  std::call_once(a.loaded, [] {});  // an explicit profile replaces the one Auto would have read
  const std::lock_guard lock(a.mutex);
  a.profile = profile ? std::make_shared<const PathProfile>(std::move(*profile)) : nullptr;
}

namespace paths {

PathCrossover crossover_for(const Weight& w) {
  const bool large = w.m * w.k > kLargeWeightValues;
  const std::shared_ptr<const PathProfile> p = current();
  if (p && p->isa == runtime::isa_name(runtime::active_isa())) {
    for (const PathCrossover& c : p->crossovers) {
      if (c.type == w.type && c.large == large) return c;
    }
  }
  for (const BuiltIn& b : kBuiltIn) {
    if (b.type != w.type) continue;
    const runtime::Isa isa = runtime::active_isa();
    if (kernels::find_panel_decode(isa, w.type)) {
      return {w.type, large, isa == runtime::Isa::Avx512 ? b.avx512 : kSimdTiledFrom, 0};
    }
    return {w.type, large, large ? b.large : b.small, 0};
  }
  return {w.type, large, kernels::kMaxGemvRows + 1, 0};
}

}  // namespace paths
}  // namespace ggufmm
