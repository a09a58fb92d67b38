/* What the host and the device program share, compiled on both sides: the kernels' sizes, which the host's
 * launches, limits and scratch follow (product.cpp checks what it computes from them), and the arguments of the
 * gemv, tiled and exact kernels. */
#ifndef GGUFMM_DEVICE_ARGS_H
#define GGUFMM_DEVICE_ARGS_H

#include "device/kernels/portable.h"

/* Work-items of every work-group but the tiles' and read_bandwidth's: a power of two and a multiple of a warp. */
#define GM_GROUP 64
/* gemv: the most output rows of a set, and its partial sums in local memory (floats), the most local memory a
 * kernel other than the tiles takes. */
#define GM_MAX_ROWS 7
#define GM_GEMV_LOCAL_BYTES (GM_MAX_ROWS * GM_GROUP * 4)

/* Tiles of GM_TILE_M weight rows by TN activation rows, TN a power of two from GM_TILE_LEAST to GM_TILE_MOST, in
 * GM_TILE_GROUP(TN) work-items; each warp holds GM_TILE_CB(TN) blocks of 8 activation rows. */
#define GM_TILE_M 64
#define GM_TILE_LEAST 16
#define GM_TILE_MOST 256
#define GM_TILE_GROUP(TN) ((TN) < GM_TILE_M ? GM_TILE_M : (TN))
#define GM_TILE_CB(TN) ((TN) * 4 / GM_TILE_GROUP(TN))
#define GM_TILE_MOST_CB 4
/* A tile's local memory, in arrays of these many elements: two buffers (a step decoded while the other is
 * multiplied) of GM_TILE_M weight rows of 32 codes (as 32-bit words) with 2 scales and 2 offsets each, and of TN
 * activation rows of 32 codes with a scale and 2 sums per 16 each; then the activation row of each of the TN. */
#define GM_TILE_WQ_WORDS (2 * GM_TILE_M * 8)
#define GM_TILE_WSCALES (2 * GM_TILE_M * 2)
#define GM_TILE_AQ_WORDS(TN) (2 * (TN) * 8)
#define GM_TILE_ASCALES(TN) (2 * (TN))
#define GM_TILE_ASUMS(TN) (2 * (TN) * 2)
#define GM_TILE_LOCAL_BYTES(TN) \
  (4 * (GM_TILE_WQ_WORDS + 2 * GM_TILE_WSCALES + GM_TILE_AQ_WORDS(TN) + GM_TILE_ASCALES(TN) + GM_TILE_ASUMS(TN)) + \
   8 * (TN))

/* read_bandwidth: its work-groups' work-items, each reading 16-byte words, GM_STREAM_LOADS in flight. */
#define GM_STREAM_GROUP 256
#define GM_STREAM_LOADS 4

/* int8_peak: independent chains per work-item, and the operations (2 per multiply-add) a work-item's round does:
 * a chain's m16n8k32 tensor-core product is 16 x 8 x 32 multiply-adds for the warp's 32 lanes; a 4-byte dot product
 * is 4. */
#define GM_PEAK_CHAINS 8
#define GM_PEAK_OPS_MMA (GM_PEAK_CHAINS * 2 * 16 * 8 * 32 / 32)
#define GM_PEAK_OPS_DOT (GM_PEAK_CHAINS * 2 * 4)

/* The CUDA architecture from which the tiles and int8_peak use int8 tensor cores (mma.sync), as the host reads it
 * from a device's compute capability: major * 100 + minor * 10. */
#define GM_MMA_ARCH 800
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= GM_MMA_ARCH
#define GM_HAS_MMA 1
#endif

/* The arguments the gemv, tiled and exact kernels share, passed by value as one struct: its fields are all 64-bit,
 * so that OpenCL C, CUDA and the host lay it out alike. */
GM_BEGIN
typedef struct {
  gm_i64 k;               /* values per weight row */
  gm_i64 m;               /* weight rows (outputs per activation row) */
  gm_i64 row_bytes;       /* from one weight row to the next */
  gm_i64 expert_bytes;    /* from one expert's matrix to the next; 0: matrix 0 only, ids unread */
  gm_i64 experts;         /* the matrices ids may name */
  gm_i64 slots;           /* sets per token (mul_mat_id) */
  gm_i64 act_slots;       /* activation rows per token: 1 (shared by its slots) or slots */
  gm_i64 rows;            /* output rows per set (1 to GM_MAX_ROWS) */
  gm_i64 out_rows;        /* output rows in all: the last set may have fewer than `rows` */
  gm_i64 block_bytes;     /* the weight format's block */
  gm_i64 subs_per_block;  /* its 16-value sub-blocks (quantized formats) */
  gm_i64 has_residual;    /* whether residual is read (else it may be any buffer) */
} gm_gemv_args;
GM_END

#endif /* GGUFMM_DEVICE_ARGS_H */
