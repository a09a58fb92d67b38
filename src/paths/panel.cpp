#include "paths/panel.hpp"

#include <algorithm>
#include <cstring>

namespace ggufmm::paths {

using kernels::kPanelRows;

PanelShape PanelBuffer::decode(const format::Format& f, const Weight& w, int64_t o0, int rows) {
  k_ = w.k;
  const int64_t subs = k_ / 16;
  codes_.resize(static_cast<size_t>(kPanelRows * k_));
  row_scales_.assign(static_cast<size_t>(kPanelRows * subs), 0.0f);
  row_offsets_.assign(row_scales_.size(), 0.0f);
  const int block_size = f.info.block_size;
  const int64_t blocks = k_ / block_size;
  const int block_subs = block_size / format::Int8Block::kSubBlock;
  // Rows past `rows` stay zero (code 128).
  for (int l = rows; l < kPanelRows; ++l) std::fill_n(decoded_[l].q, block_size, int8_t{0});
  const size_t row_bytes = w.row_bytes();
  const auto* first = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(o0) * row_bytes;
  for (int64_t j = 0; j < blocks; ++j) {
    for (int l = 0; l < rows; ++l) {
      f.decode(first + l * row_bytes + j * f.info.block_bytes, decoded_[l]);
      std::copy_n(decoded_[l].scale, block_subs, row_scales_.begin() + l * subs + j * block_subs);
      std::copy_n(decoded_[l].offset, block_subs, row_offsets_.begin() + l * subs + j * block_subs);
    }
    // The block's 16 rows, decoded, go out a whole 64-byte chunk at a time: 4 values of each row per word, the
    // sign bit flipped to make the int8 value q the unsigned code q + 128.
    uint8_t* chunk = codes_.data() + (j * block_size / 4) * 64;
    for (int i = 0; i < block_size; i += 4, chunk += 64) {
      for (int l = 0; l < kPanelRows; ++l) {
        uint32_t word;
        std::memcpy(&word, decoded_[l].q + i, 4);
        word ^= 0x80808080u;
        std::memcpy(chunk + l * 4, &word, 4);
      }
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
