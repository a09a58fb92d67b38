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

/* What a product may assume of each format's sub-blocks, GM_SHAPE_<name>: GM_PAIRS where sub-blocks 2j and 2j + 1
 * always share their scale and offset (a scale per 32 values or more, so that a 32-value integer sum is scaled
 * once), GM_OFFSETS where an offset may be nonzero (the w = d * q - m formats). The decoders' tests hold each
 * format to its row, both ways. */
#define GM_PAIRS 1
#define GM_OFFSETS 2
#define GM_SHAPE_q4_0 GM_PAIRS
#define GM_SHAPE_q4_1 (GM_PAIRS | GM_OFFSETS)
#define GM_SHAPE_q5_0 GM_PAIRS
#define GM_SHAPE_q5_1 (GM_PAIRS | GM_OFFSETS)
#define GM_SHAPE_q8_0 GM_PAIRS
#define GM_SHAPE_q2_K GM_OFFSETS
#define GM_SHAPE_q3_K 0
#define GM_SHAPE_q4_K (GM_PAIRS | GM_OFFSETS)
#define GM_SHAPE_q5_K (GM_PAIRS | GM_OFFSETS)
#define GM_SHAPE_q6_K 0
#define GM_SHAPE_iq2_xxs GM_PAIRS
#define GM_SHAPE_iq2_xs 0
#define GM_SHAPE_iq2_s 0
#define GM_SHAPE_iq3_xxs GM_PAIRS
#define GM_SHAPE_iq3_s GM_PAIRS
#define GM_SHAPE_iq1_s GM_PAIRS
#define GM_SHAPE_iq1_m 0
#define GM_SHAPE_iq4_nl GM_PAIRS
#define GM_SHAPE_iq4_xs GM_PAIRS
#define GM_SHAPE_tq1_0 GM_PAIRS
#define GM_SHAPE_tq2_0 GM_PAIRS
#define GM_SHAPE_mxfp4 GM_PAIRS

#endif /* GGUFMM_DEVICE_DECODE_H */
