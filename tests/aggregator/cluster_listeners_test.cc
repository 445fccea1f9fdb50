// DeletionListener: discovery runs while the windows are rebuilt, so a deletion it sees
// then waits for Rebuilt() (the rebuild would otherwise restore what it removed); after
// Rebuilt(), a deletion leaves the windows at once and the served snapshot from its next
// publication.
#include "kubestat/aggregator/cluster_listeners.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kubestat/aggregator/query/aggregator_state.h"
#include "kubestat/testing/aggregator/fake_label_provider.h"
#include "kubestat/testing/aggregator/ingest_scrape_builder.h"
#include "kubestat/testing/aggregator/ready_ingestor.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::aggregator {
namespace {

class DeletionListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    labels_.synced = true;
    absl::StatusOr<testing::ReadyIngestor> ready =
        testing::OpenReadyIngestor(dir_.File("db"), &clock_);
    ASSERT_TRUE(ready.ok()) << ready.status();
    store_ = std::move(ready->store);
    ingestor_ = std::move(ready->ingestor);
    for (size_t n = 0; n < 2; ++n)
      ASSERT_TRUE(ingestor_->Ingest(cluster_.Scrape(n, clock_.Now())).ok());
    state_ = std::make_unique<AggregatorState>(ingestor_.get(), &labels_);
    snapshot_ = std::make_unique<SnapshotSource>(state_.get());
    snapshot_->Refresh();
  }

  bool Listed(const std::string& namespace_name, const std::string& pod) const {
    const std::vector<PodRef> pods = ingestor_->ListPods();
    return std::any_of(pods.begin(), pods.end(), [&](const PodRef& p) {
      return p.namespace_name == namespace_name && p.name == pod;
    });
  }
  bool NodeListed(const std::string& node) const {
    const std::vector<std::string> nodes = ingestor_->ListNodes();
    return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
  }
  static discovery::PodInfo Pod(const std::string& namespace_name, const std::string& name,
                                const std::string& node) {
    discovery::PodInfo pod;
    pod.namespace_name = namespace_name;
    pod.name = name;
    pod.node_name = node;
    return pod;
  }

  ::kubestat::testing::TempDir dir_;
  FakeClock clock_;
  testing::SyntheticCluster cluster_{2, 2, 1, 5};  // pod-<n>-0 in default, pod-<n>-1 in shop
  testing::FakeLabels labels_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Ingestor> ingestor_;
  std::unique_ptr<AggregatorState> state_;
  std::unique_ptr<SnapshotSource> snapshot_;
};

TEST_F(DeletionListenerTest, DeletionsSeenDuringTheRebuildAreCarriedOutWhenItEnds) {
  DeletionListener listener(ingestor_.get(), snapshot_.get());
  listener.OnPodChange(discovery::ChangeType::kDeleted, Pod("default", "pod-0-0", "node-0"));
  discovery::NodeInfo node;
  node.name = "node-1";
  listener.OnNodeChange(discovery::ChangeType::kDeleted, node);
  // A change that is not a deletion is never one, before or after.
  listener.OnPodChange(discovery::ChangeType::kModified, Pod("shop", "pod-0-1", "node-0"));
  EXPECT_TRUE(Listed("default", "pod-0-0"));
  EXPECT_TRUE(NodeListed("node-1"));
  snapshot_->Publish();
  EXPECT_TRUE(snapshot_->GetNode("node-1").has_value());
  EXPECT_TRUE(snapshot_->GetPod("default", "pod-0-0").has_value());

  listener.Rebuilt();
  snapshot_->Publish();  // the removals are served from the next publication
  EXPECT_FALSE(Listed("default", "pod-0-0"));
  EXPECT_FALSE(snapshot_->GetPod("default", "pod-0-0").has_value());
  EXPECT_FALSE(NodeListed("node-1"));
  EXPECT_FALSE(snapshot_->GetNode("node-1").has_value());
  EXPECT_TRUE(Listed("shop", "pod-0-1"));
  EXPECT_TRUE(NodeListed("node-0"));

  // After the rebuild, at once.
  listener.OnPodChange(discovery::ChangeType::kDeleted, Pod("shop", "pod-0-1", "node-0"));
  EXPECT_FALSE(Listed("shop", "pod-0-1"));
  snapshot_->Publish();
  EXPECT_FALSE(snapshot_->GetPod("shop", "pod-0-1").has_value());
}

}  // namespace
}  // namespace kubestat::aggregator
