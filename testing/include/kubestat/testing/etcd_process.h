// Real etcd servers for tests (Debian's etcd-server, /usr/bin/etcd): one member or a
// cluster of several on loopback ports, each member with its data dir and log under one
// TempDir. Members run as child processes that die with the test binary; a test may SIGKILL
// one and start it again on the same ports and data.
//
// Waiting for a member is polling its log for "serving client traffic" with a deadline (a
// real process getting ready, not time passing). Thread-compatible; start and restart
// members from a thread that lives as long as they should (the test's main thread): a member
// gets SIGKILL when the thread that started it ends.
#ifndef KUBESTAT_TESTING_ETCD_PROCESS_H_
#define KUBESTAT_TESTING_ETCD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kubestat/testing/temp_dir.h"

namespace kubestat::testing {

// The etcd binary: /usr/bin/etcd, else `etcd` on $PATH; "" when there is none (tests then
// GTEST_SKIP with kNoEtcdMessage).
std::string EtcdBinary();
inline constexpr char kNoEtcdMessage[] =
    "etcd is not installed (Debian package etcd-server; scripts/install-deps.sh installs it)";

// TLS for the members' client URLs (https://127.0.0.1:<port>): their serving certificate and
// key, and the CA client certificates must chain to (--client-cert-auth). PEM file paths.
struct EtcdTls {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
};

class EtcdCluster {
 public:
  // Starts `members` members forming one cluster and waits (up to `deadline`) until every
  // one serves clients; ok() tells whether they did (a failure adds a test failure with the
  // logs). Transactions may carry up to `max_txn_ops` operations (etcd's --max-txn-ops).
  explicit EtcdCluster(int members = 1, std::optional<EtcdTls> tls = std::nullopt,
                       std::chrono::seconds deadline = std::chrono::seconds(60),
                       int max_txn_ops = 10000);
  // SIGKILLs every member still running.
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  bool ok() const { return ok_; }
  int size() const { return static_cast<int>(members_.size()); }
  // "http(s)://127.0.0.1:<client port>" of one member, and of all of them in order.
  std::string ClientUrl(int member) const;
  std::vector<std::string> ClientUrls() const;
  // SIGKILLs a member and reaps it.
  void Kill(int member);
  // Starts a killed member again on its ports and data dir; whether it serves clients
  // within `deadline`.
  bool Restart(int member, std::chrono::seconds deadline = std::chrono::seconds(60));
  // Kills every member still running and starts them all again on their ports and data
  // dirs; whether they serve clients within `deadline`. (A member of a cluster serves only
  // once a quorum runs, so a whole cluster cannot come back one Restart at a time.)
  bool RestartAll(std::chrono::seconds deadline = std::chrono::seconds(60));
  // What a member logged since it was last started.
  std::string Log(int member) const;

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    pid_t pid = -1;
  };
  void Start(int member);
  bool WaitServing(const std::vector<int>& members, std::chrono::seconds deadline);

  TempDir dir_{"kubestat-etcd"};
  std::optional<EtcdTls> tls_;
  int max_txn_ops_ = 10000;
  std::string initial_cluster_;
  std::vector<Member> members_;
  bool ok_ = false;
};

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_ETCD_PROCESS_H_
