// The --scrape-dump format: one JSON line per decoded node scrape (what the kubelet said,
// before any arithmetic), for debugging a kubelet's answers against kubestat's windows.
//
//   {"node":"n1","target":"10.0.0.1:10250","received":"...","format":"summary",
//    "cpu":{"time":"...","usageCoreNanoSeconds":1,"usageNanoCores":2},"memory":{...},
//    "systemContainers":[...],"pods":[{"namespace":"ns","name":"p","containers":[...]}],
//    "decodeIssues":0}
//
// Pure function; thread-safe.
#ifndef KUBESTAT_AGGREGATOR_SCRAPE_DUMP_H_
#define KUBESTAT_AGGREGATOR_SCRAPE_DUMP_H_

#include <string>

#include "kubestat/core/clock.h"
#include "kubestat/scrapers/node_address.h"
#include "kubestat/scrapers/node_scrape.h"

namespace kubestat::aggregator {

// One JSON line (without the newline) describing `scrape` of `target`, received at `received`.
std::string ScrapeDumpLine(const scrapers::ScrapeTarget& target, const scrapers::NodeScrape& scrape,
                           Timestamp received);

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_SCRAPE_DUMP_H_
