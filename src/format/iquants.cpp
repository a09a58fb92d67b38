#include "format/iquants.hpp"

#include <cstdlib>

// Placeholder until the family is implemented.
namespace ggufmm::format {
void dequantize_iq2_xxs(const void*, float*, int64_t) { std::abort(); }
void dequantize_iq2_xs(const void*, float*, int64_t) { std::abort(); }
void dequantize_iq2_s(const void*, float*, int64_t) { std::abort(); }
void dequantize_iq3_xxs(const void*, float*, int64_t) { std::abort(); }
void dequantize_iq3_s(const void*, float*, int64_t) { std::abort(); }
void dequantize_iq1_s(const void*, float*, int64_t) { std::abort(); }
void dequantize_iq1_m(const void*, float*, int64_t) { std::abort(); }
void dequantize_iq4_nl(const void*, float*, int64_t) { std::abort(); }
void dequantize_iq4_xs(const void*, float*, int64_t) { std::abort(); }
void quantize_iq4_nl(const float*, void*, int64_t) { std::abort(); }
void quantize_iq4_xs(const float*, void*, int64_t) { std::abort(); }
}  // namespace ggufmm::format
