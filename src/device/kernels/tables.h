/* The format tables the device decoders look up: the same data the CPU's format layer compiles, included from
 * format/tables/ (bare initializer lists), so that there is one copy of every codebook. */
#ifndef GGUFMM_DEVICE_TABLES_H
#define GGUFMM_DEVICE_TABLES_H

#include "device/kernels/portable.h"

GM_BEGIN
GM_TABLE(gm_u64, gm_iq2_xxs_grid) = {
#include "format/tables/iq2_xxs_grid.inc"
};
GM_TABLE(gm_u64, gm_iq2_xs_grid) = {
#include "format/tables/iq2_xs_grid.inc"
};
GM_TABLE(gm_u64, gm_iq2_s_grid) = {
#include "format/tables/iq2_s_grid.inc"
};
GM_TABLE(gm_u32, gm_iq3_xxs_grid) = {
#include "format/tables/iq3_xxs_grid.inc"
};
GM_TABLE(gm_u32, gm_iq3_s_grid) = {
#include "format/tables/iq3_s_grid.inc"
};
GM_TABLE(gm_u64, gm_iq1_s_grid) = {
#include "format/tables/iq1_s_grid.inc"
};
GM_TABLE(gm_i8, gm_iq4_values) = {
#include "format/tables/iq4_values.inc"
};
GM_TABLE(gm_i8, gm_mxfp4_values) = {
#include "format/tables/mxfp4_values.inc"
};
GM_END

#endif /* GGUFMM_DEVICE_TABLES_H */
