// The C API: a thin shell over the C++ one that turns exceptions into status codes.
#include "ggufmm/ggufmm.h"

#include <new>
#include <string>

#include "ggufmm/ggufmm.hpp"
#include "ggufmm/gguf.hpp"

struct ggufmm_file {
  ggufmm::gguf::File file;
};

namespace {

thread_local std::string last_error;

template <typename F>
ggufmm_status guarded(F&& body) {
  try {
    body();
    last_error.clear();
    return GGUFMM_OK;
  } catch (const ggufmm::Error& e) {
    last_error = e.what();
    return e.kind() == ggufmm::Error::Kind::BadUsage ? GGUFMM_BAD_USAGE : GGUFMM_BAD_INPUT;
  } catch (const std::bad_alloc&) {
    last_error = "out of memory";
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return GGUFMM_INTERNAL;
}

ggufmm::Weight to_cpp(const ggufmm_weight* w) {
  if (!w) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null weight");
  return {.type = static_cast<ggufmm::Type>(w->type), .k = w->k, .m = w->m, .experts = w->experts, .data = w->data};
}

ggufmm::Options to_cpp(const ggufmm_options* o) {
  if (!o) return {};
  switch (o->path) {
    case GGUFMM_PATH_AUTO:
      return {.path = ggufmm::Path::Auto, .threads = o->threads};
    case GGUFMM_PATH_REF:
      return {.path = ggufmm::Path::Ref, .threads = o->threads};
    case GGUFMM_PATH_GEMV:
      return {.path = ggufmm::Path::Gemv, .threads = o->threads};
    case GGUFMM_PATH_TILED:
      return {.path = ggufmm::Path::Tiled, .threads = o->threads};
    case GGUFMM_PATH_DENSE:
      return {.path = ggufmm::Path::Dense, .threads = o->threads};
  }
  throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "unknown path");
}

}  // namespace

extern "C" {

const char* ggufmm_last_error(void) { return last_error.c_str(); }

const char* ggufmm_type_name(uint32_t type) {
  const ggufmm::TypeInfo* info = ggufmm::type_info(static_cast<ggufmm::Type>(type));
  return info ? info->name.data() : nullptr;
}

ggufmm_status ggufmm_file_open(const char* path, ggufmm_file** out) {
  return guarded([&] {
    if (!path || !out) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null path or result pointer");
    *out = new ggufmm_file{ggufmm::gguf::File::open(path)};
  });
}

void ggufmm_file_close(ggufmm_file* file) { delete file; }

ggufmm_status ggufmm_file_weight(const ggufmm_file* file, const char* tensor, ggufmm_weight* out) {
  return guarded([&] {
    if (!file || !tensor || !out) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null argument");
    const ggufmm::Weight w = file->file.weight(tensor);
    *out = {static_cast<uint32_t>(w.type), w.k, w.m, w.experts, w.data};
  });
}

ggufmm_status ggufmm_matmul(const ggufmm_weight* w, const float* x, int64_t rows, float* y, const float* residual,
                            const ggufmm_options* options) {
  return guarded([&] { ggufmm::matmul(to_cpp(w), x, rows, y, residual, to_cpp(options)); });
}

ggufmm_status ggufmm_mul_mat_id(const ggufmm_weight* w, const float* act, int64_t tokens, int64_t act_slots,
                                const int32_t* ids, int64_t slots, float* y, const float* residual,
                                const ggufmm_options* options) {
  return guarded(
      [&] { ggufmm::mul_mat_id(to_cpp(w), act, tokens, act_slots, ids, slots, y, residual, to_cpp(options)); });
}

ggufmm_status ggufmm_get_dense_cache_stats(ggufmm_dense_cache_stats* out) {
  return guarded([&] {
    if (!out) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null result pointer");
    const ggufmm::DenseCacheStats s = ggufmm::dense_cache_stats();
    *out = {s.hits, s.misses, s.evictions, s.bytes_held, s.peak_bytes, s.entries};
  });
}

ggufmm_status ggufmm_set_dense_cache_budget(size_t bytes) {
  return guarded([&] { ggufmm::set_dense_cache_budget(bytes); });
}

ggufmm_status ggufmm_clear_dense_cache(void) {
  return guarded([] { ggufmm::clear_dense_cache(); });
}

ggufmm_status ggufmm_release_dense_copies(const void* data, size_t bytes) {
  return guarded([&] { ggufmm::release_dense_copies(data, bytes); });
}

ggufmm_status ggufmm_set_prefill_dequant(int64_t min_rows) {
  return guarded([&] { ggufmm::set_prefill_dequant(min_rows); });
}

}  // extern "C"
