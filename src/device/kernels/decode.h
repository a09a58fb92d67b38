/* The block decoders, one per quantized format, in the portable subset: sub-block `sub` of a block (its values
 * 16 * sub to 16 * sub + 15) as 16 integers, a scale and an offset, value i being scale * q[i] - offset computed
 * in f32 in that order. That is the CPU decoders' contract (format::Int8Block, per 16 values), and as there it
 * reproduces ggml's dequantization bit for bit; offset is the exact f32 term of the w = d * q - m formats, zero for
 * the symmetric ones. A device thread decodes the sub-blocks it needs, no more. */
#ifndef GGUFMM_DEVICE_DECODE_H
#define GGUFMM_DEVICE_DECODE_H

#include "device/kernels/portable.h"
#include "device/kernels/tables.h"

GM_BEGIN
typedef struct {
  gm_i8 q[16];
  float scale;
  float offset;
} gm_sub;
GM_END

#include "device/kernels/decode_iq.h"
#include "device/kernels/decode_kquants.h"
#include "device/kernels/decode_legacy.h"

/* The float formats' values, one at a time: value j of a row of them. */
GM_BEGIN
GM_FN float gm_value_f32(const GM_GLOBAL gm_u8* row, gm_i64 j) { return ((const GM_GLOBAL float*)row)[j]; }
GM_FN float gm_value_f16(const GM_GLOBAL gm_u8* row, gm_i64 j) { return gm_half_at(row + 2 * j); }
GM_FN float gm_value_bf16(const GM_GLOBAL gm_u8* row, gm_i64 j) {
  return gm_as_float((gm_u32)(row[2 * j] | row[2 * j + 1] << 8) << 16);
}
GM_END
#define GM_FLOAT_FORMATS(X) X(f32) X(f16) X(bf16)

/* Every quantized format, by ggml's name: X(name) for each gm_decode_<name>. The host checks this list against
 * the library's (GGUFMM_QUANT_TYPES), and takes each format's kernels by name. */
#define GM_QUANT_FORMATS(X) \
  X(q4_0) X(q4_1) X(q5_0) X(q5_1) X(q8_0) X(q2_K) X(q3_K) X(q4_K) X(q5_K) X(q6_K) X(iq2_xxs) X(iq2_xs) X(iq2_s) \
  X(iq3_xxs) X(iq3_s) X(iq1_s) X(iq1_m) X(iq4_nl) X(iq4_xs) X(tq1_0) X(tq2_0) X(mxfp4)

#endif /* GGUFMM_DEVICE_DECODE_H */
