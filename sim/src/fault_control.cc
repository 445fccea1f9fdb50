#include "fault_control.h"

#include "absl/strings/str_cat.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/json_writer.h"
#include "sim_http.h"

namespace kubestat::sim {

using http::Request;
using http::Response;

namespace {

// /sim/v1/faults[/{node}].
Response KubeletFaultControl(const KubeletFaults& target, const Request& req,
                             const std::vector<std::string>& parts) {
  if (parts.size() == 3 && parts[2] == "faults" && req.method == "GET") {
    JsonWriter w;
    w.BeginObject();
    for (const auto& [node, fault] : target.faults->All()) w.Member(node, FaultName(fault));
    w.EndObject();
    return Reply(200, w.Take(), kJson);
  }
  if (parts.size() == 4 && parts[2] == "faults" && (req.method == "PUT" || req.method == "POST")) {
    const std::string node = parts[3];
    if (target.model->NodeIndex(node) < 0) {
      return ReplyError(ApiError::NotFound("", "nodes", node));
    }
    const std::string body(req.body);
    absl::StatusOr<Fault> fault = ParseFault(body.substr(0, 256));
    if (!fault.ok()) {
      return ReplyError(ApiError::BadRequest(std::string(fault.status().message())));
    }
    target.faults->Set(node, *fault);
    return Reply(200, absl::StrCat("{\"", node, "\":\"", std::string(FaultName(*fault)), "\"}"),
                 kJson);
  }
  return ReplyError(ApiError(404, StatusReason::kNotFound, kNotFoundMessage));
}

// /sim/v1/podresources-faults[/{node}] and /sim/v1/podresources/{node}/restart.
Response PodResourcesControl(const KubeletFaults& target, const Request& req,
                             const std::vector<std::string>& parts) {
  if (target.podresources == nullptr) {
    return ReplyError(ApiError(404, StatusReason::kNotFound,
                               "the simulator serves no podresources sockets "
                               "(--podresources-dir is not set)"));
  }
  if (parts[2] == "podresources-faults" && parts.size() == 3 && req.method == "GET") {
    JsonWriter w;
    w.BeginObject();
    for (const auto& [node, fault] : target.podresources_faults->All()) {
      w.Member(node, PodResourcesFaultName(fault));
    }
    w.EndObject();
    return Reply(200, w.Take(), kJson);
  }
  const bool set = parts[2] == "podresources-faults" && parts.size() == 4 &&
                   (req.method == "PUT" || req.method == "POST");
  const bool restart = parts[2] == "podresources" && parts.size() == 5 && parts[4] == "restart" &&
                       req.method == "POST";
  if (!set && !restart) {
    return ReplyError(ApiError(404, StatusReason::kNotFound, kNotFoundMessage));
  }
  const std::string node = parts[3];
  const int index = target.model->NodeIndex(node);
  if (index < 0) return ReplyError(ApiError::NotFound("", "nodes", node));
  if (restart) {
    if (absl::Status st = target.podresources->Restart(index); !st.ok()) {
      return ReplyError(ApiError::InternalError(std::string(st.message())));
    }
    return Reply(200, absl::StrCat("{\"restarted\":\"", node, "\"}"), kJson);
  }
  absl::StatusOr<PodResourcesFault> fault =
      ParsePodResourcesFault(std::string(req.body).substr(0, 256));
  if (!fault.ok()) {
    return ReplyError(ApiError::BadRequest(std::string(fault.status().message())));
  }
  target.podresources_faults->Set(node, *fault);
  if (absl::Status st = target.podresources->Apply(index); !st.ok()) {
    return ReplyError(ApiError::InternalError(std::string(st.message())));
  }
  return Reply(
      200, absl::StrCat("{\"", node, "\":\"", std::string(PodResourcesFaultName(*fault)), "\"}"),
      kJson);
}

}  // namespace

Response ControlFaults(const KubeletFaults& target, const Request& req,
                       const std::vector<std::string>& parts) {
  if (parts.size() >= 3 && (parts[2] == "podresources-faults" || parts[2] == "podresources")) {
    return PodResourcesControl(target, req, parts);
  }
  return KubeletFaultControl(target, req, parts);
}

}  // namespace kubestat::sim
