/* placeholder decoders: to be replaced */
#ifndef GGUFMM_DEVICE_DECODE_IQ_H
#define GGUFMM_DEVICE_DECODE_IQ_H

#include "device/kernels/portable.h"
#include "device/kernels/tables.h"

GM_BEGIN
GM_FN gm_sub gm_decode_iq2_xxs(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_iq2_xs(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_iq2_s(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_iq3_xxs(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_iq3_s(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_iq1_s(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_FN gm_sub gm_decode_iq1_m(const GM_GLOBAL gm_u8* b, int sub) { gm_sub s = {{0}, 0.0f, 0.0f}; (void)b; (void)sub; return s; }
GM_END

#endif
