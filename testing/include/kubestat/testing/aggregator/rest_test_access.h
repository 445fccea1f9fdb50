// For tests of the REST front end's routes and answers (access control has its own test,
// rest_server_access_test.cc): a plain-HTTP listener, and access for everyone.
#ifndef KUBESTAT_TESTING_AGGREGATOR_REST_TEST_ACCESS_H_
#define KUBESTAT_TESTING_AGGREGATOR_REST_TEST_ACCESS_H_

#include <memory>
#include <utility>

#include "kubestat/aggregator/frontends/rest_server.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/access_rules.h"
#include "kubestat/kube/authenticator.h"
#include "kubestat/kube/authorizer.h"

namespace kubestat::aggregator::rest_testing {

// A plain-HTTP listener on a free loopback port (these tests are about routing and
// answers; rest_server_access_test covers TLS and access control).
inline RestServerOptions PlainOptions() {
  RestServerOptions options;
  options.secure.address = "127.0.0.1";
  options.secure.port = 0;
  options.secure.tls.enabled = false;
  return options;
}

// Anonymous requests allowed everything: what these tests need to reach the routes.
class AllowEveryone {
 public:
  explicit AllowEveryone(const Clock& clock) {
    kube::AuthenticatorOptions authn;
    authn.anonymous = true;
    authenticator_ = *kube::Authenticator::Create(authn, clock, nullptr);
    absl::StatusOr<kube::AccessRules> rules = kube::AccessRules::Parse(
        "rules:\n"
        "- users: ['*']\n  verbs: ['*']\n  apiGroups: ['*']\n  resources: ['*']\n"
        "- users: ['*']\n  verbs: ['*']\n  nonResourceURLs: ['*']\n",
        "allow-everyone");
    authorizer_ =
        *kube::Authorizer::Create(kube::AuthorizerOptions{}, *std::move(rules), clock, nullptr);
  }
  AccessControl Control() { return {authenticator_.get(), authorizer_.get()}; }

 private:
  std::unique_ptr<kube::Authenticator> authenticator_;
  std::unique_ptr<kube::Authorizer> authorizer_;
};

}  // namespace kubestat::aggregator::rest_testing

#endif  // KUBESTAT_TESTING_AGGREGATOR_REST_TEST_ACCESS_H_
