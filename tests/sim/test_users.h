// The users file the simulator's tests serve: an admin, the aggregator's service account
// (list+watch nodes, pods and limitranges; create token and access reviews) and alice, who
// may read the metrics of pods in team-a only.
#ifndef KUBESTAT_TESTS_SIM_TEST_USERS_H_
#define KUBESTAT_TESTS_SIM_TEST_USERS_H_

namespace kubestat::sim::test_users {

inline constexpr char kUsersYaml[] = R"(users:
- name: admin
  uid: "1"
  token: admin-token
  groups: [system:masters]
- name: kubestat-aggregator
  token: agg-token
  groups: [kubestat:aggregators]
- name: alice
  uid: "1001"
  token: alice-token
  groups: [team-a]
  extra: {scopes: [read, write]}
rules:
- groups: [kubestat:aggregators]
  verbs: [get, list, watch]
  apiGroups: [""]
  resources: [nodes, pods, limitranges]
- groups: [kubestat:aggregators]
  verbs: [create]
  apiGroups: [authentication.k8s.io, authorization.k8s.io]
  resources: [tokenreviews, subjectaccessreviews]
- users: [alice]
  verbs: [get, list]
  apiGroups: [metrics.k8s.io, metrics]
  resources: [pods]
  namespaces: [team-a]
- groups: [system:authenticated]
  nonResourceURLs: [/api, /api/*, /apis, /apis/*]
  verbs: [get]
)";

}  // namespace kubestat::sim::test_users

#endif  // KUBESTAT_TESTS_SIM_TEST_USERS_H_
