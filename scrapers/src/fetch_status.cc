#include "fetch_status.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "kubestat/http/client.h"
#include "kubestat/scrapers/fetch_error.h"

namespace kubestat::scrapers::internal {

absl::Status FromClientError(const absl::Status& status) {
  const std::string reason = http::FailureReason(status);
  const bool known = reason == "timeout" || reason == "connect" || reason == "tls" ||
                     reason == "read" || reason == "too_large" || reason == "auth";
  return WithFailureReason(absl::Status(status.code(), status.message()), known ? reason : "other");
}

absl::Status FromHttpCode(int code, std::string_view body) {
  std::string snippet(body.substr(0, 200));
  for (char& c : snippet) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  absl::StatusCode status_code = absl::StatusCode::kUnavailable;
  if (code == 401) status_code = absl::StatusCode::kUnauthenticated;
  if (code == 403) status_code = absl::StatusCode::kPermissionDenied;
  if (code == 404) status_code = absl::StatusCode::kNotFound;
  if (code == 410) status_code = absl::StatusCode::kOutOfRange;
  return WithFailureReason(absl::Status(status_code, absl::StrCat("HTTP ", code, ": ", snippet)),
                           absl::StrCat("http_", code));
}

}  // namespace kubestat::scrapers::internal
