#include "format/kquants.hpp"

#include <cstdlib>

// Placeholder until the family is implemented.
namespace ggufmm::format {
void dequantize_q2_K(const void*, float*, int64_t) { std::abort(); }
void dequantize_q3_K(const void*, float*, int64_t) { std::abort(); }
void dequantize_q4_K(const void*, float*, int64_t) { std::abort(); }
void dequantize_q5_K(const void*, float*, int64_t) { std::abort(); }
void dequantize_q6_K(const void*, float*, int64_t) { std::abort(); }
void quantize_q2_K(const float*, void*, int64_t) { std::abort(); }
void quantize_q3_K(const float*, void*, int64_t) { std::abort(); }
void quantize_q4_K(const float*, void*, int64_t) { std::abort(); }
void quantize_q5_K(const float*, void*, int64_t) { std::abort(); }
void quantize_q6_K(const float*, void*, int64_t) { std::abort(); }
}  // namespace ggufmm::format
