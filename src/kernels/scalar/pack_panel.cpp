// Packing 32 values of 16 weight rows into panel chunks, portable: a word (4 values) at a time, the sign bit
// flipped to make each int8 value q the unsigned code q + 128.
#include <cstring>

#include "kernels/scalar/scalar.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::scalar {
namespace {

void pack(const int8_t* const (&rows)[kPanelRows], uint8_t* chunks) {
  for (int c = 0; c < 8; ++c, chunks += 64) {
    for (int l = 0; l < kPanelRows; ++l) {
      uint32_t word;
      std::memcpy(&word, rows[l] + 4 * c, 4);
      word ^= 0x80808080u;
      std::memcpy(chunks + l * 4, &word, 4);
    }
  }
}

}  // namespace

const PackFn pack_panel = pack;

}  // namespace ggufmm::kernels::scalar
