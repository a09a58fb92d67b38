// Weight panels for the tile kernels: 16 rows decoded once, exactly, into the int8 layout of kernels/tile.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "format/registry.hpp"
#include "kernels/tile.hpp"
#include "runtime/aligned.hpp"

namespace ggufmm::paths {

using kernels::PanelShape;

// A thread's decoded panel: storage plus the Panel view the kernels read.
class PanelBuffer {
 public:
  // Decodes rows [o0, o0 + rows) of w (rows <= 16; the rest of the panel is zero) exactly into the kernels' code
  // layout, through the level's panel decoder for the format where it has one, and says how its scales group.
  // Meanwhile the `ahead` rows that follow stream into L2, for the next panel.
  PanelShape decode(const format::Format& f, const Weight& w, int64_t o0, int rows, runtime::Isa isa,
                    int64_t ahead = 0);
  // Groups the scales (and offsets) per S values as the shape says, and returns the kernels' view.
  const kernels::Panel& pack(const PanelShape& shape);

 private:
  // The format's exact decoder, a run of blocks at a time, packed by the level's kernel.
  void decode_blocks(const format::Format& f, const uint8_t* first, size_t row_bytes, int rows,
                     kernels::PackFn pack_codes, size_t ahead);
  PanelShape measure_shape() const;

  int64_t k_ = 0;
  format::Int8Block decoded_[kernels::kPanelRows];  // one block of each row
  // Cache-line aligned: every 64-byte chunk the decoders store and the tile kernels load is one line.
  runtime::AlignedVector<uint8_t> codes_;                 // [k / 4][16][4]
  runtime::AlignedVector<float> sub_scales_, sub_offsets_;  // [k / 16][16]: the panel's scales for group 16
  runtime::AlignedVector<float> scales_, offsets_;          // [k / 32][16]: every other one, for group 32
  int reach_ = 128;  // Panel::reach of the decoded levels
  kernels::Panel panel_;
};

}  // namespace ggufmm::paths
