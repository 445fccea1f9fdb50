// List+watch of nodes, pods and LimitRanges on the kube API: what is particular to them,
// decoding a NodeInfo, a PodInfo or a LimitRangeInfo from an object's JSON and feeding the
// Discovery snapshot. The
// list+watch itself (pages, resuming a watch, relisting on 410 Gone, backoff, stop) is
// kube::ListWatch (kube/list_watch.h); a relist's items replace the snapshot, which emits
// the differences, so listeners still see deletions that happened while the watch was down.
#include <simdjson.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/discovery/discovery.h"
#include "kubestat/http/client.h"
#include "kubestat/kube/kube_api_tls.h"
#include "kubestat/kube/list_watch.h"
#include "kubestat/kube/watch_event.h"

namespace kubestat::discovery {
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

// Reads the cpu and memory of a ResourceList ({"cpu": "250m", "memory": "64Mi", ...}) into
// `out`, ratios in thousandths when `ratio`; other resources are not kubestat's. Returns
// how many values were no Quantity (those are left out).
int ReadAmounts(element list, bool ratio, limits::Amounts* out) {
  int bad = 0;
  for (limits::Resource r : limits::kResources) {
    std::string_view text;
    if (list[limits::ResourceName(r)].get(text) != simdjson::SUCCESS) continue;
    absl::StatusOr<int64_t> value = ratio ? limits::ParseRatio(text) : limits::ParseAmount(r, text);
    if (value.ok()) {
      (*out)[r] = *value;
    } else {
      ++bad;
    }
  }
  return bad;
}

// spec.containers' requests and limits, and the controlling ownerReference.
int ReadRightSizing(element item, PodInfo* pod) {
  int bad = 0;
  simdjson::dom::array containers;
  if (item.at_pointer("/spec/containers").get(containers) == simdjson::SUCCESS) {
    std::vector<limits::ContainerResources> declared;
    for (element container : containers) {
      limits::ContainerResources c;
      c.name = Str(container, "name");
      element list;
      if (container.at_pointer("/resources/requests").get(list) == simdjson::SUCCESS) {
        bad += ReadAmounts(list, false, &c.requests);
      }
      if (container.at_pointer("/resources/limits").get(list) == simdjson::SUCCESS) {
        bad += ReadAmounts(list, false, &c.limits);
      }
      declared.push_back(std::move(c));
    }
    pod->containers = std::move(declared);
  }
  simdjson::dom::array owners;
  if (item.at_pointer("/metadata/ownerReferences").get(owners) == simdjson::SUCCESS) {
    for (element owner : owners) {
      bool controller = false;
      if (owner["controller"].get(controller) == simdjson::SUCCESS && controller) {
        pod->owner_kind = Str(owner, "kind");
        pod->owner_name = Str(owner, "name");
        break;
      }
    }
  }
  return bad;
}

absl::StatusOr<LimitRangeInfo> ParseLimitRange(element item, int* bad) {
  element metadata;
  if (item["metadata"].get(metadata) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("LimitRange without metadata");
  }
  LimitRangeInfo info;
  info.limit_range.name = Str(metadata, "name");
  info.namespace_name = Str(metadata, "namespace");
  if (info.limit_range.name.empty() || info.namespace_name.empty()) {
    return absl::InvalidArgumentError("LimitRange without metadata.name or metadata.namespace");
  }
  info.resource_version = Str(metadata, "resourceVersion");
  simdjson::dom::array items;
  if (item.at_pointer("/spec/limits").get(items) == simdjson::SUCCESS) {
    for (element entry : items) {
      const std::string type = Str(entry, "type");
      // PersistentVolumeClaim items limit storage, not cpu or memory.
      if (type != "Container" && type != "Pod") continue;
      limits::LimitRangeItem limit;
      limit.type = type == "Pod" ? limits::LimitType::kPod : limits::LimitType::kContainer;
      const std::pair<const char*, limits::Amounts*> fields[] = {
          {"min", &limit.min},
          {"max", &limit.max},
          {"default", &limit.default_limit},
          {"defaultRequest", &limit.default_request},
          {"maxLimitRequestRatio", &limit.max_limit_request_ratio}};
      for (const auto& [name, amounts] : fields) {
        element list;
        if (entry[name].get(list) == simdjson::SUCCESS) {
          *bad += ReadAmounts(list, amounts == &limit.max_limit_request_ratio, amounts);
        }
      }
      info.limit_range.items.push_back(limits::WithApiDefaults(std::move(limit)));
    }
  }
  return info;
}

absl::StatusOr<PodInfo> ParsePod(element item, int* bad) {
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
  *bad += ReadRightSizing(item, &pod);
  return pod;
}

enum class Resource { kNodes, kPods, kLimitRanges };

ChangeType ChangeFor(kube::WatchEventType type) {
  switch (type) {
    case kube::WatchEventType::kModified:
      return ChangeType::kModified;
    case kube::WatchEventType::kDeleted:
      return ChangeType::kDeleted;
    default:  // ListWatch hands on only ADDED, MODIFIED and DELETED
      return ChangeType::kAdded;
  }
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
  // Feeds one resource's lists and watch events into the discovery (runs on the resource's
  // ListWatch thread).
  class Feed final : public kube::ListWatchHandler {
   public:
    Feed(KubeApiDiscovery* owner, Resource resource, int index, const Clock& clock)
        : owner_(owner), resource_(resource), index_(index), clock_(clock) {}

    void OnListStart() override {
      nodes_.clear();
      pods_.clear();
      limit_ranges_.clear();
    }

    void OnListItem(std::string_view object_json) override {
      element item;
      if (parser_.parse(object_json.data(), object_json.size()).get(item) != simdjson::SUCCESS) {
        return;
      }
      if (resource_ == Resource::kNodes) {
        if (auto node = ParseNode(item); node.ok()) nodes_.push_back(*std::move(node));
      } else if (resource_ == Resource::kPods) {
        int bad = 0;
        if (auto pod = ParsePod(item, &bad); pod.ok()) pods_.push_back(*std::move(pod));
        CountBad(bad);
      } else {
        int bad = 0;
        if (auto lr = ParseLimitRange(item, &bad); lr.ok()) {
          limit_ranges_.push_back(*std::move(lr));
        }
        CountBad(bad);
      }
    }

    void OnListComplete(std::string_view /*resource_version*/) override {
      if (resource_ == Resource::kNodes) {
        owner_->ReplaceNodes(std::exchange(nodes_, {}));
      } else if (resource_ == Resource::kPods) {
        owner_->ReplacePods(std::exchange(pods_, {}));
      } else {
        owner_->ReplaceLimitRanges(std::exchange(limit_ranges_, {}));
      }
      owner_->RecordAnswer(index_);
      owner_->MarkListed(index_, static_cast<int>(owner_->impl_->watches.size()));
    }

    absl::Status OnEvent(const kube::WatchEvent& event) override {
      element object;
      if (auto error = parser_.parse(event.object_json).get(object); error != simdjson::SUCCESS) {
        return absl::InvalidArgumentError(
            absl::StrCat("watch event object: ", simdjson::error_message(error)));
      }
      const ChangeType change = ChangeFor(event.type);
      if (resource_ == Resource::kNodes) {
        absl::StatusOr<NodeInfo> node = ParseNode(object);
        if (!node.ok()) return node.status();
        owner_->ApplyNode(change, *std::move(node));
      } else if (resource_ == Resource::kPods) {
        int bad = 0;
        absl::StatusOr<PodInfo> pod = ParsePod(object, &bad);
        CountBad(bad);
        if (!pod.ok()) return pod.status();
        owner_->ApplyPod(change, *std::move(pod));
      } else {
        int bad = 0;
        absl::StatusOr<LimitRangeInfo> lr = ParseLimitRange(object, &bad);
        CountBad(bad);
        if (!lr.ok()) return lr.status();
        owner_->ApplyLimitRange(change, *std::move(lr));
      }
      owner_->CountStat(&DiscoveryStats::events);
      return absl::OkStatus();
    }

    void OnWatchStart() override { owner_->CountStat(&DiscoveryStats::watches); }
    void OnWatchOpen() override { owner_->RecordAnswer(index_); }
    void OnExpired() override { owner_->CountStat(&DiscoveryStats::relists_after_gone); }
    // Failed requests and undecodable events alike (an event that fails also ends its
    // watch, which counts as a failed watch).
    void OnError(const kube::ListWatchError& error) override {
      owner_->CountStat(&DiscoveryStats::errors);
      // An event the API sent, however bad, is an answer; a request that got none, or an
      // error answer, leaves discovery without the API.
      if (error.stage != kube::ListWatchError::Stage::kEvent) {
        owner_->RecordFailure(index_, clock_.Now(), std::string(error.status.message()));
      }
    }

   private:
    void CountBad(int bad) {
      for (int i = 0; i < bad; ++i) owner_->CountStat(&DiscoveryStats::bad_quantities);
    }

    KubeApiDiscovery* const owner_;
    const Resource resource_;
    const int index_;  // into the discovery's watches
    const Clock& clock_;
    simdjson::dom::parser parser_;
    // The list being read.
    std::vector<NodeInfo> nodes_;
    std::vector<PodInfo> pods_;
    std::vector<LimitRangeInfo> limit_ranges_;
  };

  KubeApiDiscoveryOptions options;
  const Clock* clock = nullptr;
  std::unique_ptr<http::Client> list_client;
  std::unique_ptr<http::Client> watch_client;
  // Index 0: nodes; then pods and LimitRanges when watched. The watches go first when
  // destroyed.
  std::vector<std::unique_ptr<Feed>> feeds;
  std::vector<std::unique_ptr<kube::ListWatch>> watches;

  void AddResource(KubeApiDiscovery* owner, Resource resource) {
    kube::ListWatchOptions watch_options;
    watch_options.path = resource == Resource::kNodes  ? "/api/v1/nodes"
                         : resource == Resource::kPods ? "/api/v1/pods"
                                                       : "/api/v1/limitranges";
    watch_options.page_size = options.list_page_size;
    watch_options.watch_timeout = options.watch_timeout;
    watch_options.watch_head_timeout = options.request_timeout;
    watch_options.retry_backoff = options.retry_backoff;
    watch_options.max_event_bytes = options.max_response_bytes;
    feeds.push_back(
        std::make_unique<Feed>(owner, resource, static_cast<int>(feeds.size()), *clock));
    watches.push_back(std::make_unique<kube::ListWatch>(std::move(watch_options), *list_client,
                                                        *watch_client, *feeds.back()));
  }
};

KubeApiDiscovery::KubeApiDiscovery(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  impl_->AddResource(this, Resource::kNodes);
  if (impl_->options.watch_pods) impl_->AddResource(this, Resource::kPods);
  if (impl_->options.watch_limit_ranges) impl_->AddResource(this, Resource::kLimitRanges);
}

KubeApiDiscovery::~KubeApiDiscovery() { Stop(); }

absl::StatusOr<std::unique_ptr<KubeApiDiscovery>> KubeApiDiscovery::Create(
    kube::KubeApiConfig config, KubeApiDiscoveryOptions options, const Clock& clock) {
  if (absl::Status status = options.Validate(); !status.ok()) return status;
  auto impl = std::make_unique<Impl>();
  absl::StatusOr<http::ClientOptions> client_options = kube::KubeApiClientOptions(config);
  if (!client_options.ok()) return client_options.status();
  http::ClientOptions list_options = *std::move(client_options);  // TLS files shared by both
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
  impl->clock = &clock;
  return std::unique_ptr<KubeApiDiscovery>(new KubeApiDiscovery(std::move(impl)));
}

void KubeApiDiscovery::Start() {
  for (const auto& watch : impl_->watches) watch->Start();
}

void KubeApiDiscovery::Stop() {
  for (const auto& watch : impl_->watches) watch->Stop();
}

std::string KubeApiDiscovery::node_resource_version() const {
  return impl_->watches[0]->resource_version();
}

std::string KubeApiDiscovery::pod_resource_version() const {
  return impl_->options.watch_pods ? impl_->watches[1]->resource_version() : "";
}

std::string KubeApiDiscovery::limit_range_resource_version() const {
  return impl_->options.watch_limit_ranges ? impl_->watches.back()->resource_version() : "";
}

}  // namespace kubestat::discovery
