#include "runtime/cpu.hpp"

#include <cpuid.h>
#include <cpuinfo.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <utility>

namespace ggufmm::runtime {
namespace {

constexpr std::array<std::pair<Isa, std::string_view>, 4> kNames = {
    {{Isa::Scalar, "scalar"}, {Isa::Avx2, "avx2"}, {Isa::AvxVnni, "avxvnni"}, {Isa::Avx512, "avx512"}}};

// cpuinfo predates AVX-VNNI: CPUID leaf 7, sub-leaf 1, EAX bit 4. (YMM state support is checked with AVX2.)
bool has_avxvnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
}

bool runs(Isa isa) {
  switch (isa) {
    case Isa::Scalar:
      return true;
    case Isa::Avx2:
      return cpuinfo_has_x86_avx2() && cpuinfo_has_x86_fma3() && cpuinfo_has_x86_f16c();
    case Isa::AvxVnni:
      return runs(Isa::Avx2) && has_avxvnni();
    case Isa::Avx512:
      return runs(Isa::Avx2) && cpuinfo_has_x86_avx512f() && cpuinfo_has_x86_avx512bw() &&
             cpuinfo_has_x86_avx512dq() && cpuinfo_has_x86_avx512vl() && cpuinfo_has_x86_avx512vnni();
  }
  return false;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  for (const auto& [i, name] : kNames) {
    if (i == isa) return name;
  }
  return "?";
}

std::optional<Isa> isa_from_name(std::string_view name) {
  for (const auto& [i, n] : kNames) {
    if (n == name) return i;
  }
  return std::nullopt;
}

std::vector<Isa> supported_isas() {
  static const std::vector<Isa> isas = [] {
    std::vector<Isa> out;
    const bool initialized = cpuinfo_initialize();
    for (const auto& [isa, name] : kNames) {
      if (isa == Isa::Scalar || (initialized && runs(isa))) out.push_back(isa);
    }
    return out;
  }();
  return isas;
}

Isa active_isa() {
  static const Isa active = [] {
    Isa best = supported_isas().back();
    if (const char* env = std::getenv("GGUFMM_ISA"); env && *env) {
      // A request for a level the machine lacks falls back to the best it has.
      if (const auto wanted = isa_from_name(env); wanted && *wanted < best) best = *wanted;
    }
    return best;
  }();
  return active;
}

bool prefetcher_follows_short_rows() {
  static const bool follows = [] {
    if (!cpuinfo_initialize() || cpuinfo_get_cores_count() == 0) return false;
    const cpuinfo_core& core = *cpuinfo_get_core(0);
    // This cpuinfo predates Zen 5's uarch: the family from the CPUID signature (base, plus extended where base is F).
    const uint32_t base = (core.cpuid >> 8) & 0xf;
    const uint32_t family = base == 0xf ? base + ((core.cpuid >> 20) & 0xff) : base;
    return core.vendor == cpuinfo_vendor_amd && family >= 0x1a;
  }();
  return follows;
}

}  // namespace ggufmm::runtime
