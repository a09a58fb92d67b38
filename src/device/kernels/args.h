/* The arguments the gemv and exact kernels share, passed by value as one struct: its fields are all 64-bit, so
 * that OpenCL C, CUDA and the host lay it out alike. */
#ifndef GGUFMM_DEVICE_ARGS_H
#define GGUFMM_DEVICE_ARGS_H

#include "device/kernels/portable.h"

GM_BEGIN
typedef struct {
  gm_i64 k;               /* values per weight row */
  gm_i64 m;               /* weight rows (outputs per activation row) */
  gm_i64 row_bytes;       /* from one weight row to the next */
  gm_i64 expert_bytes;    /* from one expert's matrix to the next; 0: matrix 0 only, ids unread */
  gm_i64 experts;         /* the matrices ids may name */
  gm_i64 slots;           /* sets per token (mul_mat_id) */
  gm_i64 act_slots;       /* activation rows per token: 1 (shared by its slots) or slots */
  gm_i64 rows;            /* output rows per set (1 to 7) */
  gm_i64 out_rows;        /* output rows in all: the last set may have fewer than `rows` */
  gm_i64 block_bytes;     /* the weight format's block */
  gm_i64 subs_per_block;  /* its 16-value sub-blocks (quantized formats) */
  gm_i64 has_residual;    /* whether residual is read (else it may be any buffer) */
} gm_gemv_args;
GM_END

#endif /* GGUFMM_DEVICE_ARGS_H */
