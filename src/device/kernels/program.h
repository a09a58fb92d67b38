/* The device program: every kernel, written once in the portable subset. OpenCL compiles this file as embedded
 * in the library (cmake/embed_source.cmake inlines its includes); the CUDA build compiles it through
 * cuda/program.cu. Each kernel's body is a function of the format (a constant, one of GM_FORMAT_<name>), which the
 * format's entry point names; the entry points are the only code the format lists generate. */
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

/* Every format by number, the quantized ones first; what a body needs of its format, by that number: a quantized
 * format's sub-block decoder and shape (decode.h), a float format's values. Called with a constant, each folds to
 * the one format's code. */
#define GM_FORMAT_ID(name) GM_FORMAT_##name,
enum { GM_QUANT_FORMATS(GM_FORMAT_ID) GM_FLOAT_FORMATS(GM_FORMAT_ID) GM_FORMAT_COUNT };
#define gm_is_float(format) ((format) >= GM_FORMAT_f32)

GM_FN gm_sub gm_zero_sub(void) {
  gm_sub s;
  for (int j = 0; j < 16; ++j) s.q[j] = 0;
  s.scale = 0.0f;
  s.offset = 0.0f;
  return s;
}

#define GM_DECODE_CASE(name) \
  case GM_FORMAT_##name:     \
    return gm_decode_##name(block, sub);
GM_FN gm_sub gm_decode(const int format, const GM_GLOBAL gm_u8* block, int sub) {
  switch (format) {
    GM_PROGRAM_QUANT(GM_DECODE_CASE)
    default:
      return gm_zero_sub();
  }
}

#define GM_SHAPE_CASE(name) \
  case GM_FORMAT_##name:    \
    return GM_SHAPE_##name;
GM_FN int gm_shape(const int format) {
  switch (format) {
    GM_PROGRAM_QUANT(GM_SHAPE_CASE)
    default:
      return 0;
  }
}

#define GM_VALUE_CASE(name) \
  case GM_FORMAT_##name:    \
    return gm_value_##name(row, j);
GM_FN float gm_value(const int format, const GM_GLOBAL gm_u8* row, gm_i64 j) {
  switch (format) {
    GM_PROGRAM_FLOAT(GM_VALUE_CASE)
    default:
      return 0.0f;
  }
}

/* Dequantization, into rows of k values `stride` elements apart, of f32 or (half_out) f16 elements: a dense copy,
 * or (stride k, f32) the plain values. A work-item per 16 values (a sub-block) of a quantized format, `items` of
 * them, their blocks `block_bytes` apart holding `subs_per_block` sub-blocks, each value scale * q - offset rounded
 * twice as ggml rounds it; a float format's, per value. */
GM_FN void gm_store_value(GM_GLOBAL void* out, gm_i64 value, gm_i64 k, gm_i64 stride, int half_out, float v) {
  const gm_i64 at = value / k * stride + value % k;
  if (half_out) {
    gm_store_half(out, at, v);
  } else {
    ((GM_GLOBAL float*)out)[at] = v;
  }
}

GM_FN void gm_dequantize(const int format, const GM_GLOBAL gm_u8* blocks, GM_GLOBAL void* out, gm_i64 items,
                         int block_bytes, int subs_per_block, gm_i64 k, gm_i64 stride, int half_out) {
  const gm_i64 i = GM_GLOBAL_ID(0);
  if (i >= items) return;
  if (gm_is_float(format)) {
    gm_store_value(out, i, k, stride, half_out, gm_value(format, blocks, i));
    return;
  }
  const gm_sub s = gm_decode(format, blocks + (i / subs_per_block) * block_bytes, (int)(i % subs_per_block));
  for (int j = 0; j < 16; ++j) gm_store_value(out, i * 16 + j, k, stride, half_out, s.scale * (float)s.q[j] - s.offset);
}

/* Activations in f16, for a GEMM on f16 dense copies. */
GM_KERNEL void to_half(const GM_GLOBAL float* x, gm_i64 n, GM_GLOBAL void* out) {
  const gm_i64 i = GM_GLOBAL_ID(0);
  if (i < n) gm_store_half(out, i, x[i]);
}

/* Activation quantization, as the CPU's (kernels/act_scale.hpp, kernels/scalar/quantize_act.cpp) bit for bit:
 * one work-item per group of 32 values, int8 codes rint(x * 127 / amax) with the scale amax / 127, and the sums
 * of each 16 codes times the scale (the offset term of w = d * q - m formats). A group holding a NaN or an
 * infinity keeps it in its scale, codes 0; one too small for 127 / amax to be finite counts as zero. The codes of
 * each row of k values (a multiple of 32) start 16-byte aligned, for gemv's 16-byte loads. */
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

/* Four int8 codes as one little-endian word. */
GM_FN gm_i32 gm_word_of(const gm_i8* q) {
  return (gm_i32)((gm_u32)(gm_u8)q[0] | (gm_u32)(gm_u8)q[1] << 8 | (gm_u32)(gm_u8)q[2] << 16 |
                  (gm_u32)(gm_u8)q[3] << 24);
}

/* The exact integer dot product of 16 weight and 16 activation codes, four bytes at a time: decoded codes in
 * registers against activation codes in global memory (16-byte aligned: one load), or two rows of local memory
 * (4-byte aligned). */
GM_FN int gm_dot16(const gm_i8* w, const GM_GLOBAL gm_i8* x) {
  const gm_i32x4 v = gm_load_i32x4((const GM_GLOBAL gm_i32*)x);
  return gm_dot4(gm_word_of(w + 12), v.w,
                 gm_dot4(gm_word_of(w + 8), v.z, gm_dot4(gm_word_of(w + 4), v.y, gm_dot4(gm_word_of(w), v.x, 0))));
}

GM_FN int gm_dot16_local(const GM_LOCAL gm_i8* w, const GM_LOCAL gm_i8* x) {
  const GM_LOCAL gm_i32* ww = (const GM_LOCAL gm_i32*)w;
  const GM_LOCAL gm_i32* xw = (const GM_LOCAL gm_i32*)x;
  return gm_dot4(ww[3], xw[3], gm_dot4(ww[2], xw[2], gm_dot4(ww[1], xw[1], gm_dot4(ww[0], xw[0], 0))));
}

/* Decode, 1 to GM_MAX_ROWS activation rows per set: a work-group per output (group 0) and set (group 1). Its
 * work-items take the row's sub-blocks in turn, each decoded once for all rows: sum_i w_i * xq_i exactly in
 * integers per 16 values, scaled as the CPU scales it (scale * d * isum - offset * sum16, the offset term only for
 * formats that have offsets); a float format's values, multiplied in f32 as the CPU multiplies them. Then the
 * group's sums (in local memory, or by warp shuffles where the device has them); the residual is added in the
 * store. x is the activations as they are (the float formats read them), xq, xd and xsum as quantize_act left
 * them. */
GM_FN void gm_gemv_store(GM_LOCAL float* partial, const float* acc, gm_i64 set, gm_set s, const gm_gemv_args* a,
                         const GM_GLOBAL float* residual, GM_GLOBAL float* y) {
  const int lid = GM_LOCAL_ID(0);
#if defined(GM_HAS_WARP_SHUFFLE)
  /* Each warp sums its lanes; then its first lane leaves the warp's sum for the group's. */
  const int warps = GM_GROUP / 32, warp = lid / 32;
  GM_UNROLL for (int r = 0; r < GM_MAX_ROWS; ++r) {
    if (r < s.rows) {
      const float v = gm_warp_sum(acc[r]);
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
    if (r < s.rows) partial[r * GM_GROUP + lid] = acc[r];
  }
  GM_BARRIER();
  for (int stride = GM_GROUP / 2; stride > 0; stride /= 2) {
    if (lid < stride) {
      for (int r = 0; r < s.rows; ++r) partial[r * GM_GROUP + lid] += partial[r * GM_GROUP + lid + stride];
    }
    GM_BARRIER();
  }
  const int stride_of_row = GM_GROUP;
#endif
  if (lid < s.rows) {
    const gm_i64 at = (set * a->rows + lid) * a->m + GM_GROUP_ID(0);
    const float sum = s.valid ? partial[lid * stride_of_row] : gm_as_float(0x7fc00000u);
    y[at] = sum + (a->has_residual ? residual[at] : 0.0f);
  }
}

GM_FN void gm_gemv(const int format, const GM_GLOBAL gm_u8* w, const GM_GLOBAL gm_i32* ids, const GM_GLOBAL float* x,
                   const GM_GLOBAL gm_i8* xq, const GM_GLOBAL float* xd, const GM_GLOBAL float* xsum,
                   const GM_GLOBAL float* residual, GM_GLOBAL float* y, const gm_gemv_args* a,
                   GM_LOCAL float* partial) {
  const gm_i64 set = GM_GROUP_ID(1);
  const gm_set s = gm_set_of(set, ids, a);
  const GM_GLOBAL gm_u8* row = w + s.matrix_offset + GM_GROUP_ID(0) * a->row_bytes;
  float acc[GM_MAX_ROWS] = {0, 0, 0, 0, 0, 0, 0};
  if (gm_is_float(format)) {
    for (gm_i64 j = GM_LOCAL_ID(0); j < a->k; j += GM_GROUP) {
      const float v = gm_value(format, row, j);
      GM_UNROLL for (int r = 0; r < GM_MAX_ROWS; ++r) {
        if (r < s.rows) acc[r] += v * x[(s.act_row + r) * a->k + j];
      }
    }
  } else {
    const int offsets = gm_shape(format) & GM_OFFSETS;
    for (gm_i64 sub = GM_LOCAL_ID(0); sub < a->k / 16; sub += GM_GROUP) {
      const gm_sub b = gm_decode(format, row + (sub / a->subs_per_block) * a->block_bytes,
                                 (int)(sub % a->subs_per_block));
      GM_UNROLL for (int r = 0; r < GM_MAX_ROWS; ++r) {
        if (r < s.rows) {
          const gm_i64 i = (s.act_row + r) * a->k + sub * 16;
          const float scaled = b.scale * xd[i / 32] * (float)gm_dot16(b.q, xq + i);
          acc[r] += offsets ? scaled - b.offset * xsum[i / 16] : scaled;
        }
      }
    }
  }
  gm_gemv_store(partial, acc, set, s, a, residual, y);
}

/* Prefill: a work-group computes tiles of GM_TILE_M weight rows by TN activation rows (TN from GM_TILE_LEAST to
 * GM_TILE_MOST, chosen by the row count) in GM_TILE_GROUP(TN) work-items. Each 32-value step, its work-items decode
 * the tile's weight sub-blocks once into local memory (the same integers, scales and offsets as gemv's) beside the
 * step's quantized activation rows, then every warp (32 work-items) multiplies the tile's weight rows by its share
 * of activation rows from there, as 16 x 8 blocks of exact integer sums per 16 values (gm_block_sums: tensor cores
 * where the device has them), scaled as gemv scales them. Two buffers: the next step is decoded while this one is
 * multiplied, one barrier apart. A matmul's tiles are its rows in order, a work-group per tile; mul_mat_id's are
 * an expert's rows as route_experts listed them (tiles: their number, then expert, first, count triples; order:
 * output rows), and a work-group takes every GM_NUM_GROUPS(1)-th of them, so that the grid is sized to the device
 * rather than to the most tiles a routing could need. Warps whose activation rows the tile did not get skip the
 * arithmetic. */
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

/* A tile's local memory (args.h sizes its arrays): codes as 32-bit words, so that a block's rows load 4 bytes at a
 * time. */
typedef struct {
  GM_LOCAL gm_i32* wq;
  GM_LOCAL float* wscale;
  GM_LOCAL float* woffset;
  GM_LOCAL gm_i32* aq;
  GM_LOCAL float* ad;
  GM_LOCAL float* asum;
  GM_LOCAL gm_i64* arow;
} gm_tile_local;

/* The integer sums over `codes` (16, or 32 for a pair of sub-blocks) of a 16 x 8 block: weight rows w (32 bytes
 * apart) against activation rows x (32 apart), called by all 32 work-items of a warp at once. Lane l gets the four
 * of rows g = l / 4 and g + 8 by columns c = 2 (l % 4) and c + 1: sums (g, c), (g, c + 1), (g + 8, c),
 * (g + 8, c + 1), the accumulator layout of NVIDIA's int8 mma (m16n8k16, or m16n8k32), whose operands are the
 * lane's 4-byte words l % 4 (and l % 4 + 4) of weight rows g and g + 8 and of activation row g. */
GM_FN void gm_block_sums(int* sums, const GM_LOCAL gm_i8* w, const GM_LOCAL gm_i8* x, int lane, int codes) {
  const int g = lane / 4;
  sums[0] = sums[1] = sums[2] = sums[3] = 0;
#if defined(GM_HAS_MMA)
  const GM_LOCAL gm_i32* w0 = (const GM_LOCAL gm_i32*)(w + g * 32) + lane % 4;
  const GM_LOCAL gm_i32* w8 = (const GM_LOCAL gm_i32*)(w + (g + 8) * 32) + lane % 4;
  const GM_LOCAL gm_i32* xg = (const GM_LOCAL gm_i32*)(x + g * 32) + lane % 4;
  if (codes == 32) {
    gm_mma_m16n8k32(sums, w0[0], w8[0], w0[4], w8[4], xg[0], xg[4]);
  } else {
    gm_mma_m16n8k16(sums, w0[0], w8[0], xg[0]);
  }
#else
  GM_UNROLL for (int e = 0; e < 4; ++e) {
    const GM_LOCAL gm_i8* wr = w + (g + e / 2 * 8) * 32;
    const GM_LOCAL gm_i8* xr = x + (lane % 4 * 2 + e % 2) * 32;
    sums[e] = gm_dot16_local(wr, xr) + (codes == 32 ? gm_dot16_local(wr + 16, xr + 16) : 0);
  }
#endif
}

/* Step `step`'s 2 x GM_TILE_M weight sub-blocks (each work-item of the group taking one in turn; zeros past the
 * weight's rows) and activation rows (one per work-item of the first TN; zeros past the tile's rows) into buffer
 * `buf`; the offsets and the activations' sums only for a format that has offsets. */
GM_FN void gm_tile_load(const int format, const int TN, gm_i64 step, int buf, const GM_GLOBAL gm_u8* matrix,
                        gm_i64 m0, gm_tile t, const GM_GLOBAL gm_i8* xq, const GM_GLOBAL float* xd,
                        const GM_GLOBAL float* xsum, const gm_gemv_args* a, gm_tile_local l) {
  const int lid = GM_LOCAL_ID(0), offsets = gm_shape(format) & GM_OFFSETS;
  for (int item = lid; item < 2 * GM_TILE_M; item += GM_TILE_GROUP(TN)) {
    const int h = item / GM_TILE_M, at = buf * GM_TILE_M + item % GM_TILE_M;
    const gm_i64 o = m0 + item % GM_TILE_M, sub = step * 2 + h;
    const gm_sub b = o < a->m ? gm_decode(format, matrix + o * a->row_bytes + (sub / a->subs_per_block) *
                                                      a->block_bytes, (int)(sub % a->subs_per_block))
                              : gm_zero_sub();
    for (int j = 0; j < 4; ++j) l.wq[at * 8 + h * 4 + j] = gm_word_of(b.q + 4 * j);
    l.wscale[at * 2 + h] = b.scale;
    if (offsets) l.woffset[at * 2 + h] = b.offset;
  }
  if (lid < TN) {
    const int n = buf * TN + lid, real = lid < t.count;
    const gm_i64 i = l.arow[lid] * a->k + step * 32;
    const GM_GLOBAL gm_i32* words = (const GM_GLOBAL gm_i32*)(xq + i); /* i is a multiple of 32 */
    for (int j = 0; j < 8; ++j) l.aq[n * 8 + j] = real ? words[j] : 0;
    l.ad[n] = real ? xd[i / 32] : 0.0f;
    if (offsets) {
      l.asum[n * 2] = real ? xsum[i / 16] : 0.0f;
      l.asum[n * 2 + 1] = real ? xsum[i / 16 + 1] : 0.0f;
    }
  }
}

/* A warp's outputs: its GM_TILE_CB(TN) blocks of 8 activation rows (from 8 * GM_TILE_CB(TN) * warp) in all four
 * 16-row blocks, each held as gm_block_sums lays it out: acc[row block][column block][sum]. A format whose
 * sub-blocks pair (GM_PAIRS) is summed 32 codes at a time and scaled once; one without offsets skips their term.
 * TN and the format are constants where the entry point inlines this, so that the loops over a work-item's sums
 * unroll and its accumulators stay in registers. */
GM_FN void gm_tiled(const int format, const int TN, const GM_GLOBAL gm_u8* w, const GM_GLOBAL gm_i32* tiles,
                    const GM_GLOBAL gm_i32* order, const GM_GLOBAL gm_i8* xq, const GM_GLOBAL float* xd,
                    const GM_GLOBAL float* xsum, const GM_GLOBAL float* residual, GM_GLOBAL float* y,
                    const gm_gemv_args* a, const gm_tile_local l) {
  const GM_LOCAL gm_i8* wq = (const GM_LOCAL gm_i8*)l.wq;
  const GM_LOCAL gm_i8* aq = (const GM_LOCAL gm_i8*)l.aq;
  const int cbs = GM_TILE_CB(TN), codes = gm_shape(format) & GM_PAIRS ? 32 : 16;
  const int offsets = gm_shape(format) & GM_OFFSETS;
  const int lid = GM_LOCAL_ID(0), lane = lid % 32, g = lane / 4, c = lane % 4 * 2;
  const int n0 = lid / 32 * 8 * cbs;
  const gm_i64 m0 = GM_GROUP_ID(0) * GM_TILE_M, tiles_in_all = gm_tile_count(TN, tiles, a);
  for (gm_i64 tile = GM_GROUP_ID(1); tile < tiles_in_all; tile += GM_NUM_GROUPS(1)) {
    const gm_tile t = gm_tile_at(tile, TN, tiles, a);
    const GM_GLOBAL gm_u8* matrix = w + t.expert * a->expert_bytes;
    float acc[4][GM_TILE_MOST_CB][4];
    GM_UNROLL for (int rb = 0; rb < 4; ++rb) {
      GM_UNROLL for (int cb = 0; cb < cbs; ++cb) {
        GM_UNROLL for (int e = 0; e < 4; ++e) acc[rb][cb][e] = 0.0f;
      }
    }
    /* Each work-item gathers the activation row it loads, and reads only that one. */
    if (lid < TN) l.arow[lid] = lid < t.count ? gm_act_row(gm_tile_row(t, lid, order, a), a) : 0;
    const gm_i64 steps = a->k / 32;
    gm_tile_load(format, TN, 0, 0, matrix, m0, t, xq, xd, xsum, a, l);
    GM_BARRIER();
    for (gm_i64 step = 0; step < steps; ++step) {
      if (step + 1 < steps) {
        gm_tile_load(format, TN, step + 1, (int)((step + 1) & 1), matrix, m0, t, xq, xd, xsum, a, l);
      }
      const int buf = (int)(step & 1);
      GM_UNROLL for (int cb = 0; cb < cbs; ++cb) {
        const int n = buf * TN + n0 + cb * 8;
        if (n0 + cb * 8 < t.count) { /* the same for the whole warp, as mma needs */
          GM_UNROLL for (int h = 0; h < 32 / codes; ++h) {
            GM_UNROLL for (int rb = 0; rb < 4; ++rb) {
              const int r = buf * GM_TILE_M + rb * 16;
              int sums[4];
              gm_block_sums(sums, wq + r * 32 + h * 16, aq + n * 32 + h * 16, lane, codes);
              GM_UNROLL for (int e = 0; e < 4; ++e) {
                const int row = r + g + e / 2 * 8, col = n + c + e % 2;
                float v = l.wscale[row * 2 + h] * l.ad[col] * (float)sums[e];
                if (offsets) {
                  v -= l.woffset[row * 2 + h] *
                       (codes == 32 ? l.asum[col * 2] + l.asum[col * 2 + 1] : l.asum[col * 2 + h]);
                }
                acc[rb][cb][e] += v;
              }
            }
          }
        }
      }
      GM_BARRIER();
    }
    GM_UNROLL for (int rb = 0; rb < 4; ++rb) {
      GM_UNROLL for (int cb = 0; cb < cbs; ++cb) {
        GM_UNROLL for (int e = 0; e < 4; ++e) {
          const gm_i64 o = m0 + rb * 16 + g + e / 2 * 8;
          const int col = n0 + cb * 8 + c + e % 2;
          if (col < t.count && o < a->m) {
            const gm_i64 at = gm_tile_row(t, col, order, a) * a->m + o;
            y[at] = acc[rb][cb][e] + (a->has_residual ? residual[at] : 0.0f);
          }
        }
      }
    }
  }
}

/* Outputs the fast kernels may classify wrongly (NaN, infinite, or within a factor 2 of the f32 range), one
 * work-item each, recomputed as the exact product does: dequantized weights times the f32 activations, summed in
 * double, plus the residual. Nearly every work-item finds its output fine and stops there. */
#if defined(GM_HAS_FP64)
typedef double gm_exact_sum;
#else
typedef float gm_exact_sum; /* a device without doubles: right but for sums within a factor 2 of the f32 range */
#endif
GM_FN int gm_doubtful(float v) { return !(fabs(v) <= 0x1.fffffep126f); }

GM_FN void gm_exact(const int format, const GM_GLOBAL gm_u8* w, const GM_GLOBAL gm_i32* ids, const GM_GLOBAL float* x,
                    const GM_GLOBAL float* residual, GM_GLOBAL float* y, const gm_gemv_args* a) {
  const gm_i64 at = GM_GLOBAL_ID(0);
  if (at >= a->out_rows * a->m || !gm_doubtful(y[at])) return;
  const gm_i64 o = at % a->m, out_row = at / a->m, set = out_row / a->rows;
  const gm_set s = gm_set_of(set, ids, a);
  if (!s.valid) return;
  const GM_GLOBAL gm_u8* row = w + s.matrix_offset + o * a->row_bytes;
  const GM_GLOBAL float* xr = x + (s.act_row + out_row % a->rows) * a->k;
  gm_exact_sum sum = a->has_residual ? (gm_exact_sum)residual[at] : (gm_exact_sum)0;
  if (gm_is_float(format)) {
    for (gm_i64 j = 0; j < a->k; ++j) sum += (gm_exact_sum)gm_value(format, row, j) * (gm_exact_sum)xr[j];
  } else {
    for (gm_i64 sub = 0; sub < a->k / 16; ++sub) {
      const gm_sub b = gm_decode(format, row + (sub / a->subs_per_block) * a->block_bytes,
                                 (int)(sub % a->subs_per_block));
      for (int j = 0; j < 16; ++j) {
        sum += (gm_exact_sum)(b.scale * (float)b.q[j] - b.offset) * (gm_exact_sum)xr[sub * 16 + j];
      }
    }
  }
  y[at] = (float)sum;
}

/* Each format's entry points (tiled<TN>_<name> for the quantized formats' tiles, TN from GM_TILE_LEAST to
 * GM_TILE_MOST), as the host names them (product.cpp: kernel_symbol). */
#define GM_FORMAT_KERNELS(name)                                                                                     \
  GM_KERNEL void dequantize_##name(const GM_GLOBAL gm_u8* blocks, GM_GLOBAL void* out, gm_i64 items,              \
                                   int block_bytes, int subs_per_block, gm_i64 k, gm_i64 stride, int half_out) {   \
    gm_dequantize(GM_FORMAT_##name, blocks, out, items, block_bytes, subs_per_block, k, stride, half_out);         \
  }                                                                                                                \
  GM_KERNEL void gemv_##name(const GM_GLOBAL gm_u8* w, const GM_GLOBAL gm_i32* ids, const GM_GLOBAL float* x,      \
                             const GM_GLOBAL gm_i8* xq, const GM_GLOBAL float* xd, const GM_GLOBAL float* xsum,    \
                             const GM_GLOBAL float* residual, GM_GLOBAL float* y, gm_gemv_args a) {               \
    GM_SHARED float partial[GM_GEMV_LOCAL_BYTES / 4];                                                              \
    gm_gemv(GM_FORMAT_##name, w, ids, x, xq, xd, xsum, residual, y, &a, partial);                                  \
  }                                                                                                                \
  GM_KERNEL void exact_##name(const GM_GLOBAL gm_u8* w, const GM_GLOBAL gm_i32* ids, const GM_GLOBAL float* x,     \
                              const GM_GLOBAL float* residual, GM_GLOBAL float* y, gm_gemv_args a) {              \
    gm_exact(GM_FORMAT_##name, w, ids, x, residual, y, &a);                                                        \
  }
#define GM_TILED_KERNEL(name, TN)                                                                                  \
  GM_KERNEL void tiled##TN##_##name(const GM_GLOBAL gm_u8* w, const GM_GLOBAL gm_i32* tiles,                       \
                                    const GM_GLOBAL gm_i32* order, const GM_GLOBAL gm_i8* xq,                      \
                                    const GM_GLOBAL float* xd, const GM_GLOBAL float* xsum,                        \
                                    const GM_GLOBAL float* residual, GM_GLOBAL float* y, gm_gemv_args a) {         \
    GM_SHARED gm_i32 wq[GM_TILE_WQ_WORDS];                                                                         \
    GM_SHARED float wscale[GM_TILE_WSCALES];                                                                       \
    GM_SHARED float woffset[GM_TILE_WSCALES];                                                                      \
    GM_SHARED gm_i32 aq[GM_TILE_AQ_WORDS(TN)];                                                                     \
    GM_SHARED float ad[GM_TILE_ASCALES(TN)];                                                                       \
    GM_SHARED float asum[GM_TILE_ASUMS(TN)];                                                                       \
    GM_SHARED gm_i64 arow[TN];                                                                                     \
    const gm_tile_local l = {wq, wscale, woffset, aq, ad, asum, arow};                                             \
    gm_tiled(GM_FORMAT_##name, TN, w, tiles, order, xq, xd, xsum, residual, y, &a, l);                             \
  }
#define GM_TILED_KERNELS(name)                                                                                     \
  GM_TILED_KERNEL(name, 16) GM_TILED_KERNEL(name, 32) GM_TILED_KERNEL(name, 64) GM_TILED_KERNEL(name, 128)          \
  GM_TILED_KERNEL(name, 256)
GM_PROGRAM_QUANT(GM_FORMAT_KERNELS)
GM_PROGRAM_FLOAT(GM_FORMAT_KERNELS)
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

/* The device's read bandwidth: every work-item XORs a strided run of 16-byte words (`words` of them, 16-byte
 * aligned), GM_STREAM_LOADS loads in flight at a time, as a gemv streams a weight. */
GM_FN gm_u32 gm_xor4(gm_u32x4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

GM_KERNEL void read_bandwidth(const GM_GLOBAL gm_u32* data, gm_i64 words, GM_GLOBAL gm_u32* sink) {
  const gm_i64 stride = (gm_i64)GM_LOCAL_SIZE(0) * GM_NUM_GROUPS(0);
  gm_u32 acc = 0;
  gm_i64 i = GM_GLOBAL_ID(0);
  for (; i + (GM_STREAM_LOADS - 1) * stride < words; i += GM_STREAM_LOADS * stride) {
    gm_u32x4 v[GM_STREAM_LOADS];
    GM_UNROLL for (int j = 0; j < GM_STREAM_LOADS; ++j) v[j] = gm_load_u32x4(data + 4 * (i + j * stride));
    GM_UNROLL for (int j = 0; j < GM_STREAM_LOADS; ++j) acc ^= gm_xor4(v[j]);
  }
  for (; i < words; i += stride) acc ^= gm_xor4(gm_load_u32x4(data + 4 * i));
  if (acc == 0x9e3779b9u) sink[0] = acc; /* never true in practice: keeps the loads */
}

/* The device's int8 peak, on the units the prefill tiles use: every warp runs GM_PEAK_CHAINS independent chains
 * of int8 m16n8k32 tensor-core products where the device has them, else every work-item as many chains of 4-byte
 * dot products; `rounds` of each (args.h counts their operations). Each product reads its own chain's last sum, so
 * that no compiler can fold the loop. */
GM_KERNEL void int8_peak(int rounds, int seed, GM_GLOBAL int* sink) {
  const int id = (int)GM_GLOBAL_ID(0);
  int sum = 0;
#if defined(GM_HAS_MMA)
  int acc[GM_PEAK_CHAINS][4];
  const int a = seed * 7 + 1 + id, b = seed * 13 + 3;
  GM_UNROLL for (int c = 0; c < GM_PEAK_CHAINS; ++c) {
    GM_UNROLL for (int e = 0; e < 4; ++e) acc[c][e] = (seed ^ id) + 4 * c + e;
  }
  for (int r = 0; r < rounds; ++r) {
    GM_UNROLL for (int c = 0; c < GM_PEAK_CHAINS; ++c) gm_mma_m16n8k32(acc[c], a, a, a, a, b, b);
  }
  GM_UNROLL for (int c = 0; c < GM_PEAK_CHAINS; ++c) sum ^= acc[c][0] ^ acc[c][1] ^ acc[c][2] ^ acc[c][3];
#else
  int acc[GM_PEAK_CHAINS];
  const int b = seed * 7 + 1;
  for (int c = 0; c < GM_PEAK_CHAINS; ++c) acc[c] = (seed ^ id) + c;
  for (int r = 0; r < rounds; ++r) {
    for (int c = 0; c < GM_PEAK_CHAINS; ++c) acc[c] = gm_dot4(acc[c], b, acc[c]);
  }
  for (int c = 0; c < GM_PEAK_CHAINS; ++c) sum ^= acc[c];
#endif
  if (sum == 0x1234567) sink[0] = sum; /* never true in practice: keeps the arithmetic */
}

#endif /* GGUFMM_DEVICE_PROGRAM_H */
