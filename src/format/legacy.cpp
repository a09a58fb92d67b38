#include "format/legacy.hpp"

#include <cstdlib>

// Placeholder until the family is implemented.
namespace ggufmm::format {
void dequantize_q4_0(const void*, float*, int64_t) { std::abort(); }
void dequantize_q4_1(const void*, float*, int64_t) { std::abort(); }
void dequantize_q5_0(const void*, float*, int64_t) { std::abort(); }
void dequantize_q5_1(const void*, float*, int64_t) { std::abort(); }
void dequantize_q8_0(const void*, float*, int64_t) { std::abort(); }
void quantize_q4_0(const float*, void*, int64_t) { std::abort(); }
void quantize_q4_1(const float*, void*, int64_t) { std::abort(); }
void quantize_q5_0(const float*, void*, int64_t) { std::abort(); }
void quantize_q5_1(const float*, void*, int64_t) { std::abort(); }
void quantize_q8_0(const float*, void*, int64_t) { std::abort(); }
}  // namespace ggufmm::format
