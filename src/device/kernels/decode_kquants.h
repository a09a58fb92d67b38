/* The block decoders of the K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and of IQ4_XS, 256 values per block: one
 * sub-block of 16 values each call, bit for bit what the CPU's format/kquants.cpp and format/iquants.cpp give.
 * Scales are the super-block's half times the sub-block's integer scale, rounded to f32 before use, as in ggml. */
#ifndef GGUFMM_DEVICE_DECODE_KQUANTS_H
#define GGUFMM_DEVICE_DECODE_KQUANTS_H

#include "device/kernels/portable.h"
#include "device/kernels/tables.h"

GM_BEGIN
/* Level i of a strip layout (the CPU's Strips<bits, stride>): runs of `stride` bytes, each byte holding 8 / bits
 * levels, the first run of levels in the low bits of the run's bytes, the next in the bits above, and so on. */
GM_FN int gm_strip(const GM_GLOBAL gm_u8* bytes, int bits, int stride, int i) {
  const int per_byte = 8 / bits;
  return (bytes[stride * (i / (stride * per_byte)) + i % stride] >> (bits * (i / stride % per_byte))) &
         ((1 << bits) - 1);
}

/* Q2_K: scales[16] @0 (low nibble scale, high nibble min, per 16 values), 2-bit levels qs[64] @16 (strips of 32),
 * d @80, dmin @82. As on the CPU, the 4-bit scale multiplies the level and d is the sub-block's scale. */
GM_FN gm_sub gm_decode_q2_K(const GM_GLOBAL gm_u8* b, int sub) {
  const int sc = b[sub];
  gm_sub s;
  for (int k = 0; k < 16; ++k) s.q[k] = (gm_i8)(gm_strip(b + 16, 2, 32, 16 * sub + k) * (sc & 0xf));
  s.scale = gm_half_at(b + 80);
  s.offset = gm_half_at(b + 82) * (float)(sc >> 4);
  return s;
}

/* Q3_K: hmask[32] @0 (third bits, strips of 32), 2-bit levels qs[64] @32 (strips of 32), scales[12] @96 (sixteen
 * 6-bit scales biased by 32: low nibbles in bytes 0-7, top two bits in bytes 8-11), d @108; levels biased by 4. */
GM_FN gm_sub gm_decode_q3_K(const GM_GLOBAL gm_u8* b, int sub) {
  const GM_GLOBAL gm_u8* sc = b + 96;
  const int scale =
      (((sc[sub % 8] >> (4 * (sub / 8))) & 0xf) | ((sc[8 + sub % 4] >> (2 * (sub / 4))) & 3) << 4) - 32;
  gm_sub s;
  for (int k = 0; k < 16; ++k) {
    const int i = 16 * sub + k;
    s.q[k] = (gm_i8)((gm_strip(b + 32, 2, 32, i) | gm_strip(b, 1, 32, i) << 2) - 4);
  }
  s.scale = gm_half_at(b + 108) * (float)scale;
  s.offset = 0.0f;
  return s;
}

/* The 6-bit scale (returned) and min (*min) of 32-value group j of Q4_K and Q5_K, from their 12 bytes: groups 0-3
 * are the low 6 bits of bytes j and j + 4; groups 4-7 the nibbles of byte j + 4 with their top two bits in the
 * spare top bits of bytes j - 4 and j. */
GM_FN int gm_k4_scale_min(const GM_GLOBAL gm_u8* s, int j, int* min) {
  if (j < 4) {
    *min = s[j + 4] & 63;
    return s[j] & 63;
  }
  *min = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
  return (s[j + 4] & 0xf) | (s[j - 4] >> 6) << 4;
}

/* Q4_K and Q5_K: d @0, dmin @2, scales[12] @4, then Q5_K's fifth bits qh[32] (strips of 32), then 4-bit levels
 * qs[128] (strips of 32); eight groups of 32 values, value = (d * scale) * level - dmin * min. */
GM_FN gm_sub gm_decode_k4(const GM_GLOBAL gm_u8* b, int sub, int fifth_bit) {
  const GM_GLOBAL gm_u8* qs = b + (fifth_bit ? 48 : 16);
  int min;
  const int scale = gm_k4_scale_min(b + 4, sub / 2, &min);
  gm_sub s;
  for (int k = 0; k < 16; ++k) {
    const int i = 16 * sub + k;
    s.q[k] = (gm_i8)(gm_strip(qs, 4, 32, i) | (fifth_bit ? gm_strip(b + 16, 1, 32, i) << 4 : 0));
  }
  s.scale = gm_half_at(b) * (float)scale;
  s.offset = gm_half_at(b + 2) * (float)min;
  return s;
}

GM_FN gm_sub gm_decode_q4_K(const GM_GLOBAL gm_u8* b, int sub) { return gm_decode_k4(b, sub, 0); }
GM_FN gm_sub gm_decode_q5_K(const GM_GLOBAL gm_u8* b, int sub) { return gm_decode_k4(b, sub, 1); }

/* Q6_K: 4-bit low levels ql[128] @0 (strips of 64), top two bits qh[64] @128 (strips of 32), int8 scales[16] @192,
 * d @208; levels biased by 32. */
GM_FN gm_sub gm_decode_q6_K(const GM_GLOBAL gm_u8* b, int sub) {
  gm_sub s;
  for (int k = 0; k < 16; ++k) {
    const int i = 16 * sub + k;
    s.q[k] = (gm_i8)((gm_strip(b, 4, 64, i) | gm_strip(b + 128, 2, 32, i) << 4) - 32);
  }
  s.scale = gm_half_at(b + 208) * (float)(gm_i8)b[192 + sub];
  s.offset = 0.0f;
  return s;
}

/* IQ4_XS: d @0, scales_h @2 (little-endian 16 bits, two per group), scales_l[4] @4 (a nibble per group), qs[128]
 * @8: 32-value group g is 16 bytes of indices into gm_iq4_values, value j in the low nibble of byte j and value
 * j + 16 in its high nibble; the group's 6-bit scale stores l + 32. */
GM_FN gm_sub gm_decode_iq4_xs(const GM_GLOBAL gm_u8* b, int sub) {
  const int g = sub / 2, shift = 4 * (sub % 2);
  const int scales_h = b[2] | b[3] << 8;
  const int scale = (((b[4 + g / 2] >> (4 * (g % 2))) & 0xf) | ((scales_h >> (2 * g)) & 3) << 4) - 32;
  const GM_GLOBAL gm_u8* qs = b + 8 + 16 * g;
  gm_sub s;
  for (int k = 0; k < 16; ++k) s.q[k] = GM_TABLE_AT(gm_iq4_values, (qs[k] >> shift) & 0xf);
  s.scale = gm_half_at(b) * (float)scale;
  s.offset = 0.0f;
  return s;
}
GM_END

#endif
