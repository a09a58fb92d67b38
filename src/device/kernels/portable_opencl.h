/* The portable subset (portable.h) as OpenCL C: what the library embeds in place of portable.h. */
#ifndef GGUFMM_DEVICE_PORTABLE_OPENCL_H
#define GGUFMM_DEVICE_PORTABLE_OPENCL_H

/* A product is rounded before it is added: ggml's dequantization is d * q - m, never a fused multiply-add. */
#pragma OPENCL FP_CONTRACT OFF
#if defined(GM_HAS_FP64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
typedef uchar gm_u8;
typedef char gm_i8;
typedef ushort gm_u16;
typedef short gm_i16;
typedef uint gm_u32;
typedef int gm_i32;
typedef ulong gm_u64;
typedef long gm_i64;
typedef int4 gm_i32x4;
typedef uint4 gm_u32x4;
#define GM_GLOBAL __global
#define GM_LOCAL __local
#define GM_SHARED __local
#define GM_FN static inline
#define GM_KERNEL __kernel
#define GM_TABLE(type, name) __constant type name[]
#define GM_TABLE_AT(table, i) ((table)[i])
#define GM_TABLE_WORD(table, i) (((__constant gm_u32*)(table))[i])
#define GM_GLOBAL_ID(d) ((gm_i64)get_global_id(d))
#define GM_LOCAL_ID(d) ((int)get_local_id(d))
#define GM_GROUP_ID(d) ((gm_i64)get_group_id(d))
#define GM_LOCAL_SIZE(d) ((int)get_local_size(d))
#define GM_NUM_GROUPS(d) ((gm_i64)get_num_groups(d))
#define GM_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define GM_BARRIER_GLOBAL() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#define GM_ATOMIC_INC(p) atomic_inc(p)
#define GM_UNROLL /* the device's compiler decides: a forced unroll makes PoCL compile a program 6 times slower */
#define GM_BEGIN
#define GM_END
#define gm_as_float(bits) as_float(bits)
GM_FN float gm_half_at(const GM_GLOBAL gm_u8* p) { return vload_half(0, (const GM_GLOBAL half*)p); }
GM_FN void gm_store_half(GM_GLOBAL void* out, gm_i64 i, float v) { vstore_half_rte(v, i, (GM_GLOBAL half*)out); }
GM_FN gm_i32x4 gm_load_i32x4(const GM_GLOBAL gm_i32* p) { return *(const GM_GLOBAL int4*)p; }
GM_FN gm_u32x4 gm_load_u32x4(const GM_GLOBAL gm_u32* p) { return *(const GM_GLOBAL uint4*)p; }

/* OpenCL C 1.2 has no integer dot product: the four products of sign-extended bytes, summed in unsigned arithmetic
 * (int8_peak's chains run long enough to wrap, which signed arithmetic may not). */
GM_FN int gm_dot4(int a, int b, int acc) {
  gm_u32 sum = (gm_u32)acc;
  for (int j = 0; j < 32; j += 8) sum += (gm_u32)((int)(gm_i8)(a >> j) * (int)(gm_i8)(b >> j));
  return (int)sum;
}

#endif /* GGUFMM_DEVICE_PORTABLE_OPENCL_H */
