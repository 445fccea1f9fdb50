#include "kubestat/scrapers/fetch_error.h"

#include "absl/strings/cord.h"
#include "absl/types/optional.h"
#include "kubestat/core/absl_view.h"

namespace kubestat::scrapers {
namespace {
constexpr absl::string_view kReasonPayload = "type.kubestat.io/failure-reason";
}  // namespace

absl::Status WithFailureReason(absl::Status status, std::string_view reason) {
  status.SetPayload(kReasonPayload, absl::Cord(AbslView(reason)));
  return status;
}

std::string FailureReason(const absl::Status& status) {
  if (status.ok()) return "";
  absl::optional<absl::Cord> reason = status.GetPayload(kReasonPayload);
  if (reason) return std::string(*reason);
  if (status.code() == absl::StatusCode::kInvalidArgument) return "decode";
  return "other";
}

}  // namespace kubestat::scrapers
