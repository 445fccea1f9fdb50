#include "kubestat/core/heap.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <vector>

namespace kubestat {
namespace {

TEST(HeapFiguresTest, BlocksInUseAreCountedUntilFreed) {
  const std::optional<HeapFigures> before = ReadHeapFigures();
  if (!before) GTEST_SKIP() << "a sanitizer's allocator replaces the C library's here";
  constexpr size_t kBlocks = 256;
  constexpr size_t kBlockBytes = 4096;  // below the mmap threshold: taken from an arena
  std::vector<std::unique_ptr<char[]>> blocks;
  for (size_t i = 0; i < kBlocks; ++i) {
    blocks.push_back(std::make_unique<char[]>(kBlockBytes));
    std::memset(blocks.back().get(), 1, kBlockBytes);
  }
  const std::optional<HeapFigures> held = ReadHeapFigures();
  ASSERT_TRUE(held.has_value());
  EXPECT_GE(held->in_use, before->in_use + kBlocks * kBlockBytes);
  blocks.clear();
  const std::optional<HeapFigures> after = ReadHeapFigures();
  ASSERT_TRUE(after.has_value());
  EXPECT_LE(after->in_use + kBlocks * kBlockBytes, held->in_use);
  // What was freed stays with the allocator (below the trim threshold) or went back.
  EXPECT_GE(after->free + (held->in_use - after->in_use), kBlocks * kBlockBytes);
}

TEST(HeapFiguresTest, TheResidentSetCountsTouchedPages) {
  const std::optional<uint64_t> before = ReadResidentBytes();
  ASSERT_TRUE(before.has_value());
  constexpr size_t kBytes = 64 << 20;
  std::unique_ptr<char[]> block(new char[kBytes]);
  std::memset(block.get(), 1, kBytes);
  const std::optional<uint64_t> after = ReadResidentBytes();
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(*after, *before + kBytes / 2);
}

// Blocks freed below one still in use cannot be returned by shrinking the heap's top: they
// stay resident until the free pages are released, and then the resident set drops.
TEST(HeapFiguresTest, ReleasingFreePagesGivesBackBlocksFreedBelowOneInUse) {
  if (!ReadHeapFigures()) GTEST_SKIP() << "a sanitizer's allocator replaces the C library's here";
  constexpr size_t kBlocks = 16384;
  constexpr size_t kBlockBytes = 4096;  // below the mmap threshold: taken from an arena
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(kBlocks);
  for (size_t i = 0; i < kBlocks; ++i) {
    blocks.push_back(std::make_unique<char[]>(kBlockBytes));
    std::memset(blocks.back().get(), 1, kBlockBytes);
  }
  auto kept = std::make_unique<char[]>(kBlockBytes);  // above them
  std::memset(kept.get(), 1, kBlockBytes);
  blocks.clear();
  const std::optional<uint64_t> released = ReleaseFreeHeap();
  ASSERT_TRUE(released.has_value());
  EXPECT_GE(*released, kBlocks * kBlockBytes / 2);
  // Nothing is left to give back right after.
  EXPECT_LT(ReleaseFreeHeap().value_or(0), kBlocks * kBlockBytes / 8);
}

}  // namespace
}  // namespace kubestat
