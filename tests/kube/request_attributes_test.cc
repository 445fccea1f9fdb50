#include "kubestat/kube/request_attributes.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"

namespace kubestat::kube {
namespace {

RequestAttributes Parse(std::string_view method, std::string_view path,
                        std::string_view query = "") {
  absl::StatusOr<RequestAttributes> attrs = ParseRequestAttributes(method, path, query);
  EXPECT_TRUE(attrs.ok()) << attrs.status();
  return attrs.ok() ? *attrs : RequestAttributes{};
}

RequestAttributes Resource(std::string verb, std::string path, std::string group,
                           std::string version, std::string ns, std::string resource,
                           std::string name = "", std::string subresource = "") {
  RequestAttributes a;
  a.resource_request = true;
  a.verb = std::move(verb);
  a.path = std::move(path);
  a.api_group = std::move(group);
  a.api_version = std::move(version);
  a.namespace_name = std::move(ns);
  a.resource = std::move(resource);
  a.name = std::move(name);
  a.subresource = std::move(subresource);
  return a;
}

RequestAttributes NonResource(std::string verb, std::string path) {
  RequestAttributes a;
  a.verb = std::move(verb);
  a.path = std::move(path);
  return a;
}

TEST(RequestAttributesTest, ListNodesIsClusterScoped) {
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes"),
            Resource("list", "/apis/metrics.k8s.io/v1beta1/nodes", "metrics.k8s.io", "v1beta1", "",
                     "nodes"));
}

TEST(RequestAttributesTest, GetOneNode) {
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes/n1"),
            Resource("get", "/apis/metrics.k8s.io/v1beta1/nodes/n1", "metrics.k8s.io", "v1beta1",
                     "", "nodes", "n1"));
}

TEST(RequestAttributesTest, ListPodsInNamespace) {
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods"),
            Resource("list", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods", "metrics.k8s.io",
                     "v1beta1", "ns", "pods"));
}

TEST(RequestAttributesTest, GetOnePodInNamespace) {
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1/namespaces/ns/pods/p"),
            Resource("get", "/apis/metrics.k8s.io/v1/namespaces/ns/pods/p", "metrics.k8s.io", "v1",
                     "ns", "pods", "p"));
}

TEST(RequestAttributesTest, ListPodsOfAllNamespacesHasNoNamespace) {
  EXPECT_EQ(Parse("GET", "/apis/metrics/v1alpha1/pods"),
            Resource("list", "/apis/metrics/v1alpha1/pods", "metrics", "v1alpha1", "", "pods"));
}

TEST(RequestAttributesTest, WatchQueryValues) {
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "watch=1").verb, "watch");
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "watch=true").verb, "watch");
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "a=b&watch=TRUE").verb, "watch");
  // Kubernetes decodes any value but "0"/"false" (and even an empty one) as true.
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "watch=").verb, "watch");
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "watch=0").verb, "list");
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "watch=False").verb, "list");
  // The first value counts.
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "watch=0&watch=1").verb, "list");
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods", "watch=1"),
            Resource("watch", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods", "metrics.k8s.io",
                     "v1beta1", "ns", "pods"));
}

TEST(RequestAttributesTest, WatchOnANamedObjectStaysGet) {
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes/n1", "watch=1").verb, "get");
}

TEST(RequestAttributesTest, WatchPathSegmentIsTheVerb) {
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/watch/namespaces/ns/pods/p"),
            Resource("watch", "/apis/metrics.k8s.io/v1beta1/watch/namespaces/ns/pods/p",
                     "metrics.k8s.io", "v1beta1", "ns", "pods", "p"));
}

TEST(RequestAttributesTest, WritesMapToTheirVerbs) {
  const std::string pod = "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/p";
  const std::string pods = "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods";
  EXPECT_EQ(Parse("POST", pods),
            Resource("create", pods, "metrics.k8s.io", "v1beta1", "ns", "pods"));
  EXPECT_EQ(Parse("PUT", pod),
            Resource("update", pod, "metrics.k8s.io", "v1beta1", "ns", "pods", "p"));
  EXPECT_EQ(Parse("PATCH", pod).verb, "patch");
  EXPECT_EQ(Parse("DELETE", pod),
            Resource("delete", pod, "metrics.k8s.io", "v1beta1", "ns", "pods", "p"));
  EXPECT_EQ(Parse("DELETE", pods).verb, "deletecollection");
  EXPECT_EQ(Parse("HEAD", pod).verb, "get");
  EXPECT_EQ(Parse("OPTIONS", pod).verb, "");
}

TEST(RequestAttributesTest, SubresourceAndCoreGroup) {
  EXPECT_EQ(Parse("GET", "/api/v1/namespaces/ns/pods/p/status"),
            Resource("get", "/api/v1/namespaces/ns/pods/p/status", "", "v1", "ns", "pods", "p",
                     "status"));
  EXPECT_EQ(Parse("GET", "/api/v1/namespaces/ns"),
            Resource("get", "/api/v1/namespaces/ns", "", "v1", "ns", "namespaces", "ns"));
  EXPECT_EQ(Parse("PUT", "/api/v1/namespaces/ns/finalize"),
            Resource("update", "/api/v1/namespaces/ns/finalize", "", "v1", "ns", "namespaces", "ns",
                     "finalize"));
}

TEST(RequestAttributesTest, FieldSelectorOnNameNamesTheObject) {
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods",
                  "fieldSelector=metadata.name%3Dweb-1"),
            Resource("list", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods", "metrics.k8s.io",
                     "v1beta1", "ns", "pods", "web-1"));
  EXPECT_EQ(
      Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "fieldSelector=metadata.name!%3Dn").name,
      "");
}

TEST(RequestAttributesTest, DiscoveryAndOtherPathsAreNonResource) {
  EXPECT_EQ(Parse("GET", "/api"), NonResource("get", "/api"));
  EXPECT_EQ(Parse("GET", "/api/v1"), NonResource("get", "/api/v1"));
  EXPECT_EQ(Parse("GET", "/apis"), NonResource("get", "/apis"));
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io"), NonResource("get", "/apis/metrics.k8s.io"));
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/"),
            NonResource("get", "/apis/metrics.k8s.io/v1beta1/"));
  EXPECT_EQ(Parse("GET", "/metrics"), NonResource("get", "/metrics"));
  EXPECT_EQ(Parse("GET", "/healthz", "verbose=1"), NonResource("get", "/healthz"));
  EXPECT_EQ(Parse("POST", "/metrics"), NonResource("post", "/metrics"));
  EXPECT_EQ(Parse("PUT", "/a/b/c/d"), NonResource("put", "/a/b/c/d"));
  EXPECT_EQ(Parse("DELETE", "/"), NonResource("delete", "/"));
}

TEST(RequestAttributesTest, PercentDecodesSegmentsAndQuery) {
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/n%73/pods/p%2D1"),
            Resource("get", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/p-1", "metrics.k8s.io",
                     "v1beta1", "ns", "pods", "p-1"));
  EXPECT_EQ(Parse("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "w%61tch=%31").verb, "watch");
  EXPECT_EQ(Parse("GET", "/he%61lthz").path, "/healthz");
}

TEST(RequestAttributesTest, RejectsMalformedPaths) {
  for (const auto& [path, query] : std::vector<std::pair<std::string, std::string>>{
           {"/apis/metrics.k8s.io/v1beta1/nodes/n%", ""},
           {"/apis/metrics.k8s.io/v1beta1/nodes/n%4", ""},
           {"/apis/metrics.k8s.io/v1beta1/nodes/n%zz", ""},
           {"/metrics%G1", ""},
           {"/apis/metrics.k8s.io/v1beta1/nodes", "watch=%"},
           {"/apis/metrics.k8s.io/v1beta1/namespaces/a%2Fb/pods", ""},
           {"/apis/metrics.k8s.io/v1beta1/namespaces/a%00/pods", ""},
           {"/healthz/../apis/metrics.k8s.io/v1beta1/nodes", ""},
           {"/healthz/%2e%2e/metrics", ""},
           {"/./metrics", ""},
           {"apis/metrics.k8s.io/v1beta1/nodes", ""},
           {"", ""},
           {"/apis/metrics.k8s.io/v1beta1/watch", ""},
       }) {
    absl::StatusOr<RequestAttributes> attrs = ParseRequestAttributes("GET", path, query);
    EXPECT_EQ(attrs.status().code(), absl::StatusCode::kInvalidArgument) << path << "?" << query;
  }
}

}  // namespace
}  // namespace kubestat::kube
