#include "tool_support.hpp"

#include "format/random_blocks.hpp"
#include "runtime/cpu.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm::support {

Level highest_level() {
  switch (runtime::supported_isas().back()) {
    case runtime::Isa::Avx512:
      return Level::Avx512;
    case runtime::Isa::AvxVnni:
      return Level::AvxVnni;
    case runtime::Isa::Avx2:
      return Level::Avx2;
    case runtime::Isa::Scalar:
      break;
  }
  return Level::Scalar;
}

std::string active_level_name() { return std::string(runtime::isa_name(runtime::active_isa())); }

int resolve_threads(int requested) { return runtime::ThreadPool::resolve_threads(requested); }

std::vector<uint8_t> random_weight(Type type, int64_t m, int64_t k, std::mt19937& rng) {
  return format::random_weight(type, m, k, rng);
}

}  // namespace ggufmm::support
