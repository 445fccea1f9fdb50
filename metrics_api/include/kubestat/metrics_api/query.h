// The list query: one type for every front end (REST query strings, gRPC request fields),
// applied in one place (Select) so that every API selects and pages alike.
//
// A query holds the namespace (pods; "" = all), a label selector and a field selector in
// Kubernetes syntax, `pretty`, and paging: `limit` (0 = everything) and `continue`, the
// token a previous page returned. Field selectors name metadata.name and metadata.namespace
// (a node's namespace is ""), and spec.nodeName for pods; any other field is refused with
// kube-apiserver's "field label not supported: <field>".
//
// Paging: objects are listed in key order (nodes by name, pods by namespace then name). A
// page holds up to `limit` servable objects that match; when more may follow, its continue
// token names the last object returned, and the next page starts after it. Tokens are
// opaque to clients (URL-safe base64) and stay valid across snapshots: a page continues
// after that key in whatever the server holds when it is asked, so an object created or
// deleted meanwhile may or may not appear (a list is consistent per page, not across pages).
//
// Errors are InvalidArgument with a message for a 400 Status: the selector parser's
// message, "field label not supported: <field>", "limit: ...", "continue: ...". Where
// FieldNames are given, each message is prefixed by the request field that held the bad
// value ("label_selector: ...").
//
// Thread-safety: values and pure functions; safe from any thread.
#ifndef KUBESTAT_METRICS_API_QUERY_H_
#define KUBESTAT_METRICS_API_QUERY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/statusor.h"
#include "kubestat/apimachinery/field_selector.h"
#include "kubestat/apimachinery/label_selector.h"
#include "kubestat/core/time.h"
#include "kubestat/metrics_api/group_version.h"
#include "kubestat/metrics_api/objects.h"

namespace kubestat::metrics_api {

// Decoded query parameters; the first value of a repeated name wins.
using QueryParams = std::map<std::string, std::string, std::less<>>;

// Parses a raw query string ("a=1&b=x%20y", without the '?') as Go's url.ParseQuery does:
// '&'-separated pairs, percent-escapes decoded, '+' read as a space; a malformed escape is
// kept as written. Never fails.
QueryParams ParseQueryString(std::string_view query);

// `pretty` is on for a bare "?pretty" and for the values Go's strconv.ParseBool reads as true
// ("1", "t", "T", "true", "TRUE", "True"), as kube-apiserver reads it.
bool PrettyRequested(const QueryParams& params);

// The largest `limit` honoured; a larger one is read as this (kube-apiserver caps too).
inline constexpr int64_t kMaxLimit = 100000;

// `limitPressure` (pods): only pods with a container near or over a limit it declares, in
// its longest window: kMemory, memory max above 90% of the memory limit (an OOM kill is
// near); kCpu, cpu 95th above the cpu limit (the container is throttled); kAny, either.
enum class LimitPressure : uint8_t { kNone, kMemory, kCpu, kAny };

// Whether a container is under that pressure (kNone: always false).
bool UnderPressure(const ContainerMetrics& container, LimitPressure pressure);

struct ListQuery {
  Resource resource = Resource::kNodes;
  std::string namespace_name;  // pods only; "" = every namespace
  LabelSelector labels;
  FieldSelector fields;
  int indent = 0;     // 2 when pretty output is asked for, else 0 (compact)
  size_t limit = 0;   // 0: no limit
  std::string after;  // decoded continue token: list objects with a key above this; "" = all
  // metrics.k8s.io only: objects whose timestamp (their newest sample) is before this are
  // left out, as metrics-server leaves out what its last scrapes did not refresh.
  // kZeroTime: none. Default: kZeroTime
  Timestamp fresh_since = kZeroTime;
  LimitPressure pressure = LimitPressure::kNone;  // pods only

  // Whether the query selects everything of its resource: no namespace, selector or paging.
  bool SelectsAll() const;
  // Namespace (pods) and both selectors.
  bool Matches(const NodeMetrics& node) const;
  bool Matches(const PodMetrics& pod) const;
};

// What each request field is called in error messages; an empty name adds no prefix.
struct FieldNames {
  std::string_view label_selector;
  std::string_view field_selector;
  std::string_view limit = "limit";
  std::string_view continue_token = "continue";
};
inline constexpr FieldNames kRestFieldNames{};
inline constexpr FieldNames kGrpcFieldNames{"label_selector", "field_selector", "limit",
                                            "continue"};

// A query from its parts. limit < 0 and a token that does not decode are InvalidArgument.
[[nodiscard]] absl::StatusOr<ListQuery> MakeListQuery(
    Resource resource, std::string_view namespace_name, std::string_view label_selector,
    std::string_view field_selector, int64_t limit, std::string_view continue_token,
    const FieldNames& names);

// A query from REST parameters: pretty, labelSelector, fieldSelector, limit (a decimal
// integer), continue, and for pods limitPressure (memory, cpu or any; anything else is
// InvalidArgument "limitPressure: ...").
[[nodiscard]] absl::StatusOr<ListQuery> ParseListQuery(const QueryParams& params, Resource resource,
                                                       std::string_view namespace_name);

// The key objects are listed by: a node's name; a pod's namespace, a NUL byte, name (so that
// keys sort as (namespace, name) pairs do).
std::string ObjectKey(const NodeMetrics& node);
std::string ObjectKey(const PodMetrics& pod);
// The continue token of a page that ended at `key`, and its inverse (InvalidArgument for
// text that is not such a token).
std::string EncodeContinue(std::string_view key);
[[nodiscard]] absl::StatusOr<std::string> DecodeContinue(std::string_view token);

// Whether `gv` serves the object: always for metrics/v1alpha1; for metrics.k8s.io (as
// metrics-server) a node with both cpu and memory, a pod with at least one container and
// both resources in every container. An object that is not servable is left out of lists,
// and a GET of it is NotFound.
bool Servable(GroupVersion gv, const NodeMetrics& node);
bool Servable(GroupVersion gv, const PodMetrics& pod);
// Whether an object is fresh enough for `gv`: always for metrics/v1alpha1 (its windows
// carry their endtime) and for an object that is not Servable (it is left out anyway); for
// metrics.k8s.io, its timestamp is not before `fresh_since`.
bool Fresh(GroupVersion gv, const NodeMetrics& node, Timestamp fresh_since);
bool Fresh(GroupVersion gv, const PodMetrics& pod, Timestamp fresh_since);
// The newest usage timestamp of the servable nodes (kZeroTime when there is none): how far
// the scrapes a set of objects came from had got.
Timestamp NewestUsage(std::span<const std::shared_ptr<const NodeMetrics>> nodes);

// One page of a list: indexes into the listed objects, ascending, and the continue token
// when more may follow ("" at the end).
struct Page {
  std::vector<size_t> indices;
  std::string continue_token;
  // The revision the list reflects (metadata.resourceVersion), where a server versions its
  // objects; Select leaves it empty.
  std::string resource_version;
};

// A reference to an object owned by a std::shared_ptr held elsewhere (a snapshot's per-node
// parts): as cheap to copy as a raw pointer (no reference count is touched), and it still
// gives the owning pointer to whoever must keep the object (shared()). Valid while the
// shared_ptr it was made from lives, unchanged, where it is.
template <typename T>
class SharedRef {
 public:
  SharedRef() = default;
  explicit SharedRef(const std::shared_ptr<const T>& owner ABSL_ATTRIBUTE_LIFETIME_BOUND)
      : owner_(&owner) {}
  // A temporary owner (a converted or just made shared_ptr) would be gone at once.
  explicit SharedRef(std::shared_ptr<const T>&& owner) = delete;
  const T& operator*() const { return **owner_; }
  const T* operator->() const { return owner_->get(); }
  const T* get() const { return owner_->get(); }
  const std::shared_ptr<const T>& shared() const { return *owner_; }

 private:
  const std::shared_ptr<const T>* owner_ = nullptr;
};
using PodRef = SharedRef<PodMetrics>;

// References to each of `pods`, in order (valid while `pods` is neither changed nor freed).
std::vector<PodRef> RefsTo(std::span<const std::shared_ptr<const PodMetrics>> pods);

namespace internal {
inline const NodeMetrics& Deref(const NodeMetrics& o) { return o; }
inline const PodMetrics& Deref(const PodMetrics& o) { return o; }
template <typename T>
const T& Deref(const std::shared_ptr<const T>& o ABSL_ATTRIBUTE_LIFETIME_BOUND) {
  return *o;
}
template <typename T>
const T& Deref(const SharedRef<T>& o) {
  return *o;
}
}  // namespace internal

// The page of `objects` (in key order; values or shared_ptrs to them) that `query` selects
// under `gv`.
template <typename Objects>
Page Select(const ListQuery& query, GroupVersion gv, const Objects& objects) {
  Page page;
  size_t i = 0;
  const size_t n = objects.size();
  if (!query.after.empty()) {  // first key above `after`: binary search (keys ascend)
    size_t lo = 0;
    size_t hi = n;
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (ObjectKey(internal::Deref(objects[mid])) <= query.after) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    i = lo;
  }
  for (; i < n; ++i) {
    const auto& object = internal::Deref(objects[i]);
    if (!Servable(gv, object) || !Fresh(gv, object, query.fresh_since) || !query.Matches(object)) {
      continue;
    }
    if (query.limit != 0 && page.indices.size() == query.limit) {
      page.continue_token =
          EncodeContinue(ObjectKey(internal::Deref(objects[page.indices.back()])));
      break;
    }
    page.indices.push_back(i);
  }
  return page;
}

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_QUERY_H_
