#include "api_resources.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <span>

#include "absl/strings/str_cat.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/apimachinery/label_selector.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/url.h"
#include "kubestat/sim/render.h"
#include "sim_hash.h"
#include "sim_http.h"

namespace kubestat::sim {

using http::Request;
using http::Response;
using http::StreamWriter;

namespace {

constexpr std::string_view kNamespaces[] = {"analytics", "default", "kube-system", "monitoring",
                                            "payments",  "search",  "shop"};

bool IsWatch(const Query& query) {
  const std::string w = QueryParam(query, "watch");
  return w == "true" || w == "1";
}

Duration WatchLifetime(const Query& query) {
  int64_t seconds = 0;
  const std::string t = QueryParam(query, "timeoutSeconds");
  if (!t.empty()) seconds = std::strtoll(t.c_str(), nullptr, 10);
  if (seconds <= 0 || seconds > 3600) seconds = 1800;
  return std::chrono::seconds(seconds);
}

// The request's labelSelector (empty when absent), applied to lists; watches ignore it.
// On a malformed selector, sets `error` to a 400 with the parser's message, as the
// kube-apiserver does, and returns std::nullopt.
std::optional<LabelSelector> ListSelector(const Query& query, Response* error) {
  absl::StatusOr<LabelSelector> selector =
      LabelSelector::Parse(PercentDecodeLenient(QueryParam(query, "labelSelector"), true));
  if (!selector.ok()) {
    *error = ReplyError(ApiError::BadRequest(std::string(selector.status().message())));
    return std::nullopt;
  }
  return *std::move(selector);
}

// Whether labels (sorted by key) satisfy the selector.
bool LabelsMatch(const LabelSelector& selector,
                 const std::vector<std::pair<std::string, std::string>>& labels) {
  return selector.Matches(
      LabelLookup([&labels](const std::string& key) -> std::optional<std::string_view> {
        auto it = std::lower_bound(
            labels.begin(), labels.end(), key,
            [](const auto& label, const std::string& k) { return label.first < k; });
        if (it == labels.end() || it->first != key) return std::nullopt;
        return std::string_view(it->second);
      }));
}

// The value a "<field>=X" field selector gives `field`, "" for none. Other field
// selectors are accepted and ignored.
std::string FieldFilter(const Query& query, std::string_view field) {
  const std::string fs = PercentDecodeLenient(QueryParam(query, "fieldSelector"), true);
  for (const std::string& prefix : {StrCat(field, "="), StrCat(field, "==")}) {
    const size_t at = fs.find(prefix);
    if (at != std::string::npos) {
      std::string v = fs.substr(at + prefix.size());
      if (!v.empty() && v[0] == '=') v.erase(0, 1);
      return v.substr(0, v.find(','));
    }
  }
  return "";
}

Stream::Kind WatchKindOf(const StoredKind& kind) {
  return kind.kind == kLimitRanges.kind ? Stream::Kind::kLimitRangeWatch
                                        : Stream::Kind::kConfigMapWatch;
}

}  // namespace

ApiResources::ApiResources(KubeletView& kubelets, const Clock& clock, uint64_t initial_version,
                           size_t watch_history, uint64_t seed)
    : kubelets_(kubelets),
      clock_(clock),
      initial_version_(initial_version),
      watch_history_(watch_history),
      seed_(seed),
      watches_(clock),
      resource_version_(initial_version),
      oldest_retained_(initial_version + 1),
      slot_version_(
          static_cast<size_t>(kubelets.model().node_count()) * kubelets.model().pods_per_node(),
          initial_version) {
  kubelets_.SetPodWatcher(this);
}

ApiResources::~ApiResources() {
  kubelets_.SetPodWatcher(nullptr);
  Stop();
}

void ApiResources::KeepInitial(const StoredKind& kind, StoredObject object) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key = object.namespace_name + "/" + object.name;
  StoreOf(kind)[std::move(key)] = {std::move(object), initial_version_};
}

uint64_t ApiResources::CurrentVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resource_version_;
}

void ApiResources::ServiceStreams() { watches_.Service(); }

void ApiResources::Stop() { watches_.Stop(); }

Timestamp ApiResources::Now() const { return kubelets_.model().Quantize(clock_.Now()); }

std::string ApiResources::PodJson(const PodInfo& pod, Timestamp now, uint64_t rv) const {
  std::string out;
  AppendPodJson(out, kubelets_.model(), pod, now, rv);
  return out;
}

std::string ApiResources::NodeJson(int node) const {
  std::string out;
  AppendNodeJson(out, kubelets_.model().node(node), kubelets_.endpoint(node), initial_version_);
  return out;
}

// ---- watch events -----------------------------------------------------------------------

void ApiResources::OnPodEvent(std::string_view type, const PodInfo& pod, Timestamp now) {
  const ClusterModel& model = kubelets_.model();
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t rv = ++resource_version_;
  slot_version_[pod.node * model.pods_per_node() + pod.slot] = rv;
  RecordLocked({rv, pod.namespace_name, model.node(pod.node).name,
                RenderWatchEvent(type, PodJson(pod, now, rv))});
}

void ApiResources::RecordLocked(WatchEvent ev) {
  watches_.SendTo([&ev](const Stream& s) { return Matches(s, ev); }, ev.line);
  history_.push_back(std::move(ev));
  while (history_.size() > watch_history_) {
    oldest_retained_ = history_.front().resource_version + 1;
    history_.pop_front();
  }
}

bool ApiResources::Matches(const Stream& s, const WatchEvent& ev) {
  return s.kind == ev.kind &&
         (s.namespace_filter.empty() || s.namespace_filter == ev.namespace_name) &&
         (s.node_filter.empty() || s.node_filter == ev.node_name);
}

// A version older than the history, or newer than any handed out (one of an earlier
// simulator, or made up), is not known here: as kube-apiserver does for a version its watch
// cache no longer holds, the client is told to list again.
std::optional<std::string> ApiResources::ExpiredWatchEventLocked(uint64_t from) const {
  if (from + 1 >= oldest_retained_ && from <= resource_version_) return std::nullopt;
  const std::string message =
      from > resource_version_
          ? absl::StrCat("too large resource version: ", from, ", current: ", resource_version_)
          : absl::StrCat("too old resource version: ", from, " (", oldest_retained_ - 1, ")");
  return RenderWatchEvent("ERROR", ApiError::Expired(message).ToJson());
}

Response ApiResources::WatchFrom(Stream::Kind kind, const std::string& ns,
                                 const std::string& node_filter, const Query& query,
                                 uint64_t list_version, absl::FunctionRef<std::string()> initial) {
  auto s = watches_.Open(kind, WatchLifetime(query));
  s->namespace_filter = ns;
  s->node_filter = node_filter;
  const std::string rv_text = QueryParam(query, "resourceVersion");
  uint64_t from = std::strtoull(rv_text.c_str(), nullptr, 10);
  std::string initial_events;
  if (rv_text.empty() || from == 0) {
    // No version: the current state as ADDED events first, as the apiserver does.
    initial_events = initial();
    from = list_version;
  }
  Response response = Reply(200, "", kJson);
  response.stream = [this, s, from, initial_events = std::move(initial_events)](
                        std::shared_ptr<StreamWriter> writer) {
    // Under mu_, so that every event after `from` is either replayed here or sent to the
    // stream once it joins the watches.
    std::lock_guard<std::mutex> lock(mu_);
    s->writer = std::move(writer);
    if (std::optional<std::string> expired = ExpiredWatchEventLocked(from)) {
      Send(*s, *expired);
      s->writer->Finish();
      return;
    }
    Send(*s, initial_events);
    for (const WatchEvent& ev : history_) {
      if (ev.resource_version > from && Matches(*s, ev)) Send(*s, ev.line);
    }
    s->writer->Flush();
    watches_.Add(s);
  };
  return response;
}

// ---- namespaces, nodes, pods ------------------------------------------------------------

Response ApiResources::Namespaces(const std::string& name) const {
  auto one = [](std::string_view ns) {
    return absl::StrCat("{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"",
                        std::string(ns),
                        "\",\"resourceVersion\":\"1\",\"creationTimestamp\":"
                        "\"2026-01-01T00:00:00Z\"},\"status\":{\"phase\":\"Active\"}}");
  };
  if (!name.empty()) {
    for (std::string_view ns : kNamespaces) {
      if (ns == name) {
        return Reply(200, one(ns), kJson);
      }
    }
    return ReplyError(ApiError::NotFound("", "namespaces", name));
  }
  std::string out =
      "{\"kind\":\"NamespaceList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
      "\"1\"},\"items\":[";
  bool first = true;
  for (std::string_view ns : kNamespaces) {
    if (!first) out += ",";
    first = false;
    out += one(ns);
  }
  out += "]}";
  return Reply(200, std::move(out), kJson);
}

Response ApiResources::Nodes(const std::string& name, const Query& query) {
  const ClusterModel& model = kubelets_.model();
  if (!name.empty()) {
    const int i = model.NodeIndex(name);
    if (i < 0) {
      return ReplyError(ApiError::NotFound("", "nodes", name));
    }
    return Reply(200, NodeJson(i), kJson);
  }
  if (IsWatch(query)) {
    auto s = watches_.Open(Stream::Kind::kNodeWatch, WatchLifetime(query));
    const std::string rv = QueryParam(query, "resourceVersion");
    std::string initial;
    if (rv.empty() || rv == "0") {
      for (int i = 0; i < model.node_count(); ++i) {
        initial += RenderWatchEvent("ADDED", NodeJson(i));
      }
    } else {
      std::optional<std::string> expired;
      {
        std::lock_guard<std::mutex> lock(mu_);
        expired = ExpiredWatchEventLocked(std::strtoull(rv.c_str(), nullptr, 10));
      }
      if (expired) {
        // Nodes do not change while the simulator runs: a known version has no events to
        // replay, an unknown one (another simulator's) makes the client list again.
        Response response = Reply(200, "", kJson);
        response.stream = [event = *std::move(expired)](std::shared_ptr<StreamWriter> writer) {
          writer->Write(event);
          writer->Finish();
        };
        return response;
      }
    }
    return watches_.Respond(s, kJson, std::move(initial));
  }
  Response bad_selector;
  const std::optional<LabelSelector> selector = ListSelector(query, &bad_selector);
  if (!selector) return bad_selector;
  std::string out = absl::StrCat(
      "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"",
      CurrentVersion(), "\"},\"items\":[");
  bool first = true;
  for (int i = 0; i < model.node_count(); ++i) {
    if (!LabelsMatch(*selector, model.node(i).labels)) continue;
    if (!first) out += ",";
    first = false;
    out += NodeJson(i);
  }
  out += "]}";
  return Reply(200, std::move(out), kJson);
}

Response ApiResources::Pods(const std::string& ns, const std::string& name, const Query& query) {
  const Timestamp now = Now();
  const std::string node_filter = FieldFilter(query, "spec.nodeName");
  std::vector<std::pair<PodInfo, uint64_t>> pods;
  uint64_t list_version;
  const int pods_per_node = kubelets_.model().pods_per_node();
  kubelets_.ReadPods(node_filter, [&](std::span<const PodInfo> running) {
    std::lock_guard<std::mutex> lock(mu_);
    list_version = resource_version_;
    for (const PodInfo& pod : running) {
      if (!ns.empty() && pod.namespace_name != ns) continue;
      if (!name.empty() && pod.name != name) continue;
      pods.emplace_back(pod, slot_version_[pod.node * pods_per_node + pod.slot]);
    }
  });
  if (!name.empty()) {
    if (pods.empty()) {
      return ReplyError(ApiError::NotFound("", "pods", name));
    } else {
      return Reply(200, PodJson(pods[0].first, now, pods[0].second), kJson);
    }
  }
  if (IsWatch(query)) {
    // Without a resourceVersion the pods listed at `list_version` come first as ADDED
    // events.
    return WatchFrom(Stream::Kind::kPodWatch, ns, node_filter, query, list_version, [&] {
      std::string initial;
      for (const auto& [pod, rv] : pods) {
        initial += RenderWatchEvent("ADDED", PodJson(pod, now, rv));
      }
      return initial;
    });
  }
  Response bad_selector;
  const std::optional<LabelSelector> selector = ListSelector(query, &bad_selector);
  if (!selector) return bad_selector;
  std::string out = absl::StrCat(
      "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"",
      list_version, "\"},\"items\":[");
  bool first = true;
  for (const auto& [pod, rv] : pods) {
    if (!LabelsMatch(*selector, pod.labels)) continue;
    if (!first) out += ",";
    first = false;
    AppendPodJson(out, kubelets_.model(), pod, now, rv);
  }
  out += "]}";
  return Reply(200, std::move(out), kJson);
}

Response ApiResources::DeletePod(const std::string& ns, const std::string& name) {
  std::string body;
  const int pods_per_node = kubelets_.model().pods_per_node();
  const bool deleted = kubelets_.DeletePod(ns, name, [&](const PodInfo& pod, Timestamp now) {
    uint64_t rv;
    {
      std::lock_guard<std::mutex> lock(mu_);
      rv = slot_version_[pod.node * pods_per_node + pod.slot];
    }
    body = PodJson(pod, now, rv);
  });
  if (!deleted) return ReplyError(ApiError::NotFound("", "pods", name));
  return Reply(200, std::move(body), kJson);
}

// ---- LimitRanges and ConfigMaps ---------------------------------------------------------

ApiResources::Store& ApiResources::StoreOf(const StoredKind& kind) {
  return kind.kind == kLimitRanges.kind ? limit_ranges_ : config_maps_;
}

Response ApiResources::Stored(const StoredKind& kind, const std::string& ns,
                              const std::string& name, const Query& query) {
  const std::string named = name.empty() ? FieldFilter(query, "metadata.name") : name;
  std::vector<std::pair<StoredObject, uint64_t>> items;
  uint64_t list_version;
  {
    std::lock_guard<std::mutex> lock(mu_);
    list_version = resource_version_;
    for (const auto& [key, entry] : StoreOf(kind)) {
      if (!ns.empty() && entry.first.namespace_name != ns) continue;
      if (!named.empty() && entry.first.name != named) continue;
      items.push_back(entry);
    }
  }
  if (!name.empty()) {
    if (items.empty()) return ReplyError(ApiError::NotFound("", std::string(kind.resource), name));
    std::string out;
    AppendStoredObjectJson(out, kind, items[0].first, items[0].second);
    return Reply(200, std::move(out), kJson);
  }
  if (IsWatch(query)) {
    return WatchFrom(WatchKindOf(kind), ns, named, query, list_version, [&] {
      std::string initial;
      for (const auto& [object, rv] : items) {
        std::string json;
        AppendStoredObjectJson(json, kind, object, rv);
        initial += RenderWatchEvent("ADDED", json);
      }
      return initial;
    });
  }
  std::string out = StrCat("{\"kind\":\"", kind.kind, "List\",\"apiVersion\":\"v1\",\"metadata\":{",
                           "\"resourceVersion\":\"", list_version, "\"},\"items\":[");
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ",";
    AppendStoredObjectJson(out, kind, items[i].first, items[i].second);
  }
  out += "]}";
  return Reply(200, std::move(out), kJson);
}

Response ApiResources::ChangeStored(const StoredKind& kind, const Request& req,
                                    const std::string& ns, const std::string& name) {
  const std::string resource(kind.resource);
  if (req.method != "PUT" && req.method != "DELETE") {
    return ReplyError(ApiError::MethodNotAllowed("", resource, std::string(req.method)));
  }
  std::string content;
  if (req.method == "PUT") {
    absl::StatusOr<std::string> body = ReadBody(req, kReviewBodyLimit);
    if (!body.ok()) return ReplyError(ApiError::FromStatus(body.status()));
    absl::StatusOr<std::string> parsed = ParseStoredContent(kind, *body);
    if (!parsed.ok()) {
      return ReplyError(ApiError::BadRequest(std::string(parsed.status().message())));
    }
    content = *std::move(parsed);
  }
  std::lock_guard<std::mutex> lock(mu_);
  Store& store = StoreOf(kind);
  const std::string key = ns + "/" + name;
  auto it = store.find(key);
  std::string type = "ADDED";
  StoredObject object{ns, name, "", content, clock_.Now()};
  if (req.method == "DELETE") {
    if (it == store.end()) return ReplyError(ApiError::NotFound("", resource, name));
    object = it->second.first;
    store.erase(it);
    type = "DELETED";
  } else if (it != store.end()) {
    object.uid = it->second.first.uid;
    object.created = it->second.first.created;
    type = "MODIFIED";
  } else {
    object.uid = StoredObjectUid(Mix(seed_, HashString(key), resource_version_));
  }
  const uint64_t rv = ++resource_version_;
  if (type != "DELETED") store[key] = {object, rv};
  std::string json;
  AppendStoredObjectJson(json, kind, object, rv);
  RecordLocked({rv, ns, name, RenderWatchEvent(type, json), WatchKindOf(kind)});
  return Reply(200, std::move(json), kJson);
}

}  // namespace kubestat::sim
