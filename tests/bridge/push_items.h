// For the bridge's tests: object keys and a readable form of a batch of queue items.
#ifndef KUBESTAT_TESTS_BRIDGE_PUSH_ITEMS_H_
#define KUBESTAT_TESTS_BRIDGE_PUSH_ITEMS_H_

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/bridge/push_queue.h"
#include "kubestat/metrics_api/parse.h"

namespace kubestat::bridge::testing {

// A byte budget no batch of a test reaches.
inline constexpr size_t kAnyBytes = size_t{1} << 30;

inline ObjectKey NodeKey(std::string name) {
  return {metrics_api::Resource::kNodes, "", std::move(name)};
}
inline ObjectKey PodKey(std::string ns, std::string name) {
  return {metrics_api::Resource::kPods, std::move(ns), std::move(name)};
}

// "put node node-1", "delete pod shop/web-1", one per item.
inline std::vector<std::string> Describe(const std::vector<PushItem>& items) {
  std::vector<std::string> out;
  for (const PushItem& item : items) {
    out.push_back((item.op == metrics_api::WriteItem::Op::kPut ? "put " : "delete ") +
                  DescribeKey(item.key));
  }
  return out;
}

// The node a put item carries, read back from its rendered object (a default NodeMetrics,
// failing the test, when it does not read).
inline metrics_api::NodeMetrics PushedNode(const PushItem& item) {
  absl::StatusOr<metrics_api::Parsed<metrics_api::NodeMetrics>> parsed =
      metrics_api::ParseNodeMetrics(item.object_json());
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? parsed->object : metrics_api::NodeMetrics{};
}

}  // namespace kubestat::bridge::testing

#endif  // KUBESTAT_TESTS_BRIDGE_PUSH_ITEMS_H_
