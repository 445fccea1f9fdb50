#include "kubestat/limits/recommendation.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/time.h"

namespace kubestat::limits {
namespace {

constexpr std::string_view kApiVersion = "metrics/v1alpha1";

double Confidence(const History& h, Duration history) {
  if (h.samples < 2 || history <= Duration::zero()) return 0;
  const double covered = static_cast<double>(h.Covered().count());
  return std::min(1.0, covered / static_cast<double>(history.count()));
}

// A value the pod spec declares, for a container without usage: the request (or the limit,
// as the API server defaults a missing request) and the limit (or the request).
Wanted Declared(const ContainerUsage& c, Resource r) {
  Wanted w;
  w.request = c.declared_requests[r].value_or(c.declared_limits[r].value_or(0));
  w.limit = c.declared_limits[r].value_or(w.request);
  return w;
}

std::string FormatRatioOrAmount(Resource r, const BoundBy& b) {
  return b.constraint == Constraint::kMaxLimitRequestRatio ? Quantity::FromMilli(b.value).String()
                                                           : FormatAmount(r, b.value);
}

void WriteValue(Resource r, const RecommendedValue& v, JsonWriter& w) {
  w.BeginObject();
  w.Member("value", FormatAmount(r, v.value));
  w.Member("wanted", FormatAmount(r, v.wanted));
  w.Member("statistic", v.statistic);
  w.Member("usage", FormatAmount(r, static_cast<int64_t>(std::ceil(v.usage))));
  w.Key("margin").Double(v.margin);
  w.Key("history").BeginObject();
  w.Key("samples").Uint(v.history.samples);
  if (v.history.samples > 0) {
    w.Member("from", FormatRfc3339(v.history.from));
    w.Member("to", FormatRfc3339(v.history.to));
  }
  w.Member("covered", FormatDuration(v.history.Covered()));
  w.EndObject();
  w.Key("confidence").Double(std::round(v.confidence * 1000) / 1000);
  w.Key("boundBy").BeginArray();
  for (const BoundBy& b : v.bound_by) {
    w.BeginObject();
    w.Member("limitRange", b.limit_range);
    w.Member("type", LimitTypeName(b.type));
    w.Member("constraint", ConstraintName(b.constraint));
    w.Member("value", FormatRatioOrAmount(r, b));
    w.Member("message", Describe(r, b));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void WritePair(const std::array<RecommendedValue, 2>& values, JsonWriter& w) {
  w.BeginObject();
  for (Resource r : kResources) {
    w.Key(ResourceName(r));
    WriteValue(r, values[static_cast<size_t>(r)], w);
  }
  w.EndObject();
}

}  // namespace

std::vector<Recommendation> Recommend(std::string namespace_name, const Workload& workload,
                                      size_t pods, std::span<const ContainerUsage> containers,
                                      std::span<const LimitRange> limit_ranges,
                                      const RecommendOptions& options, Duration history) {
  std::vector<ContainerWant> wants;
  wants.reserve(containers.size());
  for (const ContainerUsage& c : containers) {
    ContainerWant want = WantFor(c.name, c.usage[static_cast<size_t>(Resource::kCpu)].summary,
                                 c.usage[static_cast<size_t>(Resource::kMemory)].summary, options);
    for (Resource r : kResources) {
      if (c.usage[static_cast<size_t>(r)].history.samples == 0) {
        want.want[static_cast<size_t>(r)] = Declared(c, r);
      }
    }
    wants.push_back(std::move(want));
  }
  const FittedPod fitted = Fit(limit_ranges, wants);
  std::vector<Recommendation> out;
  out.reserve(containers.size());
  for (size_t i = 0; i < containers.size(); ++i) {
    const ContainerUsage& c = containers[i];
    Recommendation rec;
    rec.namespace_name = namespace_name;
    rec.workload = workload;
    rec.container = c.name;
    rec.pods = pods;
    rec.conflict = fitted.conflict;
    for (Resource r : kResources) {
      const size_t ri = static_cast<size_t>(r);
      const ResourceUsage& u = c.usage[ri];
      const bool cpu = r == Resource::kCpu;
      const double margin = cpu ? options.cpu_margin : options.memory_margin;
      const bool seen = u.history.samples > 0;
      for (bool request : {true, false}) {
        RecommendedValue& v = request ? rec.requests[ri] : rec.limits[ri];
        const FittedValue& f =
            request ? fitted.containers[i][r].request : fitted.containers[i][r].limit;
        v.value = f.value;
        v.wanted = request ? wants[i].want[ri].request : wants[i].want[ri].limit;
        v.bound_by = f.bound_by;
        v.history = u.history;
        v.confidence = Confidence(u.history, history);
        if (!seen) {
          v.statistic = "declared";
          continue;
        }
        v.margin = margin;
        if (cpu && request) {
          v.statistic = StrCat("p", options.cpu_percentile);
          v.usage = u.summary.percentile;
        } else {
          v.statistic = "max";
          v.usage = u.summary.max;
        }
      }
    }
    out.push_back(std::move(rec));
  }
  return out;
}

void WriteRecommendation(const Recommendation& rec, JsonWriter& w) {
  w.BeginObject();
  w.Member("kind", "Recommendation");
  w.Member("apiVersion", kApiVersion);
  w.Key("metadata").BeginObject();
  w.Member("name", rec.Name());
  w.Member("namespace", rec.namespace_name);
  w.EndObject();
  w.Key("workload").BeginObject();
  w.Member("kind", rec.workload.kind);
  w.Member("name", rec.workload.name);
  w.EndObject();
  w.Member("container", rec.container);
  w.Key("pods").Uint(rec.pods);
  w.Key("requests");
  WritePair(rec.requests, w);
  w.Key("limits");
  WritePair(rec.limits, w);
  if (!rec.conflict.empty()) w.Member("conflict", rec.conflict);
  w.EndObject();
}

std::string RenderRecommendation(const Recommendation& recommendation, int indent) {
  JsonWriter w(indent);
  WriteRecommendation(recommendation, w);
  return w.Take();
}

std::string RenderRecommendationList(std::span<const Recommendation> recommendations, int indent) {
  JsonWriter w(indent);
  w.BeginObject();
  w.Member("kind", "RecommendationList");
  w.Member("apiVersion", kApiVersion);
  w.Key("metadata").BeginObject().EndObject();
  w.Key("items").BeginArray();
  for (const Recommendation& r : recommendations) WriteRecommendation(r, w);
  w.EndArray();
  w.EndObject();
  return w.Take();
}

}  // namespace kubestat::limits
