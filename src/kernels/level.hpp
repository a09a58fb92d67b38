// Names for code compiled once per instruction-set level: GGUFMM_LEVEL is the level's name (avx2, avxvnni,
// avx512), set by the build. Everything a level defines lives in namespace ggufmm::kernels::<level>, so the
// same source compiled for two levels links without clashes.
#pragma once

#define GGUFMM_CONCAT_INNER(a, b) a##b
#define GGUFMM_CONCAT(a, b) GGUFMM_CONCAT_INNER(a, b)
// The level's table function, e.g. avx2_kernels().
#define GGUFMM_LEVEL_TABLE GGUFMM_CONCAT(GGUFMM_LEVEL, _kernels)
