// The C API: a thin shell over the C++ one that turns exceptions into status codes.
#include "ggufmm/ggufmm.h"

#include <algorithm>
#include <new>
#include <string>
#include <vector>

#include "ggufmm/device.hpp"
#include "ggufmm/ggufmm.hpp"
#include "ggufmm/gguf.hpp"

struct ggufmm_file {
  ggufmm::gguf::File file;
};

struct ggufmm_device {
  ggufmm::Device device;
};

struct ggufmm_resident {
  ggufmm::ResidentWeight weight;
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

const ggufmm::Device& device_of(const ggufmm_device* d) {
  if (!d) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null device");
  return d->device;
}

ggufmm_dense_cache_stats to_c(const ggufmm::DenseCacheStats& s) {
  return {s.hits, s.misses, s.evictions, s.bytes_held, s.peak_bytes, s.entries};
}

const ggufmm::ResidentWeight& resident_of(const ggufmm_resident* w) {
  if (!w) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null resident weight");
  return w->weight;
}

// ggufmm_device_name's strings, per thread as the error message is.
thread_local std::vector<std::string> device_names;

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
    *out = to_c(ggufmm::dense_cache_stats());
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

int ggufmm_device_count(void) {
  device_names.clear();
  try {
    for (const ggufmm::DeviceInfo& d : ggufmm::devices()) device_names.push_back(d.name);
  } catch (...) {
    device_names = {"cpu"};
  }
  return static_cast<int>(device_names.size());
}

const char* ggufmm_device_name(int i) {
  return i >= 0 && static_cast<size_t>(i) < device_names.size() ? device_names[static_cast<size_t>(i)].c_str()
                                                                : nullptr;
}

ggufmm_status ggufmm_device_open(const char* name, ggufmm_device** out) {
  return guarded([&] {
    if (!name || !out) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null name or result pointer");
    *out = new ggufmm_device{ggufmm::Device::open(name)};
  });
}

ggufmm_status ggufmm_device_from_opencl_queue(void* queue, ggufmm_device** out) {
  return guarded([&] {
    if (!out) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null result pointer");
    *out = new ggufmm_device{ggufmm::Device::from_opencl_queue(queue)};
  });
}

ggufmm_status ggufmm_device_from_cuda_stream(void* stream, ggufmm_device** out) {
  return guarded([&] {
    if (!out) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null result pointer");
    *out = new ggufmm_device{ggufmm::Device::from_cuda_stream(stream)};
  });
}

void ggufmm_device_close(ggufmm_device* device) { delete device; }

ggufmm_status ggufmm_device_get_dense_cache_stats(const ggufmm_device* device, ggufmm_dense_cache_stats* out) {
  return guarded([&] {
    if (!out) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null result pointer");
    *out = to_c(device_of(device).dense_cache_stats());
  });
}

ggufmm_status ggufmm_device_set_dense_cache_budget(const ggufmm_device* device, size_t bytes) {
  return guarded([&] { device_of(device).set_dense_cache_budget(bytes); });
}

ggufmm_status ggufmm_device_clear_dense_cache(const ggufmm_device* device) {
  return guarded([&] { device_of(device).clear_dense_cache(); });
}

ggufmm_status ggufmm_upload(const ggufmm_device* device, const ggufmm_weight* w, ggufmm_resident** out) {
  return guarded([&] {
    if (!device || !out) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null device or result pointer");
    *out = new ggufmm_resident{ggufmm::ResidentWeight(device->device, to_cpp(w))};
  });
}

void ggufmm_resident_release(ggufmm_resident* resident) { delete resident; }

ggufmm_status ggufmm_resident_matmul(const ggufmm_resident* w, const float* x, int64_t rows, float* y,
                                     const float* residual, const ggufmm_options* options) {
  return guarded([&] { resident_of(w).matmul(x, rows, y, residual, to_cpp(options)); });
}

ggufmm_status ggufmm_resident_mul_mat_id(const ggufmm_resident* w, const float* act, int64_t tokens,
                                         int64_t act_slots, const int32_t* ids, int64_t slots, float* y,
                                         const float* residual, const ggufmm_options* options) {
  return guarded([&] { resident_of(w).mul_mat_id(act, tokens, act_slots, ids, slots, y, residual, to_cpp(options)); });
}

ggufmm_status ggufmm_resident_dequantize(const ggufmm_resident* w, float* out) {
  return guarded([&] {
    if (!out) throw ggufmm::Error(ggufmm::Error::Kind::BadUsage, "null output");
    const std::vector<float> values = resident_of(w).dequantize();
    std::copy(values.begin(), values.end(), out);
  });
}

ggufmm_status ggufmm_resident_enqueue_matmul(const ggufmm_resident* w, const void* x, int64_t rows, void* y,
                                             const void* residual, const ggufmm_options* options) {
  return guarded([&] { resident_of(w).enqueue_matmul(x, rows, y, residual, to_cpp(options)); });
}

ggufmm_status ggufmm_resident_enqueue_mul_mat_id(const ggufmm_resident* w, const void* act, int64_t tokens,
                                                 int64_t act_slots, const void* ids, int64_t slots, void* y,
                                                 const void* residual, const ggufmm_options* options) {
  return guarded(
      [&] { resident_of(w).enqueue_mul_mat_id(act, tokens, act_slots, ids, slots, y, residual, to_cpp(options)); });
}

}  // extern "C"
