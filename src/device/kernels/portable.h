/* The portable subset every device kernel is written in, and the macros that map it onto each compiler:
 * OpenCL C (embedded in the library, compiled per device at first use), CUDA (nvcc, when the toolkit is there)
 * and host C++ (so that the block decoders are tested bit for bit against the CPU's in every build).
 *
 * Kernel code uses only: the gm_ integer types below; GM_GLOBAL / GM_LOCAL pointers (GM_SHARED declares a
 * work-group's array); GM_FN functions; GM_KERNEL entry points with GM_GLOBAL_ID, GM_LOCAL_ID, GM_GROUP_ID,
 * GM_LOCAL_SIZE, GM_NUM_GROUPS (dimensions 0 and 1); GM_BARRIER (for local memory) and GM_BARRIER_GLOBAL (for
 * global memory too, within a work-group); GM_ATOMIC_INC on a global int (returning its old value); GM_TABLE for
 * constant lookup tables, and GM_TABLE_WORD(table, i) for 32-bit word i of a table of 64-bit entries (entry e's low
 * half is word 2e: devices are little-endian); gm_half_at and gm_store_half for binary16 loads and stores;
 * gm_as_float for bit casts; the math functions fabs, isnan, isfinite and rint on floats; GM_UNROLL before a loop of
 * constant trip count that indexes a work-item's array (so that the array stays in registers).
 * Code between GM_BEGIN and GM_END is what the host compiles (into namespace ggufmm::device::kernels). No structs
 * over block memory (layouts are read byte by byte, so no alignment or padding differs between compilers), no
 * recursion, no dynamic allocation. Capability macros select a device's fast paths over the portable code:
 * GM_HAS_FP64 (doubles), GM_HAS_WARP_SHUFFLE and GM_HAS_DP4A (CUDA's warp shuffles and 4-byte dot products) and
 * GM_HAS_MMA (CUDA's int8 tensor-core matrix products, sm_80 on). */
#ifndef GGUFMM_DEVICE_PORTABLE_H
#define GGUFMM_DEVICE_PORTABLE_H

#if defined(__OPENCL_C_VERSION__) || defined(__OPENCL_VERSION__)
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
#define GM_GLOBAL __global
#define GM_LOCAL __local
#define GM_SHARED __local
#define GM_FN static inline
#define GM_KERNEL __kernel
#define GM_TABLE(type, name) __constant type name[]
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

#elif defined(__CUDACC__)
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
#define GM_GLOBAL
#define GM_LOCAL
#define GM_SHARED __shared__
#define GM_FN static __device__ __forceinline__
#define GM_KERNEL extern "C" __global__
#define GM_TABLE(type, name) static __constant__ type name[]
#define GM_TABLE_WORD(table, i) (((const gm_u32*)(table))[i])
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
/* The fast paths the portable code takes where the device has them: warp shuffles, the 4-byte dot product, and
 * int8 tensor-core matrix products (mma.sync m16n8k16 and m16n8k32). */
#define GM_HAS_WARP_SHUFFLE 1
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 610
#define GM_HAS_DP4A 1
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GM_HAS_MMA 1
#endif
#define GM_BEGIN
#define GM_END
#define gm_as_float(bits) __uint_as_float(bits)
GM_FN float gm_half_at(const gm_u8* p) { return __half2float(__ushort_as_half((gm_u16)(p[0] | p[1] << 8))); }
GM_FN void gm_store_half(void* out, gm_i64 i, float v) { ((__half*)out)[i] = __float2half_rn(v); }

#else /* host C++: the decoders only */
#include <bit>
#include <cstdint>

#include "format/fp16.hpp"
namespace ggufmm::device::kernels {
using gm_u8 = uint8_t;
using gm_i8 = int8_t;
using gm_u16 = uint16_t;
using gm_i16 = int16_t;
using gm_u32 = uint32_t;
using gm_i32 = int32_t;
using gm_u64 = uint64_t;
using gm_i64 = int64_t;
}  // namespace ggufmm::device::kernels
#define GM_GLOBAL
#define GM_FN inline
#define GM_TABLE(type, name) inline constexpr type name[]
#define GM_TABLE_WORD(table, i) ((gm_u32)((table)[(i) / 2] >> 32 * ((i) % 2)))
/* On the host the kernel source lives in a namespace of its own. */
#define GM_BEGIN namespace ggufmm::device::kernels {
#define GM_END }
#define gm_as_float(bits) std::bit_cast<float>(static_cast<uint32_t>(bits))
namespace ggufmm::device::kernels {
inline float gm_half_at(const gm_u8* p) { return format::fp16_to_f32(static_cast<uint16_t>(p[0] | p[1] << 8)); }
}  // namespace ggufmm::device::kernels
#endif

#endif /* GGUFMM_DEVICE_PORTABLE_H */
