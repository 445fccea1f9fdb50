// Fuzzes the REST front end's request handling (routing, path and query decoding, label and
// field selectors, rendering in JSON and protobuf) with arbitrary method, path and query bytes.
// Input layout: byte 0 picks the method and the Accept header, the rest is "<path>?<query>"
// (split at the first '?').
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/aggregator/frontends/rest_handler.h"
#include "kubestat/core/clock.h"

namespace {

using kubestat::metrics_api::ContainerMetrics;
using kubestat::metrics_api::NodeMetrics;
using kubestat::metrics_api::PodMetrics;
using kubestat::metrics_api::ResourceWindows;

ResourceWindows Usage(uint64_t v) {
  kubestat::metrics_api::StatisticsList series;
  kubestat::metrics_api::Statistics w;
  w.window = std::chrono::seconds(10);
  w.count = 3;
  w.mean = w.min = w.max = w.p50 = w.p95 = w.p99 = v;
  series.push_back(w);
  return ResourceWindows{series, series};
}

class SmallSource final : public kubestat::aggregator::MetricsSource {
 public:
  SmallSource() {
    NodeMetrics node;
    node.name = "node-1";
    node.labels = {{"role", "worker"}};
    node.machine = Usage(120000000);
    node.system_containers.push_back(ContainerMetrics{"kubelet", Usage(1000)});
    nodes_.push_back(node);
    PodMetrics pod;
    pod.name = "web-1";
    pod.namespace_name = "shop";
    pod.node_name = "node-1";
    pod.labels = {{"app", "web"}};
    pod.pod = Usage(5);
    pod.containers.push_back(ContainerMetrics{"app", Usage(5)});
    pods_.push_back(pod);
  }
  bool Ready() const override { return true; }
  std::vector<NodeMetrics> ListNodes() const override { return nodes_; }
  std::optional<NodeMetrics> GetNode(std::string_view name) const override {
    if (name == nodes_[0].name) return nodes_[0];
    return std::nullopt;
  }
  std::vector<PodMetrics> ListPods(std::string_view ns) const override {
    if (ns.empty() || ns == pods_[0].namespace_name) return pods_;
    return {};
  }
  std::optional<PodMetrics> GetPod(std::string_view ns, std::string_view name) const override {
    if (ns == pods_[0].namespace_name && name == pods_[0].name) return pods_[0];
    return std::nullopt;
  }

 private:
  std::vector<NodeMetrics> nodes_;
  std::vector<PodMetrics> pods_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const SmallSource source;
  static const kubestat::FakeClock clock;
  static const kubestat::aggregator::RestHandler handler(source, clock, {});
  if (size == 0) return 0;
  static constexpr std::string_view kMethods[] = {"GET", "GET", "GET", "POST", "DELETE", "BREW"};
  const std::string_view method = kMethods[data[0] % std::size(kMethods)];
  static constexpr std::string_view kAccepts[] = {"", "application/vnd.kubernetes.protobuf, */*",
                                                  "application/json", "application/yaml"};
  const std::string_view accept = kAccepts[(data[0] / std::size(kMethods)) % std::size(kAccepts)];
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t question = rest.find('?');
  const std::string path = "/" + std::string(rest.substr(0, question));
  const std::string_view query =
      question == std::string_view::npos ? std::string_view() : rest.substr(question + 1);
  const kubestat::aggregator::RestResponse response =
      handler.Handle({method, path, query, false, accept});
  // Every answer is a complete response: a known code and a body.
  if (response.code < 200 || response.code > 599 || response.body.empty()) std::abort();
  if (response.code == 500) std::abort();  // nothing in a request may cause an internal error
  return 0;
}
