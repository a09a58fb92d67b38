/* ggufmm: activations times GGUF-quantized weights, for engines written in C.
 * Every call returns a status; on failure ggufmm_last_error() says what went wrong (per thread).
 * No exception crosses this interface. */
#ifndef GGUFMM_H
#define GGUFMM_H

#include <stddef.h>
#include <stdint.h>

#include "ggufmm/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GGUFMM_OK = 0,
  GGUFMM_BAD_INPUT = 1, /* a file, tensor or value that cannot be used */
  GGUFMM_BAD_USAGE = 2, /* arguments that make no sense */
  GGUFMM_INTERNAL = 3   /* out of memory or a bug */
} ggufmm_status;

typedef enum {
  GGUFMM_PATH_AUTO = 0,
  GGUFMM_PATH_REF = 1,
  GGUFMM_PATH_GEMV = 2,
  GGUFMM_PATH_TILED = 3,
  GGUFMM_PATH_DENSE = 4
} ggufmm_path;

/* Weights in GGUF blocks: `experts` matrices of m rows of k values (a tensor [k, m, experts]). */
typedef struct {
  uint32_t type; /* ggml type id */
  int64_t k;
  int64_t m;
  int64_t experts;
  const void* data;
} ggufmm_weight;

typedef struct {
  ggufmm_path path;
  int threads; /* 0: all cores */
} ggufmm_options;

typedef struct ggufmm_file ggufmm_file;

GGUFMM_API const char* ggufmm_last_error(void);
/* ggml's name of a type ("q4_K"), or NULL for an unknown id. */
GGUFMM_API const char* ggufmm_type_name(uint32_t type);

GGUFMM_API ggufmm_status ggufmm_file_open(const char* path, ggufmm_file** out);
GGUFMM_API void ggufmm_file_close(ggufmm_file* file);
/* A tensor of the file as a weight; valid while the file is open. */
GGUFMM_API ggufmm_status ggufmm_file_weight(const ggufmm_file* file, const char* tensor, ggufmm_weight* out);

/* y[rows, m] = x[rows, k] * W^T (+ residual[rows, m] when not NULL). options may be NULL. */
GGUFMM_API ggufmm_status ggufmm_matmul(const ggufmm_weight* w, const float* x, int64_t rows, float* y,
                                       const float* residual, const ggufmm_options* options);

/* ggml's mul_mat_id: act [tokens, act_slots (1 or slots), k], ids [tokens, slots], y [tokens, slots, m]. */
GGUFMM_API ggufmm_status ggufmm_mul_mat_id(const ggufmm_weight* w, const float* act, int64_t tokens,
                                           int64_t act_slots, const int32_t* ids, int64_t slots, float* y,
                                           const float* residual, const ggufmm_options* options);

/* The dense path's cache of dequantized weights (see ggufmm.hpp). */
typedef struct {
  uint64_t hits;
  uint64_t misses;
  uint64_t evictions;
  uint64_t bytes_held;
  uint64_t peak_bytes;
  uint64_t entries;
} ggufmm_dense_cache_stats;

GGUFMM_API ggufmm_status ggufmm_get_dense_cache_stats(ggufmm_dense_cache_stats* out);
GGUFMM_API ggufmm_status ggufmm_set_dense_cache_budget(size_t bytes);
GGUFMM_API ggufmm_status ggufmm_clear_dense_cache(void);
/* Drops the copies of weights whose data starts in [data, data + bytes): call it before freeing those weights. */
GGUFMM_API ggufmm_status ggufmm_release_dense_copies(const void* data, size_t bytes);
/* The rows from which GGUFMM_PATH_AUTO picks the dense path; 0 turns it off. */
GGUFMM_API ggufmm_status ggufmm_set_prefill_dequant(int64_t min_rows);

/* Devices (ggufmm/device.hpp): "cpu", "cuda:N", "opencl:N". A weight uploaded once stays resident until released. */
typedef struct ggufmm_device ggufmm_device;
typedef struct ggufmm_resident ggufmm_resident;

/* The number of devices, and the name of device i (valid until the next call of ggufmm_device_count). */
GGUFMM_API int ggufmm_device_count(void);
GGUFMM_API const char* ggufmm_device_name(int i);
GGUFMM_API ggufmm_status ggufmm_device_open(const char* name, ggufmm_device** out);
/* An engine's OpenCL queue (a cl_command_queue): weights uploaded through it live in its context. */
GGUFMM_API ggufmm_status ggufmm_device_from_opencl_queue(void* queue, ggufmm_device** out);
/* An engine's CUDA stream (a CUstream; buffers are device pointers), where ggufmm was built with CUDA. */
GGUFMM_API ggufmm_status ggufmm_device_from_cuda_stream(void* stream, ggufmm_device** out);
GGUFMM_API void ggufmm_device_close(ggufmm_device* device);
/* The device's cache of dense copies (ggufmm/device.hpp; on the CPU, the process's cache above). */
GGUFMM_API ggufmm_status ggufmm_device_get_dense_cache_stats(const ggufmm_device* device,
                                                             ggufmm_dense_cache_stats* out);
GGUFMM_API ggufmm_status ggufmm_device_set_dense_cache_budget(const ggufmm_device* device, size_t bytes);
GGUFMM_API ggufmm_status ggufmm_device_clear_dense_cache(const ggufmm_device* device);

/* Uploads w (its blocks are copied: on a device other than the CPU, w's memory may go afterwards). */
GGUFMM_API ggufmm_status ggufmm_upload(const ggufmm_device* device, const ggufmm_weight* w, ggufmm_resident** out);
GGUFMM_API void ggufmm_resident_release(ggufmm_resident* resident);
/* ggufmm_matmul, ggufmm_mul_mat_id and dequantization on the resident weight's device, host memory in and out.
 * options may be NULL; a device other than the CPU refuses GGUFMM_PATH_REF. */
GGUFMM_API ggufmm_status ggufmm_resident_matmul(const ggufmm_resident* w, const float* x, int64_t rows, float* y,
                                                const float* residual, const ggufmm_options* options);
GGUFMM_API ggufmm_status ggufmm_resident_mul_mat_id(const ggufmm_resident* w, const float* act, int64_t tokens,
                                                    int64_t act_slots, const int32_t* ids, int64_t slots, float* y,
                                                    const float* residual, const ggufmm_options* options);
GGUFMM_API ggufmm_status ggufmm_resident_dequantize(const ggufmm_resident* w, float* out);
/* The same on device memory (cl_mem handles, CUDA device pointers), enqueued on the device's queue or stream
 * without waiting. */
GGUFMM_API ggufmm_status ggufmm_resident_enqueue_matmul(const ggufmm_resident* w, const void* x, int64_t rows, void* y,
                                                        const void* residual, const ggufmm_options* options);
GGUFMM_API ggufmm_status ggufmm_resident_enqueue_mul_mat_id(const ggufmm_resident* w, const void* act, int64_t tokens,
                                                            int64_t act_slots, const void* ids, int64_t slots,
                                                            void* y, const void* residual,
                                                            const ggufmm_options* options);

#ifdef __cplusplus
}
#endif

#endif /* GGUFMM_H */
