/* The portable subset (portable.h) as CUDA, for nvcc: the one place that calls NVIDIA's intrinsics and PTX. */
#ifndef GGUFMM_DEVICE_PORTABLE_CUDA_H
#define GGUFMM_DEVICE_PORTABLE_CUDA_H

#include <cuda_fp16.h>
#include <stdint.h>
typedef uint8_t gm_u8;
typedef int8_t gm_i8;
typedef uint16_t gm_u16;
typedef int16_t gm_i16;
typedef uint32_t gm_u32;
typedef int32_t gm_i32;
typedef uint64_t gm_u64;
typedef int64_t gm_i64;
typedef int4 gm_i32x4;
typedef uint4 gm_u32x4;
#define GM_GLOBAL
#define GM_LOCAL
#define GM_SHARED __shared__
#define GM_FN static __device__ __forceinline__
#define GM_KERNEL extern "C" __global__
/* Tables in global memory, read through the read-only data cache: each lane of a warp reads its own entry, which
 * constant memory would serialize. */
#define GM_TABLE(type, name) static __device__ const type name[]
#define GM_TABLE_AT(table, i) __ldg(&(table)[i])
#define GM_TABLE_WORD(table, i) __ldg((const gm_u32*)(table) + (i))
#define GM_DIM(v, d) ((d) == 0 ? (v).x : (v).y)
#define GM_GLOBAL_ID(d) ((gm_i64)GM_DIM(blockIdx, d) * GM_DIM(blockDim, d) + GM_DIM(threadIdx, d))
#define GM_LOCAL_ID(d) ((int)GM_DIM(threadIdx, d))
#define GM_GROUP_ID(d) ((gm_i64)GM_DIM(blockIdx, d))
#define GM_LOCAL_SIZE(d) ((int)GM_DIM(blockDim, d))
#define GM_NUM_GROUPS(d) ((gm_i64)GM_DIM(gridDim, d))
#define GM_BARRIER() __syncthreads()
#define GM_BARRIER_GLOBAL() __syncthreads()
#define GM_ATOMIC_INC(p) atomicAdd((p), 1)
#define GM_UNROLL _Pragma("unroll")
#define GM_HAS_WARP_SHUFFLE 1
#define GM_BEGIN
#define GM_END
#define gm_as_float(bits) __uint_as_float(bits)
GM_FN float gm_half_at(const gm_u8* p) { return __half2float(__ushort_as_half((gm_u16)(p[0] | p[1] << 8))); }
GM_FN void gm_store_half(void* out, gm_i64 i, float v) { ((__half*)out)[i] = __float2half_rn(v); }
GM_FN gm_i32x4 gm_load_i32x4(const gm_i32* p) { return *(const int4*)p; }
GM_FN gm_u32x4 gm_load_u32x4(const gm_u32* p) { return *(const uint4*)p; }

GM_FN int gm_dot4(int a, int b, int acc) { return __dp4a(a, b, acc); }

GM_FN float gm_warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

/* acc += A B for a warp's int8 16 x 8 block over 16 or 32 values (mma.sync m16n8k16 and m16n8k32, sm_80 on): the
 * lane's words of A (a0 to a3) and B (b0, b1) and its four sums, in the layouts of PTX's mma fragments. */
GM_FN void gm_mma_m16n8k16(int* acc, int a0, int a1, int b0) {
  asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
      : "r"(a0), "r"(a1), "r"(b0));
}
GM_FN void gm_mma_m16n8k32(int* acc, int a0, int a1, int a2, int a3, int b0, int b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

#endif /* GGUFMM_DEVICE_PORTABLE_CUDA_H */
