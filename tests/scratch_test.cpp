// The scratch allocator: line-aligned storage, large freed blocks handed out again, and a bounded cache.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "runtime/aligned.hpp"

namespace {

using ggufmm::runtime::allocate_scratch;
using ggufmm::runtime::AlignedVector;
using ggufmm::runtime::free_scratch;
using ggufmm::runtime::kCacheLine;
using ggufmm::runtime::kScratchKept;
using ggufmm::runtime::scratch_kept;

bool on_line(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kCacheLine == 0; }

TEST(Scratch, StorageStartsOnACacheLine) {
  for (const size_t n : {1u, 3u, 100u, 70000u, 3000000u}) {
    AlignedVector<int8_t> v(n);
    EXPECT_TRUE(on_line(v.data())) << n;
  }
}

TEST(Scratch, ALargeFreedBlockServesTheNextSimilarRequest) {
  // Run on a thread of its own, whose cache starts empty.
  std::thread([] {
    void* first = allocate_scratch(5'000'000);
    free_scratch(first, 5'000'000);
    EXPECT_GE(scratch_kept(), 5'000'000u);
    // Slightly smaller: the same size class, so the same block.
    void* again = allocate_scratch(4'900'000);
    EXPECT_EQ(again, first);
    EXPECT_EQ(scratch_kept(), 0u);
    free_scratch(again, 4'900'000);
    // Blocks under 4 KiB are not kept.
    const size_t kept = scratch_kept();
    free_scratch(allocate_scratch(1000), 1000);
    EXPECT_EQ(scratch_kept(), kept);
    // An expert's rows or outputs (tens of KiB, megabytes over a call) are: malloc would hand them back to the
    // system, to be faulted in again by the next call.
    free_scratch(allocate_scratch(24 * 1024), 24 * 1024);
    EXPECT_EQ(scratch_kept(), kept + 24 * 1024);
  }).join();
}

TEST(Scratch, TheCacheStaysWithinItsBound) {
  std::thread([] {
    const size_t big = kScratchKept / 3;
    void* blocks[4];
    for (auto& b : blocks) b = allocate_scratch(big);
    for (auto* b : blocks) free_scratch(b, big);
    EXPECT_LE(scratch_kept(), kScratchKept);
    EXPECT_GT(scratch_kept(), 0u);
    // A block beyond the bound is never kept.
    free_scratch(allocate_scratch(kScratchKept + 1), kScratchKept + 1);
    EXPECT_LE(scratch_kept(), kScratchKept);
  }).join();
}

}  // namespace
