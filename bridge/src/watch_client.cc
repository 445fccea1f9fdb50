#include "kubestat/bridge/watch_client.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "kubestat/bridge/list_page.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/file.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/http/client.h"
#include "kubestat/kube/bearer_token.h"
#include "kubestat/kube/watch_event.h"
#include "kubestat/metrics_api/group_version.h"
#include "kubestat/metrics_api/proto.h"
#include "kubestat/v1/aggregator.grpc.pb.h"
#include "percent_encode.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "simdjson.h"

namespace kubestat::bridge {
namespace {

using metrics_api::Resource;

bool IsLoopbackHost(std::string_view address) {
  // host:port, [v6]:port
  std::string_view host = address;
  if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

absl::Status CheckBackoff(std::string_view base_field, Duration base, std::string_view max_field,
                          Duration max) {
  if (base <= Duration::zero()) {
    return absl::InvalidArgumentError(StrCat(base_field, ": must be positive"));
  }
  if (max < base) {
    return absl::InvalidArgumentError(StrCat(max_field, ": must be at least ", base_field));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WatchClientOptions::Validate() const {
  if (address.empty()) return absl::InvalidArgumentError("address: required");
  if (ca_file.empty() && !IsLoopbackHost(address)) {
    return absl::InvalidArgumentError(StrCat(
        "address: ", address, " is not a loopback address, so the watch needs TLS (a CA file)"));
  }
  if (absl::Status s =
          CheckBackoff("reconnect_base", reconnect_base, "reconnect_max", reconnect_max);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckBackoff("retry_base", retry_base, "retry_max", retry_max); !s.ok()) {
    return s;
  }
  if (list_page_size < 1) return absl::InvalidArgumentError("list_page_size: must be >= 1");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ObjectKey>> ListObjectKeys(http::Client& client, Resource resource,
                                                      int64_t page_size,
                                                      const std::stop_token& stop) {
  const std::string path = StrCat("/apis/metrics/v1alpha1/", metrics_api::ResourceName(resource));
  std::vector<ObjectKey> keys;
  std::string continue_token;
  do {
    http::ClientRequest request;
    request.path_and_query = StrCat(path, "?limit=", page_size);
    if (!continue_token.empty()) {
      request.path_and_query += StrCat("&continue=", internal::PercentEncode(continue_token));
    }
    request.headers.emplace_back("Accept", "application/json");
    request.body_spare_capacity = simdjson::SIMDJSON_PADDING;
    request.stop = stop;
    absl::StatusOr<http::ClientResponse> response = client.Do(request);
    if (!response.ok()) return response.status();
    if (response->code < 200 || response->code > 299) {
      absl::StatusOr<ApiError> status = kube::ParseStatusObject(response->body);
      return absl::UnavailableError(StrCat("GET ", path, ": HTTP ", response->code,
                                           status.ok() ? ": " + status->message() : ""));
    }
    if (absl::Status s = ReadListPage(response->body, resource, &keys, &continue_token); !s.ok()) {
      return absl::InvalidArgumentError(StrCat("GET ", path, ": ", StdView(s.message())));
    }
  } while (!continue_token.empty());
  return keys;
}

class WatchClient::Impl {
 public:
  Impl(WatchClientOptions options, PushQueue& queue, http::Client& apiserver, const Clock& clock,
       prometheus::Registry* registry, RandomSource random,
       const std::shared_ptr<grpc::ChannelCredentials>& credentials)
      : options_(std::move(options)),
        queue_(queue),
        apiserver_(apiserver),
        clock_(clock),
        random_(random ? std::move(random) : MakeRandomSource()),
        stub_(v1::Aggregator::NewStub(grpc::CreateChannel(options_.address, credentials))) {
    if (!options_.token_file.empty()) {
      token_ = std::make_unique<kube::BearerTokenFile>(options_.token_file);
    }
    if (registry != nullptr) {
      streams_counter_ = &prometheus::BuildCounter()
                              .Name("kubestat_bridge_watch_streams_total")
                              .Help("Watch calls started on the aggregator")
                              .Register(*registry)
                              .Add({});
      events_family_ = &prometheus::BuildCounter()
                            .Name("kubestat_bridge_watch_events_total")
                            .Help("Watch events received from the aggregator, by type")
                            .Register(*registry);
      resync_deletes_counter_ = &prometheus::BuildCounter()
                                     .Name("kubestat_bridge_resync_deletes_total")
                                     .Help(
                                         "Deletes of objects the API server held and the "
                                         "aggregator's snapshot did not")
                                     .Register(*registry)
                                     .Add({});
    }
  }

  void Start() {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_) return;
    started_ = true;
    watch_thread_ = std::jthread([this](const std::stop_token& stop) { WatchLoop(stop); });
    resync_thread_ = std::jthread([this](const std::stop_token& stop) { ResyncLoop(stop); });
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    watch_thread_.request_stop();
    resync_thread_.request_stop();
    if (watch_thread_.joinable()) watch_thread_.join();
    if (resync_thread_.joinable()) resync_thread_.join();
  }

  bool running() const {
    std::lock_guard<std::mutex> lock(mu_);
    return started_ && !stopped_;
  }

  bool snapshot_pushed() const {
    if (ready_.load()) return true;
    uint64_t barrier = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!barrier_set_) return false;
      barrier = barrier_;
    }
    if (!queue_.CompletedThrough(barrier)) return false;
    ready_.store(true);
    return true;
  }

  WatchClientStats Stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  // Runs Watch calls one after another until stopped.
  void WatchLoop(const std::stop_token& stop) {
    uint32_t failed_streams = 0;
    while (!stop.stop_requested()) {
      const bool got_snapshot = RunStream(stop);
      if (stop.stop_requested()) return;
      failed_streams = got_snapshot ? 1 : failed_streams + 1;
      const Duration delay = FullJitterDelay(failed_streams, options_.reconnect_base,
                                             options_.reconnect_max, random_());
      KVLOG(1) << "watching " << options_.address << " again in "
               << std::chrono::duration<double>(delay).count() << "s";
      if (!WaitUntil(clock_, clock_.MonotonicNow() + delay, stop)) return;
    }
  }

  // One Watch call, read to its end. True when its snapshot ended (SNAPSHOT_END came).
  bool RunStream(const std::stop_token& stop) {
    grpc::ClientContext context;
    if (token_) {
      absl::StatusOr<std::string> token = token_->Get();
      if (!token.ok()) {
        KLOG(WARNING) << "watch " << options_.address << ": no bearer token: " << token.status();
        StreamFailed(StrCat("no bearer token: ", StdView(token.status().message())));
        return false;
      }
      context.AddMetadata("authorization", "Bearer " + *token);
    }
    std::stop_callback cancel(stop, [&context] { context.TryCancel(); });
    v1::WatchRequest request;
    request.mutable_nodes();
    request.mutable_pods();
    uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      generation = ++generation_;
      snapshot_complete_ = false;
      known_.clear();
      ++stats_.streams;
    }
    if (streams_counter_ != nullptr) streams_counter_->Increment();
    std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader = stub_->Watch(&context, request);
    bool got_snapshot = false;
    v1::WatchEvent event;
    while (reader->Read(&event)) {
      if (event.type() == v1::WatchEvent::SNAPSHOT_END) got_snapshot = true;
      Handle(event, generation);
    }
    const grpc::Status status = reader->Finish();
    if (stop.stop_requested()) return got_snapshot;
    if (status.ok()) {
      KLOG(INFO) << "watch " << options_.address << " ended by the aggregator";
    } else {
      KLOG(WARNING) << "watch " << options_.address << " ended: " << status.error_code() << " "
                    << status.error_message();
    }
    StreamFailed(status.ok() ? std::string("the stream was ended by the aggregator")
                             : StrCat("gRPC ", static_cast<int>(status.error_code()), ": ",
                                      status.error_message()));
    return got_snapshot;
  }

  // A stream ended (or could not start): failing from now unless already failing.
  void StreamFailed(std::string error) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.failing_since == kZeroTime) stats_.failing_since = clock_.Now();
    stats_.last_error = std::move(error);
  }

  void Handle(const v1::WatchEvent& event, uint64_t generation) {
    if (events_family_ != nullptr) {
      events_family_->Add({{"type", v1::WatchEvent::Type_Name(event.type())}}).Increment();
    }
    std::lock_guard<std::mutex> lock(mu_);
    stats_.failing_since = kZeroTime;  // the aggregator answers
    stats_.last_error.clear();
    switch (event.type()) {
      case v1::WatchEvent::ADDED:
      case v1::WatchEvent::MODIFIED:
        ++stats_.events;
        PutLocked(event);
        return;
      case v1::WatchEvent::DELETED: {
        ++stats_.events;
        ObjectKey key;
        if (event.has_node()) {
          key = {Resource::kNodes, "", event.node().name()};
        } else if (event.has_pod()) {
          key = {Resource::kPods, event.pod().namespace_(), event.pod().name()};
        } else {
          ++stats_.bad_objects;
          return;
        }
        known_.erase(key);
        queue_.Delete(std::move(key));
        return;
      }
      case v1::WatchEvent::SNAPSHOT_END:
        ++stats_.snapshots;
        snapshot_complete_ = true;
        resync_requested_ = generation;
        resync_cv_.notify_all();
        return;
      default:
        ++stats_.bad_objects;
        KLOG(WARNING) << "watch " << options_.address << ": event of unknown type "
                      << static_cast<int>(event.type()) << " skipped";
        return;
    }
  }

  // Called with mu_ held, so that a resync never decides on a key between its insertion in
  // known_ and its Put.
  void PutLocked(const v1::WatchEvent& event) {
    if (event.has_node()) {
      absl::StatusOr<metrics_api::NodeMetrics> node = metrics_api::FromProto(event.node());
      if (!node.ok()) {
        BadObjectLocked("node " + event.node().name(), node.status());
        return;
      }
      known_.insert({Resource::kNodes, "", node->name});
      queue_.Put(*std::move(node));
    } else if (event.has_pod()) {
      absl::StatusOr<metrics_api::PodMetrics> pod = metrics_api::FromProto(event.pod());
      if (!pod.ok()) {
        BadObjectLocked("pod " + event.pod().namespace_() + "/" + event.pod().name(), pod.status());
        return;
      }
      known_.insert({Resource::kPods, pod->namespace_name, pod->name});
      queue_.Put(*std::move(pod));
    } else {
      BadObjectLocked("event", absl::InvalidArgumentError("no object"));
    }
  }

  void BadObjectLocked(const std::string& what, const absl::Status& status) {
    ++stats_.bad_objects;
    KLOG(WARNING) << "watch " << options_.address << ": " << what << " skipped: " << status;
  }

  // Runs the resync each SNAPSHOT_END asks for, until stopped.
  void ResyncLoop(const std::stop_token& stop) {
    uint64_t done = 0;
    while (!stop.stop_requested()) {
      uint64_t generation = 0;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (!resync_cv_.wait(lock, stop, [&] { return resync_requested_ > done; })) return;
        generation = resync_requested_;
      }
      done = generation;
      uint32_t failures = 0;
      while (!stop.stop_requested() && !Resync(generation, stop)) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          // A newer stream's snapshot asks for its own resync.
          if (generation_ != generation) break;
        }
        const Duration delay =
            FullJitterDelay(++failures, options_.retry_base, options_.retry_max, random_());
        if (!WaitUntil(clock_, clock_.MonotonicNow() + delay, stop)) return;
      }
    }
  }

  // One resync attempt for the stream `generation`. False when the list failed.
  bool Resync(uint64_t generation, const std::stop_token& stop) {
    std::vector<ObjectKey> held;
    for (Resource resource : {Resource::kNodes, Resource::kPods}) {
      absl::StatusOr<std::vector<ObjectKey>> keys =
          ListObjectKeys(apiserver_, resource, options_.list_page_size, stop);
      if (!keys.ok()) {
        if (stop.stop_requested()) return true;
        KLOG(WARNING) << "resync: listing the metrics API server failed: " << keys.status();
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.resync_failures;
        return false;
      }
      held.insert(held.end(), std::make_move_iterator(keys->begin()),
                  std::make_move_iterator(keys->end()));
    }
    uint64_t deletes = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Only against a complete snapshot of the current stream.
      if (generation_ != generation || !snapshot_complete_) return true;
      for (ObjectKey& key : held) {
        if (known_.contains(key)) continue;
        queue_.Delete(std::move(key));
        ++deletes;
      }
      ++stats_.resyncs;
      stats_.resync_deletes += deletes;
      if (!barrier_set_) {
        barrier_ = queue_.last_sequence();
        barrier_set_ = true;
      }
    }
    if (resync_deletes_counter_ != nullptr) {
      resync_deletes_counter_->Increment(static_cast<double>(deletes));
    }
    KLOG(INFO) << "resync: the metrics API server held " << held.size() << " objects, " << deletes
               << " of them gone from the aggregator (deleting)";
    return true;
  }

  const WatchClientOptions options_;
  PushQueue& queue_;
  http::Client& apiserver_;
  const Clock& clock_;
  RandomSource random_;
  std::unique_ptr<v1::Aggregator::Stub> stub_;
  std::unique_ptr<kube::BearerTokenFile> token_;
  prometheus::Counter* streams_counter_ = nullptr;
  prometheus::Family<prometheus::Counter>* events_family_ = nullptr;
  prometheus::Counter* resync_deletes_counter_ = nullptr;

  mutable std::mutex mu_;
  std::condition_variable_any resync_cv_;
  bool started_ = false;
  bool stopped_ = false;
  uint64_t generation_ = 0;         // of the current stream
  bool snapshot_complete_ = false;  // the current stream's SNAPSHOT_END came
  std::set<ObjectKey> known_;       // objects of the current stream
  uint64_t resync_requested_ = 0;   // the generation whose snapshot ended last
  bool barrier_set_ = false;
  uint64_t barrier_ = 0;  // last sequence of the first resync
  mutable std::atomic<bool> ready_{false};
  WatchClientStats stats_;
  std::jthread watch_thread_;
  std::jthread resync_thread_;
};

absl::StatusOr<std::unique_ptr<WatchClient>> WatchClient::Create(
    WatchClientOptions options, PushQueue& queue, http::Client& apiserver, const Clock& clock,
    prometheus::Registry* registry, RandomSource random) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(options.ca_file, "ca_file");
    if (!ca.ok()) return absl::InvalidArgumentError(ca.status().message());
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *std::move(ca);
    credentials = grpc::SslCredentials(ssl);
  }
  return std::unique_ptr<WatchClient>(new WatchClient(std::make_unique<Impl>(
      std::move(options), queue, apiserver, clock, registry, std::move(random), credentials)));
}

WatchClient::WatchClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WatchClient::~WatchClient() { Stop(); }
void WatchClient::Start() { impl_->Start(); }
void WatchClient::Stop() { impl_->Stop(); }
bool WatchClient::running() const { return impl_->running(); }
bool WatchClient::snapshot_pushed() const { return impl_->snapshot_pushed(); }
WatchClientStats WatchClient::Stats() const { return impl_->Stats(); }

}  // namespace kubestat::bridge
