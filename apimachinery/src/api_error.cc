#include "kubestat/apimachinery/api_error.h"

#include <array>
#include <charconv>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"
#include "kubestat/core/absl_view.h"

namespace kubestat {
namespace {

struct ReasonInfo {
  StatusReason reason;
  std::string_view name;
  int code;
  absl::StatusCode status_code;
};

constexpr std::array<ReasonInfo, 18> kReasons = {{
    {StatusReason::kUnknown, "", 500, absl::StatusCode::kUnknown},
    {StatusReason::kBadRequest, "BadRequest", 400, absl::StatusCode::kInvalidArgument},
    {StatusReason::kUnauthorized, "Unauthorized", 401, absl::StatusCode::kUnauthenticated},
    {StatusReason::kForbidden, "Forbidden", 403, absl::StatusCode::kPermissionDenied},
    {StatusReason::kNotFound, "NotFound", 404, absl::StatusCode::kNotFound},
    {StatusReason::kAlreadyExists, "AlreadyExists", 409, absl::StatusCode::kAlreadyExists},
    {StatusReason::kConflict, "Conflict", 409, absl::StatusCode::kAborted},
    {StatusReason::kGone, "Gone", 410, absl::StatusCode::kOutOfRange},
    {StatusReason::kExpired, "Expired", 410, absl::StatusCode::kOutOfRange},
    {StatusReason::kMethodNotAllowed, "MethodNotAllowed", 405, absl::StatusCode::kUnimplemented},
    {StatusReason::kNotAcceptable, "NotAcceptable", 406, absl::StatusCode::kInvalidArgument},
    {StatusReason::kRequestEntityTooLarge, "RequestEntityTooLarge", 413,
     absl::StatusCode::kResourceExhausted},
    {StatusReason::kUnsupportedMediaType, "UnsupportedMediaType", 415,
     absl::StatusCode::kInvalidArgument},
    {StatusReason::kInvalid, "Invalid", 422, absl::StatusCode::kInvalidArgument},
    {StatusReason::kTooManyRequests, "TooManyRequests", 429, absl::StatusCode::kResourceExhausted},
    {StatusReason::kInternalError, "InternalError", 500, absl::StatusCode::kInternal},
    {StatusReason::kServiceUnavailable, "ServiceUnavailable", 503, absl::StatusCode::kUnavailable},
    {StatusReason::kTimeout, "Timeout", 504, absl::StatusCode::kDeadlineExceeded},
}};

const ReasonInfo& Info(StatusReason reason) {
  for (const ReasonInfo& info : kReasons) {
    if (info.reason == reason) return info;
  }
  return kReasons[0];
}

// "pods.metrics.k8s.io", or "pods" in the core group (schema.GroupResource.String()).
std::string Qualified(std::string_view group, std::string_view resource) {
  std::string out(resource);
  if (!group.empty()) {
    out.push_back('.');
    out.append(group);
  }
  return out;
}

StatusDetails ResourceDetails(std::string_view group, std::string_view resource,
                              std::string_view name) {
  StatusDetails details;
  details.name = name;
  details.group = group;
  details.kind = resource;
  return details;
}

StatusDetails RetryDetails(int retry_after_seconds) {
  StatusDetails details;
  details.retry_after_seconds = retry_after_seconds > 0 ? retry_after_seconds : 0;
  return details;
}

// Go's %q of a name: JSON string escaping is the same for every printable name.
std::string GoQuote(std::string_view s) {
  std::string out;
  JsonWriter::AppendQuoted(out, s);
  return out;
}

// The payload: a sequence of length-prefixed fields "<len>:<bytes>".
void PutField(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out.push_back(':');
  out.append(field);
}

bool GetField(std::string_view& in, std::string_view* field) {
  size_t len = 0;
  const auto [ptr, ec] = std::from_chars(in.data(), in.data() + in.size(), len);
  if (ec != std::errc() || ptr == in.data() + in.size() || *ptr != ':') return false;
  const size_t header = static_cast<size_t>(ptr - in.data()) + 1;
  if (len > in.size() - header) return false;
  *field = in.substr(header, len);
  in.remove_prefix(header + len);
  return true;
}

bool GetInt(std::string_view& in, int* value) {
  std::string_view field;
  if (!GetField(in, &field)) return false;
  const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), *value);
  return ec == std::errc() && ptr == field.data() + field.size();
}

bool GetString(std::string_view& in, std::string* value) {
  std::string_view field;
  if (!GetField(in, &field)) return false;
  value->assign(field);
  return true;
}

}  // namespace

std::string_view StatusReasonName(StatusReason reason) { return Info(reason).name; }

StatusReason StatusReasonFromName(std::string_view name) {
  if (name.empty()) return StatusReason::kUnknown;
  for (const ReasonInfo& info : kReasons) {
    if (info.name == name) return info.reason;
  }
  return StatusReason::kUnknown;
}

int HttpCodeForReason(StatusReason reason) { return Info(reason).code; }

ApiError::ApiError(int code, StatusReason reason, std::string message, StatusDetails details)
    : code_(code), reason_(reason), message_(std::move(message)), details_(std::move(details)) {}

ApiError ApiError::NotFound(std::string_view group, std::string_view resource,
                            std::string_view name) {
  return ApiError(404, StatusReason::kNotFound,
                  Qualified(group, resource) + " " + GoQuote(name) + " not found",
                  ResourceDetails(group, resource, name));
}

ApiError ApiError::AlreadyExists(std::string_view group, std::string_view resource,
                                 std::string_view name) {
  return ApiError(409, StatusReason::kAlreadyExists,
                  Qualified(group, resource) + " " + GoQuote(name) + " already exists",
                  ResourceDetails(group, resource, name));
}

ApiError ApiError::Conflict(std::string_view group, std::string_view resource,
                            std::string_view name, std::string_view why) {
  std::string message =
      "Operation cannot be fulfilled on " + Qualified(group, resource) + " " + GoQuote(name) + ": ";
  message.append(why);
  return ApiError(409, StatusReason::kConflict, std::move(message),
                  ResourceDetails(group, resource, name));
}

ApiError ApiError::Forbidden(std::string_view group, std::string_view resource,
                             std::string_view name, std::string_view why) {
  std::string message = Qualified(group, resource);
  if (!name.empty()) message += " " + GoQuote(name);
  message += " is forbidden: ";
  message.append(why);
  return ApiError(403, StatusReason::kForbidden, std::move(message),
                  ResourceDetails(group, resource, name));
}

ApiError ApiError::Unauthorized(std::string_view message) {
  return ApiError(401, StatusReason::kUnauthorized,
                  message.empty() ? "Unauthorized" : std::string(message));
}

ApiError ApiError::BadRequest(std::string_view message) {
  return ApiError(400, StatusReason::kBadRequest, std::string(message));
}

ApiError ApiError::MethodNotAllowed(std::string_view group, std::string_view resource,
                                    std::string_view verb) {
  std::string message(verb);
  message += " is not supported on resources of kind " + GoQuote(Qualified(group, resource));
  return ApiError(405, StatusReason::kMethodNotAllowed, std::move(message),
                  ResourceDetails(group, resource, ""));
}

ApiError ApiError::NotAcceptable(std::string_view message) {
  return ApiError(406, StatusReason::kNotAcceptable, std::string(message));
}

ApiError ApiError::UnsupportedMediaType(std::string_view message) {
  return ApiError(415, StatusReason::kUnsupportedMediaType, std::string(message));
}

ApiError ApiError::Expired(std::string_view message) {
  return ApiError(410, StatusReason::kExpired, std::string(message));
}

ApiError ApiError::Gone(std::string_view message) {
  return ApiError(410, StatusReason::kGone, std::string(message));
}

ApiError ApiError::RequestEntityTooLarge(std::string_view message) {
  std::string text = "Request entity too large: ";
  text.append(message);
  return ApiError(413, StatusReason::kRequestEntityTooLarge, std::move(text));
}

ApiError ApiError::Invalid(std::string_view group, std::string_view kind, std::string_view name,
                           std::vector<StatusCause> causes) {
  // Kubernetes aggregates the field errors: one as itself, several as "[a, b]".
  std::string errors;
  for (size_t i = 0; i < causes.size(); ++i) {
    if (i > 0) errors += ", ";
    if (!causes[i].field.empty()) errors += causes[i].field + ": ";
    errors += causes[i].message;
  }
  if (causes.size() > 1) errors = "[" + errors + "]";
  std::string message = Qualified(group, kind) + " " + GoQuote(name) + " is invalid: " + errors;
  return ApiError(422, StatusReason::kInvalid, std::move(message), [&] {
    StatusDetails details = ResourceDetails(group, kind, name);
    details.causes = std::move(causes);
    return details;
  }());
}

ApiError ApiError::TooManyRequests(std::string_view message, int retry_after_seconds) {
  return ApiError(429, StatusReason::kTooManyRequests, std::string(message),
                  RetryDetails(retry_after_seconds));
}

ApiError ApiError::InternalError(std::string_view message) {
  std::string text = "Internal error occurred: ";
  text.append(message);
  return ApiError(500, StatusReason::kInternalError, std::move(text));
}

ApiError ApiError::ServiceUnavailable(std::string_view message) {
  return ApiError(503, StatusReason::kServiceUnavailable, std::string(message));
}

ApiError ApiError::Timeout(std::string_view message, int retry_after_seconds) {
  std::string text = "Timeout: ";
  text.append(message);
  return ApiError(504, StatusReason::kTimeout, std::move(text), RetryDetails(retry_after_seconds));
}

ApiError ApiError::FromStatus(const absl::Status& status) {
  if (std::optional<ApiError> attached = GetAttachedApiError(status)) return *attached;
  const std::string_view message = StdView(status.message());
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return InternalError("an OK status was reported as an error");
    case absl::StatusCode::kInvalidArgument:
      return BadRequest(message);
    case absl::StatusCode::kUnauthenticated:
      return Unauthorized(message);
    case absl::StatusCode::kPermissionDenied:
      return ApiError(403, StatusReason::kForbidden, std::string(message));
    case absl::StatusCode::kNotFound:
      return ApiError(404, StatusReason::kNotFound, std::string(message));
    case absl::StatusCode::kUnimplemented:
      return ApiError(405, StatusReason::kMethodNotAllowed, std::string(message));
    case absl::StatusCode::kAlreadyExists:
      return ApiError(409, StatusReason::kAlreadyExists, std::string(message));
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kFailedPrecondition:
      return ApiError(409, StatusReason::kConflict, std::string(message));
    case absl::StatusCode::kOutOfRange:
      return Expired(message);
    case absl::StatusCode::kResourceExhausted:
      return TooManyRequests(message, 0);
    case absl::StatusCode::kUnavailable:
      return ServiceUnavailable(message);
    case absl::StatusCode::kDeadlineExceeded:
      return ApiError(504, StatusReason::kTimeout, std::string(message));
    default:
      return InternalError(message);
  }
}

absl::Status ApiError::ToStatus() const {
  absl::StatusCode code = Info(reason_).status_code;
  if (reason_ == StatusReason::kUnknown) {
    code = code_ >= 500 ? absl::StatusCode::kInternal : absl::StatusCode::kUnknown;
  }
  absl::Status status(code, AbslView(message_));
  std::string payload;
  PutField(payload, std::to_string(code_));
  PutField(payload, StatusReasonName(reason_));
  PutField(payload, details_.name);
  PutField(payload, details_.group);
  PutField(payload, details_.kind);
  PutField(payload, std::to_string(details_.retry_after_seconds));
  PutField(payload, std::to_string(details_.causes.size()));
  for (const StatusCause& cause : details_.causes) {
    PutField(payload, cause.reason);
    PutField(payload, cause.message);
    PutField(payload, cause.field);
  }
  status.SetPayload(AbslView(kApiErrorPayloadUrl), absl::Cord(std::move(payload)));
  return status;
}

std::optional<ApiError> GetAttachedApiError(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  absl::optional<absl::Cord> payload = status.GetPayload(AbslView(kApiErrorPayloadUrl));
  if (!payload) return std::nullopt;
  const std::string flat(*payload);
  std::string_view in = flat;
  int code = 0, retry = 0, causes = 0;
  std::string reason;
  StatusDetails details;
  if (!GetInt(in, &code) || !GetString(in, &reason) || !GetString(in, &details.name) ||
      !GetString(in, &details.group) || !GetString(in, &details.kind) || !GetInt(in, &retry) ||
      !GetInt(in, &causes) || causes < 0) {
    return std::nullopt;
  }
  details.retry_after_seconds = retry;
  for (int i = 0; i < causes; ++i) {
    StatusCause cause;
    if (!GetString(in, &cause.reason) || !GetString(in, &cause.message) ||
        !GetString(in, &cause.field)) {
      return std::nullopt;
    }
    details.causes.push_back(std::move(cause));
  }
  if (!in.empty()) return std::nullopt;
  return ApiError(code, StatusReasonFromName(reason), std::string(StdView(status.message())),
                  std::move(details));
}

void ApiError::WriteJson(JsonWriter& w) const {
  // Field order and omissions as encoding/json writes metav1.Status.
  w.BeginObject();
  w.Member("kind", "Status");
  w.Member("apiVersion", "v1");
  w.Key("metadata").BeginObject().EndObject();
  w.Member("status", "Failure");
  if (!message_.empty()) w.Member("message", message_);
  if (reason_ != StatusReason::kUnknown) w.Member("reason", StatusReasonName(reason_));
  if (!details_.empty()) {
    w.Key("details").BeginObject();
    if (!details_.name.empty()) w.Member("name", details_.name);
    if (!details_.group.empty()) w.Member("group", details_.group);
    if (!details_.kind.empty()) w.Member("kind", details_.kind);
    if (!details_.causes.empty()) {
      w.Key("causes").BeginArray();
      for (const StatusCause& cause : details_.causes) {
        w.BeginObject();
        if (!cause.reason.empty()) w.Member("reason", cause.reason);
        if (!cause.message.empty()) w.Member("message", cause.message);
        if (!cause.field.empty()) w.Member("field", cause.field);
        w.EndObject();
      }
      w.EndArray();
    }
    if (details_.retry_after_seconds != 0) {
      w.Member("retryAfterSeconds", int64_t{details_.retry_after_seconds});
    }
    w.EndObject();
  }
  w.Member("code", int64_t{code_});
  w.EndObject();
}

std::string ApiError::ToJson(int indent) const {
  JsonWriter w(indent);
  WriteJson(w);
  return w.Take();
}

}  // namespace kubestat
