/* placeholder decoders: to be replaced */
#ifndef GGUFMM_DEVICE_DECODE_KQUANTS_H
#define GGUFMM_DEVICE_DECODE_KQUANTS_H

#include "device/kernels/portable.h"
#include "device/kernels/tables.h"

GM_BEGIN
GM_FN gm_sub gm_decode_q2_K(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_q3_K(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_q4_K(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_q5_K(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_q6_K(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_iq4_xs(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_END

#endif
