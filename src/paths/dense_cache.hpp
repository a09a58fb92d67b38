// The dense path's weights: each dequantized once into a padded dense copy that later calls reuse, kept in a
// thread-safe cache with a byte budget; and the settings that turn the dense path on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "ggufmm/types.hpp"

namespace ggufmm::paths {

// The element type of a dense copy: bf16 halves its memory and traffic; f32 where the CPU multiplies it faster.
enum class DenseForm : uint8_t { BF16, F32 };

// Elements from one row of a dense copy to the next: k, plus a cache line where k elements would make the stride a
// multiple of 4 KiB (rows that far apart fall into the same cache sets, which halves GEMM throughput).
int64_t dense_row_stride(int64_t k, DenseForm form);

// The bytes a dense copy of w in `form` takes.
size_t dense_bytes(const Weight& w, DenseForm form);

// The m rows of k values of a weight, dequantized into `form`, rows dense_row_stride() elements apart, 64-byte
// aligned.
class DenseWeight {
 public:
  // Dequantizes w on up to `threads` threads (0: all cores).
  DenseWeight(const Weight& w, DenseForm form, int threads);

  DenseForm form() const { return form_; }
  int64_t k() const { return k_; }
  int64_t m() const { return m_; }
  int64_t stride() const { return stride_; }
  const void* data() const { return data_.get(); }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const;
  };
  DenseForm form_;
  int64_t k_;
  int64_t m_;
  int64_t stride_;
  std::unique_ptr<std::byte, AlignedDelete> data_;
};

// Dense copies keyed by the weight's data pointer, type, shape and form. A copy missing when several threads ask for
// it at once is made once, by the first, while the others wait for it. Past the byte budget, the least recently used
// copies are dropped (a caller still using one keeps it alive until it is done); a copy larger than the whole budget
// is made for the call alone and not kept. A few bytes of the weight are checked on every hit, so that a weight freed
// and another of the same type and shape placed at its address is not served the old copy; still, a caller that
// frees weights should clear the cache.
class DenseCache {
 public:
  explicit DenseCache(size_t budget_bytes) : budget_(budget_bytes) {}

  std::shared_ptr<const DenseWeight> get(const Weight& w, DenseForm form, int threads);
  bool would_keep(size_t bytes) const;
  size_t budget() const;
  void set_budget(size_t bytes);  // drops least recently used copies down to it
  void clear();                   // drops every copy and zeroes the statistics
  void release(const void* data, size_t bytes);  // drops the copies of weights whose data starts in the range
  DenseCacheStats stats() const;

  // The process's cache. Its budget starts at GGUFMM_DENSE_CACHE_BYTES, else a quarter of physical memory.
  static DenseCache& global();

 private:
  using Copy = std::shared_ptr<const DenseWeight>;
  struct Key {
    const void* data;
    Type type;
    int64_t k;
    int64_t m;
    DenseForm form;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  struct Entry {
    std::shared_future<Copy> copy;
    uint64_t fingerprint;
    size_t bytes;
    uint64_t id;        // the clock at insertion: tells this entry from a later one under the same key
    uint64_t last_use;  // the clock at the latest use: the least recent goes first
  };

  void drop(std::unordered_map<Key, Entry, KeyHash>::iterator it);  // mutex_ held
  void evict_down_to(size_t bytes);                                 // mutex_ held
  void forget(const Key& key, uint64_t id);

  mutable std::mutex mutex_;
  std::unordered_map<Key, Entry, KeyHash> entries_;
  size_t budget_;
  uint64_t clock_ = 0;
  DenseCacheStats stats_;
};

// The environment's settings, parsed from a variable's value (null when unset). Both throw Error(BadUsage) naming
// the variable for a value they cannot read.
// GGUFMM_PREFILL_DEQUANT: the minimum rows for auto to pick the dense path. Unset, empty or 0: off (0); 1 (a bare
// "on"): 32.
int64_t parse_prefill_dequant(const char* value);
// GGUFMM_DENSE_CACHE_BYTES: a byte count, optionally followed by K, M or G (powers of 1024). nullopt when unset or
// empty.
std::optional<size_t> parse_cache_bytes(const char* value);

// The minimum rows for auto to pick the dense path, 0 when off. Starts from GGUFMM_PREFILL_DEQUANT.
int64_t prefill_dequant_rows();
void set_prefill_dequant_rows(int64_t rows);

}  // namespace ggufmm::paths
