// BridgeOptions: every flag bound, defaults that validate, and a bad flag named.
#include "kubestat/bridge/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "kubestat/core/flags.h"

namespace kubestat::bridge {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Parses `args` into fresh options; the parse must succeed.
BridgeOptions Parsed(std::vector<std::string_view> args) {
  BridgeOptions options;
  FlagSet flags("kubestat-bridge", "test");
  options.RegisterFlags(flags);
  absl::StatusOr<ParsedFlags> parsed = flags.Parse(args);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return options;
}

// Serving needs someone to authenticate and something to allow.
constexpr std::string_view kAuthn = "--anonymous-auth";
constexpr std::string_view kAuthz = "--authorization-rules-file=/rules.yaml";

std::string Error(std::vector<std::string_view> args) {
  args.push_back(kAuthn);
  args.push_back(kAuthz);
  return std::string(Parsed(std::move(args)).Validate().message());
}

TEST(BridgeOptionsTest, DefaultsWithAnApiServerValidate) {
  BridgeOptions options =
      Parsed({"--apiserver-url=https://kubestat-apiserver:443", kAuthn, kAuthz});
  ASSERT_TRUE(options.Validate().ok()) << options.Validate();
  EXPECT_EQ(options.aggregator_address, "127.0.0.1:8081");
  EXPECT_EQ(options.serving.secure_port, 8444);
  const PusherOptions push = options.PushingOptions();
  EXPECT_EQ(push.mode, PushMode::kBulk);
  EXPECT_EQ(push.max_batch_objects, 500u);
  EXPECT_EQ(push.max_in_flight, 4);
  const http::ServerOptions serving = options.ServingOptions();
  EXPECT_TRUE(serving.tls.enabled);
  EXPECT_EQ(serving.port, 8444);
  EXPECT_EQ(serving.health_port, -1);
}

TEST(BridgeOptionsTest, FlagsReachTheComponents) {
  BridgeOptions options =
      Parsed({"--apiserver-url=http://127.0.0.1:8080", "--push-mode=put", "--max-batch-objects=50",
              "--max-in-flight=2", "--retry-base=1s", "--retry-max=1m", "--health-port=9000",
              "--aggregator-address=aggregator:8081", "--aggregator-ca-file=/ca.crt",
              "--aggregator-token-file=/token", "--cert-dir=/tmp/certs", kAuthn, kAuthz});
  ASSERT_TRUE(options.Validate().ok()) << options.Validate();
  const PusherOptions push = options.PushingOptions();
  EXPECT_EQ(push.mode, PushMode::kPut);
  EXPECT_EQ(push.max_batch_objects, 50u);
  EXPECT_EQ(push.max_in_flight, 2);
  EXPECT_EQ(push.retry_base, std::chrono::seconds(1));
  EXPECT_EQ(push.retry_max, std::chrono::minutes(1));
  const WatchClientOptions watch = options.WatchOptions();
  EXPECT_EQ(watch.address, "aggregator:8081");
  EXPECT_EQ(watch.ca_file, "/ca.crt");
  EXPECT_EQ(watch.token_file, "/token");
  EXPECT_EQ(options.ServingOptions().health_port, 9000);
  EXPECT_EQ(options.ServingOptions().tls.cert_dir, "/tmp/certs");
}

TEST(BridgeOptionsTest, ValidateNamesTheBadFlag) {
  EXPECT_THAT(Error({}), StartsWith("--apiserver-url: required"));
  const std::string_view url = "--apiserver-url=https://a:443";
  EXPECT_THAT(Error({url, "--push-mode=post"}), StartsWith("--push-mode: "));
  EXPECT_THAT(Error({url, "--max-batch-objects=0"}), StartsWith("--max-batch-objects: "));
  EXPECT_THAT(Error({url, "--max-batch-bytes=4000000"}), StartsWith("--max-batch-bytes: "));
  EXPECT_THAT(Error({url, "--max-in-flight=0"}), StartsWith("--max-in-flight: "));
  EXPECT_THAT(Error({url, "--retry-base=0s"}), StartsWith("--retry-base: "));
  EXPECT_THAT(Error({url, "--retry-base=10s", "--retry-max=1s"}), StartsWith("--retry-max: "));
  EXPECT_THAT(Error({url, "--max-in-flight=100"}), StartsWith("--max-in-flight: "));
  EXPECT_THAT(Error({url, "--secure-port=70000"}), StartsWith("--secure-port: "));
  EXPECT_THAT(Error({url, "--tls-cert-file=/a.crt"}), HasSubstr("--tls-cert-file"));
  EXPECT_THAT(Error({"--apiserver-url=ftp://x"}), StartsWith("--apiserver-url: "));
  EXPECT_THAT(Error({"--apiserver-kubeconfig=/k", "--apiserver-token-file=/t"}),
              StartsWith("--apiserver-kubeconfig: "));
  EXPECT_THAT(Error({url, "--aggregator-address=10.0.0.1:8081"}),
              AllOf(StartsWith("--aggregator-address"), HasSubstr("not a loopback address")));
}

TEST(BridgeOptionsTest, HelpListsEveryFlagWithItsDefault) {
  BridgeOptions options;
  FlagSet flags("kubestat-bridge", "test");
  options.RegisterFlags(flags);
  const std::string usage = flags.Usage();
  for (const char* flag : {"--aggregator-address", "--aggregator-token-file",
                           "--aggregator-ca-file", "--apiserver-url", "--apiserver-ca-file",
                           "--apiserver-token-file", "--apiserver-kubeconfig", "--push-mode",
                           "--max-batch-objects", "--max-in-flight", "--retry-base", "--retry-max",
                           "--secure-port", "--health-port", "--cert-dir", "--listen-address"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
  EXPECT_THAT(usage, HasSubstr("(default \"127.0.0.1:8081\")"));
  EXPECT_THAT(usage, HasSubstr("(default 8444)"));
}

}  // namespace
}  // namespace kubestat::bridge
