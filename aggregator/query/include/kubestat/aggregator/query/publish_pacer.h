// PublishPacer: when the publisher may publish the query snapshot and the watch changes
// while a round is still scraping, so that a node's new samples are served within about
// `min_interval` of its scrape instead of at the round's end.
//
// A publication costs work over every node (assembling the snapshot, diffing it for the
// watch hub, preparing the REST answers clients ask for). The pacer keeps that cost to a
// share of one core: the next publication is due `min_interval` after the last one started,
// or `1 / max_core_share` times the CPU time the last one used if that is later. CPU time,
// not the time it took: on a busy machine a publication waits for a core, and pacing by its
// wall time would delay the next one by ten times the wait for no saving at all. With a
// min_interval of zero, publications happen only at each round's end (Due is always false).
//
// Thread-compatible; the publisher thread owns it. Times come from the injected clock.
#ifndef KUBESTAT_AGGREGATOR_QUERY_PUBLISH_PACER_H_
#define KUBESTAT_AGGREGATOR_QUERY_PUBLISH_PACER_H_

#include <algorithm>
#include <chrono>

#include "kubestat/core/clock.h"

namespace kubestat::aggregator {

class PublishPacer {
 public:
  // `max_core_share` in (0, 1].
  PublishPacer(Duration min_interval, double max_core_share)
      : min_interval_(min_interval), max_core_share_(max_core_share) {}

  // Whether a publication may start at `now` (some node was read since the last one).
  bool Due(Timestamp now) const {
    if (min_interval_ <= Duration::zero()) return false;
    if (!published_) return true;
    return now >= NextDue();
  }

  // A publication started at `start` and used `cpu` of CPU time.
  void Record(Timestamp start, Duration cpu) {
    published_ = true;
    last_start_ = start;
    last_cost_ = std::max(Duration::zero(), cpu);
  }

  // When the next publication is due (meaningful after the first Record).
  Timestamp NextDue() const {
    const auto paced =
        std::chrono::duration_cast<Duration>(std::chrono::duration<double, Duration::period>(
            static_cast<double>(last_cost_.count()) / max_core_share_));
    return last_start_ + std::max(min_interval_, paced);
  }

 private:
  Duration min_interval_;
  double max_core_share_;
  bool published_ = false;
  Timestamp last_start_{};
  Duration last_cost_{};
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_QUERY_PUBLISH_PACER_H_
