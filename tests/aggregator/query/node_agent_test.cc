// The aggregator's side of the node agents: the status each answer gives a node, the store of
// answers, the scraper that reads an agent beside each kubelet (against a real HTTP server
// standing in for the agent), and the query views that carry what the agents told.
#include "kubestat/aggregator/query/node_agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/query/aggregator_state.h"
#include "kubestat/http/server.h"
#include "kubestat/testing/aggregator/fake_label_provider.h"
#include "kubestat/testing/aggregator/ingest_scrape_builder.h"
#include "kubestat/testing/aggregator/ready_ingestor.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::aggregator {
namespace {

using metrics_api::MethodStatus;
using metrics_api::NodePodResources;
using metrics_api::PodAssignment;
using metrics_api::ResourceSet;
using std::chrono::seconds;
using ::testing::HasSubstr;

const Timestamp kT0 = Timestamp(std::chrono::hours(24 * 20000));

MethodStatus Ok() { return MethodStatus{"OK", "", kT0, kT0}; }

// What an agent on `node` answers: two pods, one pinned.
NodePodResources Doc(const std::string& node) {
  NodePodResources doc;
  doc.node_name = node;
  doc.time = kT0;
  doc.list = Ok();
  doc.allocatable_call = Ok();
  doc.get = Ok();
  doc.allocatable = ResourceSet{{1, 2, 3, 4, 5, 6, 7}, {{"memory", uint64_t{8} << 30, {0}}}, {}};
  doc.pods = std::vector<PodAssignment>{
      {"pod-0-0", "default", {}, {{"c0", ResourceSet{{2, 3}, {}, {}}, {}}, {"c1", {}, {}}}},
      {"pod-0-1", "shop", {}, {{"c0", {}, {}}}}};
  return doc;
}

TEST(PodResourcesStatusTest, EachAnswerGivesItsState) {
  NodePodResources doc = Doc("n");
  EXPECT_EQ(PodResourcesStatusOf(&doc, "", {}).state, "Complete");
  EXPECT_EQ(PodResourcesStatusOf(&doc, "", {}).time, kT0);

  doc.allocatable_call = MethodStatus{"Unimplemented", "unknown method", kT0, std::nullopt};
  doc.allocatable.reset();
  metrics_api::PodResourcesStatus old = PodResourcesStatusOf(&doc, "", {});
  EXPECT_EQ(old.state, "AllocatableUnsupported");
  EXPECT_THAT(old.message, HasSubstr("does not implement GetAllocatableResources"));

  doc.allocatable_call = MethodStatus{"DeadlineExceeded", "slow", kT0, std::nullopt};
  metrics_api::PodResourcesStatus partial = PodResourcesStatusOf(&doc, "", {});
  EXPECT_EQ(partial.state, "Partial");
  EXPECT_THAT(partial.message, HasSubstr("GetAllocatableResources: DeadlineExceeded (slow)"));

  NodePodResources none;
  none.list = MethodStatus{"Unavailable", "no socket", kT0, std::nullopt};
  none.allocatable_call = none.list;
  EXPECT_EQ(PodResourcesStatusOf(&none, "", {}).state, "Unavailable");
  EXPECT_THAT(PodResourcesStatusOf(&none, "", {}).message, HasSubstr("List: Unavailable"));

  const NodePodResources complete = Doc("n");
  metrics_api::PodResourcesStatus stale =
      PodResourcesStatusOf(&complete, "timeout: no answer", kT0 + seconds(30));
  EXPECT_EQ(stale.state, "Stale");
  EXPECT_THAT(stale.message, HasSubstr("timeout: no answer"));
  EXPECT_EQ(stale.time, kT0);  // when the answer kept was read
  metrics_api::PodResourcesStatus never =
      PodResourcesStatusOf(nullptr, "connect: refused", kT0 + seconds(30));
  EXPECT_EQ(never.state, "Unavailable");
  EXPECT_EQ(never.time, kT0 + seconds(30));
}

TEST(NodeResourcesStoreTest, KeepsTheNewestAnswerAndWhyTheNextFailed) {
  NodeResourcesStore store;
  EXPECT_FALSE(store.Node("node-0"));
  store.Update("node-0", Doc("node-0"));
  std::optional<NodeTopology> node = store.Node("node-0");
  ASSERT_TRUE(node);
  ASSERT_TRUE(node->allocatable);
  EXPECT_EQ(node->allocatable->cpu_ids.size(), 7u);
  EXPECT_EQ(node->status.state, "Complete");
  std::optional<PodAssignment> pod = store.Pod("node-0", "default", "pod-0-0");
  ASSERT_TRUE(pod);
  EXPECT_EQ(pod->containers[0].exclusive.cpu_ids, (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(store.Pod("node-0", "shop", "pod-0-0"));
  EXPECT_FALSE(store.Pod("node-1", "default", "pod-0-0"));

  store.Failed("node-0", "http_403: forbidden", kT0 + seconds(10));
  node = store.Node("node-0");
  EXPECT_EQ(node->status.state, "Stale");
  EXPECT_TRUE(node->allocatable);  // the earlier answer is kept
  EXPECT_TRUE(store.Pod("node-0", "default", "pod-0-0"));
  store.Update("node-0", Doc("node-0"));
  EXPECT_EQ(store.Node("node-0")->status.state, "Complete");
  store.Remove("node-0");
  EXPECT_FALSE(store.Node("node-0"));
}

// A kubelet scraper that answers what the test says, and counts calls.
class FakeKubelet : public scrapers::NodeScraper {
 public:
  absl::StatusOr<scrapers::NodeScrape> Scrape(const scrapers::ScrapeTarget& target) override {
    ++calls;
    if (!ok) return absl::UnavailableError("kubelet down");
    scrapers::NodeScrape scrape;
    scrape.node_name = target.node_name;
    return scrape;
  }
  std::atomic<int> calls{0};
  std::atomic<bool> ok{true};
};

class NodeAgentScraperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    http::ServerOptions options;
    options.address = "127.0.0.1";
    options.port = 0;
    options.tls.enabled = false;
    server_ = std::make_unique<http::Server>(
        options,
        [this](const http::Request& request) {
          std::lock_guard<std::mutex> lock(mu_);
          ++requests_;
          last_path_ = std::string(request.path);
          last_auth_ = std::string(request.Header("Authorization").value_or(""));
          return answer_;
        },
        server_registry_, RealClock::Get());
    ASSERT_TRUE(server_->Start().ok());
    dir_.Write("token", "aggregator-token\n");
    scrapers::KubeletClientOptions client;
    client.scheme = "http";
    client.token_file = dir_.File("token");
    client.timeout = seconds(2);
    agents_ = *scrapers::KubeletClient::Create(client);
    scraper_ = std::make_unique<NodeAgentScraper>(kubelet_, *agents_, server_->port(), store_,
                                                  RealClock::Get(), registry_);
    Answer(200, metrics_api::RenderNodePodResources(Doc("node-0")));
  }

  void Answer(int code, std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    answer_ = http::Response{};
    answer_.code = code;
    answer_.body = std::move(body);
  }

  double Metric(const std::string& series) {
    const std::string text = prometheus::TextSerializer().Serialize(registry_.Collect());
    const size_t at = text.find("\n" + series + " ");
    return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 2));
  }

  absl::StatusOr<scrapers::NodeScrape> Scrape() {
    // The kubelet's own port differs from the agent's: the scraper uses its agent port.
    return scraper_->Scrape(scrapers::ScrapeTarget{"node-0", "127.0.0.1", 1});
  }

  ::kubestat::testing::TempDir dir_;
  prometheus::Registry server_registry_;
  prometheus::Registry registry_;
  std::mutex mu_;
  http::Response answer_;
  int requests_ = 0;
  std::string last_path_;
  std::string last_auth_;
  std::unique_ptr<http::Server> server_;
  FakeKubelet kubelet_;
  NodeResourcesStore store_;
  std::unique_ptr<scrapers::KubeletClient> agents_;
  std::unique_ptr<NodeAgentScraper> scraper_;
};

TEST_F(NodeAgentScraperTest, ReadsTheAgentBesideTheKubeletWithTheToken) {
  absl::StatusOr<scrapers::NodeScrape> scrape = Scrape();
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->node_name, "node-0");
  EXPECT_EQ(last_path_, "/podresources");
  EXPECT_EQ(last_auth_, "Bearer aggregator-token");
  std::optional<NodeTopology> node = store_.Node("node-0");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->status.state, "Complete");
  EXPECT_EQ(Metric("kubestat_node_agent_scrapes_total{reason=\"none\",result=\"success\"}"), 1);
}

TEST_F(NodeAgentScraperTest, AgentFailuresAreCountedByReasonAndNeverFailTheNode) {
  Answer(403, R"({"kind":"Status","code":403})");
  ASSERT_TRUE(Scrape().ok());
  EXPECT_EQ(Metric("kubestat_node_agent_scrapes_total{reason=\"http_403\",result=\"failure\"}"), 1);
  EXPECT_EQ(store_.Node("node-0")->status.state, "Unavailable");
  EXPECT_THAT(store_.Node("node-0")->status.message, HasSubstr("http_403"));

  Answer(200, "not json");
  ASSERT_TRUE(Scrape().ok());
  EXPECT_EQ(Metric("kubestat_node_agent_scrapes_total{reason=\"decode\",result=\"failure\"}"), 1);

  Answer(200, metrics_api::RenderNodePodResources(Doc("node-7")));
  ASSERT_TRUE(Scrape().ok());
  EXPECT_EQ(Metric("kubestat_node_agent_scrapes_total{reason=\"wrong_node\",result=\"failure\"}"),
            1);
  EXPECT_THAT(store_.Node("node-0")->status.message, HasSubstr("serves node \"node-7\""));

  // An answer, then a failure: the answer is kept and called stale.
  Answer(200, metrics_api::RenderNodePodResources(Doc("node-0")));
  ASSERT_TRUE(Scrape().ok());
  server_->Stop();
  ASSERT_TRUE(Scrape().ok());
  EXPECT_EQ(Metric("kubestat_node_agent_scrapes_total{reason=\"connect\",result=\"failure\"}"), 1);
  EXPECT_EQ(store_.Node("node-0")->status.state, "Stale");
  EXPECT_TRUE(store_.Pod("node-0", "default", "pod-0-0"));
}

TEST_F(NodeAgentScraperTest, ANodeWhoseKubeletFailedIsNotAsked) {
  kubelet_.ok = false;
  absl::StatusOr<scrapers::NodeScrape> scrape = Scrape();
  EXPECT_EQ(scrape.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(requests_, 0);
  EXPECT_EQ(
      Metric("kubestat_node_agent_scrapes_total{reason=\"kubelet_failed\",result=\"skipped\"}"), 1);
  EXPECT_FALSE(store_.Node("node-0"));
}

// The query views: allocatable and status on the node, exclusive resources on the pods and
// containers its agent reported.
TEST(AggregatorStateTopologyTest, ViewsCarryWhatTheAgentsTold) {
  ::kubestat::testing::TempDir dir;
  FakeClock clock;
  absl::StatusOr<testing::ReadyIngestor> ready = testing::OpenReadyIngestor(dir.File("db"), &clock);
  ASSERT_TRUE(ready.ok()) << ready.status();
  Ingestor* ingestor = ready->ingestor.get();
  testing::SyntheticCluster cluster(2, 2, 2, 3);
  for (int i = 0; i < 2; ++i) {
    for (size_t n = 0; n < 2; ++n) {
      ASSERT_TRUE(ingestor->Ingest(cluster.Scrape(n, kT0 + seconds(10 * i))).ok());
    }
  }
  testing::FakeLabels labels;
  labels.synced = true;
  NodeResourcesStore topology;
  topology.Update("node-0", Doc("node-0"));
  AggregatorState state(ingestor, &labels, &topology);

  std::optional<metrics_api::NodeMetrics> node = state.GetNode("node-0");
  ASSERT_TRUE(node);
  ASSERT_TRUE(node->allocatable);
  EXPECT_EQ(node->allocatable->cpu_ids.size(), 7u);
  ASSERT_TRUE(node->pod_resources);
  EXPECT_EQ(node->pod_resources->state, "Complete");
  std::optional<metrics_api::NodeMetrics> other = state.GetNode("node-1");
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->allocatable);
  EXPECT_FALSE(other->pod_resources);

  std::optional<metrics_api::PodMetrics> pod = state.GetPod("default", "pod-0-0");
  ASSERT_TRUE(pod);
  ASSERT_EQ(pod->containers.size(), 2u);
  EXPECT_EQ(pod->containers[0].exclusive->cpu_ids, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(pod->containers[1].exclusive.empty());
  // A pod of a node without an agent answer has none.
  EXPECT_TRUE(state.GetPod("default", "pod-1-0")->containers[0].exclusive.empty());
  // Without a provider (agents off) nothing changes.
  AggregatorState plain(ingestor, &labels);
  EXPECT_FALSE(plain.GetNode("node-0")->allocatable);
}

}  // namespace
}  // namespace kubestat::aggregator
