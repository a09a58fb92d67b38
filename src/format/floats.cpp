#include "format/floats.hpp"

#include <cstdlib>

// Placeholder until the family is implemented.
namespace ggufmm::format {
void dequantize_f32(const void*, float*, int64_t) { std::abort(); }
void dequantize_f16(const void*, float*, int64_t) { std::abort(); }
void dequantize_bf16(const void*, float*, int64_t) { std::abort(); }
void quantize_f32(const float*, void*, int64_t) { std::abort(); }
void quantize_f16(const float*, void*, int64_t) { std::abort(); }
void quantize_bf16(const float*, void*, int64_t) { std::abort(); }
}  // namespace ggufmm::format
