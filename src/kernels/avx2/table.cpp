#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels {

const IsaKernels& GGUFMM_LEVEL_TABLE() {
  static const IsaKernels table = [] {
#if defined(__AVXVNNI__)
    IsaKernels t{runtime::Isa::AvxVnni, GGUFMM_LEVEL::quantize_act, {}};
#else
    IsaKernels t{runtime::Isa::Avx2, GGUFMM_LEVEL::quantize_act, {}};
#endif
    // A null entry (no kernel at this level yet) falls back to the level below.
    auto set = [&t](Type type, GemvFn fn) { t.gemv[static_cast<size_t>(type)] = fn; };
    set(Type::F32, GGUFMM_LEVEL::gemv_f32);
    set(Type::F16, GGUFMM_LEVEL::gemv_f16);
    set(Type::BF16, GGUFMM_LEVEL::gemv_bf16);
    set(Type::Q4_0, GGUFMM_LEVEL::gemv_q4_0);
    set(Type::Q4_1, GGUFMM_LEVEL::gemv_q4_1);
    set(Type::Q5_0, GGUFMM_LEVEL::gemv_q5_0);
    set(Type::Q5_1, GGUFMM_LEVEL::gemv_q5_1);
    set(Type::Q8_0, GGUFMM_LEVEL::gemv_q8_0);
    set(Type::Q2_K, GGUFMM_LEVEL::gemv_q2_K);
    set(Type::Q3_K, GGUFMM_LEVEL::gemv_q3_K);
    set(Type::Q4_K, GGUFMM_LEVEL::gemv_q4_K);
    set(Type::Q5_K, GGUFMM_LEVEL::gemv_q5_K);
    set(Type::Q6_K, GGUFMM_LEVEL::gemv_q6_K);
    set(Type::IQ2_XXS, GGUFMM_LEVEL::gemv_iq2_xxs);
    set(Type::IQ2_XS, GGUFMM_LEVEL::gemv_iq2_xs);
    set(Type::IQ2_S, GGUFMM_LEVEL::gemv_iq2_s);
    set(Type::IQ3_XXS, GGUFMM_LEVEL::gemv_iq3_xxs);
    set(Type::IQ3_S, GGUFMM_LEVEL::gemv_iq3_s);
    set(Type::IQ1_S, GGUFMM_LEVEL::gemv_iq1_s);
    set(Type::IQ1_M, GGUFMM_LEVEL::gemv_iq1_m);
    set(Type::IQ4_NL, GGUFMM_LEVEL::gemv_iq4_nl);
    set(Type::IQ4_XS, GGUFMM_LEVEL::gemv_iq4_xs);
    set(Type::TQ1_0, GGUFMM_LEVEL::gemv_tq1_0);
    set(Type::TQ2_0, GGUFMM_LEVEL::gemv_tq2_0);
    set(Type::MXFP4, GGUFMM_LEVEL::gemv_mxfp4);
    return t;
  }();
  return table;
}

}  // namespace ggufmm::kernels
