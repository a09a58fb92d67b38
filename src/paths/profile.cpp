#include "paths/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "kernels/kernels.hpp"
#include "runtime/atomic_file.hpp"
#include "runtime/cpu.hpp"
#include "runtime/settings.hpp"

namespace ggufmm {
namespace {

constexpr int kProfileVersion = 1;

// Without a profile: crossovers `ggufmm calibrate` measured (2 threads; docs/performance.md, panels and tiles).
// Where the level decodes panels with SIMD (AVX-512), tiled beats gemv from 8 rows for every format and both shape
// classes, and from 4 or 5 for the IQ2 and IQ3 codebooks, whose gemv spends most of its time decoding what panels
// decode once for all rows. Elsewhere panels come from the formats' portable decoders and take over later: the
// table holds, per shape class, the later of the AVX2 level's measurement and one of AVX-512 tiles over portable
// panels. Calibrate times dense shapes; experts' shorter rows favour gemv longer. Other
// machines, and AVX2 ones above all, should run calibrate.
constexpr int64_t kSimdTiledFrom = 8;
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
// One row per quantized type (the floats have no tiled form), in the order of GGUFMM_QUANT_TYPES.
constexpr Type kQuantTypes[] = {
#define GGUFMM_QUANT_TYPE(TYPE, id, name) Type::TYPE,
    GGUFMM_QUANT_TYPES(GGUFMM_QUANT_TYPE)
#undef GGUFMM_QUANT_TYPE
};
static_assert(std::ranges::equal(kBuiltIn, kQuantTypes, {}, &BuiltIn::type),
              "kBuiltIn needs one row per line of GGUFMM_QUANT_TYPES, in its order");

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
    return paths::read_profile(path);
  }
  const std::string path = paths::default_profile_path();
  std::error_code ignored;
  if (path.empty() || !std::filesystem::exists(path, ignored)) return std::nullopt;
  return paths::read_profile(path);
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

namespace paths {

std::string default_profile_path() {
  const std::string dir = runtime::user_directory("XDG_CONFIG_HOME", ".config");
  return dir.empty() ? dir : dir + "/profile.json";
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
    const auto read_crossovers = [&](const nlohmann::json& list) {
      std::vector<PathCrossover> out;
      for (const auto& c : list) {
        const std::string type = c.at("type").get<std::string>();
        const TypeInfo* t = type_info(type);
        if (!t || !t->is_weight) bad_profile(path, fmt::format("unknown weight type '{}'", type));
        const std::string shape = c.at("class").get<std::string>();
        if (shape != "small" && shape != "large") {
          bad_profile(path, fmt::format("shape class '{}' (small or large)", shape));
        }
        const PathCrossover x{t->type, shape == "large", c.at("tiled_from").get<int64_t>(),
                              c.at("dense_from").get<int64_t>()};
        if (x.tiled_from < 1 || x.dense_from < 0) {
          bad_profile(path, fmt::format("{} {}: tiled_from {} or dense_from {} out of range", type, shape,
                                        x.tiled_from, x.dense_from));
        }
        out.push_back(x);
      }
      return out;
    };
    p.crossovers = read_crossovers(j.at("crossovers"));
    // Devices' crossovers, where calibrate --device has measured some.
    for (const auto& d : j.value("devices", nlohmann::json::array())) {
      p.devices.push_back({d.at("device").get<std::string>(), read_crossovers(d.at("crossovers"))});
    }
  } catch (const nlohmann::json::exception& e) {
    bad_profile(path, fmt::format("missing or mistyped field ({})", e.what()));
  }
  return p;
}

void write_profile(const std::string& path, const PathProfile& profile) {
  const auto write_crossovers = [](const std::vector<PathCrossover>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const PathCrossover& c : list) {
      out.push_back({{"type", type_info(c.type)->name},
                     {"class", c.large ? "large" : "small"},
                     {"tiled_from", c.tiled_from},
                     {"dense_from", c.dense_from}});
    }
    return out;
  };
  nlohmann::json j = {{"ggufmm_profile", kProfileVersion},
                      {"isa", profile.isa},
                      {"threads", profile.threads},
                      {"crossovers", write_crossovers(profile.crossovers)}};
  if (!profile.devices.empty()) {
    nlohmann::json devices = nlohmann::json::array();
    for (const DeviceCrossovers& d : profile.devices) {
      devices.push_back({{"device", d.device}, {"crossovers", write_crossovers(d.crossovers)}});
    }
    j["devices"] = devices;
  }
  const std::string text = j.dump(2) + "\n";
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!dir.empty()) std::filesystem::create_directories(dir, error);
  runtime::AtomicFile file(path);
  file.write(text.data(), text.size());
  file.commit();
}

void set_profile(std::optional<PathProfile> profile) {
  Active& a = active();
  std::call_once(a.loaded, [] {});  // an explicit profile replaces the one Auto would have read
  const std::lock_guard lock(a.mutex);
  a.profile = profile ? std::make_shared<const PathProfile>(std::move(*profile)) : nullptr;
}

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

std::optional<PathCrossover> device_crossover_for(const std::string& device, const Weight& w) {
  const bool large = w.m * w.k > kLargeWeightValues;
  const std::shared_ptr<const PathProfile> p = current();
  if (!p) return std::nullopt;
  for (const DeviceCrossovers& d : p->devices) {
    if (d.device != device) continue;
    for (const PathCrossover& c : d.crossovers) {
      if (c.type == w.type && c.large == large) return c;
    }
  }
  return std::nullopt;
}

}  // namespace paths
}  // namespace ggufmm
