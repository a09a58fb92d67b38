// The path profile Auto consults (ggufmm.hpp, PathProfile): where tiled starts to beat gemv, and dense both.
#pragma once

#include "ggufmm/ggufmm.hpp"

namespace ggufmm::paths {

// The crossovers for this weight's format and shape class: the active profile's, else the fixed thresholds
// (tiled from 8 rows, dense not measured). Loads the profile at the first call.
PathCrossover crossover_for(const Weight& w);

}  // namespace ggufmm::paths
