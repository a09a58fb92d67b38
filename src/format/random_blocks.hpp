// Random weights of any weight format, for the tests, the tool's bench and check, and the microbenchmarks: one
// generator, so that every one of them times and checks the same kind of data.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "ggufmm/types.hpp"

namespace ggufmm::format {

// m rows of k values (k a multiple of the block size): quantized from random normal values where ggufmm can
// quantize, else random blocks, redrawn until they dequantize to finite values whose largest magnitude lies
// between 1/2 and 4 (random bytes can spell a NaN or a huge scale, which would time and check something no
// model holds).
std::vector<uint8_t> random_weight(Type type, int64_t m, int64_t k, std::mt19937& rng);

}  // namespace ggufmm::format
