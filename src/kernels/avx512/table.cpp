#include "kernels/avx512/kernels.hpp"

namespace ggufmm::kernels {

const IsaKernels& avx512_kernels() {
  static const IsaKernels table = [] {
    IsaKernels t{runtime::Isa::Avx512, avx512::quantize_act, {}};
    // A null entry (no kernel at this level yet) falls back to the level below.
    auto set = [&t](Type type, GemvFn fn) { t.gemv[static_cast<size_t>(type)] = fn; };
    auto set_panel = [&t](Type type, PanelDecodeFn fn) { t.panel[static_cast<size_t>(type)] = fn; };
    set(Type::F32, avx512::gemv_f32);
    set(Type::F16, avx512::gemv_f16);
    set(Type::BF16, avx512::gemv_bf16);
    set(Type::Q4_0, avx512::gemv_q4_0);
    set(Type::Q4_1, avx512::gemv_q4_1);
    set(Type::Q5_0, avx512::gemv_q5_0);
    set(Type::Q5_1, avx512::gemv_q5_1);
    set(Type::Q8_0, avx512::gemv_q8_0);
    set(Type::Q2_K, avx512::gemv_q2_K);
    set(Type::Q3_K, avx512::gemv_q3_K);
    set(Type::Q4_K, avx512::gemv_q4_K);
    set(Type::Q5_K, avx512::gemv_q5_K);
    set(Type::Q6_K, avx512::gemv_q6_K);
    set(Type::IQ2_XXS, avx512::gemv_iq2_xxs);
    set(Type::IQ2_XS, avx512::gemv_iq2_xs);
    set(Type::IQ2_S, avx512::gemv_iq2_s);
    set(Type::IQ3_XXS, avx512::gemv_iq3_xxs);
    set(Type::IQ3_S, avx512::gemv_iq3_s);
    set(Type::IQ1_S, avx512::gemv_iq1_s);
    set(Type::IQ1_M, avx512::gemv_iq1_m);
    set(Type::IQ4_NL, avx512::gemv_iq4_nl);
    set(Type::IQ4_XS, avx512::gemv_iq4_xs);
    set(Type::TQ1_0, avx512::gemv_tq1_0);
    set(Type::TQ2_0, avx512::gemv_tq2_0);
    set(Type::MXFP4, avx512::gemv_mxfp4);
    set_panel(Type::Q4_0, avx512::panel_q4_0);
    set_panel(Type::Q4_1, avx512::panel_q4_1);
    set_panel(Type::Q5_0, avx512::panel_q5_0);
    set_panel(Type::Q5_1, avx512::panel_q5_1);
    set_panel(Type::Q8_0, avx512::panel_q8_0);
    set_panel(Type::Q2_K, avx512::panel_q2_K);
    set_panel(Type::Q3_K, avx512::panel_q3_K);
    set_panel(Type::Q4_K, avx512::panel_q4_K);
    set_panel(Type::Q5_K, avx512::panel_q5_K);
    set_panel(Type::Q6_K, avx512::panel_q6_K);
    set_panel(Type::IQ2_XXS, avx512::panel_iq2_xxs);
    set_panel(Type::IQ2_XS, avx512::panel_iq2_xs);
    set_panel(Type::IQ2_S, avx512::panel_iq2_s);
    set_panel(Type::IQ3_XXS, avx512::panel_iq3_xxs);
    set_panel(Type::IQ3_S, avx512::panel_iq3_s);
    set_panel(Type::IQ1_S, avx512::panel_iq1_s);
    set_panel(Type::IQ1_M, avx512::panel_iq1_m);
    set_panel(Type::IQ4_NL, avx512::panel_iq4_nl);
    set_panel(Type::IQ4_XS, avx512::panel_iq4_xs);
    set_panel(Type::TQ1_0, avx512::panel_tq1_0);
    set_panel(Type::TQ2_0, avx512::panel_tq2_0);
    set_panel(Type::MXFP4, avx512::panel_mxfp4);
    // At 8 rows these ran 1.02 to 1.5 times as fast as row tiles as they did as panels (Zen 5, 4096x14336 and
    // 14336x4096); the others 0.7 to 1.0 times. From 16 rows panels win for every format.
    for (const Type type : {Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0, Type::Q2_K, Type::Q4_K,
                            Type::IQ4_XS, Type::MXFP4, Type::TQ1_0, Type::TQ2_0}) {
      t.row_tiles[static_cast<size_t>(type)] = true;
    }
    return t;
  }();
  return table;
}

}  // namespace ggufmm::kernels
