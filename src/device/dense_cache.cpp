#include "device/dense_cache.hpp"

#include <algorithm>

namespace ggufmm::device {

std::shared_ptr<const DenseCopy> DenseCache::get(const Buffer* blocks, size_t bytes,
                                                 const std::function<DenseCopy()>& make) {
  // The copy is made under the lock: its dequantization is only enqueued, and a second caller must not make it
  // again.
  std::lock_guard lock(mutex_);
  const auto it = std::ranges::find(entries_, blocks, &Entry::blocks);
  if (it != entries_.end()) {
    ++stats_.hits;
    it->last_use = ++clock_;
    return it->copy;
  }
  ++stats_.misses;
  if (bytes > budget_) return std::make_shared<const DenseCopy>(make());  // for this call alone
  evict_down_to(budget_ - bytes);
  auto copy = std::make_shared<const DenseCopy>(make());
  entries_.push_back({blocks, copy, bytes, ++clock_});
  stats_.bytes_held += bytes;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes_held);
  return copy;
}

bool DenseCache::would_keep(size_t bytes) const {
  std::lock_guard lock(mutex_);
  return bytes <= budget_;
}

void DenseCache::set_budget(size_t bytes) {
  std::lock_guard lock(mutex_);
  budget_ = bytes;
  evict_down_to(budget_);
}

void DenseCache::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
  stats_ = {};
}

DenseCacheStats DenseCache::stats() const {
  std::lock_guard lock(mutex_);
  DenseCacheStats out = stats_;
  out.entries = entries_.size();
  return out;
}

void DenseCache::drop(size_t index) {
  stats_.bytes_held -= entries_[index].bytes;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
}

void DenseCache::release(const Buffer* blocks) {
  std::lock_guard lock(mutex_);
  const auto it = std::ranges::find(entries_, blocks, &Entry::blocks);
  if (it != entries_.end()) drop(static_cast<size_t>(it - entries_.begin()));
}

void DenseCache::evict_down_to(size_t bytes) {
  while (stats_.bytes_held > bytes && !entries_.empty()) {
    const auto oldest = std::ranges::min_element(entries_, {}, &Entry::last_use);
    drop(static_cast<size_t>(oldest - entries_.begin()));
    ++stats_.evictions;
  }
}

}  // namespace ggufmm::device
