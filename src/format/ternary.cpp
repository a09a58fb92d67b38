#include "format/ternary.hpp"

#include <cstdlib>

// Placeholder until the family is implemented.
namespace ggufmm::format {
void dequantize_tq1_0(const void*, float*, int64_t) { std::abort(); }
void dequantize_tq2_0(const void*, float*, int64_t) { std::abort(); }
void quantize_tq1_0(const float*, void*, int64_t) { std::abort(); }
void quantize_tq2_0(const float*, void*, int64_t) { std::abort(); }
}  // namespace ggufmm::format
