// The IQ2_XXS and IQ2_XS codebooks, in a header as constants: the AVX-512 kernels derive their register lookup
// tables from them at compile time (kernels/avx512/grid_codes.hpp). Format data, generated from ggml's tables.
#pragma once

#include <cstdint>

namespace ggufmm::format {

// The magnitudes every byte of an IQ2 grid entry is one of.
inline constexpr uint8_t kIQ2Levels[3] = {0x08, 0x19, 0x2b};

inline constexpr uint64_t kIQ2XXSGrid[256] = {
#include "format/tables/iq2_xxs_grid.inc"
};

inline constexpr uint64_t kIQ2XSGrid[512] = {
#include "format/tables/iq2_xs_grid.inc"
};

}  // namespace ggufmm::format
