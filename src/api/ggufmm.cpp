// The public C++ API: validation of every call, then one dispatch point to the paths.
#include "ggufmm/ggufmm.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <limits>
#include <fmt/format.h>

#include "api/checks.hpp"
#include "format/registry.hpp"
#include "paths/paths.hpp"
#include "paths/profile.hpp"
#include "runtime/atomic_file.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm {
namespace {

[[noreturn]] void bad_input(const std::string& message) { throw Error(Error::Kind::BadInput, message); }
[[noreturn]] void bad_usage(const std::string& message) { throw Error(Error::Kind::BadUsage, message); }

using api::label;

const format::Format& weight_format(const Weight& w) {
  const format::Format* f = format::find(w.type);
  if (!f) bad_input(fmt::format("{}: unknown type id {}", label(w), static_cast<uint32_t>(w.type)));
  if (!f->dequantize) bad_input(fmt::format("{}: type {} is not a weight format", label(w), f->info.name));
  if (w.k <= 0 || w.m <= 0 || w.experts <= 0) {
    bad_input(fmt::format("{}: empty shape [{}, {}, {}]", label(w), w.k, w.m, w.experts));
  }
  if (w.k % f->info.block_size != 0) {
    bad_input(fmt::format("{}: row length {} is not a multiple of the {} block size {}", label(w), w.k, f->info.name,
                          f->info.block_size));
  }
  if (!w.data) bad_usage(fmt::format("{}: no data", label(w)));
  return *f;
}

// The outputs the paths get wrong in kind are recomputed from the residual after y is written (see
// paths::recompute_doubtful), so a residual that shares memory with y (an in-place add) is read from a copy.
// Addresses are compared through std::less, which orders all pointers.
const float* residual_apart(const float* residual, const float* y, int64_t n, std::vector<float>& copy) {
  if (!residual || !(std::less<const float*>()(residual, y + n) && std::less<const float*>()(y, residual + n))) {
    return residual;
  }
  copy.assign(residual, residual + n);
  return copy.data();
}

void require(bool ok, const std::string& message) {
  if (!ok) bad_usage(message);
}

Path resolve(const Weight& w, Path requested, int64_t rows) {
  requested = api::requested_path(requested);
  return requested != Path::Auto ? requested : auto_path(w, rows);
}

constexpr std::array<std::pair<Path, std::string_view>, 5> kPathNames = {
    {{Path::Auto, "auto"}, {Path::Ref, "ref"}, {Path::Gemv, "gemv"}, {Path::Tiled, "tiled"}, {Path::Dense, "dense"}}};

}  // namespace

std::string_view path_name(Path path) {
  for (const auto& [p, name] : kPathNames) {
    if (p == path) return name;
  }
  return "?";
}

std::optional<Path> path_from_name(std::string_view name) {
  for (const auto& [p, n] : kPathNames) {
    if (n == name) return p;
  }
  return std::nullopt;
}

std::vector<Path> available_paths() { return {Path::Ref, Path::Gemv, Path::Tiled, Path::Dense}; }

Path auto_path(const Weight& w, int64_t rows) {
  const PathCrossover c = paths::crossover_for(w);
  const int64_t dense_rows = paths::prefill_dequant_rows();
  if (dense_rows > 0 && rows >= std::max(dense_rows, c.dense_from) && paths::dense_would_keep(w)) return Path::Dense;
  return rows < c.tiled_from ? Path::Gemv : Path::Tiled;
}

namespace api {

Path requested_path(Path requested) {
  if (requested != Path::Auto) return requested;
  static const Path forced = [] {
    const char* name = std::getenv("GGUFMM_PATH");
    if (!name || !*name) return Path::Auto;
    const std::optional<Path> path = path_from_name(name);
    if (!path) bad_usage(fmt::format("GGUFMM_PATH={} names no path", name));
    return *path;
  }();
  return forced;
}


std::string label(const Weight& w) { return w.name.empty() ? std::string("weight") : fmt::format("tensor {}", w.name); }

void check_weight(const Weight& w) { weight_format(w); }

void check_matmul(const Weight& w, int64_t rows, bool null_buffers) {
  weight_format(w);
  require(w.experts == 1, fmt::format("{}: matmul needs one matrix, not {} experts (use mul_mat_id)", label(w),
                                      w.experts));
  require(rows >= 0, fmt::format("{}: negative row count {}", label(w), rows));
  require(rows == 0 || !null_buffers, fmt::format("{}: null activations or output", label(w)));
}

void check_mul_mat_id(const Weight& w, int64_t tokens, int64_t act_slots, int64_t slots, bool null_buffers) {
  weight_format(w);
  require(tokens >= 0 && slots > 0, fmt::format("{}: bad mul_mat_id shape: {} tokens, {} slots", label(w), tokens,
                                                slots));
  require(act_slots == 1 || act_slots == slots,
          fmt::format("{}: activations have {} rows per token; need 1 or {} (the slots)", label(w), act_slots, slots));
  require(tokens == 0 || !null_buffers, fmt::format("{}: null activations, ids or output", label(w)));
}

void check_expert_ids(const Weight& w, const int32_t* ids, int64_t tokens, int64_t slots) {
  for (int64_t i = 0; i < tokens * slots; ++i) {
    if (ids[i] < 0 || ids[i] >= w.experts) {
      bad_input(fmt::format("{}: expert id {} (token {}, slot {}) is outside [0, {})", label(w), ids[i], i / slots,
                            i % slots, w.experts));
    }
  }
}

}  // namespace api

void matmul(const Weight& w, const float* x, int64_t rows, float* y, const float* residual, const Options& options) {
  api::check_matmul(w, rows, !x || !y);
  if (rows == 0) return;
  std::vector<float> residual_copy;
  residual = residual_apart(residual, y, rows * w.m, residual_copy);
  const paths::MatmulCall call{w, x, rows, y, residual, options.threads};
  switch (resolve(w, options.path, rows)) {
    case Path::Auto:
    case Path::Ref:
      paths::ref_matmul(call);
      paths::recompute_doubtful(call);
      break;
    // These two recompute the rows they flagged as they wrote them.
    case Path::Gemv:
      paths::gemv_matmul(call);
      break;
    case Path::Tiled:
      paths::tiled_matmul(call);
      break;
    case Path::Dense:
      paths::dense_matmul(call);
      paths::recompute_doubtful(call);
      break;
  }
}

void mul_mat_id(const Weight& w, const float* act, int64_t tokens, int64_t act_slots, const int32_t* ids,
                int64_t slots, float* y, const float* residual, const Options& options) {
  api::check_mul_mat_id(w, tokens, act_slots, slots, !act || !ids || !y);
  if (tokens == 0) return;
  api::check_expert_ids(w, ids, tokens, slots);
  std::vector<float> residual_copy;
  residual = residual_apart(residual, y, tokens * slots * w.m, residual_copy);
  const paths::MulMatIdCall call{w, act, tokens, act_slots, ids, slots, y, residual, options.threads};
  // `ref` is the reference; every other path means the expert-grouped kernels, which pick gemv or tiled per
  // expert by its row count (a dense copy per expert is not kept).
  if (options.path == Path::Ref) {
    paths::ref_mul_mat_id(call);
    paths::recompute_doubtful(call);
  } else {
    paths::moe_mul_mat_id(call);  // recomputes the rows it flagged
  }
}

std::string default_profile_path() { return paths::default_profile_path(); }

PathProfile read_profile(const std::string& path) { return paths::read_profile(path); }

void write_profile(const std::string& path, const PathProfile& profile) { paths::write_profile(path, profile); }

void set_profile(std::optional<PathProfile> profile) { paths::set_profile(std::move(profile)); }

DenseCacheStats dense_cache_stats() { return paths::DenseCache::global().stats(); }

void set_dense_cache_budget(size_t bytes) { paths::DenseCache::global().set_budget(bytes); }

void clear_dense_cache() { paths::DenseCache::global().clear(); }

void release_dense_copies(const void* data, size_t bytes) { paths::DenseCache::global().release(data, bytes); }

void set_prefill_dequant(int64_t min_rows) {
  require(min_rows >= 0, fmt::format("prefill dequant: negative minimum row count {}", min_rows));
  paths::set_prefill_dequant_rows(min_rows);
}

std::vector<float> dequantize(const Weight& w) {
  const format::Format& f = weight_format(w);
  const int64_t rows = w.m * w.experts;
  std::vector<float> out(static_cast<size_t>(rows * w.k));
  const auto* data = static_cast<const uint8_t*>(w.data);
  runtime::ThreadPool::global().run(0, rows, [&](int64_t r) {
    f.dequantize(data + static_cast<size_t>(r) * w.row_bytes(), out.data() + r * w.k, w.k);
  });
  return out;
}

std::vector<uint8_t> quantize(Type type, const float* src, int64_t rows, int64_t k) {
  const format::Format* f = format::find(type);
  require(f && f->quantize, fmt::format("cannot quantize to {}", f ? f->info.name : std::string_view("this type")));
  require(rows >= 0 && k > 0 && k % f->info.block_size == 0,
          fmt::format("cannot quantize rows of {} values to {}: need a multiple of {}", k, f->info.name,
                      f->info.block_size));
  const size_t row_bytes = static_cast<size_t>(k / f->info.block_size) * static_cast<size_t>(f->info.block_bytes);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(rows));
  runtime::ThreadPool::global().run(0, rows, [&](int64_t r) {
    f->quantize(src + r * k, out.data() + static_cast<size_t>(r) * row_bytes, k);
  });
  return out;
}

std::vector<double> exact_matmul(const Weight& w, const float* x, int64_t rows) {
  require(w.experts == 1, fmt::format("{}: exact_matmul needs one matrix", label(w)));
  const std::vector<float> dense = dequantize(w);
  std::vector<double> out(static_cast<size_t>(rows * w.m));
  runtime::ThreadPool::global().run(0, w.m, [&](int64_t o) {
    const float* wr = dense.data() + o * w.k;
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * w.k;
      double sum = 0.0;
      for (int64_t i = 0; i < w.k; ++i) sum += static_cast<double>(wr[i]) * static_cast<double>(xr[i]);
      out[static_cast<size_t>(r * w.m + o)] = sum;
    }
  });
  return out;
}

template <typename Ref>
static double nmse_of(const float* got, const Ref* reference, size_t n) {
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double r = static_cast<double>(reference[i]);
    const double d = static_cast<double>(got[i]) - r;
    err += d * d;
    ref += r * r;
  }
  if (ref == 0.0) return err == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return err / ref;
}

double nmse(const float* got, const double* reference, size_t n) { return nmse_of(got, reference, n); }
double nmse(const float* got, const float* reference, size_t n) { return nmse_of(got, reference, n); }

void write_file_atomic(const std::string& path, const void* bytes, size_t size) {
  runtime::AtomicFile file(path);
  file.write(bytes, size);
  file.commit();
}

}  // namespace ggufmm
