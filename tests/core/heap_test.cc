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

}  // namespace
}  // namespace kubestat
