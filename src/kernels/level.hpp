// Names for code compiled once per instruction-set level: GGUFMM_LEVEL is the level's name (avx2, avxvnni,
// avx512), set by the build. Everything a level defines lives in namespace ggufmm::kernels::<level>, so the
// same source compiled for two levels links without clashes.
#pragma once

#define GGUFMM_CONCAT_INNER(a, b) a##b
#define GGUFMM_CONCAT(a, b) GGUFMM_CONCAT_INNER(a, b)
// The level's table function, e.g. avx2_kernels().
#define GGUFMM_LEVEL_TABLE GGUFMM_CONCAT(GGUFMM_LEVEL, _kernels)

// A level's kernels are named after the type lists (ggufmm/types.hpp): gemv_<name> for every weight type and, where a
// level decodes panels itself, panel_<name> for every quantized one. These declare them and fill a level's table
// `t` (IsaKernels), so that a level missing a kernel fails to link.
#define GGUFMM_DECLARE_GEMV(TYPE, id, name) extern const GemvFn gemv_##name;
#define GGUFMM_DECLARE_PANEL(TYPE, id, name) extern const PanelDecodeFn panel_##name;
#define GGUFMM_SET_GEMV(TYPE, id, name) t.gemv[static_cast<size_t>(Type::TYPE)] = gemv_##name;
#define GGUFMM_SET_PANEL(TYPE, id, name) t.panel[static_cast<size_t>(Type::TYPE)] = panel_##name;
