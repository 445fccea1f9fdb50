// The interface the scrape scheduler uses to scrape one node: KubeletScraper in production
// (kubelet_client.h), a fake in tests.
#ifndef KUBESTAT_SCRAPERS_NODE_SCRAPER_H_
#define KUBESTAT_SCRAPERS_NODE_SCRAPER_H_

#include "absl/status/statusor.h"
#include "kubestat/scrapers/node_address.h"
#include "kubestat/scrapers/node_scrape.h"

namespace kubestat::scrapers {

class NodeScraper {
 public:
  virtual ~NodeScraper() = default;
  // Scrapes `target` once and returns what it yielded. Called concurrently from several
  // threads (one call per node at a time); must return within the configured timeout.
  // Errors carry a failure reason (fetch_error.h).
  [[nodiscard]] virtual absl::StatusOr<NodeScrape> Scrape(const ScrapeTarget& target) = 0;
  // Gives back a scrape Scrape returned once nobody needs it any more, on the thread that
  // scraped it: a scraper may decode its next result into its storage. Default: left to
  // the caller, who frees it.
  virtual void Recycle(NodeScrape&& scrape) { (void)scrape; }
};

}  // namespace kubestat::scrapers

#endif  // KUBESTAT_SCRAPERS_NODE_SCRAPER_H_
