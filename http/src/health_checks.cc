#include "kubestat/http/health_checks.h"

#include <cassert>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/core/time.h"
#include "kubestat/core/url.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace kubestat::http {
namespace {

struct HealthQuery {
  bool verbose = false;
  std::set<std::string, std::less<>> excluded;
};

// Go's url.Query(): "verbose" is present with any value (or none); exclude may repeat.
HealthQuery ParseHealthQuery(std::string_view query) {
  HealthQuery parsed;
  for (absl::string_view pair : absl::StrSplit(AbslView(query), '&', absl::SkipEmpty())) {
    const size_t eq = pair.find('=');
    const std::string name = PercentDecodeLenient(
        std::string_view(pair.data(), eq == absl::string_view::npos ? pair.size() : eq), true);
    const std::string value =
        eq == absl::string_view::npos
            ? std::string()
            : PercentDecodeLenient(std::string_view(pair.data() + eq + 1, pair.size() - eq - 1),
                                   true);
    if (name == "verbose") parsed.verbose = true;
    if (name == "exclude") parsed.excluded.insert(value);
  }
  return parsed;
}

std::string Key(HealthEndpoint endpoint, std::string_view check) {
  return absl::StrCat(AbslView(HealthEndpointName(endpoint)), "/", AbslView(check));
}

}  // namespace

std::string_view HealthEndpointName(HealthEndpoint endpoint) {
  return endpoint == HealthEndpoint::kLivez ? "livez" : "readyz";
}

HealthChecks::HealthChecks(const Clock& clock) : clock_(clock) {}

void HealthChecks::Add(HealthEndpoint endpoint, std::string name, HealthCheckFn check) {
  std::vector<Entry>& list = endpoint == HealthEndpoint::kLivez ? livez_ : readyz_;
  for ([[maybe_unused]] const Entry& entry : list) assert(entry.name != name);
  if (failures_ != nullptr) {
    const std::map<std::string, std::string> labels = {
        {"endpoint", std::string(HealthEndpointName(endpoint))}, {"check", name}};
    failures_->Add(labels);
    failing_->Add(labels);
  }
  list.push_back(Entry{std::move(name), std::move(check)});
}

void HealthChecks::AddCondition(HealthEndpoint endpoint, std::string name, HealthCheckFn check) {
  std::vector<Entry>& list = endpoint == HealthEndpoint::kLivez ? livez_ : readyz_;
  for ([[maybe_unused]] const Entry& entry : list) assert(entry.name != name);
  list.push_back(Entry{std::move(name), std::move(check), /*condition=*/true});
}

void HealthChecks::AttachMetrics(prometheus::Registry& registry) {
  failures_ = &prometheus::BuildCounter()
                   .Name("kubestat_health_check_failures_total")
                   .Help(
                       "Times a health check started failing, by endpoint (livez, readyz) and "
                       "check.")
                   .Register(registry);
  failing_ = &prometheus::BuildGauge()
                  .Name("kubestat_health_check_failing")
                  .Help(
                      "1 while a health check fails (as of its last evaluation), by endpoint "
                      "and check.")
                  .Register(registry);
  for (HealthEndpoint endpoint : {HealthEndpoint::kLivez, HealthEndpoint::kReadyz}) {
    for (const Entry& entry : endpoint == HealthEndpoint::kLivez ? livez_ : readyz_) {
      if (entry.condition) continue;
      const std::map<std::string, std::string> labels = {
          {"endpoint", std::string(HealthEndpointName(endpoint))}, {"check", entry.name}};
      failures_->Add(labels);
      failing_->Add(labels);
    }
  }
}

std::vector<HealthCheckResult> HealthChecks::Evaluate(HealthEndpoint endpoint) const {
  const std::vector<Entry>& list = endpoint == HealthEndpoint::kLivez ? livez_ : readyz_;
  const Timestamp now = clock_.Now();
  std::vector<HealthCheckResult> results;
  results.reserve(list.size());
  for (const Entry& entry : list) {
    if (entry.condition) {
      results.push_back(HealthCheckResult{entry.name, std::nullopt, entry.check(now)});
      continue;
    }
    results.push_back(HealthCheckResult{entry.name, entry.check(now), std::nullopt});
    Notice(endpoint, results.back(), now);
  }
  return results;
}

void HealthChecks::Notice(HealthEndpoint endpoint, const HealthCheckResult& result,
                          Timestamp now) const {
  const std::string key = Key(endpoint, result.name);
  const std::string_view endpoint_name = HealthEndpointName(endpoint);
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = failing_since_.find(key);
    const bool was_failing = it != failing_since_.end();
    if (result.failure.has_value() == was_failing) return;
    if (result.failure) {
      failing_since_.emplace(key, now);
      KLOG(WARNING) << endpoint_name << " check " << result.name << " failed: " << *result.failure;
    } else {
      KLOG(INFO) << endpoint_name << " check " << result.name << " passes again, after "
                 << FormatDuration(now - it->second);
      failing_since_.erase(it);
    }
  }
  if (failures_ == nullptr) return;
  const std::map<std::string, std::string> labels = {{"endpoint", std::string(endpoint_name)},
                                                     {"check", result.name}};
  if (result.failure) failures_->Add(labels).Increment();
  failing_->Add(labels).Set(result.failure ? 1 : 0);
}

void HealthChecks::Observe() const {
  Evaluate(HealthEndpoint::kLivez);
  Evaluate(HealthEndpoint::kReadyz);
}

HealthAnswer HealthChecks::Answer(HealthEndpoint endpoint, std::string_view query) const {
  const HealthQuery parsed = ParseHealthQuery(query);
  const std::string_view name = HealthEndpointName(endpoint);
  std::string listing;
  bool failed = false;
  for (const HealthCheckResult& result : Evaluate(endpoint)) {
    if (parsed.excluded.contains(result.name)) {
      absl::StrAppend(&listing, "[+]", result.name, " excluded: ok\n");
      continue;
    }
    if (result.failure) {
      failed = true;
      absl::StrAppend(&listing, "[-]", result.name, " failed: ",
                      parsed.verbose ? *result.failure : std::string("reason withheld"), "\n");
    } else if (result.note && parsed.verbose) {
      absl::StrAppend(&listing, "[+]", result.name, " ok: ", *result.note, "\n");
    } else {
      absl::StrAppend(&listing, "[+]", result.name, " ok\n");
    }
  }
  HealthAnswer answer;
  if (failed) {
    answer.code = endpoint == HealthEndpoint::kLivez ? 500 : 503;
    answer.body = absl::StrCat(listing, AbslView(name), " check failed");
  } else if (parsed.verbose) {
    answer.body = absl::StrCat(listing, AbslView(name), " check passed\n");
  } else {
    answer.body = "ok";
  }
  return answer;
}

}  // namespace kubestat::http
