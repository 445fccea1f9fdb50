// The aggregator's side of the node agents (kubestat-node-agent, --node-agent-port): each
// node's agent is scraped beside its kubelet, in the same scrape task, and its answer is kept
// for the query views.
//
// NodeAgentScraper is the NodeScraper the scheduler runs when agents are on: it scrapes the
// kubelet with the scraper it wraps and, when that succeeded, GETs /podresources from the
// node's agent at the kubelet's address and --node-agent-port, with the agents' client
// (TLS, bearer token, the kubelet timeout as its deadline, the kubelet response cap, the
// kubelets' failure reasons). So an agent is scraped once per round, with the node's
// stagger, and never holds a worker past its own timeout; a node whose kubelet failed is not
// asked (its windows do not change either). The kubelet's result is returned as it was: an
// agent's failure never fails the node's scrape. The agent's answer must name the node
// scraped ("wrong_node" otherwise). Counted in
//   kubestat_node_agent_scrapes_total{result="success"|"failure"|"skipped",reason}
//   kubestat_node_agent_scrape_duration_seconds{result}
// (reasons: the kubelet's, decode, wrong_node; skipped: kubelet_failed).
//
// NodeResourcesStore keeps each node's newest agent answer (or why the newest scrape
// failed) and is the TopologyProvider of AggregatorState. A node's status
// (PodResourcesStatusOf):
//   Complete                List and GetAllocatableResources answered
//   AllocatableUnsupported  the kubelet lacks GetAllocatableResources (Unimplemented)
//   Partial                 List or GetAllocatableResources failed otherwise (which, and why)
//   Unavailable             the agent knows nothing (no socket, ...), or was never reached
//   Stale                   the newest scrape of the agent failed; its earlier answer is kept
// and its time is when the agent read the kubelet.
//
// Thread-safety: both are safe from any thread. NodeAgentScraper borrows the kubelet scraper,
// the agents' client, the store, the clock and the registry, which must outlive it.
#ifndef KUBESTAT_AGGREGATOR_QUERY_NODE_AGENT_H_
#define KUBESTAT_AGGREGATOR_QUERY_NODE_AGENT_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "kubestat/aggregator/query/aggregator_state.h"
#include "kubestat/core/clock.h"
#include "kubestat/metrics_api/node_resources.h"
#include "kubestat/scrapers/kubelet_client.h"
#include "kubestat/scrapers/node_scraper.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::aggregator {

// The path the agents serve their document at.
inline constexpr char kNodeAgentPath[] = "/podresources";

// The status of a node's podresources knowledge from its agent's document; `failure`, when
// not empty, is why the newest scrape of the agent failed.
metrics_api::PodResourcesStatus PodResourcesStatusOf(const metrics_api::NodePodResources* doc,
                                                     std::string_view failure, Timestamp failed_at);

class NodeResourcesStore final : public TopologyProvider {
 public:
  // The agent of `node` answered `doc`.
  void Update(const std::string& node, metrics_api::NodePodResources doc);
  // The newest scrape of `node`'s agent failed (`why`: reason and message), at `at`.
  void Failed(const std::string& node, std::string why, Timestamp at);
  // Forgets the node (it was deleted).
  void Remove(std::string_view node);

  std::optional<NodeTopology> Node(std::string_view node) const override;
  std::optional<metrics_api::PodAssignment> Pod(std::string_view node,
                                                std::string_view namespace_name,
                                                std::string_view name) const override;

 private:
  struct Entry {
    std::shared_ptr<const metrics_api::NodePodResources> doc;  // null: never answered
    std::unordered_map<std::string, size_t> pods;  // "namespace/name" → index in doc->pods
    std::string failure;                           // why the newest scrape failed; "": it did not
    Timestamp failed_at{};
  };
  std::shared_ptr<const Entry> Find(std::string_view node) const;

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const Entry>, std::less<>> entries_;
};

class NodeAgentScraper final : public scrapers::NodeScraper {
 public:
  NodeAgentScraper(scrapers::NodeScraper& kubelet, scrapers::KubeletClient& agents, int agent_port,
                   NodeResourcesStore& store, const Clock& clock, prometheus::Registry& registry);
  ~NodeAgentScraper() override;

  [[nodiscard]] absl::StatusOr<scrapers::NodeScrape> Scrape(
      const scrapers::ScrapeTarget& target) override;

 private:
  struct Metrics;
  // Scrapes the agent of `target`'s node; the failure reason and message, or OK.
  absl::Status ScrapeAgent(const scrapers::ScrapeTarget& target);

  scrapers::NodeScraper& kubelet_;
  scrapers::KubeletClient& agents_;
  const int agent_port_;
  NodeResourcesStore& store_;
  const Clock& clock_;
  std::unique_ptr<Metrics> metrics_;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_QUERY_NODE_AGENT_H_
