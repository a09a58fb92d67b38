// Which instruction sets this CPU (and OS) can run, and which one the kernels use.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace ggufmm::runtime {

// Kernel levels, each a superset of the one before.
enum class Isa {
  Scalar,   // portable C++
  Avx2,     // AVX2 + FMA + F16C
  AvxVnni,  // AVX2 with the VEX-encoded int8 dot product (AVX-VNNI)
  Avx512,   // AVX-512 F/BW/DQ/VL with VNNI
};

std::string_view isa_name(Isa isa);
std::optional<Isa> isa_from_name(std::string_view name);

// Every level this machine can run, lowest first.
std::vector<Isa> supported_isas();
// The level calls use: the highest supported, lowered by the environment variable GGUFMM_ISA
// (scalar|avx2|avxvnni|avx512) when it names a lower one. Read once.
Isa active_isa();

// Whether the core's own prefetcher keeps up with one short weight row (under 4 KiB) streaming at a time, so that
// software prefetches there only compete with it: AMD from Zen 5 (family 1Ah). Read once.
bool prefetcher_follows_short_rows();

}  // namespace ggufmm::runtime
