// ggufmm: activations times GGUF-quantized weights, computed directly on the blocks.
// The C++ API. Errors are reported as ggufmm::Error; the C API (ggufmm.h) turns them into status codes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ggufmm {

// Tensor types, numbered as ggml numbers them (the values stored in GGUF tensor infos).
enum class Type : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

// Facts about a type, from the format registry.
struct TypeInfo {
  Type type;
  std::string_view name;   // ggml's name: "q4_K", "iq2_xs", "f32", ...
  int32_t block_size;      // values per block
  int32_t block_bytes;     // bytes per block
  bool is_weight;          // can be dequantized and multiplied (false for the integer types)
  bool can_quantize;       // ggufmm can produce it from f32
};

// nullptr for a type id the registry does not know.
const TypeInfo* type_info(Type type);
const TypeInfo* type_info(std::string_view name);  // case-insensitive
std::vector<TypeInfo> all_types();

class Error : public std::runtime_error {
 public:
  enum class Kind {
    BadInput,  // a file, tensor or value that cannot be used (exit status 1)
    BadUsage,  // a call or command line that makes no sense (exit status 2)
  };
  Error(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// A read-only view of weights stored in GGUF blocks: `experts` matrices of m rows of k values each,
// rows contiguous, as ggml lays out a tensor of shape [k, m, experts].
struct Weight {
  Type type = Type::F32;
  int64_t k = 0;
  int64_t m = 0;
  int64_t experts = 1;
  const void* data = nullptr;
  std::string name;  // for error messages

  size_t row_bytes() const;
  size_t expert_bytes() const { return row_bytes() * static_cast<size_t>(m); }
  size_t total_bytes() const { return expert_bytes() * static_cast<size_t>(experts); }
};

// Kernel paths. `Auto` picks the best one for the call: gemv for 1 to 7 rows and more, tiled from the row count
// where it overtakes gemv (the path profile's, see below; without one, what calibrate measured on the development
// machines: with AVX-512 8 rows, 4 or 5 for the IQ2 and IQ3 codebook formats; 24 to 384 by format below it);
// dense from the prefill-dequant minimum (or the profile's, if larger) when that is on (set_prefill_dequant) and
// the weight fits the dense cache's budget.
// The environment variable GGUFMM_PATH (ref|gemv|tiled|dense), read once, forces a path where Options say Auto.
// `Dense` dequantizes a weight once into a dense copy (bf16, or f32 where this CPU multiplies that clearly faster)
// that later calls reuse, and runs a oneDNN GEMM on it.
enum class Path { Auto, Ref, Gemv, Tiled, Dense };
std::string_view path_name(Path path);
std::optional<Path> path_from_name(std::string_view name);
std::vector<Path> available_paths();  // the concrete paths (not Auto)

// The path profile: crossover row counts between the paths, measured on this machine by `ggufmm calibrate`, per
// format and shape class. Auto reads it at its first use from $GGUFMM_PROFILE (empty or "none": no profile), else
// from default_profile_path() when that file exists; a profile measured at another kernel level is not used, and
// formats a profile lacks keep the built-in crossovers.
struct PathCrossover {
  Type type = Type::F32;
  bool large = false;       // the shape class: more than kLargeWeightValues values (m * k)
  int64_t tiled_from = 8;   // the row count from which tiled beats gemv (at least 1)
  int64_t dense_from = 0;   // the row count from which dense beats both (0: not measured)
};
inline constexpr int64_t kLargeWeightValues = int64_t{1} << 23;
struct PathProfile {
  std::string isa;  // the kernel level it was measured at
  int threads = 0;
  std::vector<PathCrossover> crossovers;
};
// $XDG_CONFIG_HOME/ggufmm/profile.json, else ~/.config/ggufmm/profile.json.
std::string default_profile_path();
// Reads and validates a profile file; throws Error(BadInput) naming the file and what is wrong.
PathProfile read_profile(const std::string& path);
// Writes one whole (write_file_atomic).
void write_profile(const std::string& path, const PathProfile& profile);
// Replaces the profile Auto uses (nullopt: the fixed thresholds).
void set_profile(std::optional<PathProfile> profile);
// The path Auto takes for this weight and row count.
Path auto_path(const Weight& w, int64_t rows);

struct Options {
  Path path = Path::Auto;
  int threads = 0;  // 0: all cores
};

// Y[rows, m] = X[rows, k] * W^T (+ R[rows, m] when residual is not null). All row-major f32; residual may be y
// itself. Every path classifies outputs as the exact product does: NaN where it is NaN, infinite (of the same
// sign) where it is infinite, finite where it is finite, whatever NaN or infinite scales or activations go in.
void matmul(const Weight& w, const float* x, int64_t rows, float* y, const float* residual = nullptr,
            const Options& options = {});

// ggml's mul_mat_id. w holds `experts` matrices. act is [tokens, act_slots, k] with act_slots either 1
// (one row shared by all of a token's slots) or `slots`; ids is [tokens, slots]; y and residual are
// [tokens, slots, m]. An id outside [0, experts) is an error.
void mul_mat_id(const Weight& w, const float* act, int64_t tokens, int64_t act_slots, const int32_t* ids,
                int64_t slots, float* y, const float* residual = nullptr, const Options& options = {});

// All values of w, in order: experts * m * k floats.
std::vector<float> dequantize(const Weight& w);

// Quantizes rows of k values each to `type`. Throws BadUsage for a type that cannot be produced from f32
// or a k that is not a multiple of its block size.
std::vector<uint8_t> quantize(Type type, const float* src, int64_t rows, int64_t k);

// The exact reference: dequantized weights times X, summed in double.
std::vector<double> exact_matmul(const Weight& w, const float* x, int64_t rows);

// Sum of squared error over sum of squared reference.
double nmse(const float* got, const double* reference, size_t n);
double nmse(const float* got, const float* reference, size_t n);

// The dense path's cache of dequantized copies, keyed by the weight's data pointer, type and shape: a caller that
// frees weights should clear it.
struct DenseCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;  // copies made, kept or (larger than the budget) for one call only
  uint64_t evictions = 0;
  size_t bytes_held = 0;
  size_t peak_bytes = 0;
  size_t entries = 0;
};
DenseCacheStats dense_cache_stats();
// The most bytes the cache keeps; it drops the least recently used copies down to it. Starts at the environment
// variable GGUFMM_DENSE_CACHE_BYTES (a count, optionally with a K, M or G suffix), else a quarter of physical memory.
void set_dense_cache_budget(size_t bytes);
// Drops every copy and zeroes the statistics.
void clear_dense_cache();
// The rows from which Auto picks the dense path; 0 turns it off. Starts at the environment variable
// GGUFMM_PREFILL_DEQUANT (unset, empty or 0: off; 1: 32; else the rows); off by default, as the copies cost memory.
void set_prefill_dequant(int64_t min_rows);

// Writes `size` bytes to `path` through a temporary file beside it and a rename, so the file is written whole
// or not at all. Throws Error(BadInput) naming the path on failure.
void write_file_atomic(const std::string& path, const void* bytes, size_t size);

}  // namespace ggufmm
