// List+watch of nodes and pods on the kube API.
//
// Why it is shaped this way: a watch may end at any time (server timeout, proxy, network);
// resuming from the last resourceVersion seen gives every change exactly once. When that
// version has been compacted away the server says 410 Gone, and only a fresh list can
// bring the snapshot back; the list is diffed against the snapshot so listeners still see
// deletions that happened while the watch was down.
#include <simdjson.h>

#include <stop_token>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "fetch_status.h"
#include "kubestat/http/client.h"
#include "kubestat/kube/bearer_token.h"
#include "kubestat/scrapers/discovery.h"
#include "kubestat/scrapers/fetch_error.h"

namespace kubestat::scrapers {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

std::string Str(element e, const char* key) {
  std::string_view value;
  if (e[key].get(value) == simdjson::SUCCESS) return std::string(value);
  return "";
}

std::map<std::string, std::string> Labels(element metadata) {
  std::map<std::string, std::string> labels;
  object map;
  if (metadata["labels"].get(map) != simdjson::SUCCESS) return labels;
  for (simdjson::dom::key_value_pair field : map) {
    std::string_view value;
    if (field.value.get(value) == simdjson::SUCCESS) {
      labels.emplace(std::string(field.key), std::string(value));
    }
  }
  return labels;
}

absl::StatusOr<NodeInfo> ParseNode(element item) {
  element metadata;
  if (item["metadata"].get(metadata) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("node without metadata");
  }
  NodeInfo node;
  node.name = Str(metadata, "name");
  if (node.name.empty()) return absl::InvalidArgumentError("node without metadata.name");
  node.uid = Str(metadata, "uid");
  node.resource_version = Str(metadata, "resourceVersion");
  node.labels = Labels(metadata);
  simdjson::dom::array addresses;
  if (item.at_pointer("/status/addresses").get(addresses) == simdjson::SUCCESS) {
    for (element address : addresses) {
      node.addresses.push_back({Str(address, "type"), Str(address, "address")});
    }
  }
  int64_t port = 0;
  if (item.at_pointer("/status/daemonEndpoints/kubeletEndpoint/Port").get(port) ==
          simdjson::SUCCESS &&
      port > 0 && port <= 65535) {
    node.kubelet_port = static_cast<int>(port);
  }
  return node;
}

absl::StatusOr<PodInfo> ParsePod(element item) {
  element metadata;
  if (item["metadata"].get(metadata) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("pod without metadata");
  }
  PodInfo pod;
  pod.name = Str(metadata, "name");
  pod.namespace_name = Str(metadata, "namespace");
  if (pod.name.empty() || pod.namespace_name.empty()) {
    return absl::InvalidArgumentError("pod without metadata.name or metadata.namespace");
  }
  pod.uid = Str(metadata, "uid");
  pod.resource_version = Str(metadata, "resourceVersion");
  pod.labels = Labels(metadata);
  element deletion;
  pod.terminating =
      metadata["deletionTimestamp"].get(deletion) == simdjson::SUCCESS && !deletion.is_null();
  std::string_view text;
  if (item.at_pointer("/spec/nodeName").get(text) == simdjson::SUCCESS) pod.node_name = text;
  if (item.at_pointer("/status/phase").get(text) == simdjson::SUCCESS) pod.phase = text;
  return pod;
}

enum class Resource { kNodes, kPods };

// `text` percent-encoded for a query parameter value (RFC 3986 unreserved bytes kept).
std::string QueryEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, "%", absl::string_view(&"0123456789ABCDEF"[u >> 4], 1),
                      absl::string_view(&"0123456789ABCDEF"[u & 0xf], 1));
    }
  }
  return out;
}

// A request of the discovery: GET `path`, JSON wanted, abandoned on `stop`.
http::ClientRequest Get(std::string path, std::stop_token stop) {
  http::ClientRequest request;
  request.path_and_query = std::move(path);
  request.headers.emplace_back("Accept", "application/json");
  request.stop = std::move(stop);
  return request;
}

}  // namespace

absl::Status KubeApiDiscoveryOptions::Validate() const {
  if (watch_timeout < std::chrono::seconds(1)) {
    return absl::InvalidArgumentError("discovery watch timeout: must be at least 1s");
  }
  if (retry_backoff < Duration::zero()) {
    return absl::InvalidArgumentError("discovery retry backoff: must not be negative");
  }
  if (list_page_size < 1)
    return absl::InvalidArgumentError("discovery list page size: must be positive");
  if (request_timeout <= Duration::zero()) {
    return absl::InvalidArgumentError("discovery request timeout: must be positive");
  }
  if (max_response_bytes == 0)
    return absl::InvalidArgumentError("discovery response cap: must be positive");
  return absl::OkStatus();
}

struct KubeApiDiscovery::Impl {
  KubeApiDiscoveryOptions options;
  KubeApiDiscovery* owner = nullptr;
  std::unique_ptr<http::Client> list_client;
  std::unique_ptr<http::Client> watch_client;
  std::stop_source stop;
  std::mutex mu;
  std::condition_variable stop_cv;
  bool stopping = false;
  std::string node_rv;
  std::string pod_rv;
  std::vector<std::thread> threads;

  int resources() const { return options.watch_pods ? 2 : 1; }

  std::string& RvFor(Resource r) { return r == Resource::kNodes ? node_rv : pod_rv; }

  void SetRv(Resource r, std::string rv) {
    std::lock_guard<std::mutex> lock(mu);
    RvFor(r) = std::move(rv);
  }
  std::string GetRv(Resource r) {
    std::lock_guard<std::mutex> lock(mu);
    return RvFor(r);
  }

  // Waits for the retry backoff; false when stopping.
  bool Backoff() {
    std::unique_lock<std::mutex> lock(mu);
    stop_cv.wait_for(lock, options.retry_backoff, [this] { return stopping; });
    return !stopping;
  }

  bool Stopping() {
    std::lock_guard<std::mutex> lock(mu);
    return stopping;
  }

  // Lists every page of `r` and replaces the snapshot; stores the list's resourceVersion.
  absl::Status List(Resource r, simdjson::dom::parser& parser) {
    const char* base = r == Resource::kNodes ? "/api/v1/nodes" : "/api/v1/pods";
    std::vector<NodeInfo> nodes;
    std::vector<PodInfo> pods;
    std::string continue_token;
    std::string rv;
    do {
      std::string path = absl::StrCat(base, "?limit=", options.list_page_size);
      if (!continue_token.empty()) {
        absl::StrAppend(&path, "&continue=", QueryEscape(continue_token));
      }
      http::ClientRequest request = Get(std::move(path), stop.get_token());
      request.body_spare_capacity = simdjson::SIMDJSON_PADDING;
      absl::StatusOr<http::ClientResponse> page = list_client->Do(request);
      if (!page.ok()) return internal::FromClientError(page.status());
      if (page->code < 200 || page->code > 299) {
        return internal::FromHttpCode(page->code, page->body);
      }
      element doc;
      if (auto error = parser.parse(page->body).get(doc); error != simdjson::SUCCESS) {
        return WithFailureReason(
            absl::InvalidArgumentError(
                absl::StrCat("list ", base, ": invalid JSON: ", simdjson::error_message(error))),
            "decode");
      }
      element metadata;
      continue_token.clear();
      if (doc["metadata"].get(metadata) == simdjson::SUCCESS) {
        rv = Str(metadata, "resourceVersion");
        continue_token = Str(metadata, "continue");
      }
      simdjson::dom::array items;
      if (doc["items"].get(items) == simdjson::SUCCESS) {
        for (element item : items) {
          if (r == Resource::kNodes) {
            if (auto node = ParseNode(item); node.ok()) nodes.push_back(*std::move(node));
          } else {
            if (auto pod = ParsePod(item); pod.ok()) pods.push_back(*std::move(pod));
          }
        }
      }
    } while (!continue_token.empty());
    if (r == Resource::kNodes) {
      owner->ReplaceNodes(std::move(nodes));
    } else {
      owner->ReplacePods(std::move(pods));
    }
    SetRv(r, rv);
    owner->MarkListed(r == Resource::kNodes ? 0 : 1, resources());
    return absl::OkStatus();
  }

  // Applies one watch event line. Returns false with *gone set when the server said 410.
  absl::Status ApplyEvent(Resource r, std::string_view line, simdjson::dom::parser& parser,
                          bool* gone) {
    element event;
    if (auto error = parser.parse(line.data(), line.size()).get(event);
        error != simdjson::SUCCESS) {
      return absl::InvalidArgumentError(
          absl::StrCat("watch event is not JSON: ", simdjson::error_message(error)));
    }
    std::string type = Str(event, "type");
    element object;
    if (event["object"].get(object) != simdjson::SUCCESS) {
      return absl::InvalidArgumentError("watch event without object");
    }
    if (type == "ERROR") {
      int64_t code = 0;
      if (object["code"].get(code) == simdjson::SUCCESS && code == 410) {
        *gone = true;
        return absl::OkStatus();
      }
      return absl::UnavailableError(absl::StrCat("watch error: ", Str(object, "message")));
    }
    std::string rv;
    element metadata;
    if (object["metadata"].get(metadata) == simdjson::SUCCESS)
      rv = Str(metadata, "resourceVersion");
    if (type == "BOOKMARK") {
      if (!rv.empty()) SetRv(r, rv);
      return absl::OkStatus();
    }
    ChangeType change;
    if (type == "ADDED") {
      change = ChangeType::kAdded;
    } else if (type == "MODIFIED") {
      change = ChangeType::kModified;
    } else if (type == "DELETED") {
      change = ChangeType::kDeleted;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown watch event type \"", type, "\""));
    }
    if (r == Resource::kNodes) {
      absl::StatusOr<NodeInfo> node = ParseNode(object);
      if (!node.ok()) return node.status();
      owner->ApplyNode(change, *std::move(node));
    } else {
      absl::StatusOr<PodInfo> pod = ParsePod(object);
      if (!pod.ok()) return pod.status();
      owner->ApplyPod(change, *std::move(pod));
    }
    owner->CountStat(&DiscoveryStats::events);
    if (!rv.empty()) SetRv(r, rv);
    return absl::OkStatus();
  }

  // One watch request from the stored resourceVersion; returns when it ends.
  absl::Status Watch(Resource r, simdjson::dom::parser& parser, bool* gone) {
    const char* base = r == Resource::kNodes ? "/api/v1/nodes" : "/api/v1/pods";
    const int64_t timeout_seconds =
        std::chrono::duration_cast<std::chrono::seconds>(options.watch_timeout).count();
    std::string path =
        absl::StrCat(base, "?watch=true&allowWatchBookmarks=true&resourceVersion=", GetRv(r),
                     "&timeoutSeconds=", timeout_seconds);
    owner->CountStat(&DiscoveryStats::watches);
    std::string pending;
    absl::Status event_error;
    int status_code = 0;
    std::string error_body;
    absl::Status status = watch_client->Stream(
        Get(std::move(path), stop.get_token()), options.request_timeout,
        [&](std::string_view chunk) {
          pending.append(chunk);
          size_t start = 0;
          for (size_t newline; (newline = pending.find('\n', start)) != std::string::npos;
               start = newline + 1) {
            std::string_view line(pending.data() + start, newline - start);
            if (line.empty() || line == "\r") continue;
            absl::Status applied = ApplyEvent(r, line, parser, gone);
            if (*gone) return false;
            if (!applied.ok()) {
              owner->CountStat(&DiscoveryStats::errors);
              event_error = applied;
              return false;
            }
          }
          pending.erase(0, start);
          if (pending.size() > options.max_response_bytes) {
            event_error = absl::ResourceExhaustedError("watch event larger than the cap");
            return false;
          }
          return true;
        },
        &status_code, &error_body);
    if (!status.ok()) return internal::FromClientError(status);
    if (status_code == 410) {
      *gone = true;
      return absl::OkStatus();
    }
    if (status_code < 200 || status_code > 299) {
      return internal::FromHttpCode(status_code, error_body);
    }
    return event_error;
  }

  void Run(Resource r) {
    simdjson::dom::parser parser;
    bool need_list = true;
    while (!Stopping()) {
      if (need_list) {
        // A parser of its own: a list's document is as large as the cluster (the watch's
        // events are small), and it is freed when the list is done.
        simdjson::dom::parser list_parser;
        absl::Status listed = List(r, list_parser);
        if (Stopping()) return;
        if (!listed.ok()) {
          owner->CountStat(&DiscoveryStats::errors);
          if (!Backoff()) return;
          continue;
        }
        need_list = false;
      }
      bool gone = false;
      absl::Status watched = Watch(r, parser, &gone);
      if (Stopping()) return;
      if (gone) {
        owner->CountStat(&DiscoveryStats::relists_after_gone);
        need_list = true;
        continue;
      }
      if (!watched.ok()) {
        owner->CountStat(&DiscoveryStats::errors);
        if (!Backoff()) return;
      }
      // A watch that ended cleanly is resumed at once from the stored resourceVersion.
    }
  }
};

KubeApiDiscovery::KubeApiDiscovery(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  impl_->owner = this;
}

KubeApiDiscovery::~KubeApiDiscovery() { Stop(); }

absl::StatusOr<std::unique_ptr<KubeApiDiscovery>> KubeApiDiscovery::Create(
    kube::KubeApiConfig config, KubeApiDiscoveryOptions options, const Clock& clock) {
  if (absl::Status status = options.Validate(); !status.ok()) return status;
  auto impl = std::make_unique<Impl>();
  http::ClientOptions list_options;
  list_options.base_url = config.server;
  list_options.ca_pem = config.ca_pem;
  list_options.insecure_skip_tls_verify = config.insecure_skip_tls_verify;
  list_options.client_cert_pem = config.client_cert_pem;
  list_options.client_key_pem = config.client_key_pem;
  if (!config.token.empty()) {
    list_options.bearer_token = config.token;
  } else if (!config.token_file.empty()) {
    auto token = std::make_shared<kube::BearerTokenFile>(config.token_file);
    list_options.bearer_token_source = [token] { return token->Get(); };
  }
  list_options.timeout = options.request_timeout;
  list_options.max_response_bytes = options.max_response_bytes;
  http::ClientOptions watch_options = list_options;
  // A watch may be quiet for up to its timeoutSeconds; the per-read backstop gets a margin.
  watch_options.timeout = options.watch_timeout + std::chrono::seconds(30);
  absl::StatusOr<std::unique_ptr<http::Client>> list_client =
      http::Client::Create(std::move(list_options), clock);
  if (!list_client.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kube API client: ", list_client.status().message()));
  }
  absl::StatusOr<std::unique_ptr<http::Client>> watch_client =
      http::Client::Create(std::move(watch_options), clock);
  if (!watch_client.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kube API client: ", watch_client.status().message()));
  }
  impl->list_client = *std::move(list_client);
  impl->watch_client = *std::move(watch_client);
  impl->options = options;
  return std::unique_ptr<KubeApiDiscovery>(new KubeApiDiscovery(std::move(impl)));
}

void KubeApiDiscovery::Start() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->threads.empty() || impl_->stopping) return;
  impl_->threads.emplace_back([this] { impl_->Run(Resource::kNodes); });
  if (impl_->options.watch_pods) {
    impl_->threads.emplace_back([this] { impl_->Run(Resource::kPods); });
  }
}

void KubeApiDiscovery::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->stop.request_stop();
  impl_->stop_cv.notify_all();
  for (std::thread& thread : impl_->threads) {
    if (thread.joinable()) thread.join();
  }
}

std::string KubeApiDiscovery::node_resource_version() const {
  return impl_->GetRv(Resource::kNodes);
}

std::string KubeApiDiscovery::pod_resource_version() const { return impl_->GetRv(Resource::kPods); }

}  // namespace kubestat::scrapers
