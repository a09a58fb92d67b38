/* The block decoders of the codebook IQ formats (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M), ports of
 * format/iquants.cpp. A 256-value block is 8 groups of 32 values, each group 4 runs of 8 that look up one grid
 * entry (two for IQ3); run i = 4 * group + r covers values 8 * i to 8 * i + 7, so sub-block `sub` is runs 2 * sub
 * and 2 * sub + 1, which always share their scale. Offsets below are byte offsets into the block. */
#ifndef GGUFMM_DEVICE_DECODE_IQ_H
#define GGUFMM_DEVICE_DECODE_IQ_H

#include "device/kernels/portable.h"
#include "device/kernels/tables.h"

GM_BEGIN
/* Little-endian words at any byte address (blocks are only 2-byte aligned). */
GM_FN gm_u32 gm_iq_u16(const GM_GLOBAL gm_u8* p) { return (gm_u32)p[0] | (gm_u32)p[1] << 8; }
GM_FN gm_u32 gm_iq_u32(const GM_GLOBAL gm_u8* p) { return gm_iq_u16(p) | gm_iq_u16(p + 2) << 16; }

/* Nibble i of a byte array holding two 4-bit values per byte, low nibble first. */
GM_FN gm_u32 gm_iq_nibble(const GM_GLOBAL gm_u8* p, int i) { return (gm_u32)(p[i >> 1] >> (4 * (i & 1))) & 0xfu; }

/* The two 32-bit words of entry e of a grid of 8-byte entries (IQ2, IQ1), low word first: the arguments a run takes
 * for its 8 values (IQ3's runs take two 4-byte entries). */
#define GM_IQ_GRID_WORDS(grid, e) GM_TABLE_WORD(grid, 2 * (e)), GM_TABLE_WORD(grid, 2 * (e) + 1)

/* Exact binary16 to f32 from raw bits that are not in memory (IQ1_M's scale): as format::fp16_to_f32. */
GM_FN float gm_iq_half_bits(gm_u32 h) {
  const gm_u32 sign = (h & 0x8000u) << 16;
  const gm_u32 exponent = (h >> 10) & 0x1fu;
  const gm_u32 mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return gm_as_float(sign | 0x7f800000u | mantissa << 13); /* inf, NaN */
  if (exponent != 0u) return gm_as_float(sign | (exponent + 112u) << 23 | mantissa << 13);
  /* Zero or subnormal: mantissa * 2^-24 is exact in f32. */
  const float magnitude = (float)mantissa * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

/* The 4-bit scale s of the IQ2 formats and IQ3_XXS means (s + 1/2) * step. */
GM_FN float gm_iq_half_step_scale(float d, gm_u32 s, float step) { return d * (0.5f + (float)s) * step; }

/* IQ2_XXS, IQ2_XS and IQ3_XXS store 7 sign bits per run (low bits of s); the eighth is their parity, since the
 * quantizers keep the count of negative values in a run even. */
GM_FN gm_u32 gm_iq_signs7(gm_u32 s) {
  s &= 127u;
  gm_u32 parity = s ^ (s >> 4);
  parity ^= parity >> 2;
  parity ^= parity >> 1;
  return s | (parity & 1u) << 7;
}

/* An IQ2 or IQ3 run: the 8 grid magnitudes (byte j of the words lo, hi is value j), negated where sign bit j is
 * set. */
GM_FN void gm_iq_signed_run(gm_i8* q, gm_u32 lo, gm_u32 hi, gm_u32 signs) {
  for (int j = 0; j < 8; ++j) {
    const int m = (int)(((j < 4 ? lo : hi) >> (8 * (j & 3))) & 0xffu);
    q[j] = (gm_i8)(((signs >> j) & 1u) ? -m : m);
  }
}

/* An IQ1 run in units of its delta (1/8, so exact): grid values in {-1, 0, 1} (signed bytes of lo, hi) times 8,
 * plus or minus one delta. */
GM_FN void gm_iq1_run(gm_i8* q, gm_u32 lo, gm_u32 hi, int negative_delta) {
  for (int j = 0; j < 8; ++j) {
    q[j] = (gm_i8)(8 * (gm_i8)((j < 4 ? lo : hi) >> (8 * (j & 3))) + (negative_delta ? -1 : 1));
  }
}

/* The 3-bit scale s of the IQ1 formats means 2s + 1, in units of the delta: d * (2s + 1) rounded, then times 1/8. */
GM_FN float gm_iq1_scale(float d, gm_u32 s) { return d * (float)(2u * s + 1u) * 0.125f; }

/* IQ2_XXS, 66 bytes: fp16 d at 0; from 2, per group 8 bytes: the 4 runs' 8-bit grid indices, then a 32-bit word
 * of their four 7-bit sign indices with the 4-bit scale on top. */
GM_FN gm_sub gm_decode_iq2_xxs(const GM_GLOBAL gm_u8* b, int sub) {
  const GM_GLOBAL gm_u8* group = b + 2 + 8 * (sub >> 1);
  const gm_u32 aux = gm_iq_u32(group + 4);
  gm_sub s;
  s.scale = gm_iq_half_step_scale(gm_half_at(b), aux >> 28, 0.25f);
  s.offset = 0.0f;
  for (int k = 0; k < 2; ++k) {
    const int r = 2 * (sub & 1) + k;
    gm_iq_signed_run(s.q + 8 * k, GM_IQ_GRID_WORDS(gm_iq2_xxs_grid, group[r]), gm_iq_signs7(aux >> (7 * r)));
  }
  return s;
}

/* IQ2_XS, 74 bytes: fp16 d at 0; from 2, a 16-bit word per run: 9-bit grid index, 7-bit sign index; from 66, a
 * 4-bit scale per sub-block. */
GM_FN gm_sub gm_decode_iq2_xs(const GM_GLOBAL gm_u8* b, int sub) {
  gm_sub s;
  s.scale = gm_iq_half_step_scale(gm_half_at(b), gm_iq_nibble(b + 66, sub), 0.25f);
  s.offset = 0.0f;
  for (int k = 0; k < 2; ++k) {
    const gm_u32 w = gm_iq_u16(b + 2 + 2 * (2 * sub + k));
    gm_iq_signed_run(s.q + 8 * k, GM_IQ_GRID_WORDS(gm_iq2_xs_grid, w & 511u), gm_iq_signs7(w >> 9));
  }
  return s;
}

/* IQ2_S, 82 bytes: fp16 d at 0; from 2, the low 8 bits of each run's grid index; from 34, each run's 8 sign bits;
 * from 66, a byte per group with the 2 high index bits of its runs; from 74, a 4-bit scale per sub-block. */
GM_FN gm_sub gm_decode_iq2_s(const GM_GLOBAL gm_u8* b, int sub) {
  const gm_u32 qh = b[66 + (sub >> 1)];
  gm_sub s;
  s.scale = gm_iq_half_step_scale(gm_half_at(b), gm_iq_nibble(b + 74, sub), 0.25f);
  s.offset = 0.0f;
  for (int k = 0; k < 2; ++k) {
    const int i = 2 * sub + k;
    const gm_u32 index = (gm_u32)b[2 + i] | ((qh >> (2 * (i & 3))) & 3u) << 8;
    gm_iq_signed_run(s.q + 8 * k, GM_IQ_GRID_WORDS(gm_iq2_s_grid, index), b[34 + i]);
  }
  return s;
}

/* IQ3_XXS, 98 bytes: fp16 d at 0; from 2, two 8-bit grid indices (4 values each) per run; from 66, per group a
 * 32-bit word as in IQ2_XXS: four 7-bit sign indices and the 4-bit scale on top. */
GM_FN gm_sub gm_decode_iq3_xxs(const GM_GLOBAL gm_u8* b, int sub) {
  const gm_u32 aux = gm_iq_u32(b + 66 + 4 * (sub >> 1));
  gm_sub s;
  s.scale = gm_iq_half_step_scale(gm_half_at(b), aux >> 28, 0.5f);
  s.offset = 0.0f;
  for (int k = 0; k < 2; ++k) {
    const int i = 2 * sub + k;
    const GM_GLOBAL gm_u8* q = b + 2 + 2 * i;
    gm_iq_signed_run(s.q + 8 * k, GM_TABLE_AT(gm_iq3_xxs_grid, q[0]), GM_TABLE_AT(gm_iq3_xxs_grid, q[1]),
                     gm_iq_signs7(aux >> (7 * (i & 3))));
  }
  return s;
}

/* IQ3_S, 110 bytes: fp16 d at 0; from 2, the low 8 bits of two 9-bit grid indices per run; from 66, a byte per
 * group with its runs' ninth bits (2 per run); from 74, each run's 8 sign bits; from 106, a 4-bit scale s per
 * group, meaning 2s + 1. */
GM_FN gm_sub gm_decode_iq3_s(const GM_GLOBAL gm_u8* b, int sub) {
  const gm_u32 qh = b[66 + (sub >> 1)];
  gm_sub s;
  s.scale = gm_half_at(b) * (float)(1u + 2u * gm_iq_nibble(b + 106, sub >> 1));
  s.offset = 0.0f;
  for (int k = 0; k < 2; ++k) {
    const int i = 2 * sub + k;
    const GM_GLOBAL gm_u8* q = b + 2 + 2 * i;
    const gm_u32 high = qh >> (2 * (i & 3));
    gm_iq_signed_run(s.q + 8 * k, GM_TABLE_AT(gm_iq3_s_grid, (gm_u32)q[0] | (high & 1u) << 8),
                     GM_TABLE_AT(gm_iq3_s_grid, (gm_u32)q[1] | (high & 2u) << 7), b[74 + i]);
  }
  return s;
}

/* IQ1_S, 50 bytes: fp16 d at 0; from 2, the low 8 bits of each run's 11-bit grid index; from 34, per group a
 * 16-bit word: the 4 runs' 3 high index bits, a 3-bit scale at bit 12, the delta's sign at bit 15. */
GM_FN gm_sub gm_decode_iq1_s(const GM_GLOBAL gm_u8* b, int sub) {
  const gm_u32 h = gm_iq_u16(b + 34 + 2 * (sub >> 1));
  gm_sub s;
  s.scale = gm_iq1_scale(gm_half_at(b), (h >> 12) & 7u);
  s.offset = 0.0f;
  for (int k = 0; k < 2; ++k) {
    const int i = 2 * sub + k;
    const gm_u32 index = (gm_u32)b[2 + i] | ((h >> (3 * (i & 3))) & 7u) << 8;
    gm_iq1_run(s.q + 8 * k, GM_IQ_GRID_WORDS(gm_iq1_s_grid, index), (h & 0x8000u) != 0u);
  }
  return s;
}

/* IQ1_M, 56 bytes: from 0, the low 8 bits of each run's 11-bit grid index (IQ1_S's grid); from 32, a nibble per
 * run: 3 high index bits and the delta's sign; from 48, four 16-bit words, each with a 3-bit scale per sub-block
 * of two groups in its low 12 bits; their top nibbles are the fp16 super-block scale, lowest word first. */
GM_FN gm_sub gm_decode_iq1_m(const GM_GLOBAL gm_u8* b, int sub) {
  gm_u32 d_bits = 0u;
  for (int w = 0; w < 4; ++w) d_bits |= (gm_iq_u16(b + 48 + 2 * w) >> 12) << (4 * w);
  const gm_u32 scales = gm_iq_u16(b + 48 + 2 * (sub >> 2));
  gm_sub s;
  s.scale = gm_iq1_scale(gm_iq_half_bits(d_bits), (scales >> (3 * (sub & 3))) & 7u);
  s.offset = 0.0f;
  for (int k = 0; k < 2; ++k) {
    const int i = 2 * sub + k;
    const gm_u32 h = gm_iq_nibble(b + 32, i);
    gm_iq1_run(s.q + 8 * k, GM_IQ_GRID_WORDS(gm_iq1_s_grid, (gm_u32)b[i] | (h & 7u) << 8), (h & 8u) != 0u);
  }
  return s;
}
GM_END

#endif
