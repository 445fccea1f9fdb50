#include "kubestat/testing/etcd_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <utility>

#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"

namespace kubestat::testing {
namespace {

// etcd 3.4's zap logger says "serving client traffic securely" or "... insecurely ...".
constexpr char kServing[] = "serving client traffic";

std::string PeerUrl(int port) { return "http://127.0.0.1:" + std::to_string(port); }

}  // namespace

std::string EtcdBinary() {
  if (::access("/usr/bin/etcd", X_OK) == 0) return "/usr/bin/etcd";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path == nullptr ? "" : path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = dir + "/etcd";
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

EtcdCluster::EtcdCluster(int members, std::optional<EtcdTls> tls, std::chrono::seconds deadline,
                         int max_txn_ops)
    : tls_(std::move(tls)), max_txn_ops_(max_txn_ops) {
  for (int i = 0; i < members; ++i) {
    Member member;
    member.name = "member-" + std::to_string(i);
    member.client_port = FreeLoopbackPort();
    member.peer_port = FreeLoopbackPort();
    if (!initial_cluster_.empty()) initial_cluster_ += ",";
    initial_cluster_ += member.name + "=" + PeerUrl(member.peer_port);
    members_.push_back(member);
  }
  std::vector<int> all;
  for (int i = 0; i < members; ++i) {
    Start(i);
    all.push_back(i);
  }
  ok_ = WaitServing(all, deadline);
}

EtcdCluster::~EtcdCluster() {
  for (int i = 0; i < size(); ++i) Kill(i);
}

std::string EtcdCluster::ClientUrl(int member) const {
  return std::string(tls_.has_value() ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(members_[member].client_port);
}

std::vector<std::string> EtcdCluster::ClientUrls() const {
  std::vector<std::string> urls;
  urls.reserve(members_.size());
  for (int i = 0; i < size(); ++i) urls.push_back(ClientUrl(i));
  return urls;
}

std::string EtcdCluster::Log(int member) const {
  return ReadAll(dir_.File(members_[member].name + ".log"));
}

void EtcdCluster::Start(int i) {
  Member& member = members_[i];
  const std::string client_url = ClientUrl(i);
  std::vector<std::string> args = {
      EtcdBinary(),
      "--name=" + member.name,
      "--data-dir=" + dir_.File(member.name + ".etcd"),
      "--listen-client-urls=" + client_url,
      "--advertise-client-urls=" + client_url,
      "--listen-peer-urls=" + PeerUrl(member.peer_port),
      "--initial-advertise-peer-urls=" + PeerUrl(member.peer_port),
      "--initial-cluster=" + initial_cluster_,
      "--initial-cluster-state=new",
      "--initial-cluster-token=kubestat-test",
      "--heartbeat-interval=50",
      "--election-timeout=500",
      "--max-txn-ops=" + std::to_string(max_txn_ops_),
      "--logger=zap",
      "--log-outputs=stderr",
  };
  if (tls_.has_value()) {
    args.push_back("--cert-file=" + tls_->cert_file);
    args.push_back("--key-file=" + tls_->key_file);
    args.push_back("--client-cert-auth");
    args.push_back("--trusted-ca-file=" + tls_->client_ca_file);
  }
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  const std::string log = dir_.File(member.name + ".log");
  const pid_t parent = ::getpid();
  member.pid = ::fork();
  if (member.pid == 0) {
    // Only async-signal-safe calls until exec. The member dies with the test binary, even
    // when that is killed, so no etcd outlives its test.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0) ::_exit(127);
    ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (member.pid < 0) {
    ADD_FAILURE() << "cannot start " << argv[0] << ": " << std::strerror(errno);
    member.pid = -1;
  }
}

bool EtcdCluster::WaitServing(const std::vector<int>& members, std::chrono::seconds deadline) {
  const bool serving = PollUntil(
      [&] {
        for (int i : members) {
          if (Log(i).find(kServing) == std::string::npos) return false;
        }
        return true;
      },
      deadline, std::chrono::milliseconds(50));
  if (!serving) {
    for (int i : members) ADD_FAILURE() << members_[i].name << " did not serve:\n" << Log(i);
  }
  return serving;
}

void EtcdCluster::Kill(int i) {
  Member& member = members_[i];
  if (member.pid <= 0) return;
  ::kill(member.pid, SIGKILL);
  int status = 0;
  ::waitpid(member.pid, &status, 0);
  member.pid = -1;
}

bool EtcdCluster::Restart(int i, std::chrono::seconds deadline) {
  Kill(i);
  Start(i);
  return WaitServing({i}, deadline);
}

bool EtcdCluster::RestartAll(std::chrono::seconds deadline) {
  std::vector<int> all;
  for (int i = 0; i < size(); ++i) {
    Kill(i);
    all.push_back(i);
  }
  for (int i : all) Start(i);
  return WaitServing(all, deadline);
}

}  // namespace kubestat::testing
