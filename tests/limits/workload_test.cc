#include "kubestat/limits/workload.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace kubestat::limits {
namespace {

using Labels = std::map<std::string, std::string>;

TEST(WorkloadTest, ReplicaSetWithTemplateHashMapsToItsDeployment) {
  EXPECT_EQ(
      WorkloadOf("web-7d4b9c-x2x", "ReplicaSet", "web-7d4b9c", {{"pod-template-hash", "7d4b9c"}}),
      (Workload{"Deployment", "web"}));
  // Without the label, a suffix in Kubernetes' hash alphabet is enough.
  EXPECT_EQ(WorkloadOf("api-v2-5f6c7b8d9-abcde", "ReplicaSet", "api-v2-5f6c7b8d9", {}),
            (Workload{"Deployment", "api-v2"}));
}

TEST(WorkloadTest, OtherReplicaSetsAndControllersAreTheirOwnWorkload) {
  // The label names another hash: a ReplicaSet made by hand.
  EXPECT_EQ(WorkloadOf("rs-abcde-1", "ReplicaSet", "rs-abcde", {{"pod-template-hash", "zzzzz"}}),
            (Workload{"ReplicaSet", "rs-abcde"}));
  // "backend" has vowels: no template hash.
  EXPECT_EQ(WorkloadOf("my-backend-q", "ReplicaSet", "my-backend", {}),
            (Workload{"ReplicaSet", "my-backend"}));
  EXPECT_EQ(WorkloadOf("db-0", "StatefulSet", "db", {}), (Workload{"StatefulSet", "db"}));
  EXPECT_EQ(WorkloadOf("agent-q7x", "DaemonSet", "agent", {}), (Workload{"DaemonSet", "agent"}));
  EXPECT_EQ(WorkloadOf("migrate-x", "Job", "migrate", {}), (Workload{"Job", "migrate"}));
  EXPECT_EQ(WorkloadOf("debug", "", "", {}), (Workload{"Pod", "debug"}));
}

TEST(WorkloadTest, NamesSplitBackIntoTheirParts) {
  EXPECT_EQ(RecommendationName({"Deployment", "web.v2"}, "app"), "deployment.web.v2.app");
  std::optional<RecommendationRef> ref = ParseRecommendationName("deployment.web.v2.app");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->kind_lower, "deployment");
  EXPECT_EQ(ref->workload, "web.v2");
  EXPECT_EQ(ref->container, "app");
  EXPECT_FALSE(ParseRecommendationName("deployment.web").has_value());
  EXPECT_FALSE(ParseRecommendationName("nodots").has_value());
  EXPECT_FALSE(ParseRecommendationName(".web.app").has_value());
}

}  // namespace
}  // namespace kubestat::limits
