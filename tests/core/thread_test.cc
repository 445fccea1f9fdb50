#include "kubestat/core/thread.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace kubestat {
namespace {

TEST(ThreadNameTest, NamesTheCallingThreadOnlyAndCutsAtTheKernelsLimit) {
  const std::string before = CurrentThreadName();
  std::string inside;
  std::string cut;
  std::thread([&] {
    NameThisThread("publisher");
    inside = CurrentThreadName();
    NameThisThread("a-name-longer-than-fifteen-bytes");
    cut = CurrentThreadName();
  }).join();
  EXPECT_EQ(inside, "publisher");
  EXPECT_EQ(cut, "a-name-longer-t");
  EXPECT_EQ(CurrentThreadName(), before);
}

}  // namespace
}  // namespace kubestat
