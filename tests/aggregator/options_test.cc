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
  args.insert(args.begin(), "--storage-dir=/tmp/kubestat-options-test");
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
  EXPECT_EQ(bare.Validate().message(), "--storage-dir: required (where RocksDB keeps the day)");
}

TEST(AggregatorOptionsTest, EachBadFlagIsNamedInItsError) {
  EXPECT_EQ(ValidationError({"--port=0"}), "--port: 0 is not a port");
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
}

TEST(AggregatorOptionsTest, ComponentOptionsFollowTheFlags) {
  AggregatorOptions options =
      Parsed({"--windows=1h,10s", "--kubelet-port=10255", "--metric-resolution=15s",
              "--kubelet-endpoint=resource", "--storage-cache-mib=8", "--retention=30h"});
  ASSERT_TRUE(options.Validate().ok());
  EXPECT_EQ(options.Windows(),
            (std::vector<Duration>{std::chrono::seconds(10), std::chrono::hours(1)}));
  EXPECT_EQ(options.IngestionOptions().engine.windows, options.Windows());
  EXPECT_EQ(options.AddressOptions().port, 10255);
  EXPECT_EQ(options.SchedulingOptions().resolution, std::chrono::seconds(15));
  EXPECT_EQ(options.ClientOptions().endpoint, scrapers::KubeletEndpoint::kResourceMetrics);
  EXPECT_EQ(options.StorageOptions().block_cache_bytes, size_t{8} << 20);
  EXPECT_EQ(options.StorageOptions().retention, std::chrono::hours(30));
}

}  // namespace
}  // namespace kubestat::aggregator
