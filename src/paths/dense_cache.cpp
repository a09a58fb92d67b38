#include "paths/dense_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <string_view>
#include <vector>

#include "format/floats.hpp"
#include "format/registry.hpp"
#include "runtime/fnv.hpp"
#include "runtime/settings.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm::paths {
namespace {

constexpr std::align_val_t kAlignment{64};
constexpr int64_t kCacheLine = 64;
constexpr int64_t kAliasingStride = 4096;
// Rows dequantized per task: enough to amortize scheduling, few enough to balance.
constexpr int64_t kRowsPerTask = 16;
// What a bare GGUFMM_PREFILL_DEQUANT=1 means.
constexpr int64_t kDefaultPrefillRows = 32;

int64_t element_bytes(DenseForm form) { return form == DenseForm::BF16 ? 2 : 4; }

// FNV-1a over the first and last bytes of the weight: cheap enough for every hit, and different for practically any
// other weight.
uint64_t fingerprint(const Weight& w) {
  constexpr size_t kSample = 64;
  const auto* bytes = static_cast<const uint8_t*>(w.data);
  const size_t size = w.expert_bytes();
  const size_t head = std::min(kSample, size);
  return runtime::fnv1a(bytes + size - head, head, runtime::fnv1a(bytes, head, runtime::kFnvBasis));
}

size_t physical_memory() {
  return static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
}

// The power of two a byte-count suffix stands for.
std::optional<int> suffix_shift(std::string_view suffix) {
  if (suffix.empty()) return 0;
  if (suffix.size() != 1) return std::nullopt;
  switch (suffix[0]) {
    case 'K':
    case 'k':
      return 10;
    case 'M':
    case 'm':
      return 20;
    case 'G':
    case 'g':
      return 30;
  }
  return std::nullopt;
}

std::atomic<int64_t>& prefill_rows() {
  static std::atomic<int64_t> rows{parse_prefill_dequant(std::getenv("GGUFMM_PREFILL_DEQUANT"))};
  return rows;
}

}  // namespace

int64_t dense_row_stride(int64_t k, DenseForm form) {
  const int64_t bytes = k * element_bytes(form);
  return bytes % kAliasingStride == 0 ? k + kCacheLine / element_bytes(form) : k;
}

size_t dense_bytes(const Weight& w, DenseForm form) {
  return static_cast<size_t>(w.m * dense_row_stride(w.k, form) * element_bytes(form));
}

void DenseWeight::AlignedDelete::operator()(std::byte* p) const { ::operator delete(p, kAlignment); }

DenseWeight::DenseWeight(const Weight& w, DenseForm form, int threads)
    : form_(form),
      k_(w.k),
      m_(w.m),
      stride_(dense_row_stride(w.k, form)),
      data_(static_cast<std::byte*>(::operator new(dense_bytes(w, form), kAlignment))) {
  const format::Format& f = *format::find(w.type);
  const auto* rows = static_cast<const uint8_t*>(w.data);
  const size_t row_bytes = w.row_bytes();
  const size_t out_row_bytes = static_cast<size_t>(stride_ * element_bytes(form));
  const int64_t tasks = (m_ + kRowsPerTask - 1) / kRowsPerTask;
  runtime::ThreadPool::global().run(threads, tasks, [&](int64_t task) {
    // bf16 rows go through f32 first: the formats dequantize to f32.
    std::vector<float> staged(form == DenseForm::BF16 ? static_cast<size_t>(k_) : 0);
    const int64_t end = std::min(m_, (task + 1) * kRowsPerTask);
    for (int64_t o = task * kRowsPerTask; o < end; ++o) {
      const uint8_t* in = rows + static_cast<size_t>(o) * row_bytes;
      std::byte* out = data_.get() + static_cast<size_t>(o) * out_row_bytes;
      if (form == DenseForm::F32) {
        f.dequantize(in, reinterpret_cast<float*>(out), k_);
      } else {
        f.dequantize(in, staged.data(), k_);
        format::quantize_bf16(staged.data(), out, k_);
      }
    }
  });
}

size_t DenseCache::KeyHash::operator()(const Key& key) const {
  size_t hash = std::hash<const void*>()(key.data);
  for (const int64_t part : {static_cast<int64_t>(key.type), key.k, key.m, static_cast<int64_t>(key.form)}) {
    hash = hash * 31 + std::hash<int64_t>()(part);
  }
  return hash;
}

std::shared_ptr<const DenseWeight> DenseCache::get(const Weight& w, DenseForm form, int threads) {
  const Key key{w.data, w.type, w.k, w.m, form};
  const uint64_t print = fingerprint(w);
  const size_t bytes = dense_bytes(w, form);
  std::promise<Copy> made;
  std::shared_future<Copy> copy;
  uint64_t id = 0;  // of the entry this call makes, when it makes one
  bool kept = true;
  {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(key);
    if (it != entries_.end() && it->second.fingerprint == print) {
      ++stats_.hits;
      it->second.last_use = ++clock_;
      copy = it->second.copy;
    } else {
      ++stats_.misses;
      if (it != entries_.end()) drop(it);  // the copy of a weight no longer at this address
      kept = bytes <= budget_;
      if (kept) {
        evict_down_to(budget_ - bytes);
        id = ++clock_;
        copy = made.get_future().share();
        entries_.emplace(key, Entry{copy, print, bytes, id, id});
        stats_.bytes_held += bytes;
        stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes_held);
      }
    }
  }
  if (!kept) return std::make_shared<const DenseWeight>(w, form, threads);  // larger than the budget: for this call
  if (id != 0) {
    // Made here, outside the lock; callers asking for it meanwhile wait on the future.
    try {
      made.set_value(std::make_shared<const DenseWeight>(w, form, threads));
    } catch (...) {
      made.set_exception(std::current_exception());
      forget(key, id);
    }
  }
  return copy.get();
}

bool DenseCache::would_keep(size_t bytes) const {
  std::lock_guard lock(mutex_);
  return bytes <= budget_;
}

size_t DenseCache::budget() const {
  std::lock_guard lock(mutex_);
  return budget_;
}

void DenseCache::set_budget(size_t bytes) {
  std::lock_guard lock(mutex_);
  budget_ = bytes;
  evict_down_to(bytes);
}

void DenseCache::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
  stats_ = {};
}

void DenseCache::release(const void* data, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  std::lock_guard lock(mutex_);
  std::erase_if(entries_, [&](const auto& entry) {
    const bool inside = reinterpret_cast<uintptr_t>(entry.first.data) - begin < bytes;
    if (inside) stats_.bytes_held -= entry.second.bytes;
    return inside;
  });
}

DenseCacheStats DenseCache::stats() const {
  std::lock_guard lock(mutex_);
  DenseCacheStats out = stats_;
  out.entries = entries_.size();
  return out;
}

void DenseCache::drop(std::unordered_map<Key, Entry, KeyHash>::iterator it) {
  stats_.bytes_held -= it->second.bytes;
  entries_.erase(it);
}

void DenseCache::evict_down_to(size_t bytes) {
  while (stats_.bytes_held > bytes) {
    drop(std::min_element(entries_.begin(), entries_.end(),
                          [](const auto& a, const auto& b) { return a.second.last_use < b.second.last_use; }));
    ++stats_.evictions;
  }
}

void DenseCache::forget(const Key& key, uint64_t id) {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(key);
  if (it != entries_.end() && it->second.id == id) drop(it);
}

DenseCache& DenseCache::global() {
  static DenseCache cache(parse_cache_bytes(std::getenv("GGUFMM_DENSE_CACHE_BYTES")).value_or(physical_memory() / 4));
  return cache;
}

int64_t parse_prefill_dequant(const char* value) {
  if (!value || !*value) return 0;
  const int64_t rows =
      runtime::parse_count("GGUFMM_PREFILL_DEQUANT", value, "a minimum number of rows (0: off, 1: on from 32 rows)");
  return rows == 1 ? kDefaultPrefillRows : rows;
}

std::optional<size_t> parse_cache_bytes(const char* value) {
  if (!value || !*value) return std::nullopt;
  const std::string_view text(value);
  uint64_t count = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  const std::optional<int> shift = suffix_shift(text.substr(static_cast<size_t>(end - text.data())));
  if (error != std::errc() || !shift || count > (std::numeric_limits<size_t>::max() >> *shift)) {
    runtime::bad_setting("GGUFMM_DENSE_CACHE_BYTES", value, "a byte count, optionally with a K, M or G suffix");
  }
  return static_cast<size_t>(count) << *shift;
}

int64_t prefill_dequant_rows() { return prefill_rows().load(); }

void set_prefill_dequant_rows(int64_t rows) { prefill_rows().store(rows); }

}  // namespace ggufmm::paths
