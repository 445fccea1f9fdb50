#include "kubestat/aggregator/options.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "kubestat/core/flags.h"

namespace kubestat::aggregator {
namespace {

// Options parsed from `args` (with --storage-dir set unless the args name it).
AggregatorOptions Parsed(std::vector<std::string_view> args) {
  AggregatorOptions options;
  FlagSet flags("kubestat-aggregator", "test");
  options.RegisterFlags(flags);
  args.insert(args.begin(), {"--storage-dir=/tmp/kubestat-options-test",
                             "--token-auth-file=/tmp/kubestat-options-test/tokens.csv",
                             "--authorization-rules-file=/tmp/kubestat-options-test/rules.yaml"});
  absl::StatusOr<ParsedFlags> parsed = flags.Parse(args);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return options;
}

std::string ValidationError(std::vector<std::string_view> args) {
  absl::Status s = Parsed(std::move(args)).Validate();
  return s.ok() ? "" : std::string(s.message());
}

TEST(AggregatorOptionsTest, DefaultsAreValidOnceTheStoreDirectoryIsNamed) {
  EXPECT_EQ(ValidationError({}), "");
  AggregatorOptions bare;
  bare.serving.token_auth_file = "/tokens.csv";
  bare.serving.authorization_rules_file = "/rules.yaml";
  EXPECT_EQ(bare.Validate().message(), "--storage-dir: required (where RocksDB keeps the day)");
}

TEST(AggregatorOptionsTest, ThereIsNoDefaultWithoutAuthenticationOrAuthorization) {
  AggregatorOptions options;
  options.storage_dir = "/tmp/kubestat-options-test";
  options.serving.authorization_rules_file = "/tmp/rules.yaml";
  EXPECT_EQ(options.Validate().message().substr(0, 52),
            "--client-ca-file, --requestheader-client-ca-file, --");
  options.serving.anonymous_auth = true;
  options.serving.authorization_rules_file = "";
  EXPECT_EQ(options.Validate().message().substr(0, 55),
            "--authorization-rules-file, --authorization-kubeconfig:");
  options.serving.authorization_rules_file = "/tmp/rules.yaml";
  EXPECT_TRUE(options.Validate().ok());
}

TEST(AggregatorOptionsTest, TheRestServerIsHttpsWithTheFlagsTlsAndPlainOnlyWhenAsked) {
  AggregatorOptions options = Parsed({"--secure-port=0", "--client-ca-file=/ca.crt",
                                      "--requestheader-client-ca-file=/proxy.crt",
                                      "--tls-min-version=VersionTLS13", "--health-port=9000"});
  ASSERT_TRUE(options.Validate().ok()) << options.Validate();
  RestServerOptions rest = options.RestOptions();
  EXPECT_TRUE(rest.secure.tls.enabled);
  EXPECT_EQ(rest.secure.tls.min_version, "VersionTLS13");
  EXPECT_EQ(rest.secure.health_port, 9000);
  ASSERT_EQ(rest.secure.tls.client_cas.size(), 2u);
  EXPECT_EQ(rest.secure.tls.client_cas[0].name, "client-ca");
  EXPECT_EQ(rest.secure.tls.client_cas[1].file, "/proxy.crt");
  EXPECT_FALSE(rest.insecure.has_value());
  EXPECT_TRUE(options.serving.AuthenticationOptions().front_proxy.enabled);
  EXPECT_TRUE(options.serving.AuthenticationOptions().client_certificates);
  AggregatorOptions plain = Parsed({"--port=8080"});
  ASSERT_TRUE(plain.Validate().ok());
  ASSERT_TRUE(plain.RestOptions().insecure.has_value());
  EXPECT_FALSE(plain.RestOptions().insecure->tls.enabled);
  EXPECT_EQ(plain.RestOptions().insecure->port, 8080);
}

TEST(AggregatorOptionsTest, EachBadFlagIsNamedInItsError) {
  EXPECT_EQ(ValidationError({"--port=-1"}), "--port: -1 is not a port");
  EXPECT_EQ(ValidationError({"--secure-port=65536"}), "--secure-port: 65536 is not a port");
  EXPECT_EQ(ValidationError({"--grpc-port=70000"}), "--grpc-port: 70000 is not a port");
  EXPECT_EQ(ValidationError({"--kubelet-timeout=10s"}),
            "--kubelet-timeout: must be shorter than --metric-resolution (10s >= 10s)");
  EXPECT_EQ(ValidationError({"--gzip-min-bytes=-1"}), "--gzip-min-bytes: must not be negative");
  EXPECT_EQ(ValidationError({"--kubelet-max-response-bytes=0"}),
            "--kubelet-max-response-bytes: must be positive");
  EXPECT_EQ(ValidationError({"--storage-cache-mib=0"}), "--storage-cache-mib: must be at least 1");
  EXPECT_EQ(ValidationError({"--retention=1h"}),
            "--retention: must be at least the longest window (1d)");
  EXPECT_EQ(ValidationError({"--kubelet-endpoint=stats"}).rfind("--kubelet-endpoint: ", 0), 0u);
  EXPECT_EQ(ValidationError({"--windows=10s,x"}).rfind("--windows: ", 0), 0u);
  EXPECT_EQ(ValidationError({"--max-concurrent-scrapes=0"}).rfind("--metric-resolution/", 0), 0u);
  EXPECT_EQ(ValidationError({"--max-sample-age=0s"}), "--max-sample-age: must be positive");
  EXPECT_EQ(ValidationError({"--max-sample-ahead=-1m"}), "--max-sample-ahead: must be positive");
}

TEST(AggregatorOptionsTest, ComponentOptionsFollowTheFlags) {
  AggregatorOptions options =
      Parsed({"--windows=1h,10s", "--kubelet-port=10255", "--metric-resolution=15s",
              "--kubelet-endpoint=resource", "--storage-cache-mib=8", "--retention=30h",
              "--max-sample-age=3m", "--max-sample-ahead=45s"});
  ASSERT_TRUE(options.Validate().ok());
  EXPECT_EQ(options.Windows(),
            (std::vector<Duration>{std::chrono::seconds(10), std::chrono::hours(1)}));
  EXPECT_EQ(options.IngestionOptions().engine.windows, options.Windows());
  EXPECT_EQ(options.AddressOptions().port, 10255);
  EXPECT_EQ(options.SchedulingOptions().resolution, std::chrono::seconds(15));
  EXPECT_EQ(options.SchedulingOptions().sample_times.max_age, std::chrono::minutes(3));
  EXPECT_EQ(options.SchedulingOptions().sample_times.max_ahead, std::chrono::seconds(45));
  EXPECT_EQ(options.ClientOptions().endpoint, scrapers::KubeletEndpoint::kResourceMetrics);
  EXPECT_EQ(options.StorageOptions().block_cache_bytes, size_t{8} << 20);
  EXPECT_EQ(options.StorageOptions().retention, std::chrono::hours(30));
}

TEST(AggregatorOptionsTest, NodeAgentsAreOffByDefaultAndTheirFlagsNeedThePort) {
  AggregatorOptions defaults = Parsed({});
  EXPECT_EQ(defaults.node_agent_port, 0);
  EXPECT_EQ(ValidationError({"--node-agent-port=70000"}),
            "--node-agent-port: 70000 is not a port (0: off)");
  EXPECT_EQ(ValidationError({"--node-agent-insecure-tls"}).rfind("--node-agent-certificate-", 0),
            0u);
  AggregatorOptions options =
      Parsed({"--node-agent-port=10266", "--node-agent-certificate-authority=/agents.crt",
              "--kubelet-token-file=/kubelet.token", "--kubelet-timeout=3s"});
  // The CA file is read when the client is made, not by Validate().
  ASSERT_TRUE(options.Validate().ok()) << options.Validate();
  const scrapers::KubeletClientOptions agents = options.NodeAgentClientOptions();
  EXPECT_EQ(agents.scheme, "https");
  EXPECT_EQ(agents.ca_file, "/agents.crt");
  EXPECT_EQ(agents.token_file, "/kubelet.token");  // the kubelets' identity by default
  EXPECT_EQ(agents.timeout, std::chrono::seconds(3));
  EXPECT_EQ(Parsed({"--node-agent-port=1", "--node-agent-token-file=/sa.token"})
                .NodeAgentClientOptions()
                .token_file,
            "/sa.token");
}

}  // namespace
}  // namespace kubestat::aggregator
