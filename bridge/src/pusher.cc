#include "kubestat/bridge/pusher.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/http/client.h"
#include "kubestat/kube/watch_event.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/metrics_api/write_batch.h"
#include "percent_encode.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace kubestat::bridge {
namespace {

using metrics_api::Resource;
using metrics_api::WriteItem;

// The longest Retry-After honoured; a larger one is read as this.
constexpr Duration kMaxRetryAfter = std::chrono::minutes(5);
// Keys whose refusal was logged are remembered up to this many (then forgotten at once).
constexpr size_t kMaxLoggedRefusals = 10000;

// Retry-After as whole seconds (RFC 9110 also allows an HTTP date; servers of the
// Kubernetes family send seconds). std::nullopt when absent or not a number.
std::optional<Duration> RetryAfter(std::string_view value) {
  int64_t seconds = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() || seconds < 0) {
    return std::nullopt;
  }
  return std::min<Duration>(std::chrono::seconds(std::min<int64_t>(seconds, 86400)),
                            kMaxRetryAfter);
}

std::string CodeLabel(int code) { return std::to_string(code); }

}  // namespace

absl::StatusOr<PushMode> ParsePushMode(std::string_view text) {
  if (text == "bulk") return PushMode::kBulk;
  if (text == "put") return PushMode::kPut;
  return absl::InvalidArgumentError(StrCat("unknown push mode \"", text, "\" (bulk or put)"));
}

std::string ObjectPath(const ObjectKey& key) {
  if (key.resource == Resource::kNodes) {
    return "/apis/metrics/v1alpha1/nodes/" + internal::PercentEncode(key.name);
  }
  return StrCat("/apis/metrics/v1alpha1/namespaces/", internal::PercentEncode(key.namespace_name),
                "/pods/", internal::PercentEncode(key.name));
}

absl::Status PusherOptions::Validate() const {
  if (max_batch_objects == 0) return absl::InvalidArgumentError("max_batch_objects: must be >= 1");
  if (max_batch_bytes == 0) return absl::InvalidArgumentError("max_batch_bytes: must be >= 1");
  if (max_in_flight < 1 || max_in_flight > 64) {
    return absl::InvalidArgumentError("max_in_flight: must be between 1 and 64");
  }
  if (retry_base <= Duration::zero()) {
    return absl::InvalidArgumentError("retry_base: must be positive");
  }
  if (retry_max < retry_base) {
    return absl::InvalidArgumentError("retry_max: must be at least the retry base");
  }
  return absl::OkStatus();
}

struct Pusher::Metrics {
  explicit Metrics(prometheus::Registry& registry)
      : pushed(prometheus::BuildCounter()
                   .Name("kubestat_bridge_pushed_objects_total")
                   .Help("Objects the metrics API server acknowledged, by HTTP code")
                   .Register(registry)),
        failed(prometheus::BuildCounter()
                   .Name("kubestat_bridge_failed_objects_total")
                   .Help("Objects the metrics API server refused for good (not retried), by "
                         "HTTP code")
                   .Register(registry)),
        retries(prometheus::BuildCounter()
                    .Name("kubestat_bridge_push_retries_total")
                    .Help("Failed push attempts that are retried, by HTTP code or failure reason")
                    .Register(registry)),
        lag(prometheus::BuildHistogram()
                .Name("kubestat_bridge_push_lag_seconds")
                .Help("From an object's newest window endtime to its acknowledged push")
                .Register(registry)
                .Add({}, prometheus::Histogram::BucketBoundaries{0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5,
                                                                 10, 20, 30, 60, 120, 300, 600})) {}
  prometheus::Family<prometheus::Counter>& pushed;
  prometheus::Family<prometheus::Counter>& failed;
  prometheus::Family<prometheus::Counter>& retries;
  prometheus::Histogram& lag;
};

Pusher::Pusher(PusherOptions options, PushQueue& queue, http::Client& client, const Clock& clock,
               prometheus::Registry* registry, RandomSource random)
    : options_(options),
      queue_(queue),
      client_(client),
      clock_(clock),
      random_(random ? std::move(random) : MakeRandomSource()),
      metrics_(registry != nullptr ? std::make_unique<Metrics>(*registry) : nullptr) {}

Pusher::~Pusher() { Stop(); }

void Pusher::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return;
  started_ = true;
  for (int i = 0; i < options_.max_in_flight; ++i) {
    workers_.emplace_back([this](const std::stop_token& stop) { Work(stop); });
  }
}

void Pusher::Stop() {
  std::vector<std::jthread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    workers = std::move(workers_);
  }
  for (std::jthread& worker : workers) worker.request_stop();
  workers.clear();  // joins
}

bool Pusher::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return started_ && !stopped_;
}

PusherStats Pusher::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Timestamp Pusher::Gate() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_.retry_not_before;
}

void Pusher::Work(const std::stop_token& stop) {
  const size_t max_bytes =
      options_.mode == PushMode::kBulk ? options_.max_batch_bytes : static_cast<size_t>(-1);
  while (!stop.stop_requested()) {
    if (!WaitUntil(clock_, Gate(), stop)) return;
    std::vector<PushItem> batch = queue_.Take(options_.max_batch_objects, max_bytes, stop);
    if (batch.empty()) return;
    // Another worker failed while this one waited for work: the batch waits in the queue,
    // where newer writes can still replace its items.
    if (clock_.MonotonicNow() < Gate()) {
      queue_.Return(std::move(batch));
      continue;
    }
    if (options_.mode == PushMode::kBulk) {
      PushBulk(std::move(batch), stop);
    } else {
      PushEach(std::move(batch), stop);
    }
  }
}

Pusher::Attempt Pusher::Send(const std::string& method, const std::string& path, std::string body,
                             const std::stop_token& stop) {
  http::ClientRequest request;
  request.method = method;
  request.path_and_query = path;
  request.body = std::move(body);
  request.headers.emplace_back("Accept", "application/json");
  request.stop = stop;
  absl::StatusOr<http::ClientResponse> response = client_.Do(request);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.requests;
  }
  Attempt attempt;
  if (!response.ok()) {
    attempt.transport = response.status();
    return attempt;
  }
  attempt.code = response->code;
  attempt.retry_after = response->Header("Retry-After");
  attempt.body = std::move(response->body);
  return attempt;
}

Pusher::Verdict Pusher::Judge(const Attempt& attempt, bool is_delete) const {
  if (!attempt.transport.ok()) {
    return attempt.transport.code() == absl::StatusCode::kCancelled ? Verdict::kCancelled
                                                                    : Verdict::kRetry;
  }
  const int code = attempt.code;
  if (code >= 200 && code <= 299) return Verdict::kAcknowledged;
  if (code == 404 && is_delete) return Verdict::kAcknowledged;
  if (code == 401 || code == 408 || code == 429 || code >= 500) return Verdict::kRetry;
  return Verdict::kRefused;
}

void Pusher::PushBulk(std::vector<PushItem> items, const std::stop_token& stop) {
  std::vector<std::string_view> rendered;
  rendered.reserve(items.size());
  for (const PushItem& item : items) rendered.push_back(item.rendered);
  Attempt attempt = Send("POST", std::string(metrics_api::kWriteBatchPath),
                         metrics_api::JoinWriteBatch(rendered), stop);
  switch (Judge(attempt, /*is_delete=*/false)) {
    case Verdict::kAcknowledged:
      Acknowledged(items, attempt.code);
      return;
    case Verdict::kCancelled:
      queue_.Return(std::move(items));
      return;
    case Verdict::kRetry:
      Retry(std::move(items), attempt);
      return;
    case Verdict::kRefused:
      break;
  }
  if (items.size() == 1) {
    Refused(items, attempt);
    return;
  }
  // One bad item refuses the whole batch: halve until the refused items stand alone.
  KVLOG(1) << "bulk write of " << items.size() << " objects refused with HTTP " << attempt.code
           << "; pushing each half on its own";
  const auto half = items.begin() + static_cast<std::ptrdiff_t>(items.size() / 2);
  std::vector<PushItem> second(std::make_move_iterator(half), std::make_move_iterator(items.end()));
  items.erase(half, items.end());
  PushBulk(std::move(items), stop);
  PushBulk(std::move(second), stop);
}

void Pusher::PushEach(std::vector<PushItem> items, const std::stop_token& stop) {
  for (auto it = items.begin(); it != items.end(); ++it) {
    const PushItem& item = *it;
    const bool is_delete = item.op == WriteItem::Op::kDelete;
    std::string body(item.object_json());
    Attempt attempt =
        Send(is_delete ? "DELETE" : "PUT", ObjectPath(item.key), std::move(body), stop);
    const Verdict verdict = Judge(attempt, is_delete);
    if (verdict == Verdict::kAcknowledged || verdict == Verdict::kRefused) {
      std::vector<PushItem> one;
      one.push_back(std::move(*it));
      if (verdict == Verdict::kAcknowledged) {
        Acknowledged(one, attempt.code);
      } else {
        Refused(one, attempt);
      }
      continue;
    }
    // This item and the ones not tried yet go back together.
    std::vector<PushItem> rest(std::make_move_iterator(it), std::make_move_iterator(items.end()));
    if (verdict == Verdict::kCancelled) {
      queue_.Return(std::move(rest));
    } else {
      Retry(std::move(rest), attempt);
    }
    return;
  }
}

void Pusher::Acknowledged(const std::vector<PushItem>& items, int code) {
  const Timestamp now = clock_.Now();
  queue_.Complete(items);
  const std::string label = CodeLabel(code);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.pushed[label] += items.size();
  stats_.consecutive_failures = 0;
  for (const PushItem& item : items) {
    if (!logged_refusals_.empty()) logged_refusals_.erase(item.key);
    if (metrics_ && item.op == WriteItem::Op::kPut && item.newest_endtime != Timestamp{}) {
      metrics_->lag.Observe(
          std::max(0.0, std::chrono::duration<double>(now - item.newest_endtime).count()));
    }
  }
  if (metrics_)
    metrics_->pushed.Add({{"code", label}}).Increment(static_cast<double>(items.size()));
}

void Pusher::Refused(const std::vector<PushItem>& items, const Attempt& attempt) {
  queue_.Complete(items);
  const std::string label = CodeLabel(attempt.code);
  std::string message;
  if (absl::StatusOr<ApiError> status = kube::ParseStatusObject(attempt.body); status.ok()) {
    message = status->message();
  } else {
    message = attempt.body.substr(0, 512);
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.failed[label] += items.size();
  if (metrics_)
    metrics_->failed.Add({{"code", label}}).Increment(static_cast<double>(items.size()));
  for (const PushItem& item : items) {
    if (logged_refusals_.size() >= kMaxLoggedRefusals) logged_refusals_.clear();
    if (!logged_refusals_.insert(item.key).second) continue;
    KLOG(WARNING) << "metrics API server refused " << DescribeKey(item.key) << " with HTTP "
                  << attempt.code << " (not retried): " << message;
  }
}

void Pusher::Retry(std::vector<PushItem> items, const Attempt& attempt) {
  const std::string label =
      attempt.transport.ok() ? CodeLabel(attempt.code) : http::FailureReason(attempt.transport);
  const size_t count = items.size();
  std::optional<Duration> delay;
  if (attempt.code == 429 || attempt.code == 503) delay = RetryAfter(attempt.retry_after);
  {
    // The gate moves before the items go back, so no worker takes them early.
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.retries[label];
    if (metrics_) metrics_->retries.Add({{"code", label}}).Increment();
    ++stats_.consecutive_failures;
    if (!delay) {
      delay = FullJitterDelay(stats_.consecutive_failures, options_.retry_base, options_.retry_max,
                              random_());
    }
    stats_.retry_not_before = std::max(stats_.retry_not_before, clock_.MonotonicNow() + *delay);
    if (stats_.consecutive_failures == 1 || stats_.consecutive_failures % 10 == 0) {
      KLOG(WARNING) << "pushing " << count << " objects failed ("
                    << (attempt.transport.ok() ? StrCat("HTTP ", attempt.code)
                                               : attempt.transport.ToString())
                    << "); retrying in " << std::chrono::duration<double>(*delay).count() << "s";
    }
  }
  queue_.Return(std::move(items));
}

}  // namespace kubestat::bridge
