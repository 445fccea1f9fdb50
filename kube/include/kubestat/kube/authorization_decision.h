// The answer of one authorizer in a chain (authorizer.Decision): allow, deny, or no opinion
// (let the next authorizer decide), with a human-readable reason. Values.
#ifndef KUBESTAT_KUBE_AUTHORIZATION_DECISION_H_
#define KUBESTAT_KUBE_AUTHORIZATION_DECISION_H_

#include <string>
#include <string_view>

namespace kubestat::kube {

enum class Decision { kAllow, kDeny, kNoOpinion };
// "allow", "deny", "no_opinion".
std::string_view DecisionName(Decision decision);

struct AuthorizerAnswer {
  Decision decision = Decision::kNoOpinion;
  std::string reason;
  // The answer stands in for one that could not be obtained (a failed review); then
  // `decision` is kDeny and `reason` says what failed.
  bool error = false;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_AUTHORIZATION_DECISION_H_
