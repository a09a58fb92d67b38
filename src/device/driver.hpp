// A driver's entry points, resolved from its library when first needed, so that ggufmm loads and runs on the CPU
// where the driver is missing.
#pragma once

#include <dlfcn.h>

#define GGUFMM_DRIVER_POINTER(name) decltype(&::name) name = nullptr;
#define GGUFMM_DRIVER_RESOLVE(name)                                  \
  name = reinterpret_cast<decltype(&::name)>(dlsym(library, #name)); \
  complete = complete && name;

// Declares struct NAME holding a pointer for each function X(name) of LIST (by its symbol name), and
// `bool load(const char* path)`: whether the library opens and has every one of them.
#define GGUFMM_DRIVER_API(NAME, LIST)                              \
  struct NAME {                                                    \
    LIST(GGUFMM_DRIVER_POINTER)                                    \
    bool load(const char* path) {                                  \
      void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);         \
      if (!library) return false;                                  \
      bool complete = true;                                        \
      LIST(GGUFMM_DRIVER_RESOLVE)                                  \
      return complete;                                             \
    }                                                              \
  }
