// Writes one golden file with ggml: its quantizer, dequantization and CPU products, through ggml's public API, and
// its GGUF writer.
#include <cmath>
#include <cstring>
#include <memory>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string_view>

#include "ggml-cpu.h"
#include "ggml.h"
#include "gguf.h"
#include "golden.hpp"
#include "ggufmm/types.hpp"

namespace golden {
namespace {

constexpr const char* kDenseNote =
    "weight = ggml quantization of source (reference quantizer; unit importance for types that need one); "
    "dequant = ggml dequantization of weight; ggml_out.N = ggml CPU mul_mat of weight with act.N (activations "
    "quantized by ggml); exact_out.N = dequant x act.N in double";
constexpr const char* kMoeNote =
    "weight[E,N,K] experts; act[ntok, ne1, K] with ne1 = 1 (one input row shared by a token's experts) or top_k; "
    "ids[ntok, top_k] expert of each slot; ggml_out/exact_out [ntok, top_k, N] = act row of the slot times its "
    "expert's weight";

// The mixture-of-experts files: a few formats of each family.
constexpr std::string_view kMoeTypes[] = {"q4_0", "q8_0", "q4_K", "q5_K", "q6_K", "iq2_xs", "iq3_xxs"};

ggml_type ggml_type_named(const std::string& name) {
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const ggml_type_traits* traits = ggml_get_type_traits(static_cast<ggml_type>(t));
    if (traits->type_name != nullptr && traits->blck_size > 0 && name == traits->type_name) {
      return static_cast<ggml_type>(t);
    }
  }
  throw std::runtime_error("ggml has no type named " + name);
}

// The inputs' generator: the standard's mt19937_64 (whose sequence the standard fixes), turned into uniform and
// normal values here rather than by std distributions, whose output varies between standard libraries.
class Random {
 public:
  Random(uint32_t seed, ggml_type type) : engine_((uint64_t{seed} << 32) | static_cast<uint32_t>(type)) {}

  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1p-53; }

  double normal() {  // Box-Muller, both values of each pair used
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));
    const double angle = 2.0 * std::numbers::pi * uniform();
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }

  // Weights before quantization: each row with its own scale, and rare outliers.
  std::vector<float> weights(int64_t rows, int64_t k) {
    std::vector<float> out(static_cast<size_t>(rows * k));
    for (int64_t r = 0; r < rows; ++r) {
      const double scale = 0.01 + 0.02 * uniform();
      for (int64_t i = 0; i < k; ++i) {
        const double outlier = uniform() < 0.002 ? 10.0 : 1.0;
        out[static_cast<size_t>(r * k + i)] = static_cast<float>(scale * outlier * normal());
      }
    }
    return out;
  }

  // Activations: normal, 1% of the values 8 times larger.
  std::vector<float> activations(int64_t count) {
    std::vector<float> out(static_cast<size_t>(count));
    for (float& v : out) v = static_cast<float>((uniform() < 0.01 ? 8.0 : 1.0) * normal());
    return out;
  }

  // Skewed routing: each token's experts drawn without replacement, expert e with weight 1 / (e + 1), the last
  // expert never (so that one gets no rows).
  std::vector<int32_t> expert_ids() {
    std::vector<int32_t> out;
    for (int64_t t = 0; t < kTokens; ++t) {
      std::vector<double> weight(kExperts);
      for (int64_t e = 0; e + 1 < kExperts; ++e) weight[static_cast<size_t>(e)] = 1.0 / static_cast<double>(e + 1);
      for (int64_t s = 0; s < kTopK; ++s) {
        double total = 0;
        for (const double w : weight) total += w;
        double pick = uniform() * total;
        size_t chosen = 0;
        for (size_t e = 0; e < weight.size(); ++e) {  // the last one left where rounding runs past the end
          if (weight[e] == 0) continue;
          chosen = e;
          if (pick < weight[e]) break;
          pick -= weight[e];
        }
        out.push_back(static_cast<int32_t>(chosen));
        weight[chosen] = 0;
      }
    }
    return out;
  }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0;
  bool has_spare_ = false;
};

struct ContextFree {
  void operator()(ggml_context* ctx) const { ggml_free(ctx); }
};
struct GgufFree {
  void operator()(gguf_context* ctx) const { gguf_free(ctx); }
};
using Context = std::unique_ptr<ggml_context, ContextFree>;
using Gguf = std::unique_ptr<gguf_context, GgufFree>;

// An input file read with ggml's GGUF reader: its tensors' data live in `tensors`.
struct InputFile {
  std::string path;
  Gguf gguf;
  Context tensors;

  explicit InputFile(std::string file) : path(std::move(file)) {
    ggml_context* ctx = nullptr;
    gguf.reset(gguf_init_from_file(path.c_str(), {.no_alloc = false, .ctx = &ctx}));
    tensors.reset(ctx);
    if (!gguf) throw std::runtime_error(path + ": not a GGUF file ggml can read");
  }

  const ggml_tensor& tensor(const std::string& name, ggml_type type, int64_t elements) const {
    const ggml_tensor* t = ggml_get_tensor(tensors.get(), name.c_str());
    if (t == nullptr) throw std::runtime_error(path + ": no tensor " + name);
    if (t->type != type || ggml_nelements(t) != elements) {
      throw std::runtime_error(path + ": tensor " + name + " is " + ggml_type_name(t->type) + " with " +
                               std::to_string(ggml_nelements(t)) + " values, expected " + ggml_type_name(type) +
                               " with " + std::to_string(elements));
    }
    return *t;
  }

  template <class T>
  std::vector<T> values(const std::string& name, ggml_type type, int64_t elements) const {
    const ggml_tensor& t = tensor(name, type, elements);
    const auto* data = static_cast<const T*>(t.data);
    return std::vector<T>(data, data + elements);
  }

  uint32_t seed() const {
    const int64_t key = gguf_find_key(gguf.get(), "golden.seed");
    if (key < 0 || gguf_get_kv_type(gguf.get(), key) != GGUF_TYPE_UINT32) {
      throw std::runtime_error(path + ": no u32 key golden.seed");
    }
    return gguf_get_val_u32(gguf.get(), key);
  }
};

// The file being written: its tensors in one ggml context (which the CPU products also compute in), added to the
// GGUF context in the order they are made.
class Output {
 public:
  Output(const FileSpec& spec, uint32_t seed) : gguf_(gguf_init_empty()) {
    ctx_.reset(ggml_init({.mem_size = size_t{64} << 20, .mem_buffer = nullptr, .no_alloc = false}));
    gguf_set_val_str(gguf_.get(), "general.architecture", "ggufmm-golden");
    gguf_set_val_str(gguf_.get(), "golden.kind", spec.moe ? "moe" : "dense");
    gguf_set_val_str(gguf_.get(), "golden.type", spec.type.c_str());
    gguf_set_val_u32(gguf_.get(), "golden.seed", seed);
    gguf_set_val_str(gguf_.get(), "golden.note", spec.moe ? kMoeNote : kDenseNote);
  }

  ggml_context* ctx() const { return ctx_.get(); }

  ggml_tensor* tensor(ggml_type type, std::vector<int64_t> shape) const {
    return ggml_new_tensor(ctx_.get(), type, static_cast<int>(shape.size()), shape.data());
  }

  template <class T>
  ggml_tensor* tensor(ggml_type type, std::vector<int64_t> shape, const std::vector<T>& values) const {
    ggml_tensor* t = tensor(type, std::move(shape));
    std::memcpy(t->data, values.data(), ggml_nbytes(t));
    return t;
  }

  // ggml's CPU backend computes `t` (a product) in place.
  void compute(ggml_tensor* t) const {
    ggml_cgraph* graph = ggml_new_graph(ctx_.get());
    ggml_build_forward_expand(graph, t);
    if (ggml_graph_compute_with_ctx(ctx_.get(), graph, 1) != GGML_STATUS_SUCCESS) {
      throw std::runtime_error(std::string("ggml could not compute ") + ggml_op_desc(t));
    }
  }

  void add(const std::string& name, ggml_tensor* t) const {
    ggml_set_name(t, name.c_str());
    gguf_add_tensor(gguf_.get(), t);
  }

  void write(const std::string& path) const {
    if (!gguf_write_to_file(gguf_.get(), path.c_str(), false)) throw std::runtime_error(path + ": cannot write");
  }

 private:
  Gguf gguf_;
  Context ctx_;
};

// ggml's quantization of `source`, rows of `k` values; unit importance for the types that cannot go without.
void quantize(ggml_type type, const std::vector<float>& source, int64_t k, ggml_tensor* weight) {
  const std::vector<float> unit(static_cast<size_t>(k), 1.0f);
  const float* importance = ggml_quantize_requires_imatrix(type) ? unit.data() : nullptr;
  ggml_quantize_chunk(type, source.data(), weight->data, 0, ggml_nrows(weight), k, importance);
}

// ggml's dequantization of `weight`, as an f32 tensor of its shape.
ggml_tensor* dequantize(const Output& out, const ggml_tensor* weight) {
  ggml_tensor* dequant = out.tensor(GGML_TYPE_F32, {weight->ne[0], weight->ne[1], weight->ne[2]});
  if (weight->type == GGML_TYPE_F32) {
    std::memcpy(dequant->data, weight->data, ggml_nbytes(weight));
  } else {
    ggml_get_type_traits(weight->type)->to_float(weight->data, static_cast<float*>(dequant->data),
                                                 ggml_nelements(weight));
  }
  return dequant;
}

// The exact product of one activation row with one weight row, summed in double.
float exact_dot(const float* act, const float* weight, int64_t k) {
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += static_cast<double>(act[i]) * static_cast<double>(weight[i]);
  return static_cast<float>(sum);
}

void write_dense(const FileSpec& spec, ggml_type type, const std::string& path, const InputFile* inputs,
                 uint32_t seed) {
  Random random(seed, type);
  const std::vector<float> source = inputs ? inputs->values<float>("source", GGML_TYPE_F32, kDenseK * kDenseN)
                                           : random.weights(kDenseN, kDenseK);
  const Output out(spec, seed);
  out.add("source", out.tensor(GGML_TYPE_F32, {kDenseK, kDenseN}, source));
  ggml_tensor* weight = out.tensor(type, {kDenseK, kDenseN});
  quantize(type, source, kDenseK, weight);
  out.add("weight", weight);
  ggml_tensor* dequant = dequantize(out, weight);
  out.add("dequant", dequant);
  for (const int64_t rows : kDenseRows) {
    const std::string n = std::to_string(rows);
    const std::vector<float> act_values = inputs ? inputs->values<float>("act." + n, GGML_TYPE_F32, kDenseK * rows)
                                                 : random.activations(kDenseK * rows);
    ggml_tensor* act = out.tensor(GGML_TYPE_F32, {kDenseK, rows}, act_values);
    out.add("act." + n, act);
    // One activation row at a time: ggml's batched product equals its rows' (each output one dot product of the
    // row quantized on its own), except where its build routes batches to llamafile's sgemm (GGML_LLAMAFILE, on in
    // llama.cpp's build and off in ggml's own), which rounds otherwise; so the files do not depend on that choice.
    ggml_tensor* product = out.tensor(GGML_TYPE_F32, {kDenseN, rows});
    for (int64_t r = 0; r < rows; ++r) {
      ggml_tensor* row = ggml_mul_mat(out.ctx(), weight, ggml_view_2d(out.ctx(), act, kDenseK, 1, act->nb[1],
                                                                       static_cast<size_t>(r) * act->nb[1]));
      out.compute(row);
      std::memcpy(static_cast<char*>(product->data) + r * product->nb[1], row->data, ggml_nbytes(row));
    }
    out.add("ggml_out." + n, product);
    ggml_tensor* exact = out.tensor(GGML_TYPE_F32, {kDenseN, rows});
    auto* e = static_cast<float*>(exact->data);
    const auto* w = static_cast<const float*>(dequant->data);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < kDenseN; ++o) {
        e[r * kDenseN + o] = exact_dot(&act_values[r * kDenseK], w + o * kDenseK, kDenseK);
      }
    }
    out.add("exact_out." + n, exact);
  }
  out.write(path);
}

void write_moe(const FileSpec& spec, ggml_type type, const std::string& path, const InputFile* inputs,
               uint32_t seed) {
  const int64_t act_rows = spec.shared ? 1 : kTopK;
  const Output out(spec, seed);
  ggml_tensor* weight = out.tensor(type, {kMoeK, kMoeN, kExperts});
  std::vector<float> act_values;
  std::vector<int32_t> ids;
  if (inputs) {
    const ggml_tensor& stored = inputs->tensor("weight", type, ggml_nelements(weight));
    std::memcpy(weight->data, stored.data, ggml_nbytes(weight));
    act_values = inputs->values<float>("act", GGML_TYPE_F32, kMoeK * act_rows * kTokens);
    ids = inputs->values<int32_t>("ids", GGML_TYPE_I32, kTopK * kTokens);
  } else {
    Random random(seed, type);
    quantize(type, random.weights(kExperts * kMoeN, kMoeK), kMoeK, weight);
    act_values = random.activations(kMoeK * act_rows * kTokens);
    ids = random.expert_ids();
  }
  out.add("weight", weight);
  ggml_tensor* dequant = dequantize(out, weight);
  out.add("dequant", dequant);
  ggml_tensor* act = out.tensor(GGML_TYPE_F32, {kMoeK, act_rows, kTokens}, act_values);
  out.add("act", act);
  ggml_tensor* ids_tensor = out.tensor(GGML_TYPE_I32, {kTopK, kTokens}, ids);
  out.add("ids", ids_tensor);
  ggml_tensor* product = ggml_mul_mat_id(out.ctx(), weight, act, ids_tensor);
  out.compute(product);
  out.add("ggml_out", product);
  ggml_tensor* exact = out.tensor(GGML_TYPE_F32, {kMoeN, kTopK, kTokens});
  auto* e = static_cast<float*>(exact->data);
  const auto* w = static_cast<const float*>(dequant->data);
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t s = 0; s < kTopK; ++s) {
      const float* row = &act_values[(t * act_rows + (spec.shared ? 0 : s)) * kMoeK];
      const float* expert = w + ids[t * kTopK + s] * kMoeN * kMoeK;
      for (int64_t o = 0; o < kMoeN; ++o) e[(t * kTopK + s) * kMoeN + o] = exact_dot(row, expert + o * kMoeK, kMoeK);
    }
  }
  out.add("exact_out", exact);
  out.write(path);
}

}  // namespace

std::string FileSpec::stem() const { return moe ? "moe-" + type + (shared ? "-shared" : "-perslot") : type; }

std::vector<FileSpec> all_files() {
  std::vector<FileSpec> files;
#define GOLDEN_DENSE_FILE(TYPE, id, name) files.push_back({.type = #name});
  GGUFMM_WEIGHT_TYPES(GOLDEN_DENSE_FILE)
#undef GOLDEN_DENSE_FILE
  for (const std::string_view type : kMoeTypes) {
    for (const bool shared : {true, false}) files.push_back({.type = std::string(type), .moe = true, .shared = shared});
  }
  return files;
}

FileSpec file_named(const std::string& name) {
  for (const FileSpec& spec : all_files()) {
    if (spec.stem() == name) return spec;
  }
  throw std::runtime_error("no golden file is named " + name);
}

void write_file(const FileSpec& spec, const std::string& out_dir, const std::string& inputs_dir, uint32_t seed) {
  const ggml_type type = ggml_type_named(spec.type);
  const std::string name = spec.stem() + ".gguf";
  std::unique_ptr<InputFile> inputs;
  if (!inputs_dir.empty()) {
    inputs = std::make_unique<InputFile>(inputs_dir + "/" + name);
    seed = inputs->seed();
  }
  if (spec.moe) {
    write_moe(spec, type, out_dir + "/" + name, inputs.get(), seed);
  } else {
    write_dense(spec, type, out_dir + "/" + name, inputs.get(), seed);
  }
}

}  // namespace golden
