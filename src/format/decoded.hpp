// Helpers for the exact int8 decoders (Int8Block) of the block formats.
#pragma once

#include <algorithm>

#include "format/registry.hpp"

namespace ggufmm::format {

// Sub-blocks [first, first + count) of 16 values share one scale and offset (a 32-value group covers two).
inline void set_sub_blocks(Int8Block& out, int first, int count, float scale, float offset = 0.0f) {
  std::fill_n(out.scale + first, count, scale);
  std::fill_n(out.offset + first, count, offset);
}

}  // namespace ggufmm::format
