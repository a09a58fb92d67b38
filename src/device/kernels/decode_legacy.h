/* The block decoders of the 32-value formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4) and of the ternary
 * super-block formats (TQ1_0, TQ2_0), ported from the CPU's format/legacy.cpp, iquants.cpp, fp4.cpp and
 * ternary.cpp: the same integers, scale and offset per sub-block of 16 values, from the same float operations.
 * Block layouts are read as byte offsets (format/blocks.hpp); binary16 values are little-endian. */
#ifndef GGUFMM_DEVICE_DECODE_LEGACY_H
#define GGUFMM_DEVICE_DECODE_LEGACY_H

#include "device/kernels/portable.h"
#include "device/kernels/tables.h"

GM_BEGIN
/* The little-endian 32-bit word at p. */
GM_FN gm_u32 gm_u32_at(const GM_GLOBAL gm_u8* p) {
  return (gm_u32)p[0] | (gm_u32)p[1] << 8 | (gm_u32)p[2] << 16 | (gm_u32)p[3] << 24;
}

/* Sub-block `sub` (0 or 1) of 32 nibble-packed levels: level j is the low nibble of qs[j] for j < 16, the high
 * nibble of qs[j - 16] after, plus bit j of qh as its fifth bit (qh = 0 for the 4-bit formats), minus bias. */
GM_FN gm_sub gm_nibble_sub(const GM_GLOBAL gm_u8* qs, gm_u32 qh, int sub, int bias, float scale, float offset) {
  gm_sub s;
  for (int i = 0; i < 16; ++i) {
    const int level = (qs[i] >> (4 * sub) & 15) | (int)(qh >> (16 * sub + i) & 1u) << 4;
    s.q[i] = (gm_i8)(level - bias);
  }
  s.scale = scale;
  s.offset = offset;
  return s;
}

/* Q4_0: d (half) at 0, 16 bytes of nibbles at 2; levels 0..15 centred on 8. */
GM_FN gm_sub gm_decode_q4_0(const GM_GLOBAL gm_u8* b, int sub) {
  return gm_nibble_sub(b + 2, 0u, sub, 8, gm_half_at(b), 0.0f);
}

/* Q4_1: d (half) at 0, min m (half) at 2, nibbles at 4; value d * level + m, so offset = -m. */
GM_FN gm_sub gm_decode_q4_1(const GM_GLOBAL gm_u8* b, int sub) {
  return gm_nibble_sub(b + 4, 0u, sub, 0, gm_half_at(b), -gm_half_at(b + 2));
}

/* Q5_0: d (half) at 0, fifth bits qh (little-endian u32) at 2, nibbles at 6; levels 0..31 centred on 16. */
GM_FN gm_sub gm_decode_q5_0(const GM_GLOBAL gm_u8* b, int sub) {
  return gm_nibble_sub(b + 6, gm_u32_at(b + 2), sub, 16, gm_half_at(b), 0.0f);
}

/* Q5_1: d (half) at 0, min m (half) at 2, qh at 4, nibbles at 8; offset = -m. */
GM_FN gm_sub gm_decode_q5_1(const GM_GLOBAL gm_u8* b, int sub) {
  return gm_nibble_sub(b + 8, gm_u32_at(b + 4), sub, 0, gm_half_at(b), -gm_half_at(b + 2));
}

/* Q8_0: d (half) at 0, 32 int8 values at 2. */
GM_FN gm_sub gm_decode_q8_0(const GM_GLOBAL gm_u8* b, int sub) {
  gm_sub s;
  for (int i = 0; i < 16; ++i) s.q[i] = (gm_i8)b[2 + 16 * sub + i];
  s.scale = gm_half_at(b);
  s.offset = 0.0f;
  return s;
}

/* IQ4_NL: d (half) at 0, 16 bytes of 4-bit indices into gm_iq4_values at 2, packed as Q4_0's levels. */
GM_FN gm_sub gm_decode_iq4_nl(const GM_GLOBAL gm_u8* b, int sub) {
  gm_sub s = gm_nibble_sub(b + 2, 0u, sub, 0, gm_half_at(b), 0.0f);
  for (int i = 0; i < 16; ++i) s.q[i] = GM_TABLE_AT(gm_iq4_values, (int)s.q[i]);
  return s;
}

/* 2^(e - 128): half the E8M0 value 2^(e - 127), as the E2M1 values are kept doubled; subnormal in f32 for
 * e < 2 (exponent field 0, mantissa bit 21 + e). */
GM_FN float gm_e8m0_half(gm_u8 e) {
  return gm_as_float(e < 2 ? 0x00200000u << e : (gm_u32)(e - 1) << 23);
}

/* MXFP4: E8M0 exponent at 0, 16 bytes of 4-bit E2M1 codes at 1 (packed as Q4_0's levels), read through
 * gm_mxfp4_values (the E2M1 values doubled). */
GM_FN gm_sub gm_decode_mxfp4(const GM_GLOBAL gm_u8* b, int sub) {
  gm_sub s = gm_nibble_sub(b + 1, 0u, sub, 0, gm_e8m0_half(b[0]), 0.0f);
  for (int i = 0; i < 16; ++i) s.q[i] = GM_TABLE_AT(gm_mxfp4_values, (int)s.q[i]);
  return s;
}

/* Base-3 digit n (0 = most significant) of a TQ1_0 byte, minus one: the byte is a fraction of 256, so
 * multiplying by 3^n (mod 256) brings digit n to the top and, times 3, the integer part is that digit. */
GM_FN gm_i8 gm_ternary_digit(gm_u8 byte, int n) {
  gm_u8 top = byte;
  for (int k = 0; k < n; ++k) top = (gm_u8)(top * 3);
  return (gm_i8)(((top * 3) >> 8) - 1);
}

/* TQ1_0: 48 bytes of five base-3 digits at 0, 4 bytes of four digits at 48, d (half) at 52. The 256 values are
 * three groups of digit runs: bytes 0..31 give values 0..159, bytes 32..47 values 160..239, bytes 48..51 values
 * 240..255; in a group of width w from value f, value v is digit (v - f) / w of byte (v - f) % w. */
GM_FN gm_sub gm_decode_tq1_0(const GM_GLOBAL gm_u8* b, int sub) {
  const int first = sub < 10 ? 0 : sub < 15 ? 160 : 240;
  const int width = sub < 10 ? 32 : sub < 15 ? 16 : 4;
  const int byte0 = sub < 10 ? 0 : sub < 15 ? 32 : 48;
  gm_sub s;
  for (int i = 0; i < 16; ++i) {
    const int r = 16 * sub + i - first;
    s.q[i] = gm_ternary_digit(b[byte0 + r % width], r / width);
  }
  s.scale = gm_half_at(b + 52);
  s.offset = 0.0f;
  return s;
}

/* TQ2_0: 64 bytes of 2-bit digits at 0, d (half) at 64. Each 32 bytes hold 128 values: value i of those is bits
 * 2 * (i / 32) of byte i % 32; a digit minus one is the value. */
GM_FN gm_sub gm_decode_tq2_0(const GM_GLOBAL gm_u8* b, int sub) {
  const GM_GLOBAL gm_u8* bytes = b + 32 * (sub / 8) + 16 * (sub % 2);
  const int shift = 2 * (sub / 2 % 4);
  gm_sub s;
  for (int i = 0; i < 16; ++i) s.q[i] = (gm_i8)((bytes[i] >> shift & 3) - 1);
  s.scale = gm_half_at(b + 64);
  s.offset = 0.0f;
  return s;
}
GM_END

#endif
