// A device's dense copies, one per resident weight, kept within a byte budget: past it the least recently used are
// dropped (a call still using one keeps it alive until it has been enqueued), a copy larger than the whole budget is
// made for its call alone, and a weight's copy goes when the weight is released.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "device/product.hpp"
#include "ggufmm/types.hpp"

namespace ggufmm::device {

class DenseCache {
 public:
  explicit DenseCache(size_t budget_bytes) : budget_(budget_bytes) {}

  // The copy of the weight whose blocks are `blocks` (`bytes` bytes of copy), made by `make` where there is none.
  std::shared_ptr<const DenseCopy> get(const Buffer* blocks, size_t bytes, const std::function<DenseCopy()>& make);
  // Drops the copy of the weight whose blocks are `blocks`, as their buffer is freed (before another can take its
  // address).
  void release(const Buffer* blocks);
  bool would_keep(size_t bytes) const;
  void set_budget(size_t bytes);  // drops least recently used copies down to it
  void clear();                   // drops every copy and zeroes the statistics
  DenseCacheStats stats() const;

 private:
  struct Entry {
    const Buffer* blocks;
    std::shared_ptr<const DenseCopy> copy;
    size_t bytes;
    uint64_t last_use;
  };
  // mutex_ held:
  void drop(size_t index);
  void evict_down_to(size_t bytes);  // the least recently used first

  mutable std::mutex mutex_;
  std::vector<Entry> entries_;  // a device holds few weights' copies at once: a list is enough
  size_t budget_;
  uint64_t clock_ = 0;
  DenseCacheStats stats_;
};

}  // namespace ggufmm::device
