// The simulated kubelets: node i of a ClusterModel served by listener i of one HTTP server
// (a held answer holds no thread). Each serves /healthz, /stats/summary (with
// ?only_cpu_and_memory=true) and /metrics/resource computed from the model at clock.Now(),
// as the node's fault (faults.h) has it, behind "Authorization: Bearer <kubelet_token>" when
// that is set; with podresources_dir each node also serves its podresources socket
// (podresources_server.h).
//
// They serve with or without the fake kube-apiserver (fake_apiserver.h), which reads them
// through KubeletView; Tick() finds the pods' churn and container restarts up to
// clock.Now() and tells the PodWatcher. In hollow mode ServeHollowPods() makes each node
// report the real pods bound to it instead of its model's.
//
// Lifetime: Create(), Start() once, Stop() (or destroy). Borrows the options, clock and fault
// tables, which must outlive it. Thread-safe after Create().
#ifndef KUBESTAT_SIM_SRC_KUBELETS_H_
#define KUBESTAT_SIM_SRC_KUBELETS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hollow_pods.h"
#include "kubelet_view.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server.h"
#include "kubestat/sim/faults.h"
#include "kubestat/sim/model.h"
#include "kubestat/sim/simulator.h"
#include "podresources_server.h"
#include "prometheus/registry.h"
#include "streams.h"
#include "tls.h"

namespace kubestat::sim {

class Kubelets : public KubeletView {
 public:
  // Builds the model of options.model and puts options.faults and options.podresources_faults
  // into the tables; an error names the flag. Nothing is served yet.
  static absl::StatusOr<std::unique_ptr<Kubelets>> Create(
      const SimulatorOptions& options, const Clock& clock, FaultTable& faults,
      PodResourcesFaultTable& podresources_faults);
  ~Kubelets() override;  // Stop()
  Kubelets(const Kubelets&) = delete;
  Kubelets& operator=(const Kubelets&) = delete;

  // Serves the podresources sockets (with podresources_dir) and every kubelet, over TLS
  // with `tls` (nullptr: plain HTTP; borrowed). The error names the failing part.
  [[nodiscard]] absl::Status Start(const TlsFiles* tls);
  // Answers held requests, ends streams, closes every listener and socket; idempotent.
  void Stop();

  // Finds the pods' changes up to clock.Now() and tells the watcher.
  void Tick();
  // Services the kubelets' streamed answers (streams.h); every few milliseconds.
  void ServiceStreams();
  // From now on each node reports the real pods `pods` has bound to it (borrowed until
  // Stop()).
  void ServeHollowPods(const HollowPods* pods);

  // The hosts (IP literals) the kubelets listen on, node by node; valid after Create().
  const std::vector<std::string>& hosts() const { return hosts_; }
  // Node `node`'s port (valid after Start()) and base URL ("https://…" with tls).
  int port(int node) const { return ports_[node]; }
  std::string url(int node) const;
  // The podresources sockets (served from Start()); nullptr without podresources_dir.
  PodResourcesSockets* podresources() { return podresources_.get(); }

  // KubeletView.
  const ClusterModel& model() const override { return model_; }
  KubeletEndpoint endpoint(int node) const override;
  void ReadPods(std::string_view node_name,
                absl::FunctionRef<void(std::span<const PodInfo>)> read) const override;
  bool DeletePod(std::string_view ns, std::string_view name,
                 absl::FunctionRef<void(const PodInfo& pod, Timestamp now)> deleting) override;
  void SetPodWatcher(PodWatcher* watcher) override;

 private:
  Kubelets(const SimulatorOptions& options, const Clock& clock, ClusterModel model,
           FaultTable& faults, PodResourcesFaultTable& podresources_faults);

  http::Response Handle(int node, const http::Request& req);
  // The "garbage" fault's bytes.
  std::string Garbage(int node);
  int Slot(int node, int slot) const { return node * model_.pods_per_node() + slot; }
  Timestamp Now() const { return model_.Quantize(clock_.Now()); }
  int RestartsAt(int node, int slot, Timestamp now) const;
  void TickLocked();                                                       // requires mu_
  void Publish(std::string_view type, const PodInfo& pod, Timestamp now);  // requires mu_

  const SimulatorOptions& options_;
  const Clock& clock_;
  ClusterModel model_;
  FaultTable& faults_;
  PodResourcesFaultTable& podresources_faults_;
  std::vector<std::string> hosts_;
  std::vector<int> ports_;
  std::atomic<const HollowPods*> hollow_pods_{nullptr};
  StreamSet streams_;
  // The servers' own metrics; the simulator does not expose them.
  prometheus::Registry registry_;
  std::unique_ptr<http::Server> server_;               // every kubelet, node i on listener i
  std::unique_ptr<PodResourcesSockets> podresources_;  // with options.podresources_dir

  mutable std::mutex mu_;
  bool started_ = false;             // guarded by mu_
  bool stopped_ = false;             // guarded by mu_
  PodWatcher* watcher_ = nullptr;    // guarded by mu_
  std::vector<int64_t> generation_;  // per global slot; guarded by mu_
  std::vector<int> restarts_;        // per global slot, summed over containers; guarded by mu_
  uint64_t garbage_counter_ = 0;     // guarded by mu_
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_KUBELETS_H_
