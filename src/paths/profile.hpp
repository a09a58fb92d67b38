// The path profile Auto consults (ggufmm.hpp, PathProfile): where tiled starts to beat gemv, and dense both.
#pragma once

#include <optional>
#include <string>

#include "ggufmm/types.hpp"

namespace ggufmm::paths {

// The crossovers for this weight's format and shape class: the active profile's, else the fixed thresholds
// (tiled from 8 rows, dense not measured). Loads the profile at the first call.
PathCrossover crossover_for(const Weight& w);
// A device's crossovers for this weight's format and shape class, where the active profile holds them for the
// device of this description; nullopt where it does not.
std::optional<PathCrossover> device_crossover_for(const std::string& device, const Weight& w);

// The profile's file and its reading, writing and replacement, as the public API's calls of the same names
// (ggufmm.hpp) describe them.
std::string default_profile_path();
PathProfile read_profile(const std::string& path);
void write_profile(const std::string& path, const PathProfile& profile);
void set_profile(std::optional<PathProfile> profile);

}  // namespace ggufmm::paths
