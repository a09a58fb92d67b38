#include "format/fp4.hpp"

#include <cstdlib>

// Placeholder until the family is implemented.
namespace ggufmm::format {
void dequantize_mxfp4(const void*, float*, int64_t) { std::abort(); }
void quantize_mxfp4(const float*, void*, int64_t) { std::abort(); }
}  // namespace ggufmm::format
