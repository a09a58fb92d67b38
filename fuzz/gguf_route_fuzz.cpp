// libFuzzer target: what `ggufmm info`, `dequant` and `matmul` do with a file, on arbitrary bytes. A file the
// reader accepts must print, and each of its weights must dequantize and multiply on every path without error.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "ggufmm/ggufmm.hpp"
#include "ggufmm/gguf.hpp"

namespace {

using namespace ggufmm;

// Work is capped so that each input runs in milliseconds: larger tensors are skipped (the reader checks them all
// the same), and products run while their rows times weight values, summed over the input, stay under a budget
// (a file from ggml holds a dozen tensors of 37K values: a few of them are multiplied).
constexpr int64_t kMaxElements = int64_t{1} << 20;
constexpr int64_t kProductBudget = int64_t{1} << 17;
// One row, and more than a gemv slice of 7.
constexpr int64_t kRowCounts[] = {1, 9};
// Small enough that the dense path both keeps copies and makes some for one call only.
constexpr size_t kDenseCacheBudget = size_t{64} << 10;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

// Deterministic values in [-1, 1), so that an input reproduces exactly.
std::vector<float> values(int64_t n, uint32_t seed) {
  std::vector<float> out(static_cast<size_t>(n));
  for (float& v : out) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(seed)) * 0x1p-31f;
  }
  return out;
}

// Takes `rows * k * m` from the budget for each product it runs.
bool afford(int64_t rows, const Weight& w, int64_t& budget) {
  const int64_t work = rows * w.k * w.m;
  if (work > budget) return false;
  budget -= work;
  return true;
}

void multiply(const Weight& w, int64_t& budget) {
  for (const int64_t rows : kRowCounts) {
    if (!afford(rows, w, budget)) return;
    const std::vector<float> x = values(rows * w.k, 1);
    const std::vector<float> residual = values(rows * w.m, 2);
    std::vector<float> y(static_cast<size_t>(rows * w.m));
    for (const Path path : available_paths()) {
      matmul(w, x.data(), rows, y.data(), residual.data(), {.path = path, .threads = 1});
    }
  }
}

// mul_mat_id over two tokens of two slots, with shared and with per-slot activation rows.
void multiply_experts(const Weight& w, int64_t& budget) {
  constexpr int64_t kTokens = 2, kSlots = 2;
  if (!afford(2 * kTokens * kSlots, w, budget)) return;
  const auto last = static_cast<int32_t>(w.experts - 1);
  const int32_t ids[kTokens * kSlots] = {0, last, last / 2, 0};
  const std::vector<float> act = values(kTokens * kSlots * w.k, 3);
  std::vector<float> y(static_cast<size_t>(kTokens * kSlots * w.m));
  for (const int64_t act_slots : {int64_t{1}, kSlots}) {
    mul_mat_id(w, act.data(), kTokens, act_slots, ids, kSlots, y.data(), nullptr, {.threads = 1});
  }
}

void route(const gguf::File& file) {
  int64_t budget = kProductBudget;
  for (const auto& [key, value] : file.metadata()) {
    if (gguf::value_type_name(value.type) == "unknown" || value.to_string().empty() || value.to_string(0).empty()) {
      fail("metadata does not print", key);
    }
  }
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.elements() > kMaxElements) continue;
    if (t.type == Type::F32 || t.type == Type::F16 || t.type == Type::BF16) {
      if (file.read_f32(t.name).size() != static_cast<size_t>(t.elements())) fail("read_f32 size", t.name);
    }
    if (!type_info(t.type)->is_weight) continue;
    Weight w;
    try {
      w = file.weight(t.name);  // refuses shapes that are no matrix, and empty tensors
    } catch (const Error& e) {
      if (e.kind() != Error::Kind::BadInput) fail("weight() threw a usage error", e.what());
      continue;
    }
    if (dequantize(w).size() != static_cast<size_t>(t.elements())) fail("dequantize size", t.name);
    for (int64_t e = 0; e < w.experts; ++e) {
      Weight expert = w;
      expert.experts = 1;
      expert.data = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(e) * w.expert_bytes();
      multiply(expert, budget);
    }
    if (w.experts > 1) multiply_experts(w, budget);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ggufmm::set_dense_cache_budget(kDenseCacheBudget);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<ggufmm::gguf::File> file;
  try {
    file.emplace(ggufmm::gguf::File::parse({data, size}, "fuzz.gguf"));
  } catch (const ggufmm::Error&) {
    return 0;  // the reader target checks the errors themselves
  }
  route(*file);  // an Error from here on escapes, and libFuzzer reports it as a crash
  // Each input starts from an empty dense cache, so that what it does reproduces on its own.
  ggufmm::clear_dense_cache();
  return 0;
}
