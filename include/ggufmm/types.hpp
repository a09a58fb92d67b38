// ggufmm's shared types: tensor types and their facts, weights, paths, errors. The entry points that take them
// are in ggufmm.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ggufmm/export.h"

// Every tensor type a GGUF file may hold, one line each: X(TYPE, id, name), with ggml's type id and name. The Type
// enum, the format registry (src/format/registry.cpp), every kernel level's table and the built-in path crossovers
// follow from these lists (or are checked against them when the library is compiled).
// Floats: multiplied in f32.
#define GGUFMM_FLOAT_TYPES(X) \
  X(F32, 0, f32)              \
  X(F16, 1, f16)              \
  X(BF16, 30, bf16)
// Quantized blocks, each with an exact int8 decoder, a gemv kernel per level and an int8 tiled path.
#define GGUFMM_QUANT_TYPES(X) \
  X(Q4_0, 2, q4_0)            \
  X(Q4_1, 3, q4_1)            \
  X(Q5_0, 6, q5_0)            \
  X(Q5_1, 7, q5_1)            \
  X(Q8_0, 8, q8_0)            \
  X(Q2_K, 10, q2_K)           \
  X(Q3_K, 11, q3_K)           \
  X(Q4_K, 12, q4_K)           \
  X(Q5_K, 13, q5_K)           \
  X(Q6_K, 14, q6_K)           \
  X(IQ2_XXS, 16, iq2_xxs)     \
  X(IQ2_XS, 17, iq2_xs)       \
  X(IQ2_S, 22, iq2_s)         \
  X(IQ3_XXS, 18, iq3_xxs)     \
  X(IQ3_S, 21, iq3_s)         \
  X(IQ1_S, 19, iq1_s)         \
  X(IQ1_M, 29, iq1_m)         \
  X(IQ4_NL, 20, iq4_nl)       \
  X(IQ4_XS, 23, iq4_xs)       \
  X(TQ1_0, 34, tq1_0)         \
  X(TQ2_0, 35, tq2_0)         \
  X(MXFP4, 39, mxfp4)
// Integer types: data, not weights.
#define GGUFMM_DATA_TYPES(X) \
  X(I8, 24, i8)              \
  X(I16, 25, i16)            \
  X(I32, 26, i32)            \
  X(I64, 27, i64)            \
  X(F64, 28, f64)
#define GGUFMM_WEIGHT_TYPES(X) GGUFMM_FLOAT_TYPES(X) GGUFMM_QUANT_TYPES(X)
#define GGUFMM_TYPES(X) GGUFMM_WEIGHT_TYPES(X) GGUFMM_DATA_TYPES(X)

namespace ggufmm {

// Tensor types, numbered as ggml numbers them (the values stored in GGUF tensor infos).
enum class Type : uint32_t {
#define GGUFMM_ENUM_ENTRY(TYPE, id, name) TYPE = id,
  GGUFMM_TYPES(GGUFMM_ENUM_ENTRY)
#undef GGUFMM_ENUM_ENTRY
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
GGUFMM_API const TypeInfo* type_info(Type type);
GGUFMM_API const TypeInfo* type_info(std::string_view name);  // case-insensitive
GGUFMM_API std::vector<TypeInfo> all_types();                 // in the order of GGUFMM_TYPES

class GGUFMM_API Error : public std::runtime_error {
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

  GGUFMM_API size_t row_bytes() const;
  size_t expert_bytes() const { return row_bytes() * static_cast<size_t>(m); }
  size_t total_bytes() const { return expert_bytes() * static_cast<size_t>(experts); }
};

// Kernel paths (see matmul in ggufmm.hpp for what Auto picks).
// `Dense` dequantizes a weight once into a dense copy (bf16, or f32 where this CPU multiplies that clearly faster)
// that later calls reuse, and runs a oneDNN GEMM on it.
enum class Path { Auto, Ref, Gemv, Tiled, Dense };

struct Options {
  Path path = Path::Auto;
  int threads = 0;  // 0: all cores
};

// The path profile: crossover row counts between the paths, measured on this machine by `ggufmm calibrate`, per
// format and shape class.
struct PathCrossover {
  Type type = Type::F32;
  bool large = false;       // the shape class: more than kLargeWeightValues values (m * k)
  int64_t tiled_from = 8;   // the row count from which tiled beats gemv (at least 1)
  int64_t dense_from = 0;   // the row count from which dense beats both (0: not measured)
};
inline constexpr int64_t kLargeWeightValues = int64_t{1} << 23;
// A device's crossovers (`ggufmm calibrate --device`), for the device whose DeviceInfo::description this is.
struct DeviceCrossovers {
  std::string device;
  std::vector<PathCrossover> crossovers;
};
struct PathProfile {
  std::string isa;  // the kernel level it was measured at
  int threads = 0;
  std::vector<PathCrossover> crossovers;
  std::vector<DeviceCrossovers> devices;
};

// The dense path's cache of dequantized copies (see ggufmm.hpp).
struct DenseCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;  // copies made, kept or (larger than the budget) for one call only
  uint64_t evictions = 0;
  size_t bytes_held = 0;
  size_t peak_bytes = 0;
  size_t entries = 0;
};

}  // namespace ggufmm
