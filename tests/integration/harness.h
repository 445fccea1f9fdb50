// Helpers for integration tests that run kubestat's binaries and other programs as real
// processes on loopback: child processes with logs, and HTTP GETs. Temp dirs, free ports,
// polling with a deadline and reading files come from kubestat::testing (testing/).
#ifndef KUBESTAT_TESTS_INTEGRATION_HARNESS_H_
#define KUBESTAT_TESTS_INTEGRATION_HARNESS_H_

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kubestat::testing {

// The simulated cluster's users for the tests that run its fake kube-apiserver with
// --users-file: an admin (system:masters), the aggregator's service account (list and watch
// nodes, pods and limitranges, read the ConfigMaps of kube-system (the cluster's
// extension-apiserver-authentication), create token and access reviews, read the node
// agents' /podresources), the node agents' service account (create token and access reviews) and
// alice, who may read the metrics of pods in namespace shop only; every authenticated user may
// read discovery.
inline constexpr char kSimUsersYaml[] = R"(users:
- name: admin
  token: admin-token
  groups: [system:masters]
- name: kubestat-aggregator
  token: aggregator-token
  groups: [kubestat:aggregators]
- name: kubestat-node-agent
  token: node-agent-token
  groups: [kubestat:node-agents]
- name: alice
  token: alice-token
  groups: [shop-team]
rules:
- groups: [kubestat:aggregators]
  verbs: [get, list, watch]
  apiGroups: [""]
  resources: [nodes, pods, limitranges]
- groups: [kubestat:aggregators]
  verbs: [get]
  nonResourceURLs: [/podresources]
- groups: [kubestat:aggregators]
  verbs: [get, list, watch]
  apiGroups: [""]
  resources: [configmaps]
  namespaces: [kube-system]
- groups: [kubestat:aggregators, kubestat:node-agents]
  verbs: [create]
  apiGroups: [authentication.k8s.io, authorization.k8s.io]
  resources: [tokenreviews, subjectaccessreviews]
- groups: [shop-team]
  verbs: [get, list]
  apiGroups: [metrics.k8s.io, metrics]
  resources: [pods]
  namespaces: [shop]
- groups: [system:authenticated]
  nonResourceURLs: [/api, /api/*, /apis, /apis/*]
  verbs: [get]
)";

// The absolute path of `name` on $PATH, or std::nullopt.
std::optional<std::string> FindOnPath(const std::string& name);

// Whether `kubectl top` of this kubectl asks the metrics API for protobuf: kubectl 1.22 and
// later do by default (1.21 only with --use-protocol-buffers; Debian 12's 1.20 never). Reads
// `kubectl version --client` ("Minor" of the client's version); `dir` holds its log.
bool KubectlTopAsksProtobuf(const std::string& kubectl, const std::filesystem::path& dir);

// The value of one sample line "name{labels} value" in a Prometheus exposition (labels as
// the exposition orders them), or -1 when there is none.
double MetricValue(const std::string& exposition, const std::string& series);

// A child process with stdin from `input` (or /dev/null) and stdout+stderr into `log`.
// Destroying it sends SIGTERM, waits up to 5 s, then SIGKILLs and reaps it.
class Process {
 public:
  Process(const std::string& binary, const std::vector<std::string>& args,
          const std::filesystem::path& log, const std::string& input = "/dev/null");
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  bool Running();
  // Waits for the process to exit on its own; its exit code, or -1 after `deadline`.
  int Wait(std::chrono::seconds deadline);
  // SIGTERM, then SIGKILL after 5 s.
  void Stop();
  // Sends `signal` and waits for the exit; the exit code (128 + signal when killed by one),
  // or -1 after `deadline`.
  int Signal(int signal, std::chrono::seconds deadline);

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

// Waits up to `deadline` until the log file at `log` holds `text` (a process's "READY" or
// "serving on" line); whether it did.
bool WaitForLog(const std::filesystem::path& log, std::string_view text,
                std::chrono::seconds deadline);

// Runs `binary args...` to completion (at most `deadline`) with its output in `log`.
struct RunResult {
  int exit_code = -1;  // -1: still running at the deadline (then killed)
  std::string output;
};
RunResult Run(const std::string& binary, const std::vector<std::string>& args,
              const std::filesystem::path& log, std::chrono::seconds deadline);

// Flags that open the aggregator's plain-HTTP listener on `port` to anonymous requests that
// are allowed everything, for tests about scraping and answers rather than access (an
// explicit, insecure test set-up; the HTTPS listener is moved to a free port with its
// self-signed pair under `dir`). Writes the rules file into `dir`.
std::vector<std::string> OpenPlainAccessFlags(int port, const std::filesystem::path& dir);

// The arguments of a simulator of `nodes` nodes (2 pods each, `seed`) whose fake
// kube-apiserver listens on `apiserver_port` and whose kubelets get free ports (new ones at
// each start), with its kubeconfig written to dir/kubeconfig.
std::vector<std::string> SimFlags(const std::filesystem::path& dir, int nodes, int seed,
                                  int apiserver_port);

// The aggregator's flags for the simulator of SimFlags(dir, ...): discovery through
// dir/kubeconfig, plain-HTTP kubelets at their InternalIP and node status port, no gRPC,
// the store in `storage_dir`, scraping every `resolution` with `kubelet_timeout`, and
// OpenPlainAccessFlags(port, dir); then `extra`.
std::vector<std::string> SimAggregatorFlags(const std::filesystem::path& dir, int port,
                                            const std::filesystem::path& storage_dir,
                                            const std::string& resolution,
                                            const std::string& kubelet_timeout,
                                            const std::vector<std::string>& extra = {});

// node-0000's newest usage as kubectl reads it with dir/kubeconfig through the simulator's
// aggregation proxy (metrics.k8s.io, the path `kubectl top` takes): its timestamp
// ("2026-12-02T01:18:03Z"), "" when kubectl is not installed or failed. Its log is
// dir/kubectl.log.
std::string NodeTimestampThroughKubectl(const std::filesystem::path& dir);
// True once NodeTimestampThroughKubectl(dir) is later than the time of the call, polled for
// up to `deadline`, and `kubectl top node node-0000` then prints node-0000's row: the
// metrics API serves fresh data, and kubectl top shows it.
bool ServesFreshThroughKubectl(const std::filesystem::path& dir, std::chrono::seconds deadline);

// GET http://127.0.0.1:port/path; the body of a 200 answer, else std::nullopt.
std::optional<std::string> HttpGet(int port, const std::string& path_and_query);

// GET http://127.0.0.1:port/path; the status code and body of any answer, std::nullopt when
// none came (not listening, reset, 5 s timeout).
struct HttpReply {
  int code = 0;
  std::string body;
};
std::optional<HttpReply> HttpGetReply(int port, const std::string& path_and_query);

// GET https://<host>:port/path (the serving certificate is not verified: these tests
// check access, and clients that verify it, kubectl and Prometheus, check the rest), with
// "Authorization: Bearer <bearer_token>" when one is given and the extra headers. The
// status code and body, std::nullopt when no answer came.
std::optional<HttpReply> HttpsGetReply(
    int port, const std::string& path_and_query, const std::string& bearer_token = "",
    const std::vector<std::pair<std::string, std::string>>& headers = {},
    const std::string& host = "127.0.0.1");

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTS_INTEGRATION_HARNESS_H_
