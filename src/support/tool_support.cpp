#include "tool_support.hpp"

#include <fmt/format.h>

#include <optional>

#include "device/backend.hpp"
#include "device/product.hpp"
#include "format/fp16.hpp"
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

BareGemm::BareGemm(const Device& d, const Weight& w, int64_t rows)
    : backend_(&backend(d)), rows_(rows), m_(w.m), k_(w.k) {
  const std::optional<Type> type = backend_->dense_type();
  if (!type) throw Error(Error::Kind::BadUsage, fmt::format("{}: no GEMM library loads", d.info().name));
  const auto blocks = backend_->upload(w.data, w.total_bytes());
  const device::DenseCopy copy = device::make_dense_copy(*backend_, w, *blocks, *type);
  copy_ = copy.buffer;
  stride_ = copy.stride;
  // Activations as the bench draws them (a GPU's clock can rise on zeros), in the copy's element type.
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  const size_t n = static_cast<size_t>(rows * w.k);
  if (*type == Type::F16) {
    std::vector<uint16_t> x(n);
    for (uint16_t& v : x) v = format::f32_to_fp16(normal(rng));
    x_ = backend_->upload(x.data(), n * sizeof(uint16_t));
  } else {
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    x_ = backend_->upload(x.data(), n * sizeof(float));
  }
  y_ = backend_->allocate(static_cast<size_t>(rows * w.m) * sizeof(float));
  backend_->finish();
}

void BareGemm::enqueue() const {
  backend_->gemm({.w = copy_->handle(), .stride = stride_, .x = x_->handle(), .rows = rows_, .m = m_, .k = k_,
                  .beta = 0.0f, .y = y_->handle()});
}

}  // namespace ggufmm::support
