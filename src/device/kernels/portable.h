/* The portable subset every device kernel is written in, mapped onto each compiler by one header: OpenCL C
 * (portable_opencl.h, the only one the library embeds for OpenCL to compile per device at first use), CUDA
 * (portable_cuda.h, nvcc at build time) and host C++ (portable_host.h, so that the block decoders are tested bit
 * for bit against the CPU's in every build).
 *
 * Kernel code uses only: the gm_ integer types, and gm_i32x4 / gm_u32x4 (four 32-bit lanes .x .y .z .w) loaded
 * 16 bytes at a time by gm_load_i32x4 / gm_load_u32x4 from 16-byte aligned global memory; GM_GLOBAL / GM_LOCAL
 * pointers (GM_SHARED declares a work-group's array, in a kernel's body); GM_FN functions; GM_KERNEL entry points
 * with GM_GLOBAL_ID, GM_LOCAL_ID, GM_GROUP_ID, GM_LOCAL_SIZE, GM_NUM_GROUPS (dimensions 0 and 1); GM_BARRIER (for
 * local memory) and GM_BARRIER_GLOBAL (for global memory too, within a work-group); GM_ATOMIC_INC on a global int
 * (returning its old value); GM_TABLE for constant lookup tables, read by GM_TABLE_AT(table, i) and
 * GM_TABLE_WORD(table, i) (32-bit word i of a table of 64-bit entries: entry e's low half is word 2e, devices being
 * little-endian); gm_half_at and gm_store_half for binary16 loads and stores; gm_as_float for bit casts; the math
 * functions fabs, isnan, isfinite and rint on floats; GM_UNROLL before a loop of constant trip count that indexes a
 * work-item's array (so that the array stays in registers); gm_dot4(a, b, acc), acc plus the dot product of the
 * signed bytes of a and b. Where the device has them: gm_warp_sum (GM_HAS_WARP_SHUFFLE: the sum over a warp's 32
 * lanes, in lane 0) and gm_mma_m16n8k16 / gm_mma_m16n8k32 (GM_HAS_MMA, args.h: int8 tensor-core products). Every
 * vendor intrinsic is called from those functions alone.
 * Code between GM_BEGIN and GM_END is what the host compiles (into namespace ggufmm::device::kernels). No structs
 * over block memory (layouts are read byte by byte, so no alignment or padding differs between compilers), no
 * recursion, no dynamic allocation. GM_HAS_FP64 (doubles) is set by the host where the device has them. */
#ifndef GGUFMM_DEVICE_PORTABLE_H
#define GGUFMM_DEVICE_PORTABLE_H

#if defined(__OPENCL_C_VERSION__) || defined(__OPENCL_VERSION__)
#include "device/kernels/portable_opencl.h"
#elif defined(__CUDACC__)
#include "device/kernels/portable_cuda.h"
#else
#include "device/kernels/portable_host.h"
#endif

#endif /* GGUFMM_DEVICE_PORTABLE_H */
