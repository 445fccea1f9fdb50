// The window engine's types (kubestat::windows) as the aggregator names them: every series
// the aggregator ingests, stores and queries is a windows::SeriesKey, and its answers are
// the engine's WindowStats. Declarations only; see the windows/ headers for the contracts.
#ifndef KUBESTAT_AGGREGATOR_WINDOW_TYPES_H_
#define KUBESTAT_AGGREGATOR_WINDOW_TYPES_H_

#include "kubestat/windows/series_key.h"
#include "kubestat/windows/window_engine.h"
#include "kubestat/windows/window_stats.h"

namespace kubestat::aggregator {

using windows::BucketRollup;
using windows::NearestRank;
using windows::ObjectKind;
using windows::ObjectKindName;
using windows::ParseRollup;
using windows::Resource;
using windows::ResourceName;
using windows::Sample;
using windows::SampleSource;
using windows::SerializeRollup;
using windows::SeriesKey;
using windows::SeriesKeyHash;
using windows::SeriesWindows;
using windows::WindowEngine;
using windows::WindowEngineOptions;
using windows::WindowStats;

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_WINDOW_TYPES_H_
