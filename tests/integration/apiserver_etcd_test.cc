// kubestat-apiserver replicas on a real three-member etcd cluster (Debian's etcd-server; the
// test skips without it), as processes on loopback: objects written through one replica
// are served by the other and reach a watch on it; after one replica and one etcd member
// are SIGKILLed, reads and writes go on at the surviving replica, its watch keeps going
// without a gap, and the restarted replica serves the identical list. With every member
// gone, a replica's /readyz fails and says why while /livez stays 200; once the whole cluster
// is started again, both replicas are ready, take writes and serve one list, unrestarted.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness.h"
#include "kubestat/metrics_api/write_batch.h"
#include "kubestat/testing/etcd_process.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/metrics_objects.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

namespace fs = std::filesystem;
using testing::EtcdCluster;
using testing::FreeLoopbackPort;
using testing::HttpsGetReply;
using testing::PollUntil;
using testing::Process;
using testing::ReadAll;
using testing::TempDir;

constexpr char kTokens[] = "writer-token,writer,10\n";
constexpr char kRules[] = R"(rules:
- users: [writer]
  verbs: [get, list, watch, create, update, delete]
  apiGroups: [metrics, metrics.k8s.io]
  resources: [nodes, pods, writes]
- users: [writer]
  nonResourceURLs: [/metrics]
  verbs: [get]
)";
constexpr std::chrono::seconds kDeadline(60);

// The names of the objects in a list document or watch stream: "name":"..." right after
// "metadata":{ and before "resourceVersion" (a system container's metadata has none).
std::multiset<std::string> Names(const std::string& list) {
  std::multiset<std::string> names;
  const std::string key = R"("metadata":{"name":")";
  for (size_t at = list.find(key); at != std::string::npos; at = list.find(key, at + 1)) {
    const size_t start = at + key.size();
    const size_t end = list.find('"', start);
    if (list.compare(end, 19, R"(","resourceVersion")") == 0) {
      names.insert(list.substr(start, end - start));
    }
  }
  return names;
}

// A WriteBatch putting nodes <prefix>-0 .. <prefix>-<count-1>.
std::string NodesBatch(const std::string& prefix, int count) {
  metrics_api::WriteBatch batch;
  for (int i = 0; i < count; ++i) {
    metrics_api::WriteItem item;
    item.node = testing::MakeNode(prefix + "-" + std::to_string(i), {{"role", "worker"}},
                                  testing::BaseTime(), 100 + static_cast<uint64_t>(i));
    batch.items.push_back(item);
  }
  return metrics_api::RenderWriteBatch(batch);
}

class ApiserverEtcdTest : public ::testing::Test {
 protected:
  struct Replica {
    int port = 0;
    std::string name;
    std::unique_ptr<Process> process;
  };

  void SetUp() override {
    if (testing::EtcdBinary().empty()) GTEST_SKIP() << testing::kNoEtcdMessage;
    etcd_ = std::make_unique<EtcdCluster>(3);
    ASSERT_TRUE(etcd_->ok());
    std::ofstream(dir_.File("tokens.csv")) << kTokens;
    std::ofstream(dir_.File("rules.yaml")) << kRules;
    for (int i = 0; i < 2; ++i) {
      replicas_[i].port = FreeLoopbackPort();
      replicas_[i].name = "apiserver-" + std::to_string(i);
      Start(i);
    }
  }

  void Start(int i) {
    Replica& replica = replicas_[i];
    std::string servers;
    for (const std::string& url : etcd_->ClientUrls()) {
      servers += (servers.empty() ? "" : ",") + url;
    }
    replica.process = std::make_unique<Process>(
        KUBESTAT_APISERVER_BINARY,
        std::vector<std::string>{"--listen-address=127.0.0.1",
                                 "--secure-port=" + std::to_string(replica.port),
                                 "--cert-dir=" + dir_.File(replica.name + "-certs"),
                                 "--token-auth-file=" + dir_.File("tokens.csv"),
                                 "--authorization-rules-file=" + dir_.File("rules.yaml"),
                                 "--etcd-servers=" + servers, "--etcd-prefix=/kubestat-it/"},
        dir_.File(replica.name + ".log"));
    ASSERT_TRUE(PollUntil(
        [&] {
          std::optional<testing::HttpReply> ready = HttpsGetReply(replica.port, "/readyz");
          return ready && ready->code == 200;
        },
        kDeadline))
        << ReadAll(dir_.File(replica.name + ".log"));
  }

  // POSTs a WriteBatch to replica `i`; the HTTP code ("" when curl got no answer).
  std::string Write(int i, const std::string& batch) {
    const std::string body = dir_.Write("batch.json", batch);
    testing::RunResult result =
        testing::Run("/usr/bin/curl",
                     {"-sk", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H",
                      "Authorization: Bearer writer-token", "-H", "Content-Type: application/json",
                      "--data-binary", "@" + body,
                      "https://127.0.0.1:" + std::to_string(replicas_[i].port) +
                          std::string(metrics_api::kWriteBatchPath)},
                     dir_.path() / "curl.log", std::chrono::seconds(30));
    return result.output;
  }

  // The HTTP code of replica `i`'s /readyz (0 when it did not answer).
  int ReadyzCode(int i) {
    std::optional<testing::HttpReply> ready = HttpsGetReply(replicas_[i].port, "/readyz");
    return ready ? ready->code : 0;
  }

  // The node list of replica `i` ("" unless 200).
  std::string Nodes(int i) {
    std::optional<testing::HttpReply> reply =
        HttpsGetReply(replicas_[i].port, "/apis/metrics/v1alpha1/nodes", "writer-token");
    return reply && reply->code == 200 ? reply->body : "";
  }

  // A watch of the nodes on replica `i` (curl streaming into a file).
  std::unique_ptr<Process> WatchNodes(int i, const fs::path& out) {
    return std::make_unique<Process>(
        "/usr/bin/curl",
        std::vector<std::string>{"-skN", "-H", "Authorization: Bearer writer-token",
                                 "https://127.0.0.1:" + std::to_string(replicas_[i].port) +
                                     "/apis/metrics/v1alpha1/nodes?watch=1"},
        out);
  }

  TempDir dir_{"kubestat-apiserver-etcd"};
  std::unique_ptr<EtcdCluster> etcd_;
  Replica replicas_[2];
};

TEST_F(ApiserverEtcdTest, ReplicasShareObjectsAndSurviveLosingAReplicaAndAnEtcdMember) {
  const fs::path watch_log = dir_.path() / "watch-on-1.log";
  std::unique_ptr<Process> watch = WatchNodes(1, watch_log);
  ASSERT_EQ(Write(0, NodesBatch("before", 3)), "200");

  // Written through replica 0: replica 1 lists the same objects and its watch sees them.
  const std::multiset<std::string> before = {"before-0", "before-1", "before-2"};
  ASSERT_TRUE(PollUntil([&] { return Names(Nodes(1)) == before; }, kDeadline)) << Nodes(1);
  EXPECT_EQ(Nodes(0), Nodes(1));
  ASSERT_TRUE(PollUntil(
      [&] { return ReadAll(watch_log).find(R"("name":"before-2")") != std::string::npos; },
      kDeadline))
      << ReadAll(watch_log);

  // Replica 0 and the etcd member both replicas reach first die.
  EXPECT_EQ(replicas_[0].process->Signal(SIGKILL, std::chrono::seconds(10)), 128 + SIGKILL);
  etcd_->Kill(0);

  // Writes and reads go on at replica 1 (after etcd has elected a leader among the rest).
  ASSERT_TRUE(PollUntil([&] { return Write(1, NodesBatch("during", 2)) == "200"; }, kDeadline,
                        std::chrono::milliseconds(200)))
      << ReadAll(dir_.File("apiserver-1.log"));
  const std::multiset<std::string> during = {"before-0", "before-1", "before-2", "during-0",
                                             "during-1"};
  EXPECT_EQ(Names(Nodes(1)), during);

  // Replica 0 comes back: both serve the identical list, and a write through it reaches the
  // watch on replica 1, which saw every object exactly once through all of it.
  Start(0);
  ASSERT_EQ(Write(0, NodesBatch("after", 1)), "200");
  std::multiset<std::string> all = during;
  all.insert("after-0");
  ASSERT_TRUE(PollUntil([&] { return Names(Nodes(1)) == all && Nodes(0) == Nodes(1); }, kDeadline))
      << Nodes(0) << "\n"
      << Nodes(1);
  ASSERT_TRUE(
      PollUntil([&] { return ReadAll(watch_log).find(R"("name":"after-0")") != std::string::npos; },
                kDeadline))
      << ReadAll(watch_log) << ReadAll(dir_.File("apiserver-1.log"));
  // Every object exactly once: nothing lost or repeated while etcd and replica 0 failed.
  EXPECT_EQ(Names(ReadAll(watch_log)), all) << ReadAll(watch_log);
  EXPECT_TRUE(watch->Running());
  // Replica 1 had been talking to the killed member (the first listed) and moved on.
  EXPECT_NE(
      ReadAll(dir_.File("apiserver-1.log")).find("etcd watch stream on " + etcd_->ClientUrl(0)),
      std::string::npos);
}

TEST_F(ApiserverEtcdTest, ReadyzSaysWhyWhileNoEtcdMemberAnswers) {
  const auto verbose = [&] {
    std::optional<testing::HttpReply> ready = HttpsGetReply(replicas_[1].port, "/readyz?verbose");
    return ready ? *ready : testing::HttpReply{};
  };
  EXPECT_EQ(verbose().body, "[+]ping ok\n[+]store ok\nreadyz check passed\n");
  for (int member = 0; member < etcd_->size(); ++member) etcd_->Kill(member);
  testing::HttpReply ready;
  ASSERT_TRUE(PollUntil(
      [&] {
        ready = verbose();
        return ready.code == 503;
      },
      kDeadline))
      << ready.body;
  EXPECT_EQ(ready.body,
            "[+]ping ok\n[-]store failed: the object store does not answer (no etcd member "
            "reachable)\nreadyz check failed");
  // A restart would not bring etcd back: live.
  std::optional<testing::HttpReply> live = HttpsGetReply(replicas_[1].port, "/livez");
  ASSERT_TRUE(live.has_value());
  EXPECT_EQ(live->code, 200);

  const std::string log = ReadAll(dir_.File("apiserver-1.log"));
  EXPECT_NE(log.find("readyz check store failed: the object store does not answer"),
            std::string::npos)
      << log;
}

// Every etcd member dies and the cluster is started again on the same ports and data: neither
// replica is restarted, yet both become ready, take a write each and list the same objects;
// each counts the outage and its reconnections and logs once that etcd answers again. The bound is
// a test bound, well above the few seconds a replica takes (gRPC reconnects within 2 s, the probe
// runs every 2 s).
TEST_F(ApiserverEtcdTest, BothReplicasServeAgainSoonAfterTheWholeEtcdClusterRestarts) {
  ASSERT_EQ(Write(0, NodesBatch("before", 2)), "200");
  const std::multiset<std::string> before = {"before-0", "before-1"};
  ASSERT_TRUE(PollUntil([&] { return Names(Nodes(1)) == before; }, kDeadline)) << Nodes(1);

  for (int member = 0; member < etcd_->size(); ++member) etcd_->Kill(member);
  ASSERT_TRUE(PollUntil([&] { return ReadyzCode(0) == 503 && ReadyzCode(1) == 503; }, kDeadline));
  ASSERT_TRUE(etcd_->RestartAll());

  constexpr std::chrono::seconds kBack(30);
  const auto back_by = std::chrono::steady_clock::now() + kBack;
  const auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(back_by -
                                                                 std::chrono::steady_clock::now());
  };
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(PollUntil([&] { return ReadyzCode(i) == 200; }, left()))
        << replicas_[i].name << " not ready again:\n"
        << ReadAll(dir_.File(replicas_[i].name + ".log"));
  }
  std::multiset<std::string> all = before;
  for (int i = 0; i < 2; ++i) {
    const std::string prefix = "after-" + std::to_string(i);
    ASSERT_TRUE(PollUntil([&] { return Write(i, NodesBatch(prefix, 1)) == "200"; }, left(),
                          std::chrono::milliseconds(200)))
        << replicas_[i].name << " takes no write:\n"
        << ReadAll(dir_.File(replicas_[i].name + ".log"));
    all.insert(prefix + "-0");
  }
  ASSERT_TRUE(PollUntil(
      [&] {
        const std::string list = Nodes(0);
        return Names(list) == all && list == Nodes(1);
      },
      left()))
      << Nodes(0) << "\n"
      << Nodes(1) << "\n"
      << ReadAll(dir_.File("apiserver-0.log")) << ReadAll(dir_.File("apiserver-1.log"));

  // Each replica counted one outage and its reconnections, and logged the recovery once.
  for (int i = 0; i < 2; ++i) {
    std::optional<testing::HttpReply> metrics =
        HttpsGetReply(replicas_[i].port, "/metrics", "writer-token");
    ASSERT_TRUE(metrics.has_value());
    ASSERT_EQ(metrics->code, 200) << metrics->body;
    EXPECT_EQ(testing::MetricValue(metrics->body, "kubestat_apiserver_etcd_outages_total"), 1)
        << metrics->body;
    double reconnects = 0;
    for (const std::string& url : etcd_->ClientUrls()) {
      reconnects += testing::MetricValue(
          metrics->body, "kubestat_apiserver_etcd_reconnects_total{endpoint=\"" + url + "\"}");
    }
    EXPECT_GE(reconnects, 1) << metrics->body;
    const std::string log = ReadAll(dir_.File(replicas_[i].name + ".log"));
    const std::string recovered = "etcd answers again after ";
    const size_t at = log.find(recovered);
    ASSERT_NE(at, std::string::npos) << log;
    EXPECT_EQ(log.find(recovered, at + 1), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace kubestat
