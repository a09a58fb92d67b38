#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels {

const IsaKernels& GGUFMM_LEVEL_TABLE() {
  static const IsaKernels table = [] {
#if defined(__AVXVNNI__)
    IsaKernels t{runtime::Isa::AvxVnni, nullptr, {}};
#else
    IsaKernels t{runtime::Isa::Avx2, nullptr, {}};
#endif
    // A null entry (no kernel at this level yet) falls back to the level below. Not listed yet (they do not
    // agree with the portable level within 1e-10; open work): q4_1, q5_1, iq1_m, iq3_xxs, q6_K, tq1_0, iq4_xs, mxfp4.
    auto set = [&t](Type type, GemvFn fn) { t.gemv[static_cast<size_t>(type)] = fn; };
    set(Type::F32, GGUFMM_LEVEL::gemv_f32);
    set(Type::F16, GGUFMM_LEVEL::gemv_f16);
    set(Type::BF16, GGUFMM_LEVEL::gemv_bf16);
    set(Type::Q4_0, GGUFMM_LEVEL::gemv_q4_0);
    set(Type::Q5_0, GGUFMM_LEVEL::gemv_q5_0);
    set(Type::Q8_0, GGUFMM_LEVEL::gemv_q8_0);
    set(Type::Q2_K, GGUFMM_LEVEL::gemv_q2_K);
    set(Type::Q3_K, GGUFMM_LEVEL::gemv_q3_K);
    set(Type::Q4_K, GGUFMM_LEVEL::gemv_q4_K);
    set(Type::Q5_K, GGUFMM_LEVEL::gemv_q5_K);
    set(Type::IQ2_XXS, GGUFMM_LEVEL::gemv_iq2_xxs);
    set(Type::IQ2_XS, GGUFMM_LEVEL::gemv_iq2_xs);
    set(Type::IQ2_S, GGUFMM_LEVEL::gemv_iq2_s);
    set(Type::IQ3_S, GGUFMM_LEVEL::gemv_iq3_s);
    set(Type::IQ1_S, GGUFMM_LEVEL::gemv_iq1_s);
    set(Type::IQ4_NL, GGUFMM_LEVEL::gemv_iq4_nl);
    set(Type::TQ2_0, GGUFMM_LEVEL::gemv_tq2_0);
    return t;
  }();
  return table;
}

}  // namespace ggufmm::kernels
