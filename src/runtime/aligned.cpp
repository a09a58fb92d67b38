#include "runtime/aligned.hpp"

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <new>

namespace ggufmm::runtime {
namespace {

// Blocks from this size up are kept when freed; smaller ones come from the allocator's own free lists. Not 64 KiB:
// an expert call makes a block or two of 4 to 64 KiB per expert (its rows, its outputs), megabytes together, which
// malloc took from the top of its heap and, once they were all freed, gave back to the system, so that every call
// faulted them in afresh (128x768 experts at 128 tokens: 20 ms a call against 9.6 once kept here; which calls hit it
// depended on malloc's history, such as the sizes asked by calls before).
constexpr std::size_t kLarge = std::size_t{4} << 10;

// Large requests round up to one of 8 sizes per power of two (at most 12.5 % more), so that a block freed by one
// call fits the next call's request of a similar size.
std::size_t size_class(std::size_t bytes) {
  if (bytes < kLarge) return bytes;
  const std::size_t step = std::bit_floor(bytes) / 8;
  return (bytes + step - 1) / step * step;
}

void* fresh(std::size_t bytes) { return ::operator new(bytes, std::align_val_t{kCacheLine}); }
void release(void* p) noexcept { ::operator delete(p, std::align_val_t{kCacheLine}); }

// Small blocks come from malloc's free lists, which serve them quickly, but not at an alignment: an aligned request
// takes malloc's slow path (a chunk carved to the alignment, its rest freed and merged again), which dominated a
// mixture-of-experts call on small experts. So they take a line more, aligned here, the offset in the byte before.
void* fresh_small(std::size_t bytes) {
  auto* raw = static_cast<unsigned char*>(std::malloc(bytes + kCacheLine));
  if (raw == nullptr) throw std::bad_alloc();
  const std::size_t offset = kCacheLine - reinterpret_cast<std::uintptr_t>(raw) % kCacheLine;  // 1 to 64
  unsigned char* p = raw + offset;
  p[-1] = static_cast<unsigned char>(offset);
  return p;
}
void release_small(void* p) noexcept {
  auto* q = static_cast<unsigned char*>(p);
  std::free(q - q[-1]);
}

// The freed large blocks of one thread, by size class; returned to the system when the thread ends, or, the
// largest first (the likeliest to be one-offs), when they would exceed kScratchKept.
struct BlockCache {
  std::multimap<std::size_t, void*> blocks;
  std::size_t kept = 0;

  ~BlockCache() {
    for (const auto& [bytes, p] : blocks) release(p);
  }
  // The block of this size freed last: the likeliest to be still in cache. (Equal keys keep their order of
  // insertion, so that is the last of the range.)
  void* take(std::size_t bytes) {
    const auto [first, end] = blocks.equal_range(bytes);
    if (first == end) return nullptr;
    const auto it = std::prev(end);
    void* p = it->second;
    blocks.erase(it);
    kept -= bytes;
    return p;
  }
  void keep(void* p, std::size_t bytes) noexcept {
    if (bytes > kScratchKept) return release(p);
    while (kept + bytes > kScratchKept) {
      const auto last = std::prev(blocks.end());
      kept -= last->first;
      release(last->second);
      blocks.erase(last);
    }
    try {
      blocks.emplace(bytes, p);
    } catch (...) {  // no memory for the entry: the block goes back instead
      return release(p);
    }
    kept += bytes;
  }
};

// The thread's cache, or null once the thread is ending: other thread-local objects (panel buffers) may free
// their blocks after it is gone, so it lives behind plain thread-local values, which outlast every destructor.
thread_local BlockCache* t_cache = nullptr;
thread_local bool t_ended = false;

struct CacheOwner {
  ~CacheOwner() {
    delete t_cache;
    t_cache = nullptr;
    t_ended = true;
  }
};

BlockCache* cache() {
  if (t_cache == nullptr && !t_ended) {
    thread_local CacheOwner owner;
    t_cache = new (std::nothrow) BlockCache;  // none: blocks go straight back
  }
  return t_cache;
}

}  // namespace

void* allocate_scratch(std::size_t bytes) {
  const std::size_t size = size_class(bytes);
  if (size < kLarge) return fresh_small(size);
  if (BlockCache* c = cache()) {
    if (void* p = c->take(size)) return p;
  }
  return fresh(size);
}

void free_scratch(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  const std::size_t size = size_class(bytes);
  if (size < kLarge) return release_small(p);
  BlockCache* c = cache();
  if (c == nullptr) return release(p);
  c->keep(p, size);
}

std::size_t scratch_kept() noexcept {
  const BlockCache* c = cache();
  return c != nullptr ? c->kept : 0;
}

}  // namespace ggufmm::runtime
