// The AVX-512 VNNI kernels, one per format, each in its own file.
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::avx512 {

extern const QuantizeActFn quantize_act;

extern const GemvFn gemv_f32;
extern const GemvFn gemv_f16;
extern const GemvFn gemv_bf16;
extern const GemvFn gemv_q4_0;
extern const GemvFn gemv_q4_1;
extern const GemvFn gemv_q5_0;
extern const GemvFn gemv_q5_1;
extern const GemvFn gemv_q8_0;
extern const GemvFn gemv_q2_K;
extern const GemvFn gemv_q3_K;
extern const GemvFn gemv_q4_K;
extern const GemvFn gemv_q5_K;
extern const GemvFn gemv_q6_K;
extern const GemvFn gemv_iq2_xxs;
extern const GemvFn gemv_iq2_xs;
extern const GemvFn gemv_iq2_s;
extern const GemvFn gemv_iq3_xxs;
extern const GemvFn gemv_iq3_s;
extern const GemvFn gemv_iq1_s;
extern const GemvFn gemv_iq1_m;
extern const GemvFn gemv_iq4_nl;
extern const GemvFn gemv_iq4_xs;
extern const GemvFn gemv_tq1_0;
extern const GemvFn gemv_tq2_0;
extern const GemvFn gemv_mxfp4;

// Panel decoders (the tiled path's), where a format's AVX-512 decoding serves.
extern const PanelDecodeFn panel_q4_0;
extern const PanelDecodeFn panel_q4_1;
extern const PanelDecodeFn panel_q5_0;
extern const PanelDecodeFn panel_q5_1;
extern const PanelDecodeFn panel_q8_0;
extern const PanelDecodeFn panel_q2_K;
extern const PanelDecodeFn panel_q3_K;
extern const PanelDecodeFn panel_q4_K;
extern const PanelDecodeFn panel_q5_K;
extern const PanelDecodeFn panel_q6_K;
extern const PanelDecodeFn panel_iq2_xxs;
extern const PanelDecodeFn panel_iq2_xs;
extern const PanelDecodeFn panel_iq2_s;
extern const PanelDecodeFn panel_iq3_xxs;
extern const PanelDecodeFn panel_iq3_s;
extern const PanelDecodeFn panel_iq1_s;
extern const PanelDecodeFn panel_iq1_m;
extern const PanelDecodeFn panel_iq4_nl;
extern const PanelDecodeFn panel_iq4_xs;
extern const PanelDecodeFn panel_tq1_0;
extern const PanelDecodeFn panel_tq2_0;
extern const PanelDecodeFn panel_mxfp4;

}  // namespace ggufmm::kernels::avx512
