#include "paths/panel.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace ggufmm::paths {

using kernels::kPanelRows;

PanelShape PanelBuffer::decode(const format::Format& f, const Weight& w, int64_t o0, int rows, runtime::Isa isa,
                               int64_t ahead) {
  k_ = w.k;
  codes_.resize(static_cast<size_t>(kPanelRows * k_));
  sub_scales_.resize(static_cast<size_t>(k_ / 16 * kPanelRows));
  sub_offsets_.resize(sub_scales_.size());
  const size_t row_bytes = w.row_bytes();
  const auto* first = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(o0) * row_bytes;
  reach_ = 128;
  const size_t ahead_bytes = static_cast<size_t>(ahead) * row_bytes;
  if (const kernels::PanelDecodeFn level = kernels::find_panel_decode(isa, w.type)) {
    return level(first, row_bytes, rows, k_, codes_.data(), sub_scales_.data(), sub_offsets_.data(),
                 first + rows * row_bytes, ahead_bytes);
  }
  decode_blocks(f, first, row_bytes, rows, kernels::find_pack(isa), ahead_bytes);
  return measure_shape();
}

void PanelBuffer::decode_blocks(const format::Format& f, const uint8_t* first, size_t row_bytes, int rows,
                                kernels::PackFn pack_codes, size_t ahead) {
  const int block_size = f.info.block_size;
  const int64_t blocks = k_ / block_size;
  // Blocks are decoded a run of up to 256 values at a time.
  const int run_blocks = format::kQK_K / block_size;
  // Rows past `rows` stay a zero block (code 128, scale and offset 0).
  for (int l = rows; l < kPanelRows; ++l) decoded_[l] = format::Int8Block{};
  // The range of the levels, as codes q + 128 (unsigned, so that the reductions vectorize).
  uint8_t low = 128, high = 128;
  kernels::L2Stream stream(first + rows * row_bytes, ahead, (blocks + run_blocks - 1) / run_blocks);
  for (int64_t j = 0; j < blocks; j += run_blocks) {
    stream.step();
    const int count = static_cast<int>(std::min<int64_t>(run_blocks, blocks - j));
    const int values = count * block_size, subs_here = values / format::Int8Block::kSubBlock;
    for (int l = 0; l < rows; ++l) {
      f.decode_run(first + l * row_bytes + j * f.info.block_bytes, count, decoded_[l]);
      for (int i = 0; i < values; ++i) {
        const auto code = static_cast<uint8_t>(decoded_[l].q[i] ^ 0x80);
        low = std::min(low, code);
        high = std::max(high, code);
      }
    }
    float* scales = sub_scales_.data() + j * block_size / 16 * kPanelRows;
    float* offsets = sub_offsets_.data() + j * block_size / 16 * kPanelRows;
    for (int s = 0; s < subs_here; ++s) {
      for (int l = 0; l < kPanelRows; ++l) {
        scales[s * kPanelRows + l] = decoded_[l].scale[s];
        offsets[s * kPanelRows + l] = decoded_[l].offset[s];
      }
    }
    // The run's 16 rows, decoded, go out 32 values at a time: 8 whole chunks.
    uint8_t* chunks = codes_.data() + (j * block_size / 4) * 64;
    for (int i = 0; i < values; i += 32, chunks += 8 * 64) {
      const int8_t* slice[kPanelRows];
      for (int l = 0; l < kPanelRows; ++l) slice[l] = decoded_[l].q + i;
      pack_codes(slice, chunks);
    }
  }
  const auto within = [&](int reach) { return low >= 128 - reach && high < 128 + reach; };
  reach_ = within(16) ? 16 : within(32) ? 32 : within(64) ? 64 : 128;
}

PanelShape PanelBuffer::measure_shape() const {
  // Pairs of sub-blocks group when their scales (offsets) are the same bits; an offset counts when it is not
  // +-0. Integer or-reductions, which vectorize.
  uint32_t scale_split = 0, offset_split = 0, offset = 0;
  for (size_t at = 0; at < sub_scales_.size(); at += 2 * kPanelRows) {
    for (size_t l = at; l < at + kPanelRows; ++l) {
      const auto bits = [](float v) { return std::bit_cast<uint32_t>(v); };
      scale_split |= bits(sub_scales_[l]) ^ bits(sub_scales_[l + kPanelRows]);
      offset_split |= bits(sub_offsets_[l]) ^ bits(sub_offsets_[l + kPanelRows]);
      offset |= (bits(sub_offsets_[l]) | bits(sub_offsets_[l + kPanelRows])) & 0x7fffffffu;
    }
  }
  return {.scale_pairs = scale_split == 0, .offset_pairs = offset_split == 0, .asymmetric = offset != 0};
}

namespace {

// Group 32 from group 16: the first sub-block of each pair speaks for both.
void every_other(const runtime::AlignedVector<float>& subs, runtime::AlignedVector<float>& pairs) {
  const size_t groups = subs.size() / (2 * kPanelRows);
  pairs.resize(groups * kPanelRows);
  // Fixed-size copies, which compile to a few moves (std::copy_n called memmove for each).
  constexpr size_t kRowBytes = sizeof(float) * kPanelRows;
  for (size_t g = 0; g < groups; ++g) {
    std::memcpy(pairs.data() + g * kPanelRows, subs.data() + 2 * g * kPanelRows, kRowBytes);
  }
}

}  // namespace

const kernels::Panel& PanelBuffer::pack(const PanelShape& shape) {
  panel_ = {shape.group(), shape.offset_group(), codes_.data(), sub_scales_.data(), nullptr, reach_};
  if (shape.group() == 32) {
    every_other(sub_scales_, scales_);
    panel_.scales = scales_.data();
  }
  if (shape.asymmetric) {
    panel_.offsets = sub_offsets_.data();
    if (shape.offset_group() == 32) {
      every_other(sub_offsets_, offsets_);
      panel_.offsets = offsets_.data();
    }
  }
  return panel_;
}

}  // namespace ggufmm::paths
