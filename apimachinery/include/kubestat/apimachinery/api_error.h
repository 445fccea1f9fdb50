// Kubernetes API errors: the `Status` object (metav1.Status) every kubestat server sends.
//
// An ApiError is an HTTP code, a machine-readable reason ("NotFound"), a human message and
// optional details, written by ToJson() exactly as kube-apiserver writes it:
//   {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
//    "message":"pods.metrics.k8s.io \"web-1\" not found","reason":"NotFound",
//    "details":{"name":"web-1","group":"metrics.k8s.io","kind":"pods"},"code":404}
// (empty message, reason and details are left out, as Go's omitempty does).
//
// Inside kubestat errors travel as absl::Status. ApiError::ToStatus() keeps the exact
// reason and details in a payload of the absl::Status, so a lower layer can choose the
// Status a client sees; ApiError::FromStatus() reads that payload back, or maps the plain
// absl code:
//   InvalidArgument -> 400 BadRequest          Unauthenticated   -> 401 Unauthorized
//   PermissionDenied -> 403 Forbidden          NotFound          -> 404 NotFound
//   Unimplemented -> 405 MethodNotAllowed      AlreadyExists     -> 409 AlreadyExists
//   Aborted, FailedPrecondition -> 409 Conflict
//   OutOfRange -> 410 Expired (a watch resourceVersion that is too old)
//   ResourceExhausted -> 429 TooManyRequests (413 only via RequestEntityTooLarge())
//   Unavailable -> 503 ServiceUnavailable      DeadlineExceeded  -> 504 Timeout
//   anything else (Internal, Unknown, Cancelled, DataLoss, …) -> 500 InternalError
// Values; thread-compatible.
#ifndef KUBESTAT_APIMACHINERY_API_ERROR_H_
#define KUBESTAT_APIMACHINERY_API_ERROR_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/core/json_writer.h"

namespace kubestat {

// metav1.StatusReason values kubestat uses.
enum class StatusReason {
  kUnknown,  // written as no reason at all
  kBadRequest,
  kUnauthorized,
  kForbidden,
  kNotFound,
  kAlreadyExists,
  kConflict,
  kGone,
  kExpired,
  kMethodNotAllowed,
  kNotAcceptable,
  kRequestEntityTooLarge,
  kUnsupportedMediaType,
  kInvalid,
  kTooManyRequests,
  kInternalError,
  kServiceUnavailable,
  kTimeout,
};

// "NotFound", "Expired", …; "" for kUnknown.
std::string_view StatusReasonName(StatusReason reason);
// The reason named `name`; kUnknown when there is none.
StatusReason StatusReasonFromName(std::string_view name);
// The HTTP code Kubernetes pairs with the reason (kUnknown: 500).
int HttpCodeForReason(StatusReason reason);

// metav1.StatusCause: one field-level problem of an Invalid (or other) error.
struct StatusCause {
  std::string reason;   // e.g. "FieldValueInvalid"; may be empty
  std::string message;  // may be empty
  std::string field;    // e.g. "metadata.name"; may be empty
  bool operator==(const StatusCause&) const = default;
};

// metav1.StatusDetails. Every field is optional (empty / 0 = absent).
struct StatusDetails {
  std::string name;
  std::string group;
  // Kubernetes puts the resource here for most errors ("pods"), the kind for Invalid.
  std::string kind;
  std::vector<StatusCause> causes;
  int retry_after_seconds = 0;

  bool empty() const {
    return name.empty() && group.empty() && kind.empty() && causes.empty() &&
           retry_after_seconds == 0;
  }
  bool operator==(const StatusDetails&) const = default;
};

class ApiError {
 public:
  ApiError(int code, StatusReason reason, std::string message, StatusDetails details = {});

  // Factories with Kubernetes' message forms (k8s.io/apimachinery/pkg/api/errors).
  // `group` "" is the core group; resources are plural ("pods"): the qualified resource
  // is "pods.metrics.k8s.io", or just "pods" in the core group.

  // 404 `pods.metrics.k8s.io "web-1" not found`.
  static ApiError NotFound(std::string_view group, std::string_view resource,
                           std::string_view name);
  // 409 `pods.metrics.k8s.io "web-1" already exists`.
  static ApiError AlreadyExists(std::string_view group, std::string_view resource,
                                std::string_view name);
  // 409 `Operation cannot be fulfilled on pods.metrics.k8s.io "web-1": <why>`.
  static ApiError Conflict(std::string_view group, std::string_view resource, std::string_view name,
                           std::string_view why);
  // 403 `pods.metrics.k8s.io "web-1" is forbidden: <why>` (without a name:
  // `pods.metrics.k8s.io is forbidden: <why>`).
  static ApiError Forbidden(std::string_view group, std::string_view resource,
                            std::string_view name, std::string_view why);
  // 401; the message defaults to "Unauthorized".
  static ApiError Unauthorized(std::string_view message = {});
  // 400 with the message as given.
  static ApiError BadRequest(std::string_view message);
  // 405 `<verb> is not supported on resources of kind "pods.metrics.k8s.io"`.
  static ApiError MethodNotAllowed(std::string_view group, std::string_view resource,
                                   std::string_view verb);
  // 406 / 415 with the message as given.
  static ApiError NotAcceptable(std::string_view message);
  static ApiError UnsupportedMediaType(std::string_view message);
  // 410 reason Expired: a resourceVersion too old to watch from.
  static ApiError Expired(std::string_view message);
  // 410 reason Gone.
  static ApiError Gone(std::string_view message);
  // 413 `Request entity too large: <message>`.
  static ApiError RequestEntityTooLarge(std::string_view message);
  // 422 `<Kind>.<group> "name" is invalid: <causes joined>` with the causes as details.
  static ApiError Invalid(std::string_view group, std::string_view kind, std::string_view name,
                          std::vector<StatusCause> causes);
  // 429 with details.retryAfterSeconds when > 0.
  static ApiError TooManyRequests(std::string_view message, int retry_after_seconds);
  // 500 `Internal error occurred: <message>`.
  static ApiError InternalError(std::string_view message);
  // 503 with the message as given.
  static ApiError ServiceUnavailable(std::string_view message);
  // 504 `Timeout: <message>` with details.retryAfterSeconds when > 0.
  static ApiError Timeout(std::string_view message, int retry_after_seconds = 0);

  // The ApiError carried by `status` (see ToStatus), else the mapping in the file comment
  // with status.message() as the message. An OK status gives a 500 (a caller bug).
  static ApiError FromStatus(const absl::Status& status);

  // An absl::Status of the matching code whose message is message() and whose payload
  // keeps code, reason and details for FromStatus.
  absl::Status ToStatus() const;

  // The metav1.Status object; indent > 0 pretty-prints as with JsonWriter.
  std::string ToJson(int indent = 0) const;
  // Writes the same object as one value into `w`.
  void WriteJson(JsonWriter& w) const;

  int code() const { return code_; }
  StatusReason reason() const { return reason_; }
  const std::string& message() const { return message_; }
  const StatusDetails& details() const { return details_; }

  bool operator==(const ApiError&) const = default;

 private:
  int code_;
  StatusReason reason_;
  std::string message_;
  StatusDetails details_;
};

// The payload type URL under which ToStatus stores the ApiError.
inline constexpr std::string_view kApiErrorPayloadUrl = "type.kubestat.io/kubestat.ApiError";

// The ApiError attached to `status` by ToStatus(), if any (FromStatus falls back to the
// code mapping; this does not).
std::optional<ApiError> GetAttachedApiError(const absl::Status& status);

}  // namespace kubestat

#endif  // KUBESTAT_APIMACHINERY_API_ERROR_H_
