// The IQ3 codebooks, in a header as constants: the AVX-512 kernels derive their register lookup tables from them
// at compile time (kernels/avx512/grid_codes.hpp). Format data, generated from ggml's tables.
#pragma once

#include <cstdint>

namespace ggufmm::format {

inline constexpr uint32_t kIQ3XXSGrid[256] = {
#include "format/tables/iq3_xxs_grid.inc"
};

inline constexpr uint32_t kIQ3SGrid[512] = {
#include "format/tables/iq3_s_grid.inc"
};

}  // namespace ggufmm::format
