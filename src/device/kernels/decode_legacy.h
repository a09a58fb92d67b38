/* placeholder decoders: to be replaced */
#ifndef GGUFMM_DEVICE_DECODE_LEGACY_H
#define GGUFMM_DEVICE_DECODE_LEGACY_H

#include "device/kernels/portable.h"
#include "device/kernels/tables.h"

GM_BEGIN
GM_FN gm_sub gm_decode_q4_0(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_q4_1(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_q5_0(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_q5_1(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_q8_0(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_iq4_nl(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_mxfp4(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_tq1_0(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_tq2_0(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_END

#endif
