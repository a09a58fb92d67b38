/* The device program: every kernel, written once in the portable subset. OpenCL compiles this file as embedded
 * in the library (cmake/embed_source.cmake inlines its includes); the CUDA build compiles it through device.cu. */
#ifndef GGUFMM_DEVICE_PROGRAM_H
#define GGUFMM_DEVICE_PROGRAM_H

#include "device/kernels/decode.h"

/* Dequantization: one work-item per 16 values (a sub-block), `subs` of them; the blocks are `block_bytes` apart
 * and hold `subs_per_block` sub-blocks. Each value is scale * q - offset, rounded twice as ggml rounds it. */
#define GM_DEQUANTIZE_KERNEL(name)                                                                          \
  GM_KERNEL void dequantize_##name(const GM_GLOBAL gm_u8* blocks, GM_GLOBAL float* out, gm_i64 subs,         \
                                   int block_bytes, int subs_per_block) {                                    \
    const gm_i64 i = GM_GLOBAL_ID(0);                                                                        \
    if (i >= subs) return;                                                                                   \
    const gm_sub s = gm_decode_##name(blocks + (i / subs_per_block) * block_bytes, (int)(i % subs_per_block)); \
    for (int j = 0; j < 16; ++j) out[i * 16 + j] = s.scale * (float)s.q[j] - s.offset;                      \
  }
GM_QUANT_FORMATS(GM_DEQUANTIZE_KERNEL)

/* The float formats, one work-item per value. */
GM_KERNEL void dequantize_f32(const GM_GLOBAL gm_u8* values, GM_GLOBAL float* out, gm_i64 n, int unused_bytes,
                              int unused_subs) {
  const gm_i64 i = GM_GLOBAL_ID(0);
  (void)unused_bytes;
  (void)unused_subs;
  if (i < n) out[i] = ((const GM_GLOBAL float*)values)[i];
}
GM_KERNEL void dequantize_f16(const GM_GLOBAL gm_u8* values, GM_GLOBAL float* out, gm_i64 n, int unused_bytes,
                              int unused_subs) {
  const gm_i64 i = GM_GLOBAL_ID(0);
  (void)unused_bytes;
  (void)unused_subs;
  if (i < n) out[i] = gm_half_at(values + 2 * i);
}
GM_KERNEL void dequantize_bf16(const GM_GLOBAL gm_u8* values, GM_GLOBAL float* out, gm_i64 n, int unused_bytes,
                               int unused_subs) {
  const gm_i64 i = GM_GLOBAL_ID(0);
  (void)unused_bytes;
  (void)unused_subs;
  if (i < n) out[i] = gm_as_float((gm_u32)(values[2 * i] | values[2 * i + 1] << 8) << 16);
}

/* The device's read bandwidth: every work-item sums a strided run of 16-byte words, as a gemv streams a weight. */
GM_KERNEL void read_bandwidth(const GM_GLOBAL gm_u32* words, gm_i64 n, GM_GLOBAL gm_u32* sink) {
  gm_u32 acc = 0;
  const gm_i64 stride = (gm_i64)GM_LOCAL_SIZE(0) * (gm_i64)GM_NUM_GROUPS(0);
  for (gm_i64 i = GM_GLOBAL_ID(0); i < n; i += stride) acc ^= words[i];
  if (acc == 0x9e3779b9u) sink[0] = acc; /* never true in practice: keeps the loads */
}

#endif /* GGUFMM_DEVICE_PROGRAM_H */
