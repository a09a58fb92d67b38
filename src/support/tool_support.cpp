#include "tool_support.hpp"

#include "device/backend.hpp"
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

namespace {

device::Backend& backend(const Device& d) {
  device::Backend* b = device::backend_of(d);
  if (!b) throw Error(Error::Kind::BadUsage, "the CPU has no device memory");
  return *b;
}

}  // namespace

DeviceMemory::DeviceMemory(const Device& d, size_t bytes) : backend_(&backend(d)), buffer_(backend_->allocate(bytes)) {}

void* DeviceMemory::handle() const { return buffer_->handle(); }

void DeviceMemory::write(const void* data) const { backend_->write(*buffer_, data); }

void finish(const Device& d) { backend(d).finish(); }

}  // namespace ggufmm::support
