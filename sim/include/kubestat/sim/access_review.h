// The fake kube-apiserver's TokenReview and SubjectAccessReview, answered from a UsersFile.
//
// ReviewToken takes the body of POST /apis/authentication.k8s.io/v1/tokenreviews,
//   {"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"…"}}
// and returns the object kube-apiserver answers with (HTTP 201): spec echoed, and
//   "status":{"authenticated":true,"user":{"username":"…","uid":"…","groups":[…],
//             "extra":{…}},"audiences":[…]}
// or, for an unknown token, "status":{"authenticated":false,"user":{},"error":"…"}.
// spec.audiences, when given, is echoed as status.audiences of an authenticated answer.
//
// ReviewSubjectAccess takes the body of POST
// /apis/authorization.k8s.io/v1/subjectaccessreviews with spec.user and/or spec.groups and
// exactly one of spec.resourceAttributes {namespace, verb, group, version, resource,
// subresource, name} or spec.nonResourceAttributes {path, verb}, evaluates the file's rules
// for that user and those groups as given (nothing is added), and returns the object with
//   "status":{"allowed":true,"reason":"allowed by rules[1] (line 9)"}
// The rules only allow, so a request no rule allows is "allowed":false (no opinion) and
// "denied" is never set.
//
// Errors are absl::Status values carrying a kubestat::ApiError (apimachinery/api_error.h): 400
// BadRequest for a body that is not a JSON object of the right kind and apiVersion, 422
// Invalid for a spec kube-apiserver rejects (no token; neither or both attribute kinds; no
// user and no groups). Bodies are read by the caller, which bounds their size. Pure;
// thread-safe.
#ifndef KUBESTAT_SIM_ACCESS_REVIEW_H_
#define KUBESTAT_SIM_ACCESS_REVIEW_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kubestat/sim/users.h"

namespace kubestat::sim {

[[nodiscard]] absl::StatusOr<std::string> ReviewToken(std::string_view body,
                                                      const UsersFile& users);

[[nodiscard]] absl::StatusOr<std::string> ReviewSubjectAccess(std::string_view body,
                                                              const UsersFile& users);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_ACCESS_REVIEW_H_
