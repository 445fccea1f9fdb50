#include "kubestat/aggregator/query/node_agent.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <utility>
#include <vector>

#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/scrapers/fetch_error.h"

namespace kubestat::aggregator {
namespace {

using metrics_api::MethodStatus;
using metrics_api::NodePodResources;
using metrics_api::PodResourcesStatus;

std::string PodKey(std::string_view namespace_name, std::string_view name) {
  return StrCat(namespace_name, "/", name);
}

std::string Describe(std::string_view method, const MethodStatus& status) {
  return StrCat(method, ": ", status.code, status.message.empty() ? "" : " (", status.message,
                status.message.empty() ? "" : ")");
}

}  // namespace

PodResourcesStatus PodResourcesStatusOf(const NodePodResources* doc, std::string_view failure,
                                        Timestamp failed_at) {
  PodResourcesStatus status;
  if (!failure.empty()) {
    status.state = doc != nullptr ? "Stale" : "Unavailable";
    status.message = StrCat("kubestat-node-agent: ", failure,
                            doc != nullptr ? "; showing its earlier answer" : "");
    status.time = doc != nullptr && doc->time ? *doc->time : failed_at;
    return status;
  }
  if (doc == nullptr) return status;  // not reached: an entry has a doc or a failure
  status.time = doc->time.value_or(Timestamp{});
  const MethodStatus& list = doc->list;
  const MethodStatus& allocatable = doc->allocatable_call;
  if (list.ok() && allocatable.ok()) {
    status.state = "Complete";
  } else if (list.ok() && allocatable.code == "Unimplemented") {
    status.state = "AllocatableUnsupported";
    status.message = StrCat(
        "the kubelet does not implement GetAllocatableResources (older than 1.21, or its "
        "KubeletPodResourcesGetAllocatable feature gate is off); exclusive assignments "
        "are known, allocatable is not: ",
        allocatable.message);
  } else if (!list.ok() && !doc->pods && !doc->allocatable) {
    status.state = "Unavailable";
    status.message = Describe("List", list);
  } else {
    status.state = "Partial";
    std::vector<std::string> failing;
    if (!list.ok()) failing.push_back(Describe("List", list));
    if (!allocatable.ok()) failing.push_back(Describe("GetAllocatableResources", allocatable));
    for (size_t i = 0; i < failing.size(); ++i) {
      status.message += (i > 0 ? "; " : "") + failing[i];
    }
  }
  return status;
}

// ---- NodeResourcesStore ----

void NodeResourcesStore::Update(const std::string& node, NodePodResources doc) {
  auto entry = std::make_shared<Entry>();
  entry->doc = std::make_shared<const NodePodResources>(std::move(doc));
  if (entry->doc->pods) {
    const std::vector<metrics_api::PodAssignment>& pods = *entry->doc->pods;
    entry->pods.reserve(pods.size());
    for (size_t i = 0; i < pods.size(); ++i) {
      entry->pods.emplace(PodKey(pods[i].namespace_name, pods[i].name), i);
    }
  }
  std::shared_ptr<const Entry> replaced;  // freed after the lock
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<const Entry>& slot = entries_[node];
  replaced = std::move(slot);
  slot = std::move(entry);
}

void NodeResourcesStore::Failed(const std::string& node, std::string why, Timestamp at) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<const Entry>& slot = entries_[node];
  auto entry = slot != nullptr ? std::make_shared<Entry>(*slot) : std::make_shared<Entry>();
  entry->failure = std::move(why);
  entry->failed_at = at;
  slot = std::move(entry);
}

void NodeResourcesStore::Remove(std::string_view node) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(node); it != entries_.end()) entries_.erase(it);
}

std::shared_ptr<const NodeResourcesStore::Entry> NodeResourcesStore::Find(
    std::string_view node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(node);
  return it == entries_.end() ? nullptr : it->second;
}

std::optional<NodeTopology> NodeResourcesStore::Node(std::string_view node) const {
  const std::shared_ptr<const Entry> entry = Find(node);
  if (entry == nullptr) return std::nullopt;
  NodeTopology topology;
  if (entry->doc != nullptr) topology.allocatable = entry->doc->allocatable;
  topology.status = PodResourcesStatusOf(entry->doc.get(), entry->failure, entry->failed_at);
  return topology;
}

std::optional<metrics_api::PodAssignment> NodeResourcesStore::Pod(std::string_view node,
                                                                  std::string_view namespace_name,
                                                                  std::string_view name) const {
  const std::shared_ptr<const Entry> entry = Find(node);
  if (entry == nullptr || entry->doc == nullptr || !entry->doc->pods) return std::nullopt;
  auto it = entry->pods.find(PodKey(namespace_name, name));
  if (it == entry->pods.end()) return std::nullopt;
  return (*entry->doc->pods)[it->second];
}

// ---- NodeAgentScraper ----

struct NodeAgentScraper::Metrics {
  explicit Metrics(prometheus::Registry& registry)
      : scrapes(prometheus::BuildCounter()
                    .Name("kubestat_node_agent_scrapes_total")
                    .Help("Scrapes of the node agents (podresources), by result (success, "
                          "failure, skipped: the node's kubelet scrape failed) and reason.")
                    .Register(registry)),
        duration(prometheus::BuildHistogram()
                     .Name("kubestat_node_agent_scrape_duration_seconds")
                     .Help("Time taken by one node agent scrape (fetch and decode), by result.")
                     .Register(registry)) {}

  void Count(std::string_view result, std::string_view reason, Duration took) {
    scrapes.Add({{"result", std::string(result)}, {"reason", std::string(reason)}}).Increment();
    if (result == "skipped") return;
    duration
        .Add({{"result", std::string(result)}},
             prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                     0.25, 0.5, 1, 2.5, 5})
        .Observe(std::chrono::duration<double>(took).count());
  }

  prometheus::Family<prometheus::Counter>& scrapes;
  prometheus::Family<prometheus::Histogram>& duration;
};

NodeAgentScraper::NodeAgentScraper(scrapers::NodeScraper& kubelet, scrapers::KubeletClient& agents,
                                   int agent_port, NodeResourcesStore& store, const Clock& clock,
                                   prometheus::Registry& registry)
    : kubelet_(kubelet),
      agents_(agents),
      agent_port_(agent_port),
      store_(store),
      clock_(clock),
      metrics_(std::make_unique<Metrics>(registry)) {}

NodeAgentScraper::~NodeAgentScraper() = default;

absl::StatusOr<scrapers::NodeScrape> NodeAgentScraper::Scrape(
    const scrapers::ScrapeTarget& target) {
  absl::StatusOr<scrapers::NodeScrape> scrape = kubelet_.Scrape(target);
  if (!scrape.ok()) {
    metrics_->Count("skipped", "kubelet_failed", Duration::zero());
    return scrape;
  }
  const Timestamp started = clock_.MonotonicNow();
  const absl::Status agent = ScrapeAgent(target);
  const Duration took = clock_.MonotonicNow() - started;
  if (agent.ok()) {
    metrics_->Count("success", "none", took);
  } else {
    const std::string reason = scrapers::FailureReason(agent);
    metrics_->Count("failure", reason, took);
    store_.Failed(target.node_name, StrCat(reason, ": ", StdView(agent.message())), clock_.Now());
    KVLOG(1) << "node agent of " << target.node_name << ": " << agent;
  }
  return scrape;
}

absl::Status NodeAgentScraper::ScrapeAgent(const scrapers::ScrapeTarget& target) {
  const scrapers::ScrapeTarget agent{target.node_name, target.host, agent_port_};
  absl::StatusOr<scrapers::KubeletResponse> response =
      agents_.FetchPath(agent, kNodeAgentPath, "application/json");
  // Its message names the path; the reason is the kubelets' (timeout, connect, tls, http_403…).
  if (!response.ok()) return response.status();
  absl::StatusOr<NodePodResources> doc = metrics_api::ParseNodePodResources(response->body);
  if (!doc.ok()) return scrapers::WithFailureReason(doc.status(), "decode");
  if (doc->node_name != target.node_name) {
    return scrapers::WithFailureReason(
        absl::FailedPreconditionError(StrCat("the agent at ", agent.HostPort(), " serves node \"",
                                             doc->node_name, "\", not ", target.node_name)),
        "wrong_node");
  }
  store_.Update(target.node_name, *std::move(doc));
  return absl::OkStatus();
}

}  // namespace kubestat::aggregator
