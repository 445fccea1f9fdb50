// The wired bridge end to end: a fake aggregator's snapshot reaches a fake metrics API
// server through bulk writes, stale objects there are deleted, and the HTTPS health
// endpoints (self-signed in a cert dir) answer: /readyz 503 until the snapshot is pushed,
// then 200, and 503 again while pushes fail; /healthz 200; /metrics shows the bridge's
// counters.
#include "kubestat/bridge/bridge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "fake_aggregator.h"
#include "fake_apiserver.h"
#include "kubestat/http/client.h"
#include "kubestat/testing/metrics_objects.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::bridge {
namespace {

using ::kubestat::bridge::testing::Event;
using ::kubestat::bridge::testing::FakeAggregator;
using ::kubestat::bridge::testing::FakeApiServer;
using ::kubestat::bridge::testing::SnapshotEnd;
using ::kubestat::testing::BaseTime;
using ::kubestat::testing::MakeNode;
using ::kubestat::testing::MakePod;
using ::kubestat::testing::PollUntil;
using metrics_api::Resource;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::chrono::seconds kReady(30);

int Code(http::Client& client, const std::string& path) {
  absl::StatusOr<http::ClientResponse> response = client.Get(path);
  return response.ok() ? response->code : -1;
}

TEST(BridgeTest, PushesTheSnapshotThenTurnsReady) {
  FakeAggregator aggregator;
  FakeApiServer apiserver;
  ::kubestat::testing::TempDir dir;
  apiserver.Hold({Resource::kPods, "shop", "stale"});
  // The API server answers nothing until told, so /readyz can be seen at 503 first.
  std::atomic<bool> open{false};
  apiserver.SetAnswer([&open](const testing::RecordedRequest&) -> std::optional<http::Response> {
    if (open.load()) return std::nullopt;
    http::Response response;
    response.code = 503;
    response.headers.emplace_back("Retry-After", "0");
    return response;
  });
  aggregator.AddScript(
      {{Event(v1::WatchEvent::ADDED, MakeNode("node-a", {}, BaseTime(), 1000)),
        Event(v1::WatchEvent::ADDED, MakePod("shop", "web-1", "node-a", {}, BaseTime(), 100)),
        SnapshotEnd()}});

  BridgeOptions options;
  options.aggregator_address = aggregator.Address();
  options.apiserver_url = apiserver.BaseUrl();
  options.serving.listen_address = "127.0.0.1";
  options.serving.secure_port = 0;
  options.serving.cert_dir = dir.File("certs");
  // /metrics is read with a token the rules allow; health needs none.
  std::ofstream(dir.File("tokens.csv")) << "prom-token,prometheus,1\n";
  std::ofstream(dir.File("rules.yaml"))
      << "rules:\n- users: [prometheus]\n  verbs: [get]\n  nonResourceURLs: [/metrics]\n";
  options.serving.token_auth_file = dir.File("tokens.csv");
  options.serving.authorization_rules_file = dir.File("rules.yaml");
  options.retry_base = std::chrono::milliseconds(1);
  options.retry_max = std::chrono::milliseconds(5);
  options.aggregator_unready_after = std::chrono::milliseconds(1);
  ASSERT_TRUE(options.Validate().ok()) << options.Validate();
  absl::StatusOr<std::unique_ptr<Bridge>> bridge = Bridge::Create(options, RealClock::Get());
  ASSERT_TRUE(bridge.ok()) << bridge.status();
  (*bridge)->Start();
  EXPECT_THAT((*bridge)->BaseUrl(), HasSubstr("https://127.0.0.1:"));

  http::ClientOptions client_options;
  client_options.base_url = (*bridge)->BaseUrl();
  client_options.insecure_skip_tls_verify = true;  // self-signed in the cert dir
  std::unique_ptr<http::Client> health = *http::Client::Create(client_options, RealClock::Get());
  EXPECT_EQ(Code(*health, "/healthz"), 200);
  EXPECT_EQ(Code(*health, "/livez"), 200);
  EXPECT_EQ(Code(*health, "/readyz"), 503);
  EXPECT_TRUE(std::filesystem::exists(dir.File("certs") + "/apiserver.crt"));

  open.store(true);
  ASSERT_TRUE(PollUntil([&] { return Code(*health, "/readyz") == 200; }, kReady));
  EXPECT_TRUE((*bridge)->ready());
  EXPECT_THAT(apiserver.Held(), ElementsAre(ObjectKey{Resource::kNodes, "", "node-a"},
                                            ObjectKey{Resource::kPods, "shop", "web-1"}));
  EXPECT_EQ(Code(*health, "/metrics"), 401);
  absl::StatusOr<http::ClientResponse> metrics =
      health->Get("/metrics", {{"Authorization", "Bearer prom-token"}});
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(metrics->body, HasSubstr("kubestat_bridge_pushed_objects_total{code=\"200\"} 3"));
  EXPECT_THAT(metrics->body, HasSubstr("kubestat_bridge_resync_deletes_total 1"));
  EXPECT_THAT(metrics->body, HasSubstr("kubestat_bridge_queue_depth 0"));

  // The API server goes away while the bridge owes it a change: not ready, saying why,
  // until pushes succeed again.
  open.store(false);
  aggregator.Emit(
      Event(v1::WatchEvent::MODIFIED, MakePod("shop", "web-1", "node-a", {}, BaseTime(), 200)));
  ASSERT_TRUE(PollUntil([&] { return Code(*health, "/readyz") == 503; }, kReady));
  EXPECT_FALSE((*bridge)->ready());
  absl::StatusOr<http::ClientResponse> not_ready = health->Get("/readyz?verbose");
  ASSERT_TRUE(not_ready.ok());
  EXPECT_THAT(not_ready->body,
              HasSubstr("[+]first-snapshot ok\n[+]aggregator ok\n[-]apiserver-push "
                        "failed: pushes to the metrics API server are failing"));
  EXPECT_THAT(health->Get("/readyz")->body, HasSubstr("[-]apiserver-push failed: reason withheld"));
  EXPECT_EQ(Code(*health, "/livez"), 200);  // alive: restarting it would not help
  open.store(true);
  ASSERT_TRUE(PollUntil([&] { return Code(*health, "/readyz") == 200; }, kReady));

  // The aggregator goes away: not ready, saying why; alive all the same.
  aggregator.Shutdown();
  std::string why;
  ASSERT_TRUE(PollUntil(
      [&] {
        absl::StatusOr<http::ClientResponse> ready = health->Get("/readyz?verbose");
        why = ready.ok() ? ready->body : "";
        return why.find(
                   "[-]aggregator failed: no watch stream of the aggregator has read an "
                   "event for ") != std::string::npos;
      },
      kReady))
      << why;
  EXPECT_FALSE((*bridge)->ready());
  EXPECT_EQ(Code(*health, "/livez"), 200);
  (*bridge)->Stop();
}

}  // namespace
}  // namespace kubestat::bridge
