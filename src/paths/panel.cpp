#include "paths/panel.hpp"

#include <algorithm>
#include <cstring>

namespace ggufmm::paths {

using kernels::kPanelRows;

PanelShape PanelBuffer::decode(const format::Format& f, const Weight& w, int64_t o0, int rows) {
  k_ = w.k;
  const int64_t subs = k_ / 16;
  // Rows past `rows` stay zero: code 128 is the value 0.
  codes_.assign(static_cast<size_t>(kPanelRows * k_), 128);
  row_scales_.assign(static_cast<size_t>(kPanelRows * subs), 0.0f);
  row_offsets_.assign(row_scales_.size(), 0.0f);
  const int64_t blocks = k_ / f.info.block_size;
  const int block_subs = f.info.block_size / format::Int8Block::kSubBlock;
  format::Int8Block b;
  for (int l = 0; l < rows; ++l) {
    const auto* row = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(o0 + l) * w.row_bytes();
    for (int64_t j = 0; j < blocks; ++j) {
      f.decode(row + j * f.info.block_bytes, b);
      // Straight into the kernels' layout: 4 values a word, this row's word of every 64-byte chunk; the sign bit
      // flipped makes the int8 value q the unsigned code q + 128.
      uint8_t* chunk = codes_.data() + (j * f.info.block_size / 4) * 64 + l * 4;
      for (int i = 0; i < f.info.block_size; i += 4) {
        uint32_t word;
        std::memcpy(&word, b.q + i, 4);
        word ^= 0x80808080u;
        std::memcpy(chunk + (i / 4) * 64, &word, 4);
      }
      std::copy_n(b.scale, block_subs, row_scales_.begin() + l * subs + j * block_subs);
      std::copy_n(b.offset, block_subs, row_offsets_.begin() + l * subs + j * block_subs);
    }
  }
  PanelShape shape;
  for (size_t s = 0; s < row_scales_.size(); s += 2) {
    shape.pairs = shape.pairs && row_scales_[s] == row_scales_[s + 1] && row_offsets_[s] == row_offsets_[s + 1];
    shape.asymmetric = shape.asymmetric || row_offsets_[s] != 0.0f || row_offsets_[s + 1] != 0.0f;
  }
  return shape;
}

const kernels::Panel& PanelBuffer::pack(const PanelShape& shape) {
  const int group = shape.group(), step = group / 16;
  const int64_t subs = k_ / 16, groups = k_ / group;
  scales_.resize(static_cast<size_t>(groups * kPanelRows));
  offsets_.resize(shape.asymmetric ? scales_.size() : 0);
  for (int64_t g = 0; g < groups; ++g) {
    for (int l = 0; l < kPanelRows; ++l) {
      const auto at = static_cast<size_t>(g * kPanelRows + l);
      scales_[at] = row_scales_[l * subs + g * step];
      if (shape.asymmetric) offsets_[at] = row_offsets_[l * subs + g * step];
    }
  }
  panel_ = {group, codes_.data(), scales_.data(), shape.asymmetric ? offsets_.data() : nullptr};
  return panel_;
}

}  // namespace ggufmm::paths
