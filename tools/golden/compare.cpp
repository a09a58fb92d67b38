// Compares two sets of golden files, read with ggml's GGUF reader: per file and tensor, identical or what differs,
// and why (which step made the tensor, or which of its inputs differs already).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>

#include "ggml.h"
#include "gguf.h"
#include "golden.hpp"

namespace golden {
namespace {

namespace fs = std::filesystem;

struct File {
  gguf_context* gguf = nullptr;
  ggml_context* tensors = nullptr;

  explicit File(const fs::path& path) {
    gguf = gguf_init_from_file(path.c_str(), {.no_alloc = false, .ctx = &tensors});
    if (gguf == nullptr) throw std::runtime_error(path.string() + ": not a GGUF file ggml can read");
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() {
    gguf_free(gguf);
    ggml_free(tensors);
  }

  const ggml_tensor* tensor(const std::string& name) const { return ggml_get_tensor(tensors, name.c_str()); }
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

size_t element_bytes(gguf_type type) {
  switch (type) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    default: return 8;
  }
}

// A metadata value as text, enough to tell two apart.
std::string value_text(const gguf_context* gguf, int64_t key) {
  const gguf_type type = gguf_get_kv_type(gguf, key);
  std::string text = std::string(gguf_type_name(type)) + " ";
  if (type == GGUF_TYPE_STRING) return text + "\"" + gguf_get_val_str(gguf, key) + "\"";
  if (type != GGUF_TYPE_ARRAY) {
    const auto* data = static_cast<const unsigned char*>(gguf_get_val_data(gguf, key));
    uint64_t bits = 0;
    std::memcpy(&bits, data, element_bytes(type));
    return text + std::to_string(bits);
  }
  const gguf_type item = gguf_get_arr_type(gguf, key);
  const size_t n = gguf_get_arr_n(gguf, key);
  text += std::string(gguf_type_name(item)) + "[" + std::to_string(n) + "]";
  for (size_t i = 0; i < n; ++i) {
    if (item == GGUF_TYPE_STRING) {
      text += std::string(" \"") + gguf_get_arr_str(gguf, key, i) + "\"";
    } else {
      const auto* data = static_cast<const unsigned char*>(gguf_get_arr_data(gguf, key)) + i * element_bytes(item);
      text += " ";
      for (size_t b = 0; b < element_bytes(item); ++b) text += std::to_string(static_cast<unsigned>(data[b])) + ".";
    }
  }
  return text;
}

std::string tensor_info(const ggml_tensor* t) {
  std::string text = std::string(ggml_type_name(t->type)) + " [";
  for (int d = 0; d < ggml_n_dims(t); ++d) text += (d ? ", " : "") + std::to_string(t->ne[d]);
  return text + "]";
}

// How far apart two f32 tensors are, or which rows of another type differ.
std::string difference(const ggml_tensor* want, const ggml_tensor* got) {
  if (want->type != GGML_TYPE_F32) {
    const size_t row = ggml_row_size(want->type, want->ne[0]);
    int64_t rows = 0;
    for (int64_t r = 0; r < ggml_nrows(want); ++r) {
      rows += std::memcmp(static_cast<const char*>(want->data) + r * row, static_cast<const char*>(got->data) + r * row,
                          row) != 0;
    }
    return std::to_string(rows) + " of " + std::to_string(ggml_nrows(want)) + " rows";
  }
  const auto* a = static_cast<const float*>(want->data);
  const auto* b = static_cast<const float*>(got->data);
  int64_t values = 0;
  int64_t max_ulp = 0;
  double max_diff = 0, max_value = 0;
  for (int64_t i = 0; i < ggml_nelements(want); ++i) {
    max_value = std::max(max_value, std::fabs(static_cast<double>(a[i])));
    if (std::memcmp(&a[i], &b[i], sizeof(float)) == 0) continue;
    ++values;
    int32_t ia, ib;
    std::memcpy(&ia, &a[i], 4);
    std::memcpy(&ib, &b[i], 4);
    // Sign-magnitude to a monotonic integer line, where the distance counts the floats between.
    const int64_t la = ia < 0 ? int64_t{INT32_MIN} - ia : ia, lb = ib < 0 ? int64_t{INT32_MIN} - ib : ib;
    max_ulp = std::max(max_ulp, std::abs(la - lb));
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  }
  char text[160];
  std::snprintf(text, sizeof text, "%lld of %lld values, at most %lld ulp apart (%.3g of the largest value)",
                static_cast<long long>(values), static_cast<long long>(ggml_nelements(want)),
                static_cast<long long>(max_ulp), max_value > 0 ? max_diff / max_value : max_diff);
  return text;
}

// What made a tensor: the tensors it is computed from, and the step that computes it; none for the inputs.
struct Origin {
  std::vector<std::string> from;
  std::string step;
};

Origin origin(const std::string& name, const File& file) {
  const size_t dot = name.find('.');
  const std::string base = name.substr(0, dot), rows = dot == std::string::npos ? "" : name.substr(dot);
  const bool moe = file.tensor("ids") != nullptr;
  if (base == "weight" && file.tensor("source") != nullptr) {
    return {{"source"}, "ggml's quantizer (ggml_quantize_chunk) made other blocks of the same source"};
  }
  if (base == "dequant") return {{"weight"}, "ggml's dequantization (to_float) gave other values for the same blocks"};
  if (base == "ggml_out") {
    std::vector<std::string> from = {"weight", "act" + rows};
    if (moe) from.emplace_back("ids");
    return {from, "ggml's CPU product (activation quantization and dot products) rounded otherwise"};
  }
  if (base == "exact_out") {
    std::vector<std::string> from = {"dequant", "act" + rows};
    if (moe) from.emplace_back("ids");
    return {from, "the double-precision reference summed otherwise"};
  }
  return {{}, moe && base == "weight" ? "an input (the quantized experts; their source is not kept): the inputs' "
                                        "generator or seed differs"
                                      : "an input: the inputs' generator or seed differs"};
}

// Prints one file's differences; returns whether it is byte for byte identical.
bool compare_file(const fs::path& want_path, const fs::path& got_path) {
  const std::string name = want_path.filename().string();
  if (!fs::exists(got_path)) {
    std::printf("%s: missing from %s\n", name.c_str(), got_path.parent_path().c_str());
    return false;
  }
  if (read_bytes(want_path) == read_bytes(got_path)) {
    std::printf("%s: byte-identical\n", name.c_str());
    return true;
  }
  std::printf("%s: differs\n", name.c_str());
  const File want(want_path), got(got_path);
  bool any = false;
  for (int64_t k = 0; k < gguf_get_n_kv(want.gguf); ++k) {
    const char* key = gguf_get_key(want.gguf, k);
    const int64_t other = gguf_find_key(got.gguf, key);
    const std::string a = value_text(want.gguf, k), b = other < 0 ? "missing" : value_text(got.gguf, other);
    if (a != b || other != k) {
      std::printf("  key %s: %s, regenerated %s%s\n", key, a.c_str(), b.c_str(), other != k ? " (key order)" : "");
      any = true;
    }
  }
  std::set<std::string> differing;
  for (int64_t i = 0; i < gguf_get_n_tensors(want.gguf); ++i) {
    const std::string tensor = gguf_get_tensor_name(want.gguf, i);
    const ggml_tensor* a = want.tensor(tensor);
    const ggml_tensor* b = got.tensor(tensor);
    std::string why;
    if (b == nullptr) {
      why = "missing";
    } else if (tensor_info(a) != tensor_info(b)) {
      why = tensor_info(a) + ", regenerated " + tensor_info(b);
    } else if (gguf_find_tensor(got.gguf, tensor.c_str()) != i) {
      why = "in another place in the file";
    } else if (std::memcmp(a->data, b->data, ggml_nbytes(a)) != 0) {
      const Origin o = origin(tensor, want);
      std::string inputs;
      for (const std::string& from : o.from) {
        if (differing.contains(from)) inputs += (inputs.empty() ? "" : ", ") + from;
      }
      why = difference(a, b) + ": " + (inputs.empty() ? o.step : "follows from " + inputs + " differing");
    }
    if (why.empty()) {
      std::printf("  %s: identical\n", tensor.c_str());
    } else {
      std::printf("  %s: differs, %s\n", tensor.c_str(), why.c_str());
      differing.insert(tensor);
      any = true;
    }
  }
  if (!any) std::printf("  every key and tensor is identical: the header's layout (offsets, padding) differs\n");
  return false;
}

}  // namespace

bool compare_dirs(const std::string& want_dir, const std::string& got_dir) {
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(want_dir)) {
    if (entry.path().extension() == ".gguf") files.push_back(entry.path());
  }
  std::ranges::sort(files);
  int identical = 0;
  for (const fs::path& file : files) identical += compare_file(file, fs::path(got_dir) / file.filename());
  std::printf("%d of %zu files byte-identical\n", identical, files.size());
  return identical == static_cast<int>(files.size());
}

}  // namespace golden
