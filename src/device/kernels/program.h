/* The device program: every kernel, written once in the portable subset. OpenCL compiles this file as embedded
 * in the library (cmake/embed_source.cmake inlines its includes); the CUDA build compiles it through device.cu. */
#ifndef GGUFMM_DEVICE_PROGRAM_H
#define GGUFMM_DEVICE_PROGRAM_H

#include "device/kernels/args.h"
#include "device/kernels/decode.h"

/* The formats whose kernels a compilation holds: every one (CUDA), or the one GM_ONLY_QUANT or GM_ONLY_FLOAT names,
 * or none (GM_ONLY_NONE: the kernels of no format). OpenCL builds a program per format at its first use, so that a
 * device compiles only the formats it multiplies. */
#define GM_APPLY(X, name) X(name)
#if defined(GM_ONLY_QUANT)
#define GM_PROGRAM_QUANT(X) GM_APPLY(X, GM_ONLY_QUANT)
#define GM_PROGRAM_FLOAT(X)
#elif defined(GM_ONLY_FLOAT)
#define GM_PROGRAM_QUANT(X)
#define GM_PROGRAM_FLOAT(X) GM_APPLY(X, GM_ONLY_FLOAT)
#elif defined(GM_ONLY_NONE)
#define GM_PROGRAM_QUANT(X)
#define GM_PROGRAM_FLOAT(X)
#else
#define GM_PROGRAM_QUANT(X) GM_QUANT_FORMATS(X)
#define GM_PROGRAM_FLOAT(X) GM_FLOAT_FORMATS(X)
#endif

/* Dequantization, into rows of k values `stride` elements apart, of f32 or (half_out) f16 elements: a dense copy,
 * or (stride k, f32) the plain values. The quantized formats take a work-item per 16 values (a sub-block), `subs`
 * of them; their blocks are `block_bytes` apart and hold `subs_per_block` sub-blocks. Each value is scale * q -
 * offset, rounded twice as ggml rounds it. */
GM_FN void gm_store_value(GM_GLOBAL void* out, gm_i64 value, gm_i64 k, gm_i64 stride, int half_out, float v) {
  const gm_i64 at = value / k * stride + value % k;
  if (half_out) {
    gm_store_half(out, at, v);
  } else {
    ((GM_GLOBAL float*)out)[at] = v;
  }
}

#define GM_DEQUANTIZE_KERNEL(name)                                                                                   \
  GM_KERNEL void dequantize_##name(const GM_GLOBAL gm_u8* blocks, GM_GLOBAL void* out, gm_i64 subs, int block_bytes, \
                                   int subs_per_block, gm_i64 k, gm_i64 stride, int half_out) {                      \
    const gm_i64 i = GM_GLOBAL_ID(0);                                                                                \
    if (i >= subs) return;                                                                                           \
    const gm_sub s = gm_decode_##name(blocks + (i / subs_per_block) * block_bytes, (int)(i % subs_per_block));       \
    for (int j = 0; j < 16; ++j) {                                                                                   \
      gm_store_value(out, i * 16 + j, k, stride, half_out, s.scale * (float)s.q[j] - s.offset);                      \
    }                                                                                                                \
  }
GM_PROGRAM_QUANT(GM_DEQUANTIZE_KERNEL)

/* The float formats, one work-item per value (their kernels take the arguments of the quantized formats'). */
#define GM_DEQUANTIZE_FLOAT_KERNEL(name)                                                                           \
  GM_KERNEL void dequantize_##name(const GM_GLOBAL gm_u8* values, GM_GLOBAL void* out, gm_i64 n, int unused_bytes, \
                                   int unused_subs, gm_i64 k, gm_i64 stride, int half_out) {                       \
    const gm_i64 i = GM_GLOBAL_ID(0);                                                                              \
    (void)unused_bytes;                                                                                            \
    (void)unused_subs;                                                                                             \
    if (i < n) gm_store_value(out, i, k, stride, half_out, gm_value_##name(values, i));                            \
  }
GM_PROGRAM_FLOAT(GM_DEQUANTIZE_FLOAT_KERNEL)

/* Activations in f16, for a GEMM on f16 dense copies. */
GM_KERNEL void to_half(const GM_GLOBAL float* x, gm_i64 n, GM_GLOBAL void* out) {
  const gm_i64 i = GM_GLOBAL_ID(0);
  if (i < n) gm_store_half(out, i, x[i]);
}

/* Activation quantization, as the CPU's (kernels/act_scale.hpp, kernels/scalar/quantize_act.cpp) bit for bit:
 * one work-item per group of 32 values, int8 codes rint(x * 127 / amax) with the scale amax / 127, and the sums
 * of each 16 codes times the scale (the offset term of w = d * q - m formats). A group holding a NaN or an
 * infinity keeps it in its scale, codes 0; one too small for 127 / amax to be finite counts as zero. */
GM_KERNEL void quantize_act(const GM_GLOBAL float* x, gm_i64 groups, GM_GLOBAL gm_i8* q, GM_GLOBAL float* d,
                            GM_GLOBAL float* sum16) {
  const gm_i64 g = GM_GLOBAL_ID(0);
  if (g >= groups) return;
  const GM_GLOBAL float* xg = x + g * 32;
  float amax = 0.0f;
  int nan = 0;
  for (int i = 0; i < 32; ++i) {
    const float a = fabs(xg[i]);
    nan |= isnan(a);
    amax = amax < a ? a : amax;
  }
  if (nan) amax = gm_as_float(0x7fc00000u);
  const float inverse = amax != 0.0f ? 127.0f / amax : 0.0f;
  const int usable = isfinite(amax) && isfinite(inverse) && inverse != 0.0f;
  const float scale = usable ? amax / 127.0f : (isfinite(amax) ? 0.0f : amax);
  int part[2] = {0, 0};
  for (int i = 0; i < 32; ++i) {
    const int code = usable ? (int)rint(xg[i] * inverse) : 0;
    q[g * 32 + i] = (gm_i8)code;
    part[i / 16] += code;
  }
  d[g] = scale;
  sum16[2 * g] = scale * (float)part[0];
  sum16[2 * g + 1] = scale * (float)part[1];
}

/* Which weight matrix and activation rows a set of output rows uses. A matmul is sets of up to `rows` rows
 * (matrix 0; set j reads activation rows from j * rows); mul_mat_id has a set per token and slot, one row each, its
 * matrix the slot's expert and its activation row the token's (act_slots 1) or the slot's own. An id that names no
 * expert makes its outputs NaN. */
/* The first activation row of output row (or set) `out`: the token's shared row, or the slot's own. */
GM_FN gm_i64 gm_act_row(gm_i64 out, const gm_gemv_args* a) {
  return (out / a->slots) * a->act_slots + (a->act_slots == 1 ? 0 : out % a->slots);
}

typedef struct {
  gm_i64 matrix_offset; /* bytes */
  gm_i64 act_row;       /* the set's first activation row */
  int rows;             /* its output rows */
  int valid;
} gm_set;

GM_FN gm_set gm_set_of(gm_i64 set, const GM_GLOBAL gm_i32* ids, const gm_gemv_args* a) {
  gm_set s;
  const gm_i64 id = a->expert_bytes ? (gm_i64)ids[set] : 0;
  s.valid = id >= 0 && id < a->experts;
  s.matrix_offset = s.valid ? id * a->expert_bytes : 0;
  s.act_row = gm_act_row(set, a);
  s.rows = (int)(a->out_rows - set * a->rows < a->rows ? a->out_rows - set * a->rows : a->rows);
  return s;
}

/* The exact integer dot product of 16 weight and 16 activation codes; with dp4a, four bytes at a time. One for
 * decoded codes in registers against activations in global memory, one between two work-group arrays. */
#if defined(GM_HAS_DP4A)
#define GM_DOT16_BODY                                                                               \
  int wi[4], xi[4];                                                                                 \
  memcpy(wi, (const void*)w, 16);                                                                   \
  memcpy(xi, (const void*)x, 16);                                                                   \
  return __dp4a(wi[3], xi[3], __dp4a(wi[2], xi[2], __dp4a(wi[1], xi[1], __dp4a(wi[0], xi[0], 0))));
#else
#define GM_DOT16_BODY                                \
  int sum = 0;                                       \
  for (int j = 0; j < 16; ++j) sum += w[j] * x[j];   \
  return sum;
#endif
GM_FN int gm_dot16(const gm_i8* w, const GM_GLOBAL gm_i8* x) { GM_DOT16_BODY }
GM_FN int gm_dot16_local(const GM_LOCAL gm_i8* w, const GM_LOCAL gm_i8* x) { GM_DOT16_BODY }

/* Decode, 1 to 7 activation rows per set: a work-group per output (group 0) and set (group 1). Its work-items take
 * the row's sub-blocks in turn, each decoded once for all rows: sum_i w_i * xq_i exactly in integers per 16 values,
 * scaled as the CPU scales it (scale * d * isum - offset * sum16), then summed across the group (in local memory,
 * or by warp shuffles where the device has them). The residual is added in the store. Work-groups are
 * GM_GEMV_GROUP work-items (a power of two, and a multiple of 32). */
#define GM_GEMV_GROUP 64
#define GM_MAX_ROWS 7
GM_FN void gm_gemv_store(GM_LOCAL float* partial, float* acc, gm_i64 set, gm_set s, const gm_gemv_args* a,
                         const GM_GLOBAL float* residual, GM_GLOBAL float* y) {
  const int lid = GM_LOCAL_ID(0);
#if defined(GM_HAS_WARP_SHUFFLE)
  /* Each warp sums its lanes by shuffles; then its first lane leaves the warp's sum for the group's. */
  const int warps = GM_GEMV_GROUP / 32, warp = lid / 32;
  GM_UNROLL for (int r = 0; r < GM_MAX_ROWS; ++r) {
    if (r < s.rows) {
      float v = acc[r];
      for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
      if (lid % 32 == 0) partial[r * warps + warp] = v;
    }
  }
  GM_BARRIER();
  if (lid < s.rows) {
    float total = 0.0f;
    for (int w = 0; w < warps; ++w) total += partial[lid * warps + w];
    partial[lid * warps] = total;
  }
  const int stride_of_row = warps;
#else
  GM_UNROLL for (int r = 0; r < GM_MAX_ROWS; ++r) {
    if (r < s.rows) partial[r * GM_GEMV_GROUP + lid] = acc[r];
  }
  GM_BARRIER();
  for (int stride = GM_GEMV_GROUP / 2; stride > 0; stride /= 2) {
    if (lid < stride) {
      for (int r = 0; r < s.rows; ++r) partial[r * GM_GEMV_GROUP + lid] += partial[r * GM_GEMV_GROUP + lid + stride];
    }
    GM_BARRIER();
  }
  const int stride_of_row = GM_GEMV_GROUP;
#endif
  if (lid < s.rows) {
    const gm_i64 at = (set * a->rows + lid) * a->m + GM_GROUP_ID(0);
    const float sum = s.valid ? partial[lid * stride_of_row] : gm_as_float(0x7fc00000u);
    y[at] = sum + (a->has_residual ? residual[at] : 0.0f);
  }
}

/* The work-item's share of the row, for every row of its set: the quantized formats' sub-blocks in turn, each
 * decoded once for all rows, in exact integers per 16 values (the offset term read only for formats that have
 * offsets); the float formats' values, multiplied in f32 as the CPU multiplies them (value j loaded by
 * gm_value_<name>). */
#define GM_GEMV_SUM_QUANT(name)                                                                                   \
  for (gm_i64 sub = GM_LOCAL_ID(0); sub < a.k / 16; sub += GM_GEMV_GROUP) {                                       \
    const gm_sub b = gm_decode_##name(row + (sub / a.subs_per_block) * a.block_bytes, (int)(sub % a.subs_per_block)); \
    GM_UNROLL for (int r = 0; r < GM_MAX_ROWS; ++r) {                                                             \
      if (r < s.rows) {                                                                                           \
        const gm_i64 i = (s.act_row + r) * a.k + sub * 16;                                                        \
        const float scaled = b.scale * xd[i / 32] * (float)gm_dot16(b.q, xq + i);                                 \
        acc[r] += GM_SHAPE_##name & GM_OFFSETS ? scaled - b.offset * xsum[i / 16] : scaled;                       \
      }                                                                                                           \
    }                                                                                                             \
  }
#define GM_GEMV_SUM_FLOAT(name)                                                                                   \
  for (gm_i64 j = GM_LOCAL_ID(0); j < a.k; j += GM_GEMV_GROUP) {                                                  \
    const float v = gm_value_##name(row, j);                                                                      \
    GM_UNROLL for (int r = 0; r < GM_MAX_ROWS; ++r) {                                                             \
      if (r < s.rows) acc[r] += v * x[(s.act_row + r) * a.k + j];                                                 \
    }                                                                                                             \
  }

/* x is the activations as they are (the float formats read them), xq, xd and xsum as quantize_act left them. */
#define GM_GEMV_KERNEL(name, SUM)                                                                                 \
  GM_KERNEL void gemv_##name(const GM_GLOBAL gm_u8* w, const GM_GLOBAL gm_i32* ids, const GM_GLOBAL float* x,     \
                             const GM_GLOBAL gm_i8* xq, const GM_GLOBAL float* xd, const GM_GLOBAL float* xsum,   \
                             const GM_GLOBAL float* residual, GM_GLOBAL float* y, gm_gemv_args a) {              \
    GM_SHARED float partial[GM_MAX_ROWS * GM_GEMV_GROUP];                                                         \
    const gm_i64 set = GM_GROUP_ID(1);                                                                            \
    const gm_set s = gm_set_of(set, ids, &a);                                                                     \
    const GM_GLOBAL gm_u8* row = w + s.matrix_offset + GM_GROUP_ID(0) * a.row_bytes;                             \
    float acc[GM_MAX_ROWS] = {0, 0, 0, 0, 0, 0, 0};                                                               \
    (void)x;                                                                                                      \
    (void)xq;                                                                                                     \
    (void)xd;                                                                                                     \
    (void)xsum;                                                                                                   \
    SUM(name)                                                                                                     \
    gm_gemv_store(partial, acc, set, s, &a, residual, y);                                                         \
  }
#define GM_GEMV_QUANT_KERNEL(name) GM_GEMV_KERNEL(name, GM_GEMV_SUM_QUANT)
#define GM_GEMV_FLOAT_KERNEL(name) GM_GEMV_KERNEL(name, GM_GEMV_SUM_FLOAT)
GM_PROGRAM_QUANT(GM_GEMV_QUANT_KERNEL)
GM_PROGRAM_FLOAT(GM_GEMV_FLOAT_KERNEL)

/* Prefill: a work-group computes tiles of GM_TILE_M weight rows by TN activation rows (TN 16 to 256, chosen by the
 * row count) in GM_TILE_GROUP(TN) work-items. Each 32-value step, its work-items decode the tile's weight
 * sub-blocks once into local memory (the same integers, scales and offsets as gemv's) beside the step's quantized
 * activation rows, then every warp (32 work-items) multiplies the tile's 64 weight rows by its share of activation
 * rows from there, as 16 x 8 blocks of exact integer sums per 16 values (gm_block_sums: tensor cores where the
 * device has them), scaled as gemv scales them. Two buffers: the next step is decoded while this one is
 * multiplied, one barrier apart. A matmul's tiles are its rows in order, a work-group per tile; mul_mat_id's are
 * an expert's rows as route_experts listed them (tiles: their number, then expert, first, count triples; order:
 * output rows), and a work-group takes every GM_NUM_GROUPS(1)-th of them, so that the grid is sized to the device
 * rather than to the most tiles a routing could need. Warps whose activation rows the tile did not get skip the
 * arithmetic. */
#define GM_TILE_M 64
#define GM_TILE_GROUP(TN) ((TN) < GM_TILE_M ? GM_TILE_M : (TN))
typedef struct {
  gm_i64 expert;
  gm_i64 first;
  int count;
} gm_tile;

GM_FN gm_i64 gm_tile_count(int tile_rows, const GM_GLOBAL gm_i32* tiles, const gm_gemv_args* a) {
  return a->expert_bytes ? (gm_i64)tiles[0] : (a->out_rows + tile_rows - 1) / tile_rows;
}

GM_FN gm_tile gm_tile_at(gm_i64 tile, int tile_rows, const GM_GLOBAL gm_i32* tiles, const gm_gemv_args* a) {
  gm_tile t;
  if (a->expert_bytes) {
    t.expert = tiles[1 + 3 * tile];
    t.first = tiles[2 + 3 * tile];
    t.count = tiles[3 + 3 * tile];
  } else {
    t.expert = 0;
    t.first = tile * tile_rows;
    t.count = (int)(a->out_rows - t.first < tile_rows ? a->out_rows - t.first : tile_rows);
  }
  return t;
}

GM_FN gm_i64 gm_tile_row(gm_tile t, int j, const GM_GLOBAL gm_i32* order, const gm_gemv_args* a) {
  return a->expert_bytes ? (gm_i64)order[t.first + j] : t.first + j;
}

/* The integer sums over `codes` (16, or 32 for a pair of sub-blocks) of a 16 x 8 block: weight rows w (32 bytes
 * apart) against activation rows x (32 apart), called by all 32 work-items of a warp at once. Lane l gets the four
 * of rows g = l / 4 and g + 8 by columns c = 2 (l % 4) and c + 1: sums (g, c), (g, c + 1), (g + 8, c),
 * (g + 8, c + 1), the accumulator layout of NVIDIA's int8 mma (m16n8k16, or m16n8k32), whose operands are the
 * lane's 4-byte words l % 4 (and l % 4 + 4) of weight rows g and g + 8 and of activation row g. */
GM_FN void gm_block_sums(int* sums, const GM_LOCAL gm_i8* w, const GM_LOCAL gm_i8* x, int lane, int codes) {
  const int g = lane / 4;
#if defined(GM_HAS_MMA)
  const GM_LOCAL int* w0 = (const GM_LOCAL int*)(w + g * 32) + lane % 4;
  const GM_LOCAL int* w8 = (const GM_LOCAL int*)(w + (g + 8) * 32) + lane % 4;
  const GM_LOCAL int* xg = (const GM_LOCAL int*)(x + g * 32) + lane % 4;
  sums[0] = sums[1] = sums[2] = sums[3] = 0;
  if (codes == 32) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+r"(sums[0]), "+r"(sums[1]), "+r"(sums[2]), "+r"(sums[3])
        : "r"(w0[0]), "r"(w8[0]), "r"(w0[4]), "r"(w8[4]), "r"(xg[0]), "r"(xg[4]));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
        : "+r"(sums[0]), "+r"(sums[1]), "+r"(sums[2]), "+r"(sums[3])
        : "r"(w0[0]), "r"(w8[0]), "r"(xg[0]));
  }
#else
  GM_UNROLL for (int e = 0; e < 4; ++e) {
    const GM_LOCAL gm_i8* wr = w + (g + e / 2 * 8) * 32;
    const GM_LOCAL gm_i8* xr = x + (lane % 4 * 2 + e % 2) * 32;
    sums[e] = gm_dot16_local(wr, xr) + (codes == 32 ? gm_dot16_local(wr + 16, xr + 16) : 0);
  }
#endif
}

/* Step `step`'s 2 x GM_TILE_M weight sub-blocks (each work-item of the group taking one in turn) and activation
 * rows (one per work-item of the first TN; zeros past t.count) into buffer `buf`, as 32-bit words. */
GM_FN gm_i32 gm_word_of(const gm_i8* q) {
  return (gm_i32)((gm_u32)(gm_u8)q[0] | (gm_u32)(gm_u8)q[1] << 8 | (gm_u32)(gm_u8)q[2] << 16 |
                  (gm_u32)(gm_u8)q[3] << 24);
}
#define GM_TILE_LOAD(name, TN, step, buf)                                                                         \
  {                                                                                                               \
    for (int item = lid; item < 2 * GM_TILE_M; item += GM_TILE_GROUP(TN)) {                                       \
      const int h = item / GM_TILE_M, at = (buf) * GM_TILE_M + item % GM_TILE_M;                                  \
      const gm_i64 o = m0 + item % GM_TILE_M, sub = (step) * 2 + h;                                               \
      gm_sub b;                                                                                                   \
      if (o < a.m) {                                                                                              \
        b = gm_decode_##name(matrix + o * a.row_bytes + (sub / a.subs_per_block) * a.block_bytes,                 \
                             (int)(sub % a.subs_per_block));                                                      \
      } else {                                                                                                    \
        for (int j = 0; j < 16; ++j) b.q[j] = 0;                                                                  \
        b.scale = 0.0f;                                                                                           \
        b.offset = 0.0f;                                                                                          \
      }                                                                                                           \
      for (int j = 0; j < 4; ++j) wq_words[at * 8 + h * 4 + j] = gm_word_of(b.q + 4 * j);                         \
      wscale[at * 2 + h] = b.scale;                                                                               \
      woffset[at * 2 + h] = b.offset;                                                                             \
    }                                                                                                             \
    if (lid < (TN)) {                                                                                             \
      const int n = (buf) * (TN) + lid, real = lid < t.count;                                                     \
      const gm_i64 i = arow[lid] * a.k + (step) * 32;                                                             \
      const GM_GLOBAL gm_i32* words = (const GM_GLOBAL gm_i32*)(xq + i); /* i is a multiple of 32 */             \
      for (int j = 0; j < 8; ++j) aq_words[n * 8 + j] = real ? words[j] : 0;                                      \
      ad[n] = real ? xd[i / 32] : 0.0f;                                                                           \
      asum[n * 2] = real ? xsum[i / 16] : 0.0f;                                                                   \
      asum[n * 2 + 1] = real ? xsum[i / 16 + 1] : 0.0f;                                                           \
    }                                                                                                             \
  }

/* A warp's outputs: its GM_TILE_CB(TN) blocks of 8 activation rows (from 8 * GM_TILE_CB(TN) * warp) in all four
 * 16-row blocks, each held as gm_block_sums lays it out: acc[row block][column block][sum]. A format whose
 * sub-blocks pair (GM_SHAPE) is summed 32 codes at a time and scaled once; one without offsets skips their term. */
#define GM_TILE_CB(TN) ((TN) * 4 / GM_TILE_GROUP(TN))
#define GM_TILE_CODES(name) (GM_SHAPE_##name & GM_PAIRS ? 32 : 16)
#define GM_TILED_KERNEL(name, TN)                                                                                 \
  GM_KERNEL void tiled##TN##_##name(const GM_GLOBAL gm_u8* w, const GM_GLOBAL gm_i32* tiles,                      \
                                    const GM_GLOBAL gm_i32* order, const GM_GLOBAL gm_i8* xq,                     \
                                    const GM_GLOBAL float* xd, const GM_GLOBAL float* xsum,                       \
                                    const GM_GLOBAL float* residual, GM_GLOBAL float* y, gm_gemv_args a) {        \
    /* Codes in 32-bit words, so that a block's rows load 4 bytes at a time. */                                   \
    GM_SHARED gm_i32 wq_words[2 * GM_TILE_M * 8];                                                                 \
    GM_SHARED float wscale[2 * GM_TILE_M * 2];                                                                    \
    GM_SHARED float woffset[2 * GM_TILE_M * 2];                                                                   \
    GM_SHARED gm_i32 aq_words[2 * (TN) * 8];                                                                      \
    GM_SHARED float ad[2 * (TN)];                                                                                 \
    GM_SHARED float asum[2 * (TN) * 2];                                                                           \
    GM_SHARED gm_i64 arow[TN];                                                                                    \
    GM_LOCAL gm_i8* wq = (GM_LOCAL gm_i8*)wq_words;                                                               \
    GM_LOCAL gm_i8* aq = (GM_LOCAL gm_i8*)aq_words;                                                               \
    const int lid = GM_LOCAL_ID(0), lane = lid % 32, g = lane / 4, c = lane % 4 * 2;                              \
    const int n0 = lid / 32 * 8 * GM_TILE_CB(TN);                                                                 \
    const gm_i64 m0 = GM_GROUP_ID(0) * GM_TILE_M, tiles_in_all = gm_tile_count(TN, tiles, &a);                    \
    for (gm_i64 tile = GM_GROUP_ID(1); tile < tiles_in_all; tile += GM_NUM_GROUPS(1)) {                           \
      const gm_tile t = gm_tile_at(tile, TN, tiles, &a);                                                          \
      const GM_GLOBAL gm_u8* matrix = w + t.expert * a.expert_bytes;                                              \
      float acc[4][GM_TILE_CB(TN)][4];                                                                            \
      GM_UNROLL for (int rb = 0; rb < 4; ++rb) {                                                                  \
        GM_UNROLL for (int cb = 0; cb < GM_TILE_CB(TN); ++cb) {                                                   \
          GM_UNROLL for (int e = 0; e < 4; ++e) acc[rb][cb][e] = 0.0f;                                            \
        }                                                                                                         \
      }                                                                                                           \
      /* Each work-item gathers the activation row it loads, and reads only that one. */                          \
      if (lid < (TN)) arow[lid] = lid < t.count ? gm_act_row(gm_tile_row(t, lid, order, &a), &a) : 0;            \
      const gm_i64 steps = a.k / 32;                                                                              \
      GM_TILE_LOAD(name, TN, 0, 0)                                                                                \
      GM_BARRIER();                                                                                               \
      for (gm_i64 step = 0; step < steps; ++step) {                                                               \
        if (step + 1 < steps) GM_TILE_LOAD(name, TN, step + 1, (step + 1) & 1)                                    \
        const int buf = (int)(step & 1);                                                                          \
        GM_UNROLL for (int cb = 0; cb < GM_TILE_CB(TN); ++cb) {                                                   \
          const int n = buf * (TN) + n0 + cb * 8;                                                                 \
          if (n0 + cb * 8 < t.count) { /* the same for the whole warp, as mma needs */                           \
            GM_UNROLL for (int h = 0; h < 32 / GM_TILE_CODES(name); ++h) {                                        \
              GM_UNROLL for (int rb = 0; rb < 4; ++rb) {                                                          \
                const int r = buf * GM_TILE_M + rb * 16;                                                          \
                int sums[4];                                                                                      \
                gm_block_sums(sums, wq + r * 32 + h * 16, aq + n * 32 + h * 16, lane, GM_TILE_CODES(name));       \
                GM_UNROLL for (int e = 0; e < 4; ++e) {                                                           \
                  const int row = r + g + e / 2 * 8, col = n + c + e % 2;                                         \
                  float v = wscale[row * 2 + h] * ad[col] * (float)sums[e];                                       \
                  if (GM_SHAPE_##name & GM_OFFSETS) {                                                             \
                    v -= woffset[row * 2 + h] *                                                                   \
                         (GM_TILE_CODES(name) == 32 ? asum[col * 2] + asum[col * 2 + 1] : asum[col * 2 + h]);     \
                  }                                                                                               \
                  acc[rb][cb][e] += v;                                                                            \
                }                                                                                                 \
              }                                                                                                   \
            }                                                                                                     \
          }                                                                                                       \
        }                                                                                                         \
        GM_BARRIER();                                                                                             \
      }                                                                                                           \
      GM_UNROLL for (int rb = 0; rb < 4; ++rb) {                                                                  \
        GM_UNROLL for (int cb = 0; cb < GM_TILE_CB(TN); ++cb) {                                                   \
          GM_UNROLL for (int e = 0; e < 4; ++e) {                                                                 \
            const gm_i64 o = m0 + rb * 16 + g + e / 2 * 8;                                                       \
            const int col = n0 + cb * 8 + c + e % 2;                                                              \
            if (col < t.count && o < a.m) {                                                                       \
              const gm_i64 at = gm_tile_row(t, col, order, &a) * a.m + o;                                         \
              y[at] = acc[rb][cb][e] + (a.has_residual ? residual[at] : 0.0f);                                    \
            }                                                                                                     \
          }                                                                                                       \
        }                                                                                                         \
      }                                                                                                           \
    }                                                                                                             \
  }
#define GM_TILED_KERNELS(name)                                                                          \
  GM_TILED_KERNEL(name, 16) GM_TILED_KERNEL(name, 32) GM_TILED_KERNEL(name, 64) GM_TILED_KERNEL(name, 128) \
  GM_TILED_KERNEL(name, 256)
GM_PROGRAM_QUANT(GM_TILED_KERNELS)

/* mul_mat_id's routing for the tiled kernels, on the device: one work-group counts the rows each expert got
 * (counts: `experts` ints of scratch), lays the output rows out expert by expert in `order`, and lists each
 * expert's tiles of up to `tile_rows` rows in `tiles` (their number, then a triple each). Rows routed to an id that
 * names no expert get NaN outputs (m of them each). Within an expert the rows' order is the atomics', which changes
 * no output: each row's sum is its own. */
GM_KERNEL void route_experts(const GM_GLOBAL gm_i32* ids, gm_i64 routed, gm_i64 experts, gm_i64 tile_rows, gm_i64 m,
                             GM_GLOBAL gm_i32* counts, GM_GLOBAL gm_i32* order, GM_GLOBAL gm_i32* tiles,
                             GM_GLOBAL float* y) {
  const int lid = GM_LOCAL_ID(0), n = GM_LOCAL_SIZE(0);
  for (gm_i64 e = lid; e < experts; e += n) counts[e] = 0;
  GM_BARRIER_GLOBAL();
  for (gm_i64 i = lid; i < routed; i += n) {
    const gm_i32 e = ids[i];
    if (e >= 0 && e < experts) {
      GM_ATOMIC_INC(counts + e);
    } else {
      for (gm_i64 j = 0; j < m; ++j) y[i * m + j] = gm_as_float(0x7fc00000u);
    }
  }
  GM_BARRIER_GLOBAL();
  if (lid == 0) {
    gm_i64 start = 0, tile = 0;
    for (gm_i64 e = 0; e < experts; ++e) {
      const gm_i64 count = counts[e];
      for (gm_i64 f = 0; f < count; f += tile_rows, ++tile) {
        tiles[1 + 3 * tile] = (gm_i32)e;
        tiles[2 + 3 * tile] = (gm_i32)(start + f);
        tiles[3 + 3 * tile] = (gm_i32)(count - f < tile_rows ? count - f : tile_rows);
      }
      counts[e] = (gm_i32)start; /* from here on, where the expert's next row goes */
      start += count;
    }
    tiles[0] = (gm_i32)tile;
  }
  GM_BARRIER_GLOBAL();
  for (gm_i64 i = lid; i < routed; i += n) {
    const gm_i32 e = ids[i];
    if (e >= 0 && e < experts) order[GM_ATOMIC_INC(counts + e)] = (gm_i32)i;
  }
}

/* Outputs the fast kernels may classify wrongly (NaN, infinite, or within a factor 2 of the f32 range), one
 * work-item each, recomputed as the exact product does: dequantized weights times the f32 activations, summed in
 * double, plus the residual. Nearly every work-item finds its output fine and stops there. */
#if defined(GM_HAS_FP64)
typedef double gm_exact;
#else
typedef float gm_exact; /* a device without doubles: right but for sums within a factor 2 of the f32 range */
#endif
GM_FN int gm_doubtful(float v) { return !(fabs(v) <= 0x1.fffffep126f); }

/* The sum over the row, in the exact type: each sub-block's 16 values as dequantization gives them, or each float
 * value. */
#define GM_EXACT_SUM_QUANT(name)                                                                                  \
  for (gm_i64 sub = 0; sub < a.k / 16; ++sub) {                                                                   \
    const gm_sub b = gm_decode_##name(row + (sub / a.subs_per_block) * a.block_bytes, (int)(sub % a.subs_per_block)); \
    for (int j = 0; j < 16; ++j) sum += (gm_exact)(b.scale * (float)b.q[j] - b.offset) * (gm_exact)xr[sub * 16 + j]; \
  }
#define GM_EXACT_SUM_FLOAT(name) \
  for (gm_i64 j = 0; j < a.k; ++j) sum += (gm_exact)gm_value_##name(row, j) * (gm_exact)xr[j];

#define GM_EXACT_KERNEL(name, SUM)                                                                                \
  GM_KERNEL void exact_##name(const GM_GLOBAL gm_u8* w, const GM_GLOBAL gm_i32* ids, const GM_GLOBAL float* x,    \
                              const GM_GLOBAL float* residual, GM_GLOBAL float* y, gm_gemv_args a) {             \
    const gm_i64 at = GM_GLOBAL_ID(0);                                                                            \
    if (at >= a.out_rows * a.m || !gm_doubtful(y[at])) return;                                                    \
    const gm_i64 o = at % a.m, out_row = at / a.m, set = out_row / a.rows;                                        \
    const gm_set s = gm_set_of(set, ids, &a);                                                                     \
    if (!s.valid) return;                                                                                         \
    const GM_GLOBAL gm_u8* row = w + s.matrix_offset + o * a.row_bytes;                                          \
    const GM_GLOBAL float* xr = x + (s.act_row + out_row % a.rows) * a.k;                                         \
    gm_exact sum = a.has_residual ? (gm_exact)residual[at] : (gm_exact)0;                                         \
    SUM(name)                                                                                                     \
    y[at] = (float)sum;                                                                                           \
  }
#define GM_EXACT_QUANT_KERNEL(name) GM_EXACT_KERNEL(name, GM_EXACT_SUM_QUANT)
#define GM_EXACT_FLOAT_KERNEL(name) GM_EXACT_KERNEL(name, GM_EXACT_SUM_FLOAT)
GM_PROGRAM_QUANT(GM_EXACT_QUANT_KERNEL)
GM_PROGRAM_FLOAT(GM_EXACT_FLOAT_KERNEL)

/* The device's read bandwidth: every work-item sums a strided run of 16-byte words, as a gemv streams a weight. */
GM_KERNEL void read_bandwidth(const GM_GLOBAL gm_u32* words, gm_i64 n, GM_GLOBAL gm_u32* sink) {
  gm_u32 acc = 0;
  const gm_i64 stride = (gm_i64)GM_LOCAL_SIZE(0) * (gm_i64)GM_NUM_GROUPS(0);
  for (gm_i64 i = GM_GLOBAL_ID(0); i < n; i += stride) acc ^= words[i];
  if (acc == 0x9e3779b9u) sink[0] = acc; /* never true in practice: keeps the loads */
}

/* The device's int8 peak, on the units the prefill tiles use: every warp runs 8 independent chains of int8
 * m16n8k32 tensor-core products where the device has them (8192 operations each, 256 a work-item), else every
 * work-item 8 chains of 4-byte dot products (dp4a where the device has it, 8 operations each); `rounds` of each.
 * Each product reads its own chain's last sum, so that no compiler can fold the loop. Work-item 0 leaves the
 * operations a work-item does per round in sink[1], the other units' count being the device's to know. */
GM_FN int gm_dot4(int a, int b, int acc) {
#if defined(GM_HAS_DP4A)
  return __dp4a(a, b, acc);
#else
  gm_u32 sum = (gm_u32)acc; /* chains run long enough to wrap, which signed arithmetic may not */
  for (int j = 0; j < 32; j += 8) sum += (gm_u32)((int)(gm_i8)(a >> j) * (int)(gm_i8)(b >> j));
  return (int)sum;
#endif
}

GM_KERNEL void int8_peak(int rounds, int seed, GM_GLOBAL int* sink) {
  const int id = (int)GM_GLOBAL_ID(0);
  int sum = 0;
#if defined(GM_HAS_MMA)
  int acc[8][4];
  const int a = seed * 7 + 1 + id, b = seed * 13 + 3;
  GM_UNROLL for (int c = 0; c < 8; ++c) {
    GM_UNROLL for (int e = 0; e < 4; ++e) acc[c][e] = (seed ^ id) + 4 * c + e;
  }
  for (int r = 0; r < rounds; ++r) {
    GM_UNROLL for (int c = 0; c < 8; ++c) {
      asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};"
          : "+r"(acc[c][0]), "+r"(acc[c][1]), "+r"(acc[c][2]), "+r"(acc[c][3])
          : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));
    }
  }
  GM_UNROLL for (int c = 0; c < 8; ++c) sum ^= acc[c][0] ^ acc[c][1] ^ acc[c][2] ^ acc[c][3];
  const int per_round = 8 * 256;
#else
  int acc[8];
  const int b = seed * 7 + 1;
  for (int c = 0; c < 8; ++c) acc[c] = (seed ^ id) + c;
  for (int r = 0; r < rounds; ++r) {
    for (int c = 0; c < 8; ++c) acc[c] = gm_dot4(acc[c], b, acc[c]);
  }
  for (int c = 0; c < 8; ++c) sum ^= acc[c];
  const int per_round = 8 * 8;
#endif
  if (sum == 0x1234567) sink[0] = sum; /* never true in practice: keeps the arithmetic */
  if (id == 0) sink[1] = per_round;
}

#endif /* GGUFMM_DEVICE_PROGRAM_H */
