// Scratch containers for the products' working buffers (quantized activations, decoded panels, blocks of outputs).
// Their storage starts on a cache line, so that 64-byte vector loads and stores from their start never straddle two
// lines (each straddling access costs two). Blocks of 4 KiB and more freed by a thread are kept for its next call:
// fresh memory from the system costs a page fault per 4 KiB, a large share of a mixture-of-experts call at 512
// tokens.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace ggufmm::runtime {

inline constexpr std::size_t kCacheLine = 64;

// Line-aligned memory, from the calling thread's cache of large blocks where one fits.
void* allocate_scratch(std::size_t bytes);
void free_scratch(void* p, std::size_t bytes) noexcept;
// Bytes this thread holds in freed blocks for reuse (at most kScratchKept).
std::size_t scratch_kept() noexcept;
inline constexpr std::size_t kScratchKept = std::size_t{256} << 20;

template <class T>
struct ScratchAllocator {
  using value_type = T;
  ScratchAllocator() = default;
  template <class U>
  ScratchAllocator(const ScratchAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_scratch(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { free_scratch(p, n * sizeof(T)); }
  // Growing a buffer leaves its new elements default-initialized (for numbers: unset), not zeroed: every buffer is
  // written before it is read, and zeroing megabytes of activations per call costs time for nothing.
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const ScratchAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using AlignedVector = std::vector<T, ScratchAllocator<T>>;

}  // namespace ggufmm::runtime
