#include "kubestat/core/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kubestat {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::MatchesRegex;

// Captures lines through the sink and restores the defaults afterwards.
class LogTest : public ::testing::Test {
 protected:
  LogTest() {
    SetLogClock(&clock_);
    SetLogSink([this](std::string_view line) { lines_.emplace_back(line); });
    ConfigureLogging(LogOptions{});
  }
  ~LogTest() override {
    SetLogSink(nullptr);
    SetLogClock(nullptr);
    ConfigureLogging(LogOptions{});
  }

  FakeClock clock_;  // 2026-11-21T10:00:00Z
  std::vector<std::string> lines_;
};

TEST_F(LogTest, WritesTimeLevelFileLineAndMessageOnOneLine) {
  clock_.Advance(milliseconds(250));
  const int line = __LINE__ + 1;
  KLOG(INFO) << "scraped " << 3 << " nodes";
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0], "2026-11-21T10:00:00.25Z INFO log_test.cc:" + std::to_string(line) +
                           "] scraped 3 nodes\n");
}

TEST_F(LogTest, WritesEachSeverityName) {
  KLOG(INFO) << "i";
  KLOG(WARNING) << "w";
  KLOG(ERROR) << "e";
  ASSERT_EQ(lines_.size(), 3u);
  EXPECT_THAT(lines_[0], MatchesRegex(".* INFO log_test\\.cc:[0-9]+\\] i\n"));
  EXPECT_THAT(lines_[1], MatchesRegex(".* WARNING log_test\\.cc:[0-9]+\\] w\n"));
  EXPECT_THAT(lines_[2], MatchesRegex(".* ERROR log_test\\.cc:[0-9]+\\] e\n"));
}

TEST_F(LogTest, NewlinesInsideAMessageAreEscaped) {
  KLOG(INFO) << "a\nb";
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_THAT(lines_[0], MatchesRegex(".*\\] a\\\\nb\n"));
}

TEST_F(LogTest, MinimumSeverityDropsLowerLevelsWithoutEvaluatingArguments) {
  SetMinLogSeverity(LogSeverity::kWarning);
  int evaluated = 0;
  auto count = [&evaluated] { return ++evaluated; };
  KLOG(INFO) << count();
  KLOG(WARNING) << count();
  KLOG(ERROR) << count();
  EXPECT_EQ(evaluated, 2);
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_THAT(lines_[0], MatchesRegex(".* WARNING .*\\] 1\n"));
}

TEST_F(LogTest, VerbosityGatesKvlog) {
  int evaluated = 0;
  auto count = [&evaluated] { return ++evaluated; };
  KVLOG(1) << count();
  EXPECT_EQ(evaluated, 0);
  EXPECT_TRUE(lines_.empty());
  SetLogVerbosity(2);
  EXPECT_EQ(LogVerbosity(), 2);
  KVLOG(1) << "one";
  KVLOG(2) << "two";
  KVLOG(3) << "three";
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_THAT(lines_[0], MatchesRegex(".* INFO .*\\] one\n"));
  EXPECT_THAT(lines_[1], MatchesRegex(".* INFO .*\\] two\n"));
}

TEST_F(LogTest, MacrosAreSingleStatementsInsideIfElse) {
  bool flag = false;
  if (flag)
    KLOG(INFO) << "then";
  else
    KLOG(INFO) << "else";
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_THAT(lines_[0], MatchesRegex(".*\\] else\n"));
}

TEST_F(LogTest, ConcurrentLinesNeverInterleave) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kPerThread; ++i) {
        KLOG(INFO) << "thread " << t << " message " << i << " " << std::string(50, 'x');
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_EQ(lines_.size(), static_cast<size_t>(kThreads * kPerThread));
  std::vector<int> next(kThreads, 0);
  for (const std::string& line : lines_) {
    int t = -1, i = -1;
    ASSERT_EQ(std::sscanf(line.c_str(), "%*s INFO %*s thread %d message %d", &t, &i), 2) << line;
    ASSERT_TRUE(t >= 0 && t < kThreads) << line;
    EXPECT_EQ(i, next[t]++) << "lines of one thread stay in order";
    EXPECT_THAT(line, MatchesRegex(".* x{50}\n")) << line;
  }
}

TEST(LogOptionsTest, ValidateRejectsNegativeVerbosity) {
  EXPECT_TRUE(LogOptions{}.Validate().ok());
  LogOptions bad;
  bad.verbosity = -1;
  EXPECT_EQ(bad.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LogSeverityTest, Names) {
  EXPECT_EQ(LogSeverityName(LogSeverity::kInfo), "INFO");
  EXPECT_EQ(LogSeverityName(LogSeverity::kWarning), "WARNING");
  EXPECT_EQ(LogSeverityName(LogSeverity::kError), "ERROR");
}

}  // namespace
}  // namespace kubestat
