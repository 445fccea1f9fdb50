// The fake kube-apiserver (the contract is SimulatorOptions' and simulator.h's): discovery,
// /version and the health paths; the resources of api_resources.h; with users_file the
// authentication and authorization of every request and the TokenReview and
// SubjectAccessReview APIs (access_review.h); with metrics_backend the aggregation proxy of
// the metrics groups (backend_proxy.h); the fault control under /sim/v1/ (fault_control.h).
// It reads the nodes and pods from the kubelets through KubeletView.
//
// Lifetime: LoadUsers(), Prepare(), Start() once, Stop() (or destroy). Borrows the options,
// clock, view and fault tables, which must outlive it. Thread-safe after Prepare().
#ifndef KUBESTAT_SIM_SRC_FAKE_APISERVER_H_
#define KUBESTAT_SIM_SRC_FAKE_APISERVER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "api_resources.h"
#include "backend_proxy.h"
#include "fault_control.h"
#include "kubelet_view.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server.h"
#include "kubestat/sim/simulator.h"
#include "kubestat/sim/users.h"
#include "prometheus/registry.h"
#include "tls.h"

namespace kubestat::sim {

class FakeApiServer {
 public:
  FakeApiServer(const SimulatorOptions& options, const Clock& clock, KubeletView& kubelets,
                KubeletFaults faults);
  ~FakeApiServer();  // Stop()
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // Reads users_file (and checks kubeconfig_user is in it); the error names the flag.
  [[nodiscard]] absl::Status LoadUsers();
  // Makes the backend proxy with the front proxy's client certificate (`front_proxy`:
  // nullptr without metrics_backend; borrowed) and the resources at `initial_version`, with
  // the front proxy's published trust (ExtensionAuthenticationConfigMap) and, with
  // default_limit_ranges, the default LimitRanges. Nothing is served yet.
  [[nodiscard]] absl::Status Prepare(const FrontProxyFiles* front_proxy, uint64_t initial_version);
  // Listens on apiserver_address:apiserver_port, over TLS with `tls` (nullptr: plain HTTP;
  // borrowed), then writes kubeconfig_out and the kubeconfigs of kubeconfig_dir. The error
  // names the failing part.
  [[nodiscard]] absl::Status Start(const TlsFiles* tls);
  // Ends proxied answers and watches, closes the listener; idempotent.
  void Stop();
  // Ends watches whose time is up or whose reader went away; every few milliseconds.
  void ServiceStreams();

  // "http://ADDRESS:PORT" ("https://…" with TLS); "" before Start().
  const std::string& url() const { return url_; }
  // kubeconfig_out once written, else "".
  const std::string& kubeconfig_path() const { return kubeconfig_path_; }
  // The kubeconfig written for `user` into kubeconfig_dir, or "".
  std::string user_kubeconfig_path(const std::string& user) const;
  // The resourceVersion lists report now.
  uint64_t resource_version() const { return resources_->CurrentVersion(); }

 private:
  http::Response Handle(const http::Request& req);
  http::Response Route(const http::Request& req);
  // Discovery, /version and the health paths; nullopt for any other path.
  std::optional<http::Response> Discovery(const std::string& path) const;
  // The APIGroupList of /apis: the review groups with users_file, the metrics groups with
  // metrics_backend.
  std::string ApiGroupList() const;
  http::Response Review(const http::Request& req, const std::string& path);
  // Forwards a request for the metrics groups to the backend as the aggregation layer
  // does; `user` is the authenticated caller (nullptr without a users file).
  http::Response Proxy(const http::Request& req, const UserInfo* user);
  absl::Status WriteKubeconfigs(const std::string& ca_pem);

  const SimulatorOptions& options_;
  const Clock& clock_;
  KubeletView& kubelets_;
  const KubeletFaults faults_;
  std::optional<UsersFile> users_;
  std::unique_ptr<BackendProxy> backend_;  // with options.metrics_backend
  std::unique_ptr<ApiResources> resources_;
  std::string url_;
  std::string kubeconfig_path_;
  std::map<std::string, std::string> user_kubeconfigs_;  // user name -> path
  // The server's own metrics; the simulator does not expose them.
  prometheus::Registry registry_;
  std::unique_ptr<http::Server> server_;
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_FAKE_APISERVER_H_
