#include "kubestat/aggregator/aggregator_health.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/core/time.h"

namespace kubestat::aggregator {

AggregatorHealth::AggregatorHealth(AggregatorHealthOptions options,
                                   const discovery::Discovery& discovery,
                                   const storage::Store* store)
    : options_(options), discovery_(discovery), store_(store) {}

bool AggregatorHealth::IsStoreFailure(const absl::Status& status) {
  return !status.ok() && status.code() != absl::StatusCode::kInvalidArgument &&
         status.code() != absl::StatusCode::kFailedPrecondition;
}

void AggregatorHealth::RecordIngest(const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (status.ok()) {
    store_error_.clear();
    store_failed_writes_ = 0;
  } else if (IsStoreFailure(status)) {
    store_error_ = std::string(status.message());
    ++store_failed_writes_;
  }
}

void AggregatorHealth::RecordRound(const scrapers::RoundSummary& round) {
  std::lock_guard<std::mutex> lock(mu_);
  last_round_targets_ = round.targets;
  if (round.succeeded > 0 || round.targets == 0) {
    rounds_without_scrape_ = 0;
    last_round_failures_.clear();
    return;
  }
  ++rounds_without_scrape_;
  last_round_failures_.clear();
  for (const auto& [reason, count] : round.failures_by_reason) {
    absl::StrAppend(&last_round_failures_, last_round_failures_.empty() ? "" : ", ", reason, "=",
                    count);
  }
}

std::optional<std::string> AggregatorHealth::StoreWrites() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (store_failed_writes_ == 0) return std::nullopt;
  return absl::StrCat("the store rejected the last ", store_failed_writes_,
                      " node writes; the newest: ", store_error_);
}

std::optional<std::string> AggregatorHealth::KubeApi(Timestamp now) const {
  const discovery::KubeApiContact contact = discovery_.kube_api_contact();
  if (contact.failing_since == kZeroTime) return std::nullopt;
  const Duration failing = now - contact.failing_since;
  if (failing <= options_.kube_api_unready_after) return std::nullopt;
  return absl::StrCat("the kube API has not answered for ", FormatDuration(failing), " (more than ",
                      FormatDuration(options_.kube_api_unready_after), "): ", contact.last_error);
}

std::optional<std::string> AggregatorHealth::Scrapes() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (rounds_without_scrape_ < options_.scrape_unready_rounds) return std::nullopt;
  return absl::StrCat("no node scraped in the last ", rounds_without_scrape_, " rounds (",
                      last_round_targets_, " targets; ", last_round_failures_, ")");
}

void AggregatorHealth::AddChecks(http::HealthChecks& checks) {
  checks.Add(http::HealthEndpoint::kReadyz, "store-writes",
             [this](Timestamp) { return StoreWrites(); });
  checks.Add(http::HealthEndpoint::kReadyz, "kube-api",
             [this](Timestamp now) { return KubeApi(now); });
  checks.Add(http::HealthEndpoint::kReadyz, "scrapes", [this](Timestamp) { return Scrapes(); });
  if (store_ != nullptr) {
    checks.AddCondition(http::HealthEndpoint::kReadyz, "store-durability",
                        [this](Timestamp) -> std::optional<std::string> {
                          std::string reason = store_->DegradedReason();
                          if (reason.empty()) return std::nullopt;
                          return reason;
                        });
  }
}

}  // namespace kubestat::aggregator
