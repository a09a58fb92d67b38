/* GGUFMM_API marks what the shared library exports: the C and C++ APIs. Everything else is compiled hidden. */
#ifndef GGUFMM_EXPORT_H
#define GGUFMM_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define GGUFMM_API __attribute__((visibility("default")))
#else
#define GGUFMM_API
#endif

#endif /* GGUFMM_EXPORT_H */
