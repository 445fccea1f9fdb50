#include "kubestat/scrapers/node_address.h"

#include <gtest/gtest.h>

namespace kubestat::scrapers {
namespace {

discovery::NodeInfo FullNode() {
  discovery::NodeInfo node;
  node.name = "node-1";
  node.addresses = {{"InternalIP", "10.0.0.5"},
                    {"ExternalIP", "203.0.113.5"},
                    {"Hostname", "node-1"},
                    {"InternalDNS", "node-1.internal"},
                    {"ExternalDNS", "node-1.example.com"}};
  node.kubelet_port = 10255;
  return node;
}

TEST(NodeAddressTest, DefaultPreferenceTakesHostnameFirst) {
  absl::StatusOr<ScrapeTarget> target = SelectKubeletTarget(FullNode(), KubeletAddressOptions());
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->host, "node-1");
  EXPECT_EQ(target->port, 10250);
  EXPECT_EQ(target->node_name, "node-1");
}

TEST(NodeAddressTest, EveryPreferenceOrderPicksItsFirstAvailableType) {
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"Hostname", "node-1"},
      {"InternalDNS", "node-1.internal"},
      {"InternalIP", "10.0.0.5"},
      {"ExternalDNS", "node-1.example.com"},
      {"ExternalIP", "203.0.113.5"}};
  for (const auto& [type, address] : expected) {
    KubeletAddressOptions options;
    options.preferred_address_types = {type};
    absl::StatusOr<ScrapeTarget> target = SelectKubeletTarget(FullNode(), options);
    ASSERT_TRUE(target.ok()) << type;
    EXPECT_EQ(target->host, address) << type;
  }
  // Falls through to the next type when the first is missing.
  discovery::NodeInfo node = FullNode();
  node.addresses = {{"ExternalIP", "203.0.113.5"}, {"InternalIP", "10.0.0.5"}};
  KubeletAddressOptions options;  // Hostname, InternalDNS, InternalIP, …
  EXPECT_EQ(SelectKubeletTarget(node, options)->host, "10.0.0.5");
  options.preferred_address_types = {"ExternalDNS", "ExternalIP", "InternalIP"};
  EXPECT_EQ(SelectKubeletTarget(node, options)->host, "203.0.113.5");
}

TEST(NodeAddressTest, FirstAddressOfATypeWinsWithinThatType) {
  discovery::NodeInfo node;
  node.name = "n";
  node.addresses = {{"InternalIP", "10.0.0.1"}, {"InternalIP", "fd00::1"}};
  KubeletAddressOptions options;
  options.preferred_address_types = {"InternalIP"};
  EXPECT_EQ(SelectKubeletTarget(node, options)->host, "10.0.0.1");
}

TEST(NodeAddressTest, NoMatchingAddressIsNotFoundNamingTheNode) {
  discovery::NodeInfo node;
  node.name = "lonely";
  node.addresses = {{"ExternalIP", "203.0.113.9"}};
  KubeletAddressOptions options;
  options.preferred_address_types = {"InternalIP", "Hostname"};
  absl::StatusOr<ScrapeTarget> target = SelectKubeletTarget(node, options);
  ASSERT_FALSE(target.ok());
  EXPECT_EQ(target.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(target.status().message().find("lonely"), std::string::npos);
}

TEST(NodeAddressTest, NodeStatusPortIsUsedOnlyWhenAskedAndSet) {
  KubeletAddressOptions options;
  options.port = 12345;
  EXPECT_EQ(SelectKubeletTarget(FullNode(), options)->port, 12345);
  options.use_node_status_port = true;
  EXPECT_EQ(SelectKubeletTarget(FullNode(), options)->port, 10255);
  discovery::NodeInfo no_port = FullNode();
  no_port.kubelet_port = 0;
  EXPECT_EQ(SelectKubeletTarget(no_port, options)->port, 12345);
}

TEST(NodeAddressTest, HostPortBracketsIpv6) {
  EXPECT_EQ((ScrapeTarget{"n", "10.0.0.1", 10250}).HostPort(), "10.0.0.1:10250");
  EXPECT_EQ((ScrapeTarget{"n", "fd00::1", 10250}).HostPort(), "[fd00::1]:10250");
}

TEST(NodeAddressTest, ParsesAndValidatesAddressTypes) {
  absl::StatusOr<std::vector<std::string>> types = ParseAddressTypes("InternalIP, Hostname");
  ASSERT_TRUE(types.ok());
  EXPECT_EQ(*types, (std::vector<std::string>{"InternalIP", "Hostname"}));
  EXPECT_FALSE(ParseAddressTypes("InternalIP,Bogus").ok());
  EXPECT_FALSE(ParseAddressTypes("").ok());

  KubeletAddressOptions options;
  EXPECT_TRUE(options.Validate().ok());
  options.preferred_address_types = {"InternalIP", "InternalIP"};
  EXPECT_NE(options.Validate().message().find("--kubelet-preferred-address-types"),
            std::string::npos);
  options = KubeletAddressOptions();
  options.port = 70000;
  EXPECT_NE(options.Validate().message().find("--kubelet-port"), std::string::npos);
}

}  // namespace
}  // namespace kubestat::scrapers
