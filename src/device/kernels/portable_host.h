/* The portable subset (portable.h) as host C++, for the block decoders and the constants the host shares. */
#ifndef GGUFMM_DEVICE_PORTABLE_HOST_H
#define GGUFMM_DEVICE_PORTABLE_HOST_H

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
#define GM_TABLE_AT(table, i) ((table)[i])
#define GM_TABLE_WORD(table, i) ((gm_u32)((table)[(i) / 2] >> 32 * ((i) % 2)))
/* On the host the kernel source lives in a namespace of its own. */
#define GM_BEGIN namespace ggufmm::device::kernels {
#define GM_END }
#define gm_as_float(bits) std::bit_cast<float>(static_cast<uint32_t>(bits))
namespace ggufmm::device::kernels {
inline float gm_half_at(const gm_u8* p) { return format::fp16_to_f32(static_cast<uint16_t>(p[0] | p[1] << 8)); }
}  // namespace ggufmm::device::kernels

#endif /* GGUFMM_DEVICE_PORTABLE_HOST_H */
