/* The C header must compile as C99 on its own. */
#include "ggufmm/ggufmm.h"

int ggufmm_c_header_check(void) { return GGUFMM_OK + (int)sizeof(ggufmm_weight); }
