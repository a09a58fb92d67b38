// Prefetching the weights as the kernels stream them: where the lines go (Cache), how far ahead, and the cursors
// that ask for them in the order a kernel reads its blocks (SlicePrefetch, PageHeads, RowsPrefetch, L2Stream).
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace ggufmm::kernels {

// Weights stream through once, and decoding them is slow enough that the hardware prefetcher falls behind on a
// loaded machine: the kernels ask for the lines of a block 4 KB on, in the order they read them. 4 KB streamed
// best of 2, 4 and 8 (docs/performance.md, Prefetching).
// (A prefetch never faults; the address is formed as an integer, as it may lie past the end of the weight.)
inline constexpr size_t kPrefetchAhead = 4096;

// Where the lines go. With one or two activation rows a kernel streams, and the weight's lines wait in L2, where
// they do not evict the activations that every weight row reads again. With more rows the arithmetic binds, and
// every row reads each line: it waits in L1 (docs/performance.md, Prefetching).
enum class Cache { L1, L2 };
constexpr Cache weight_cache(int rows) { return rows <= 2 ? Cache::L2 : Cache::L1; }

// Rows of at least this many bytes stream differently from short ones (the experts' rows of 1 to 2 KB).
inline constexpr size_t kLongRowBytes = 4096;

// The lines of kBytes bytes from `at` on, into kTo.
template <size_t kBytes, Cache kTo>
inline void prefetch_lines(uintptr_t at) {
  for (size_t line = 0; line < kBytes; line += 64) {
    const char* p = reinterpret_cast<const char*>(at + line);
    if constexpr (kTo == Cache::L2) {
      _mm_prefetch(p, _MM_HINT_T1);
    } else {
      _mm_prefetch(p, _MM_HINT_T0);
    }
  }
}

// Rows read a slice [j0, j1) of their blocks each, row after row (so that the slice's activations stay in L1
// across the rows): a cursor on the block kDistance bytes on in that order, from block j0 of row o on.
// (Prefetching along the row instead would fetch the row's next slice, not the next rows' slice, which is read
// first.)
// W rows read side by side count as one row of W blocks a step.
template <size_t kBlockBytes, Cache kTo, int W = 1, size_t kDistance = kPrefetchAhead>
class SlicePrefetch {
 public:
  SlicePrefetch(const uint8_t* w, size_t row_bytes, int64_t o, int64_t j0, int64_t j1)
      : row_bytes_(row_bytes), j0_(j0), j1_(j1), j_(j0 + kAhead % (j1 - j0)) {
    row_ = reinterpret_cast<uintptr_t>(w) + static_cast<uintptr_t>(o + W * (kAhead / (j1 - j0))) * row_bytes;
  }
  // Prefetches the block ahead of the one about to be read, and moves on one block.
  void step() {
    for (int r = 0; r < W; ++r) {
      prefetch_lines<kBlockBytes, kTo>(row_ + r * row_bytes_ + static_cast<uintptr_t>(j_) * kBlockBytes);
    }
    if (++j_ == j1_) {
      j_ = j0_;
      row_ += W * row_bytes_;
    }
  }

 private:
  static constexpr int64_t kAhead = (kDistance / W + kBlockBytes - 1) / kBlockBytes;  // in blocks
  uintptr_t row_;
  size_t row_bytes_;
  int64_t j0_, j1_, j_;
};

// The first lines of each 4 KiB page that one row's read reaches kPrefetchAhead bytes on, into L2: the core's
// prefetcher does not cross a page, so each page of a stream begins with misses unless they were asked for early.
class PageHeads {
 public:
  explicit PageHeads(uintptr_t row) : at_(row + kPrefetchAhead) {}
  // The cursor moves on kBytes, the bytes the read moves on.
  template <size_t kBytes>
  void step() {
    const uintptr_t end = at_ + kBytes, page = (end - 1) & ~uintptr_t{4095};
    if (page >= at_) prefetch_lines<kHeadBytes, Cache::L2>(page);
    at_ = end;
  }

 private:
  static constexpr size_t kHeadBytes = 256;
  uintptr_t at_;
};

// Prefetching for a pass of NR activation rows over whole weight rows (W side by side) in memory order: a near
// cursor kPrefetchAhead on, and a far one twice as far into L2. Which run depends on the core (the measurements
// that chose them: docs/performance.md, Prefetching):
// - Generally the near cursor runs. Blocks of a byte or more a value (Q8_0) stream so fast, up to four rows, that
//   its lines come too late from memory, and the far cursor brings them to L2 first. From 5 rows the arithmetic
//   binds and the extra prefetches cost, as they cost formats of fewer bytes a value at any row count. At one row
//   over rows under 4 KiB the far cursor stays off: beside the near one it slowed Q8_0.
// - Where the core's prefetcher follows short rows (runtime::prefetcher_follows_short_rows), rows under 4 KiB read
//   by 1 or 2 activation rows take the far cursor alone, and by 3 or 4 rows neither: there that beat the general
//   rule, no cursor, and the far one alone.
//   There, from 2 rows on, blocks of a byte or more a value also take PageHeads, and the far cursor up to 4 rows:
//   the heads pay from 2 rows (not at one, nor for Q4_0), and the far cursor at 3 and 4 rows and the heads at 5 to
//   7 pay beside the near cursor, which asks for the heads' lines too, but later and into L1.
template <size_t kBlockBytes, size_t kBlockValues, int NR, int W>
class RowsPrefetch {
 public:
  // `follows_short_rows`: runtime::prefetcher_follows_short_rows(), asked once per call: asked per row, the call
  // itself slowed Q8_0 in cache.
  RowsPrefetch(const uint8_t* w, size_t row_bytes, int64_t o, int64_t blocks, bool follows_short_rows)
      : near_(w, row_bytes, o, 0, blocks),
        far_(w, row_bytes, o, 0, blocks),
        heads_(reinterpret_cast<uintptr_t>(w) + static_cast<uintptr_t>(o) * row_bytes),
        cursors_(cursors(row_bytes, follows_short_rows)) {}
  void step() {
    if (cursors_ & kNear) near_.step();
    if (cursors_ & kFar) far_.step();
    if (cursors_ & kHeads) heads_.template step<kBlockBytes>();
  }

 private:
  static constexpr unsigned kNear = 1, kFar = 2, kHeads = 4;
  static unsigned cursors(size_t row_bytes, bool follows_short_rows) {
    const bool long_rows = row_bytes >= kLongRowBytes;
    const bool dense = kBlockBytes >= kBlockValues;  // a byte or more a value
    const bool followed = !long_rows && follows_short_rows;
    // One row at a time (W = 1, as short rows are read) keeps the heads' cursor in memory order.
    const unsigned heads = followed && dense && W == 1 && NR >= 2 ? kHeads : 0u;
    if (followed && NR <= 4) return heads | (NR <= 2 || dense ? kFar : 0u);
    const bool far = NR <= 4 && dense && (NR > 1 || long_rows);
    return heads | kNear | (far ? kFar : 0u);
  }
  SlicePrefetch<kBlockBytes, weight_cache(NR), W> near_;
  SlicePrefetch<kBlockBytes, Cache::L2, W, 2 * kPrefetchAhead> far_;
  PageHeads heads_;
  unsigned cursors_;
};

// `bytes` from `at` on that a later pass will read, prefetched into L2 in memory order in `steps` equal steps of
// the pass now running (none where bytes is 0).
class L2Stream {
 public:
  L2Stream(const uint8_t* at, size_t bytes, int64_t steps)
      : at_(reinterpret_cast<uintptr_t>(at) & ~uintptr_t{63}),
        end_(bytes == 0 ? at_ : reinterpret_cast<uintptr_t>(at) + bytes),
        step_((bytes / static_cast<size_t>(std::max<int64_t>(steps, 1)) + 64) & ~size_t{63}) {}
  void step() {
    const uintptr_t to = std::min(end_, at_ + step_);
    for (; at_ < to; at_ += 64) _mm_prefetch(reinterpret_cast<const char*>(at_), _MM_HINT_T1);
  }

 private:
  uintptr_t at_, end_;
  size_t step_;
};

// One row read in memory order: the lines kPrefetchAhead bytes on from a block.
template <size_t kBytes, Cache kTo>
inline void prefetch_ahead(const void* block) {
  prefetch_lines<kBytes, kTo>(reinterpret_cast<uintptr_t>(block) + kPrefetchAhead);
}

}  // namespace ggufmm::kernels
