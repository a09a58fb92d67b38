#include "kernels/avx512/kernels.hpp"
#include "kernels/kernels.hpp"
#include "kernels/scalar/scalar.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels {

const IsaKernels& kernels_for(runtime::Isa isa) {
  switch (isa) {
    case runtime::Isa::Avx512:
      return avx512_kernels();
    case runtime::Isa::AvxVnni:
      return avxvnni_kernels();
    case runtime::Isa::Avx2:
      return avx2_kernels();
    case runtime::Isa::Scalar:
      break;
  }
  return scalar_kernels();
}

namespace {

runtime::Isa lower(runtime::Isa isa) { return static_cast<runtime::Isa>(static_cast<int>(isa) - 1); }

// What `pick` finds in the table of `isa`, or of the highest lower level where it is not null.
template <class Pick>
auto highest(runtime::Isa isa, Pick pick) {
  for (;; isa = lower(isa)) {
    if (const auto fn = pick(kernels_for(isa))) return fn;
    if (isa == runtime::Isa::Scalar) return decltype(pick(kernels_for(isa))){};
  }
}

}  // namespace

GemvFn find_gemv(runtime::Isa isa, Type type) {
  const auto slot = static_cast<size_t>(type);
  if (slot >= kTypeSlots) return nullptr;
  return highest(isa, [slot](const IsaKernels& k) { return k.gemv[slot]; });
}

PanelDecodeFn find_panel_decode(runtime::Isa isa, Type type) {
  const auto slot = static_cast<size_t>(type);
  if (slot >= kTypeSlots) return nullptr;
  return highest(isa, [slot](const IsaKernels& k) { return k.panel[slot]; });
}

bool prefers_row_tiles(runtime::Isa isa, Type type) {
  const auto slot = static_cast<size_t>(type);
  return slot < kTypeSlots && kernels_for(isa).row_tiles[slot];
}

QuantizeActFn find_quantize_act(runtime::Isa isa) {
  return highest(isa, [](const IsaKernels& k) { return k.quantize_act; });
}

TileKernel find_tile(runtime::Isa isa, const PanelShape& shape) {
  const auto form = static_cast<size_t>(tile_form(shape));
  switch (isa) {
    case runtime::Isa::Avx512:
      return avx512::tile_int8[form];
    case runtime::Isa::AvxVnni:
      return avxvnni::tile_int8[form];
    case runtime::Isa::Avx2:
      return avx2::tile_int8[form];
    case runtime::Isa::Scalar:
      break;
  }
  return scalar::tile_int8[form];
}

PackFn find_pack(runtime::Isa isa) {
  switch (isa) {
    case runtime::Isa::AvxVnni:
      return avxvnni::pack_panel;
    case runtime::Isa::Avx512:  // every format decodes its panels itself there; any other would pack as AVX2
    case runtime::Isa::Avx2:
      return avx2::pack_panel;
    case runtime::Isa::Scalar:
      break;
  }
  return scalar::pack_panel;
}

}  // namespace ggufmm::kernels
