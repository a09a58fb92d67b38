// ggufmm: activations times GGUF-quantized weights, computed directly on the blocks.
// The C++ API: its entry points (the types they take are in types.hpp). Errors are reported as ggufmm::Error; the
// C API (ggufmm.h) turns them into status codes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggufmm/export.h"
#include "ggufmm/types.hpp"

namespace ggufmm {

// Kernel paths. `Auto` picks the best one for the call: gemv for 1 to 7 rows and more, tiled from the row count
// where it overtakes gemv (the path profile's, see below; without one, a built-in table that calibrate measured:
// with AVX-512 8 rows, 4 or 5 for the IQ2 and IQ3 codebook formats; 24 to 384 by format below it);
// dense from the prefill-dequant minimum (or the profile's, if larger) when that is on (set_prefill_dequant) and
// the weight fits the dense cache's budget.
// The environment variable GGUFMM_PATH (ref|gemv|tiled|dense), read once, forces a path where Options say Auto.
GGUFMM_API std::string_view path_name(Path path);
GGUFMM_API std::optional<Path> path_from_name(std::string_view name);
GGUFMM_API std::vector<Path> available_paths();  // the concrete paths (not Auto)

// The path profile: crossover row counts between the paths, measured on this machine by `ggufmm calibrate`, per
// format and shape class. Auto reads it at its first use from $GGUFMM_PROFILE (empty or "none": no profile), else
// from default_profile_path() when that file exists; a profile measured at another kernel level is not used, and
// formats a profile lacks keep the built-in crossovers. Devices' crossovers (calibrate --device) sit beside the
// CPU's, each under its device's description, and steer Auto on that device only (ggufmm/device.hpp).
//
// $XDG_CONFIG_HOME/ggufmm/profile.json, else ~/.config/ggufmm/profile.json.
GGUFMM_API std::string default_profile_path();
// Reads and validates a profile file; throws Error(BadInput) naming the file and what is wrong.
GGUFMM_API PathProfile read_profile(const std::string& path);
// Writes one whole (write_file_atomic).
GGUFMM_API void write_profile(const std::string& path, const PathProfile& profile);
// Replaces the profile Auto uses (nullopt: the fixed thresholds).
GGUFMM_API void set_profile(std::optional<PathProfile> profile);
// The path Auto takes for this weight and row count.
GGUFMM_API Path auto_path(const Weight& w, int64_t rows);

// Y[rows, m] = X[rows, k] * W^T (+ R[rows, m] when residual is not null). All row-major f32; residual may be y
// itself. Every path classifies outputs as the exact product does: NaN where it is NaN, infinite (of the same
// sign) where it is infinite, finite where it is finite, whatever NaN or infinite scales or activations go in.
GGUFMM_API void matmul(const Weight& w, const float* x, int64_t rows, float* y, const float* residual = nullptr,
            const Options& options = {});

// ggml's mul_mat_id. w holds `experts` matrices. act is [tokens, act_slots, k] with act_slots either 1
// (one row shared by all of a token's slots) or `slots`; ids is [tokens, slots]; y and residual are
// [tokens, slots, m]. An id outside [0, experts) is an error.
GGUFMM_API void mul_mat_id(const Weight& w, const float* act, int64_t tokens, int64_t act_slots, const int32_t* ids,
                int64_t slots, float* y, const float* residual = nullptr, const Options& options = {});

// All values of w, in order: experts * m * k floats.
GGUFMM_API std::vector<float> dequantize(const Weight& w);

// Quantizes rows of k values each to `type`. Throws BadUsage for a type that cannot be produced from f32
// or a k that is not a multiple of its block size.
GGUFMM_API std::vector<uint8_t> quantize(Type type, const float* src, int64_t rows, int64_t k);

// The exact reference: dequantized weights times X, summed in double.
GGUFMM_API std::vector<double> exact_matmul(const Weight& w, const float* x, int64_t rows);

// Sum of squared error over sum of squared reference.
GGUFMM_API double nmse(const float* got, const double* reference, size_t n);
GGUFMM_API double nmse(const float* got, const float* reference, size_t n);

// The dense path's cache of dequantized copies, keyed by the weight's data pointer, type and shape: a caller that
// frees weights should clear it.
GGUFMM_API DenseCacheStats dense_cache_stats();
// The most bytes the cache keeps; it drops the least recently used copies down to it. Starts at the environment
// variable GGUFMM_DENSE_CACHE_BYTES (a count, optionally with a K, M or G suffix), else a quarter of physical memory.
GGUFMM_API void set_dense_cache_budget(size_t bytes);
// Drops every copy and zeroes the statistics.
GGUFMM_API void clear_dense_cache();
// Drops the copies of the weights whose data starts in [data, data + bytes): call it before freeing or unmapping
// weights, so that no later weight placed there is ever mistaken for them.
GGUFMM_API void release_dense_copies(const void* data, size_t bytes);
// The rows from which Auto picks the dense path; 0 turns it off. Starts at the environment variable
// GGUFMM_PREFILL_DEQUANT (unset, empty or 0: off; 1: 32; else the rows); off by default, as the copies cost memory.
GGUFMM_API void set_prefill_dequant(int64_t min_rows);

// Writes `size` bytes to `path`. A regular file or a new path is written through a temporary file beside it and
// a rename, so it is written whole or not at all; a symbolic link is followed and what it names written so; a
// device, FIFO or Unix socket is written directly (it cannot be replaced); "-" is standard output; a directory is
// an error. Throws Error(BadInput) naming the path on failure.
GGUFMM_API void write_file_atomic(const std::string& path, const void* bytes, size_t size);

}  // namespace ggufmm
