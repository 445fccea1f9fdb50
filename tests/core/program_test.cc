// RunServer: the one main of every kubestat server. --help and a bad command line or option
// end the program before anything starts (0, 2), a start that fails exits with its code and
// message, and a running server is stopped on SIGTERM (sent to the calling thread, which
// RunServer blocks it in) and exits 0, or 1 with the failure its stop reports.
#include "kubestat/core/program.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/core/flags.h"

namespace kubestat {
namespace {

using ::testing::HasSubstr;

struct TestOptions {
  int64_t verbosity = 0;
  int64_t port = 1;
  void RegisterFlags(FlagSet& flags) {
    flags.AddInt64("v", &verbosity, "log verbosity");
    flags.AddInt64("port", &port, "the port");
  }
  absl::Status Validate() const {
    if (port <= 0) return absl::InvalidArgumentError("--port: must be positive");
    return absl::OkStatus();
  }
};

// Runs RunServer<TestOptions> on `args` with `start`; its exit code, and what it printed to
// standard error in *err.
int RunProgram(std::vector<std::string> args,
               const std::function<ServerStart(const TestOptions&)>& start, std::string* err) {
  args.insert(args.begin(), "kubestat-test");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  const int code = RunServer<TestOptions>("kubestat-test", "Tests RunServer.",
                                          static_cast<int>(argv.size()), argv.data(), start);
  (void)::testing::internal::GetCapturedStdout();
  *err = ::testing::internal::GetCapturedStderr();
  return code;
}

// A start that counts its calls and asks for SIGTERM at once, so RunServer's wait returns.
ServerStart StartAndSignal(int* starts, int* stops, absl::Status stop_result) {
  ++*starts;
  pthread_kill(pthread_self(), SIGTERM);
  return ServerStart::Running([stops, stop_result] {
    ++*stops;
    return stop_result;
  });
}

TEST(RunServerTest, HelpAndABadCommandLineOrOptionEndBeforeStarting) {
  int starts = 0;
  auto start = [&](const TestOptions&) {
    ++starts;
    return ServerStart::Failed(absl::InternalError("started"), 3);
  };
  std::string err;
  EXPECT_EQ(RunProgram({"--help"}, start, &err), 0);
  EXPECT_EQ(RunProgram({"--nope"}, start, &err), 2);
  EXPECT_THAT(err, HasSubstr("kubestat-test: "));
  EXPECT_THAT(err, HasSubstr("nope"));
  EXPECT_EQ(RunProgram({"extra"}, start, &err), 2);
  EXPECT_THAT(err, HasSubstr("unexpected argument \"extra\""));
  EXPECT_EQ(RunProgram({"--port=0"}, start, &err), 2);
  EXPECT_THAT(err, HasSubstr("kubestat-test: --port: must be positive"));
  EXPECT_EQ(starts, 0);
}

TEST(RunServerTest, AStartThatFailsExitsWithItsCodeAndMessage) {
  int64_t port_seen = 0;
  std::string err;
  EXPECT_EQ(RunProgram(
                {"--port=7"},
                [&](const TestOptions& options) {
                  port_seen = options.port;
                  return ServerStart::Failed(absl::UnavailableError("cannot bind"), 1);
                },
                &err),
            1);
  EXPECT_EQ(port_seen, 7);
  EXPECT_THAT(err, HasSubstr("kubestat-test: cannot bind"));
  EXPECT_EQ(RunProgram(
                {},
                [](const TestOptions&) {
                  return ServerStart::Failed(absl::InvalidArgumentError("bad file"), 2);
                },
                &err),
            2);
  EXPECT_THAT(err, HasSubstr("kubestat-test: bad file"));
}

TEST(RunServerTest, ARunningServerStopsOnSigtermAndExitsZeroOrOneWithItsFailure) {
  int starts = 0;
  int stops = 0;
  std::string err;
  EXPECT_EQ(
      RunProgram(
          {}, [&](const TestOptions&) { return StartAndSignal(&starts, &stops, absl::OkStatus()); },
          &err),
      0);
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(stops, 1);
  EXPECT_EQ(RunProgram(
                {},
                [&](const TestOptions&) {
                  return StartAndSignal(&starts, &stops,
                                        absl::FailedPreconditionError("the store failed"));
                },
                &err),
            1);
  EXPECT_EQ(stops, 2);
  EXPECT_THAT(err, HasSubstr("kubestat-test: the store failed"));
}

// Parts as a server's T::Create makes them.
struct FakeParts {
  int* starts;
  int* stops;
  void Start() { ++*starts; }
  void Stop() { ++*stops; }
};

TEST(StartCreatedTest, StartsWhatWasCreatedStopsItAndPassesOnAFailedCreateWithItsCode) {
  int starts = 0;
  int stops = 0;
  ServerStart started = StartCreated(absl::StatusOr<std::unique_ptr<FakeParts>>(
                                         std::make_unique<FakeParts>(FakeParts{&starts, &stops})),
                                     2);
  ASSERT_TRUE(started.stop);
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(stops, 0);
  EXPECT_TRUE(started.stop().ok());
  EXPECT_EQ(stops, 1);
  ServerStart failed = StartCreated(
      absl::StatusOr<std::unique_ptr<FakeParts>>(absl::UnavailableError("no socket")), 1);
  EXPECT_FALSE(failed.stop);
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(failed.error.message(), "no socket");
}

}  // namespace
}  // namespace kubestat
