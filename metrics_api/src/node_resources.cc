#include "kubestat/metrics_api/node_resources.h"

#include <simdjson.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "json_fields.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/time.h"
#include "resource_set_json.h"

namespace kubestat::metrics_api {
namespace {

using internal::AsObject;
using internal::FieldError;
using internal::OptionalArray;
using internal::OptionalString;
using internal::OptionalStrings;
using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

constexpr std::pair<std::string_view, MethodStatus NodePodResources::*> kMethods[] = {
    {"List", &NodePodResources::list},
    {"GetAllocatableResources", &NodePodResources::allocatable_call},
    {"Get", &NodePodResources::get},
};

void WriteTime(JsonWriter& w, std::string_view key, const std::optional<Timestamp>& t) {
  if (t) w.PlainKey(key).PlainString(FormatRfc3339(*t));
}

void WriteStatus(JsonWriter& w, const MethodStatus& status) {
  w.BeginObject();
  w.Key("code").String(status.code);
  if (!status.message.empty()) w.Key("message").String(status.message);
  WriteTime(w, "time", status.time);
  WriteTime(w, "lastSuccess", status.last_success);
  w.EndObject();
}

void WriteStrings(JsonWriter& w, std::string_view key, const std::vector<std::string>& values) {
  w.PlainKey(key).BeginArray();
  for (const std::string& v : values) w.String(v);
  w.EndArray();
}

void WriteDynamic(JsonWriter& w, const std::vector<DynamicResource>& resources) {
  if (resources.empty()) return;
  w.PlainKey("dynamicResources").BeginArray();
  for (const DynamicResource& r : resources) {
    w.BeginObject();
    w.Key("claimName").String(r.claim_name);
    w.Key("claimNamespace").String(r.claim_namespace);
    w.PlainKey("claimResources").BeginArray();
    for (const ClaimDevice& d : r.claim_resources) {
      w.BeginObject();
      WriteStrings(w, "cdiDevices", d.cdi_devices);
      w.Key("driverName").String(d.driver_name);
      w.Key("poolName").String(d.pool_name);
      w.Key("deviceName").String(d.device_name);
      if (d.share_id) w.Key("shareId").String(*d.share_id);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

void WriteExclusive(JsonWriter& w, const ResourceSet& set) {
  if (set.empty()) return;
  w.PlainKey("exclusive");
  internal::WriteResourceSet(w, set);
}

// ---- reading ----

absl::StatusOr<std::optional<Timestamp>> Time(object o, std::string_view key,
                                              const std::string& path) {
  element e;
  if (o[key].get(e) != simdjson::SUCCESS) return std::optional<Timestamp>();
  std::string_view v;
  if (e.get(v) != simdjson::SUCCESS) return FieldError(path, "must be an RFC 3339 time");
  absl::StatusOr<Timestamp> t = ParseRfc3339(v);
  if (!t.ok()) return FieldError(path, StdView(t.status().message()));
  return std::optional<Timestamp>(*t);
}

absl::StatusOr<ResourceSet> Exclusive(object o, const std::string& path) {
  element e;
  if (o["exclusive"].get(e) != simdjson::SUCCESS) return ResourceSet{};
  return internal::ReadResourceSet(e, path + ".exclusive");
}

absl::StatusOr<MethodStatus> Status(object methods, std::string_view name,
                                    const std::string& path) {
  MethodStatus status;
  element e;
  if (methods[name].get(e) != simdjson::SUCCESS) return status;
  absl::StatusOr<object> o = AsObject(e, path);
  if (!o.ok()) return o.status();
  absl::StatusOr<std::string> code = OptionalString(*o, "code", path + ".code");
  if (!code.ok()) return code.status();
  if (!code->empty()) status.code = *std::move(code);
  absl::StatusOr<std::string> message = OptionalString(*o, "message", path + ".message");
  if (!message.ok()) return message.status();
  status.message = *std::move(message);
  absl::StatusOr<std::optional<Timestamp>> time = Time(*o, "time", path + ".time");
  if (!time.ok()) return time.status();
  status.time = *time;
  absl::StatusOr<std::optional<Timestamp>> last = Time(*o, "lastSuccess", path + ".lastSuccess");
  if (!last.ok()) return last.status();
  status.last_success = *last;
  return status;
}

absl::StatusOr<std::vector<DynamicResource>> Dynamic(object container, const std::string& path) {
  std::vector<DynamicResource> out;
  absl::StatusOr<std::optional<array>> a = OptionalArray(container, "dynamicResources", path);
  if (!a.ok()) return a.status();
  if (!*a) return out;
  size_t i = 0;
  for (element item : **a) {
    const std::string at = absl::StrCat(path, "[", i++, "]");
    absl::StatusOr<object> o = AsObject(item, at);
    if (!o.ok()) return o.status();
    DynamicResource r;
    absl::StatusOr<std::string> claim = OptionalString(*o, "claimName", at + ".claimName");
    if (!claim.ok()) return claim.status();
    r.claim_name = *std::move(claim);
    absl::StatusOr<std::string> ns = OptionalString(*o, "claimNamespace", at + ".claimNamespace");
    if (!ns.ok()) return ns.status();
    r.claim_namespace = *std::move(ns);
    absl::StatusOr<std::optional<array>> devices =
        OptionalArray(*o, "claimResources", at + ".claimResources");
    if (!devices.ok()) return devices.status();
    if (*devices) {
      size_t j = 0;
      for (element d : **devices) {
        const std::string dat = absl::StrCat(at, ".claimResources[", j++, "]");
        absl::StatusOr<object> device = AsObject(d, dat);
        if (!device.ok()) return device.status();
        ClaimDevice claim_device;
        absl::StatusOr<std::vector<std::string>> cdi =
            OptionalStrings(*device, "cdiDevices", dat + ".cdiDevices");
        if (!cdi.ok()) return cdi.status();
        claim_device.cdi_devices = *std::move(cdi);
        for (auto [key, field] : {std::pair{"driverName", &ClaimDevice::driver_name},
                                  std::pair{"poolName", &ClaimDevice::pool_name},
                                  std::pair{"deviceName", &ClaimDevice::device_name}}) {
          absl::StatusOr<std::string> v = OptionalString(*device, key, absl::StrCat(dat, ".", key));
          if (!v.ok()) return v.status();
          claim_device.*field = *std::move(v);
        }
        if (element share; (*device)["shareId"].get(share) == simdjson::SUCCESS) {
          std::string_view v;
          if (share.get(v) != simdjson::SUCCESS)
            return FieldError(dat + ".shareId", "must be a string");
          claim_device.share_id = std::string(v);
        }
        r.claim_resources.push_back(std::move(claim_device));
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<std::vector<PodAssignment>> Pods(array pods) {
  std::vector<PodAssignment> out;
  size_t i = 0;
  for (element item : pods) {
    const std::string at = absl::StrCat("pods[", i++, "]");
    absl::StatusOr<object> o = AsObject(item, at);
    if (!o.ok()) return o.status();
    PodAssignment pod;
    absl::StatusOr<std::string> name = OptionalString(*o, "name", at + ".name");
    if (!name.ok()) return name.status();
    pod.name = *std::move(name);
    absl::StatusOr<std::string> ns = OptionalString(*o, "namespace", at + ".namespace");
    if (!ns.ok()) return ns.status();
    pod.namespace_name = *std::move(ns);
    absl::StatusOr<ResourceSet> exclusive = Exclusive(*o, at);
    if (!exclusive.ok()) return exclusive.status();
    pod.exclusive = *std::move(exclusive);
    absl::StatusOr<std::optional<array>> containers =
        OptionalArray(*o, "containers", at + ".containers");
    if (!containers.ok()) return containers.status();
    if (*containers) {
      size_t j = 0;
      for (element c : **containers) {
        const std::string cat = absl::StrCat(at, ".containers[", j++, "]");
        absl::StatusOr<object> co = AsObject(c, cat);
        if (!co.ok()) return co.status();
        ContainerAssignment container;
        absl::StatusOr<std::string> cname = OptionalString(*co, "name", cat + ".name");
        if (!cname.ok()) return cname.status();
        container.name = *std::move(cname);
        absl::StatusOr<ResourceSet> cx = Exclusive(*co, cat);
        if (!cx.ok()) return cx.status();
        container.exclusive = *std::move(cx);
        absl::StatusOr<std::vector<DynamicResource>> dynamic =
            Dynamic(*co, cat + ".dynamicResources");
        if (!dynamic.ok()) return dynamic.status();
        container.dynamic_resources = *std::move(dynamic);
        pod.containers.push_back(std::move(container));
      }
    }
    out.push_back(std::move(pod));
  }
  return out;
}

}  // namespace

std::string_view StatusCodeName(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return "OK";
    case absl::StatusCode::kCancelled:
      return "Cancelled";
    case absl::StatusCode::kUnknown:
      return "Unknown";
    case absl::StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case absl::StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case absl::StatusCode::kNotFound:
      return "NotFound";
    case absl::StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case absl::StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case absl::StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case absl::StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case absl::StatusCode::kAborted:
      return "Aborted";
    case absl::StatusCode::kOutOfRange:
      return "OutOfRange";
    case absl::StatusCode::kUnimplemented:
      return "Unimplemented";
    case absl::StatusCode::kInternal:
      return "Internal";
    case absl::StatusCode::kUnavailable:
      return "Unavailable";
    case absl::StatusCode::kDataLoss:
      return "DataLoss";
    case absl::StatusCode::kUnauthenticated:
      return "Unauthenticated";
    default:
      break;
  }
  return "Unknown";
}

std::string RenderNodePodResources(const NodePodResources& doc, int indent) {
  JsonWriter w(indent);
  w.BeginObject();
  w.PlainKey("kind").PlainString(kNodePodResourcesKind);
  w.PlainKey("apiVersion").PlainString(kNodePodResourcesApiVersion);
  w.Key("nodeName").String(doc.node_name);
  w.Key("socket").String(doc.socket);
  WriteTime(w, "time", doc.time);
  w.PlainKey("methods").BeginObject();
  for (const auto& [name, field] : kMethods) {
    w.PlainKey(name);
    WriteStatus(w, doc.*field);
  }
  w.EndObject();
  if (doc.allocatable) {
    w.PlainKey("allocatable");
    internal::WriteResourceSet(w, *doc.allocatable);
  }
  if (doc.pods) {
    w.PlainKey("pods").BeginArray();
    for (const PodAssignment& pod : *doc.pods) {
      w.BeginObject();
      w.Key("name").String(pod.name);
      w.Key("namespace").String(pod.namespace_name);
      WriteExclusive(w, pod.exclusive);
      w.PlainKey("containers").BeginArray();
      for (const ContainerAssignment& c : pod.containers) {
        w.BeginObject();
        w.Key("name").String(c.name);
        WriteExclusive(w, c.exclusive);
        WriteDynamic(w, c.dynamic_resources);
        w.EndObject();
      }
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  return w.Take();
}

absl::StatusOr<NodePodResources> ParseNodePodResources(std::string_view json) {
  simdjson::dom::parser parser;
  element doc;
  if (auto error = parser.parse(json.data(), json.size()).get(doc); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON: ", simdjson::error_message(error)));
  }
  absl::StatusOr<object> root = AsObject(doc, "the document");
  if (!root.ok()) return root.status();
  absl::StatusOr<std::string> kind = OptionalString(*root, "kind", "kind");
  if (!kind.ok()) return kind.status();
  if (*kind != kNodePodResourcesKind) {
    return FieldError("kind", absl::StrCat("must be ", AbslView(kNodePodResourcesKind), ", not \"",
                                           kind->substr(0, 64), "\""));
  }
  NodePodResources out;
  for (auto [key, field] : {std::pair{"nodeName", &NodePodResources::node_name},
                            std::pair{"socket", &NodePodResources::socket}}) {
    absl::StatusOr<std::string> v = OptionalString(*root, key, key);
    if (!v.ok()) return v.status();
    out.*field = *std::move(v);
  }
  absl::StatusOr<std::optional<Timestamp>> time = Time(*root, "time", "time");
  if (!time.ok()) return time.status();
  out.time = *time;
  if (element methods; (*root)["methods"].get(methods) == simdjson::SUCCESS) {
    absl::StatusOr<object> o = AsObject(methods, "methods");
    if (!o.ok()) return o.status();
    for (const auto& [name, field] : kMethods) {
      absl::StatusOr<MethodStatus> status =
          Status(*o, name, absl::StrCat("methods.", AbslView(name)));
      if (!status.ok()) return status.status();
      out.*field = *std::move(status);
    }
  }
  if (element allocatable; (*root)["allocatable"].get(allocatable) == simdjson::SUCCESS) {
    absl::StatusOr<ResourceSet> set = internal::ReadResourceSet(allocatable, "allocatable");
    if (!set.ok()) return set.status();
    out.allocatable = *std::move(set);
  }
  absl::StatusOr<std::optional<array>> pods = OptionalArray(*root, "pods", "pods");
  if (!pods.ok()) return pods.status();
  if (*pods) {
    absl::StatusOr<std::vector<PodAssignment>> assignments = Pods(**pods);
    if (!assignments.ok()) return assignments.status();
    out.pods = *std::move(assignments);
  }
  return out;
}

}  // namespace kubestat::metrics_api
