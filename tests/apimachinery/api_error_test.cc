#include "kubestat/apimachinery/api_error.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/cord.h"

namespace kubestat {
namespace {

TEST(ApiErrorTest, NotFoundHasKubernetesMessageDetailsAndJson) {
  const ApiError e = ApiError::NotFound("metrics.k8s.io", "pods", "web-1");
  EXPECT_EQ(e.code(), 404);
  EXPECT_EQ(e.reason(), StatusReason::kNotFound);
  EXPECT_EQ(e.message(), R"(pods.metrics.k8s.io "web-1" not found)");
  EXPECT_EQ(e.ToJson(),
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"pods.metrics.k8s.io \"web-1\" not found","reason":"NotFound",)"
            R"("details":{"name":"web-1","group":"metrics.k8s.io","kind":"pods"},"code":404})");
}

TEST(ApiErrorTest, CoreGroupResourcesAreNotQualified) {
  const ApiError e = ApiError::NotFound("", "nodes", "node-7");
  EXPECT_EQ(e.message(), R"(nodes "node-7" not found)");
  EXPECT_EQ(e.ToJson(), R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                        R"("message":"nodes \"node-7\" not found","reason":"NotFound",)"
                        R"("details":{"name":"node-7","kind":"nodes"},"code":404})");
}

TEST(ApiErrorTest, BadRequestLeavesDetailsOut) {
  EXPECT_EQ(ApiError::BadRequest("unable to parse requirement: bad").ToJson(),
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"unable to parse requirement: bad","reason":"BadRequest","code":400})");
}

TEST(ApiErrorTest, PrettyJsonIndentsLikeKubectlSees) {
  EXPECT_EQ(ApiError::NotFound("", "pods", "a").ToJson(2),
            "{\n"
            "  \"kind\": \"Status\",\n"
            "  \"apiVersion\": \"v1\",\n"
            "  \"metadata\": {},\n"
            "  \"status\": \"Failure\",\n"
            "  \"message\": \"pods \\\"a\\\" not found\",\n"
            "  \"reason\": \"NotFound\",\n"
            "  \"details\": {\n"
            "    \"name\": \"a\",\n"
            "    \"kind\": \"pods\"\n"
            "  },\n"
            "  \"code\": 404\n"
            "}");
}

TEST(ApiErrorTest, FactoriesUseKubernetesMessagesAndCodes) {
  struct Case {
    ApiError error;
    int code;
    std::string_view reason;
    std::string message;
  };
  const Case cases[] = {
      {ApiError::AlreadyExists("metrics.k8s.io", "nodes", "n1"), 409, "AlreadyExists",
       R"(nodes.metrics.k8s.io "n1" already exists)"},
      {ApiError::Conflict("metrics.k8s.io", "pods", "p", "the object has been modified"), 409,
       "Conflict",
       R"(Operation cannot be fulfilled on pods.metrics.k8s.io "p": the object has been modified)"},
      {ApiError::Forbidden("metrics.k8s.io", "pods", "p", "User \"bob\" cannot get"), 403,
       "Forbidden", R"(pods.metrics.k8s.io "p" is forbidden: User "bob" cannot get)"},
      {ApiError::Forbidden("metrics.k8s.io", "pods", "", "no"), 403, "Forbidden",
       "pods.metrics.k8s.io is forbidden: no"},
      {ApiError::Unauthorized(), 401, "Unauthorized", "Unauthorized"},
      {ApiError::Unauthorized("bad token"), 401, "Unauthorized", "bad token"},
      {ApiError::MethodNotAllowed("metrics.k8s.io", "pods", "patch"), 405, "MethodNotAllowed",
       R"(patch is not supported on resources of kind "pods.metrics.k8s.io")"},
      {ApiError::NotAcceptable("only application/json"), 406, "NotAcceptable",
       "only application/json"},
      {ApiError::UnsupportedMediaType("text/plain"), 415, "UnsupportedMediaType", "text/plain"},
      {ApiError::Expired("too old resource version: 5 (10)"), 410, "Expired",
       "too old resource version: 5 (10)"},
      {ApiError::Gone("gone"), 410, "Gone", "gone"},
      {ApiError::RequestEntityTooLarge("limit is 3145728"), 413, "RequestEntityTooLarge",
       "Request entity too large: limit is 3145728"},
      {ApiError::TooManyRequests("slow down", 2), 429, "TooManyRequests", "slow down"},
      {ApiError::InternalError("boom"), 500, "InternalError", "Internal error occurred: boom"},
      {ApiError::ServiceUnavailable("not ready"), 503, "ServiceUnavailable", "not ready"},
      {ApiError::Timeout("list pods", 1), 504, "Timeout", "Timeout: list pods"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.error.code(), c.code) << c.message;
    EXPECT_EQ(StatusReasonName(c.error.reason()), c.reason) << c.message;
    EXPECT_EQ(HttpCodeForReason(c.error.reason()), c.code) << c.message;
    EXPECT_EQ(c.error.message(), c.message);
  }
}

TEST(ApiErrorTest, MethodNotAllowedDetailsCarryGroupAndResource) {
  EXPECT_EQ(ApiError::MethodNotAllowed("metrics.k8s.io", "nodes", "create").ToJson(),
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"create is not supported on resources of kind \"nodes.metrics.k8s.io\"",)"
            R"("reason":"MethodNotAllowed","details":{"group":"metrics.k8s.io","kind":"nodes"},)"
            R"("code":405})");
}

TEST(ApiErrorTest, TooManyRequestsWritesRetryAfterSeconds) {
  EXPECT_EQ(ApiError::TooManyRequests("slow down", 3).ToJson(),
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"slow down","reason":"TooManyRequests",)"
            R"("details":{"retryAfterSeconds":3},"code":429})");
  EXPECT_TRUE(ApiError::TooManyRequests("x", -5).details().empty());
}

TEST(ApiErrorTest, InvalidListsCausesInMessageAndDetails) {
  const ApiError e = ApiError::Invalid("metrics.k8s.io", "PodMetrics", "web-1",
                                       {{"FieldValueRequired", "Required value", "metadata.name"},
                                        {"FieldValueInvalid", "bad", "window"}});
  EXPECT_EQ(e.code(), 422);
  EXPECT_EQ(e.message(), R"(PodMetrics.metrics.k8s.io "web-1" is invalid: )"
                         R"([metadata.name: Required value, window: bad])");
  EXPECT_EQ(e.ToJson(), R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                        R"("message":"PodMetrics.metrics.k8s.io \"web-1\" is invalid: )"
                        R"([metadata.name: Required value, window: bad]","reason":"Invalid",)"
                        R"("details":{"name":"web-1","group":"metrics.k8s.io","kind":"PodMetrics",)"
                        R"("causes":[{"reason":"FieldValueRequired","message":"Required value",)"
                        R"("field":"metadata.name"},{"reason":"FieldValueInvalid","message":"bad",)"
                        R"("field":"window"}]},"code":422})");
  const ApiError one = ApiError::Invalid("", "Pod", "p", {{"", "oops", "f"}});
  EXPECT_EQ(one.message(), R"(Pod "p" is invalid: f: oops)");
}

TEST(ApiErrorTest, EmptyMessageAndUnknownReasonAreLeftOut) {
  EXPECT_EQ(ApiError(500, StatusReason::kUnknown, "").ToJson(),
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":500})");
}

TEST(ApiErrorTest, MessagesFromPeersAreEscaped) {
  const std::string json = ApiError::BadRequest("bad \"x\"\n\xff").ToJson();
  EXPECT_NE(json.find(R"("message":"bad \"x\"\n)"
                      "\xef\xbf\xbd"
                      R"(")"),
            std::string::npos)
      << json;
}

TEST(StatusReasonTest, NamesRoundTrip) {
  for (StatusReason r :
       {StatusReason::kBadRequest, StatusReason::kUnauthorized, StatusReason::kForbidden,
        StatusReason::kNotFound, StatusReason::kAlreadyExists, StatusReason::kConflict,
        StatusReason::kGone, StatusReason::kExpired, StatusReason::kMethodNotAllowed,
        StatusReason::kNotAcceptable, StatusReason::kRequestEntityTooLarge,
        StatusReason::kUnsupportedMediaType, StatusReason::kInvalid, StatusReason::kTooManyRequests,
        StatusReason::kInternalError, StatusReason::kServiceUnavailable, StatusReason::kTimeout}) {
    EXPECT_FALSE(StatusReasonName(r).empty());
    EXPECT_EQ(StatusReasonFromName(StatusReasonName(r)), r);
  }
  EXPECT_EQ(StatusReasonFromName("Nope"), StatusReason::kUnknown);
  EXPECT_EQ(StatusReasonName(StatusReason::kUnknown), "");
}

TEST(ApiErrorFromStatusTest, MapsPlainAbslCodes) {
  struct Case {
    absl::Status status;
    int code;
    StatusReason reason;
  };
  const Case cases[] = {
      {absl::InvalidArgumentError("m"), 400, StatusReason::kBadRequest},
      {absl::UnauthenticatedError("m"), 401, StatusReason::kUnauthorized},
      {absl::PermissionDeniedError("m"), 403, StatusReason::kForbidden},
      {absl::NotFoundError("m"), 404, StatusReason::kNotFound},
      {absl::UnimplementedError("m"), 405, StatusReason::kMethodNotAllowed},
      {absl::AlreadyExistsError("m"), 409, StatusReason::kAlreadyExists},
      {absl::AbortedError("m"), 409, StatusReason::kConflict},
      {absl::FailedPreconditionError("m"), 409, StatusReason::kConflict},
      {absl::OutOfRangeError("m"), 410, StatusReason::kExpired},
      {absl::ResourceExhaustedError("m"), 429, StatusReason::kTooManyRequests},
      {absl::UnavailableError("m"), 503, StatusReason::kServiceUnavailable},
      {absl::DeadlineExceededError("m"), 504, StatusReason::kTimeout},
      {absl::InternalError("m"), 500, StatusReason::kInternalError},
      {absl::UnknownError("m"), 500, StatusReason::kInternalError},
      {absl::CancelledError("m"), 500, StatusReason::kInternalError},
      {absl::DataLossError("m"), 500, StatusReason::kInternalError},
  };
  for (const Case& c : cases) {
    const ApiError e = ApiError::FromStatus(c.status);
    EXPECT_EQ(e.code(), c.code) << c.status;
    EXPECT_EQ(e.reason(), c.reason) << c.status;
    EXPECT_TRUE(e.details().empty()) << c.status;
  }
  EXPECT_EQ(ApiError::FromStatus(absl::NotFoundError("no such node")).message(), "no such node");
  EXPECT_EQ(ApiError::FromStatus(absl::InternalError("disk")).message(),
            "Internal error occurred: disk");
  EXPECT_EQ(ApiError::FromStatus(absl::OkStatus()).code(), 500);
}

TEST(ApiErrorFromStatusTest, AttachedErrorSurvivesTheAbslStatus) {
  const ApiError original = ApiError::RequestEntityTooLarge("limit is 3MiB");
  const absl::Status status = original.ToStatus();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "Request entity too large: limit is 3MiB");
  EXPECT_EQ(ApiError::FromStatus(status), original);
  EXPECT_EQ(ApiError::FromStatus(status).code(), 413);  // not the default 429
}

TEST(ApiErrorFromStatusTest, AttachedDetailsAndCausesRoundTrip) {
  const ApiError original = ApiError::Invalid("metrics.k8s.io", "PodMetrics", "n:a\"me",
                                              {{"r", "m:1", ""}, {"", "", "x"}});
  EXPECT_EQ(ApiError::FromStatus(original.ToStatus()), original);
  const ApiError timeout = ApiError::Timeout("slow", 7);
  EXPECT_EQ(ApiError::FromStatus(timeout.ToStatus()), timeout);
  EXPECT_EQ(timeout.ToStatus().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(ApiErrorFromStatusTest, EveryFactoryMapsToAMatchingAbslCode) {
  EXPECT_EQ(ApiError::NotFound("", "pods", "a").ToStatus().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ApiError::BadRequest("x").ToStatus().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ApiError::Unauthorized().ToStatus().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(ApiError::Forbidden("", "pods", "", "x").ToStatus().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ApiError::Expired("x").ToStatus().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ApiError::ServiceUnavailable("x").ToStatus().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ApiError::MethodNotAllowed("", "pods", "x").ToStatus().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(ApiErrorFromStatusTest, CorruptPayloadFallsBackToTheCodeMapping) {
  absl::Status status = absl::NotFoundError("gone");
  status.SetPayload(std::string(kApiErrorPayloadUrl), absl::Cord("3:404garbage"));
  EXPECT_FALSE(GetAttachedApiError(status).has_value());
  const ApiError e = ApiError::FromStatus(status);
  EXPECT_EQ(e.code(), 404);
  EXPECT_EQ(e.message(), "gone");
  EXPECT_FALSE(GetAttachedApiError(absl::OkStatus()).has_value());
  EXPECT_FALSE(GetAttachedApiError(absl::NotFoundError("x")).has_value());
}

TEST(ApiErrorFromStatusTest, AnnotatingKeepsThePayload) {
  // A layer that rewrites the message keeps the payload and the new message.
  absl::Status status = ApiError::NotFound("", "pods", "a").ToStatus();
  absl::Status rewritten(status.code(), "while listing: pods \"a\" not found");
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    rewritten.SetPayload(url, payload);
  });
  const ApiError e = ApiError::FromStatus(rewritten);
  EXPECT_EQ(e.message(), "while listing: pods \"a\" not found");
  EXPECT_EQ(e.details().name, "a");
}

}  // namespace
}  // namespace kubestat
