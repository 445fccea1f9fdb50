// Starts the fake apiserver and kubelets on loopback and talks to them over real HTTP.
// cpprestsdk would otherwise define a U() macro that breaks GoogleTest.
#define _TURN_OFF_PLATFORM_STRING
#include "kubestat/sim/simulator.h"

#include <arpa/inet.h>
#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>
#include <cpprest/http_listener.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <simdjson.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include "kubestat/core/gzip.h"
#include "kubestat/core/time.h"
#include "kubestat/sim/render.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/temp_dir.h"
#include "kubestat/testing/test_pki.h"
#include "test_users.h"

// This test's clients are cpprestsdk's; its https client keeps OpenSSL objects past exit,
// and tests/lsan.supp suppresses leaks by their libcpprest frames. The uninstrumented
// libcrypto has no frame pointers, so ASan's fast unwinder stops inside it and the
// suppression never sees those frames: unwind allocations with the slow unwinder here.
extern "C" const char* __asan_default_options() { return "fast_unwind_on_malloc=0"; }

namespace kubestat::sim {
namespace {

using testing::FreeLoopbackPort;
using testing::ReadAll;
using testing::TempDir;
using web::http::http_response;
using web::http::methods;
using web::http::client::http_client;
using web::http::client::http_client_config;

const Timestamp kT0 = Timestamp(std::chrono::seconds(1795255200));

SimulatorOptions SmallCluster() {
  SimulatorOptions o;
  o.model.nodes = 3;
  o.model.pods_per_node = 4;
  o.model.mean_pod_lifetime = std::chrono::minutes(10);
  o.kubelet_address_mode = KubeletAddressMode::kPorts;
  o.kubelet_port = 0;
  o.tick_interval = Duration::zero();  // the test calls Tick()
  return o;
}

http_response Get(const std::string& base, const std::string& path,
                  std::chrono::seconds timeout = std::chrono::seconds(20)) {
  http_client_config config;
  config.set_timeout(timeout);
  http_client client(base, config);
  return client.request(methods::GET, path).get();
}

std::string Body(http_response r) { return r.extract_utf8string(true).get(); }

simdjson::dom::element Parse(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element e;
  EXPECT_EQ(parser.parse(json).get(e), simdjson::SUCCESS) << json.substr(0, 300);
  return e;
}

// Reads one newline-terminated line of a streamed body, or "" after `timeout`.
std::string ReadLine(concurrency::streams::istream body, std::chrono::seconds timeout) {
  auto future = std::async(std::launch::async, [body]() mutable {
    concurrency::streams::container_buffer<std::string> line;
    body.read_line(line).get();
    return line.collection();
  });
  if (future.wait_for(timeout) != std::future_status::ready) {
    ADD_FAILURE() << "no line within the timeout";
    future.wait();  // the stream is closed when the simulator stops
    return "";
  }
  return future.get();
}

// A watch of every pod from resourceVersion `rv`.
http_response WatchPods(http_client& client, uint64_t rv) {
  return client
      .request(methods::GET, "/api/v1/pods?watch=true&resourceVersion=" + std::to_string(rv))
      .get();
}

TEST(SimulatorTest, ServesNodesAndPodsThatMatchTheModel) {
  FakeClock clock(kT0);
  Simulator sim(SmallCluster(), clock);
  ASSERT_TRUE(sim.Start().ok());
  simdjson::dom::parser parser;

  http_response nodes = Get(sim.apiserver_url(), "/api/v1/nodes");
  ASSERT_EQ(nodes.status_code(), 200);
  const std::string nodes_json = Body(nodes);
  simdjson::dom::element list = Parse(parser, nodes_json);
  EXPECT_EQ(std::string_view(list["kind"].get_string()), "NodeList");
  ASSERT_EQ(list["items"].get_array().size(), 3u);
  for (int i = 0; i < 3; ++i) {
    simdjson::dom::element node = list["items"].at(i);
    EXPECT_EQ(int64_t(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]),
              sim.kubelet_port(i));
    EXPECT_EQ(std::string_view(node["status"]["addresses"].at(0)["address"].get_string()),
              "127.0.0.1");
  }

  simdjson::dom::parser pod_parser;
  simdjson::dom::element pods = Parse(pod_parser, Body(Get(sim.apiserver_url(), "/api/v1/pods")));
  EXPECT_EQ(std::string_view(pods["kind"].get_string()), "PodList");
  ASSERT_EQ(pods["items"].get_array().size(), 12u);
  EXPECT_EQ(std::string_view(pods["items"].at(5)["metadata"]["name"].get_string()),
            sim.model().Pod(1, 1, kT0).name);

  const PodInfo pod = sim.model().Pod(2, 3, kT0);
  http_response one =
      Get(sim.apiserver_url(), "/api/v1/namespaces/" + pod.namespace_name + "/pods/" + pod.name);
  EXPECT_EQ(one.status_code(), 200);
  http_response missing = Get(sim.apiserver_url(), "/api/v1/namespaces/shop/pods/nope");
  EXPECT_EQ(missing.status_code(), 404);
  simdjson::dom::parser status_parser;
  EXPECT_EQ(std::string_view(Parse(status_parser, Body(missing))["kind"].get_string()), "Status");

  simdjson::dom::parser node_pods_parser;
  simdjson::dom::element node_pods =
      Parse(node_pods_parser,
            Body(Get(sim.apiserver_url(), "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-0002")));
  EXPECT_EQ(node_pods["items"].get_array().size(), 4u);

  // Lists honour labelSelector as the kube-apiserver does (kubectl top pod -l cross-checks
  // the metrics with such a list); a malformed selector is a 400 Status.
  size_t daemonset_pods = 0;
  for (int n = 0; n < 3; ++n) {
    for (int p = 0; p < 4; ++p) daemonset_pods += sim.model().Pod(n, p, kT0).app == "kube-proxy";
  }
  ASSERT_GT(daemonset_pods, 0u);
  simdjson::dom::parser selected_parser;
  simdjson::dom::element selected =
      Parse(selected_parser,
            Body(Get(sim.apiserver_url(), "/api/v1/pods?labelSelector=app%3Dkube-proxy")));
  EXPECT_EQ(selected["items"].get_array().size(), daemonset_pods);
  for (simdjson::dom::element item : selected["items"].get_array()) {
    EXPECT_EQ(std::string_view(item["metadata"]["labels"]["app"].get_string()), "kube-proxy");
  }
  simdjson::dom::parser none_parser;
  EXPECT_EQ(Parse(none_parser,
                  Body(Get(sim.apiserver_url(),
                           "/api/v1/namespaces/shop/pods?labelSelector=app%3Dkube-proxy")))["items"]
                .get_array()
                .size(),
            0u);
  simdjson::dom::parser node_sel_parser;
  const std::string zone = sim.model().node(1).labels.back().first;
  EXPECT_EQ(Parse(node_sel_parser,
                  Body(Get(sim.apiserver_url(), "/api/v1/nodes?labelSelector=" + zone)))["items"]
                .get_array()
                .size(),
            3u);
  simdjson::dom::parser no_nodes_parser;
  EXPECT_EQ(Parse(no_nodes_parser,
                  Body(Get(sim.apiserver_url(), "/api/v1/nodes?labelSelector=nope%3Dx")))["items"]
                .get_array()
                .size(),
            0u);
  http_response bad = Get(sim.apiserver_url(), "/api/v1/pods?labelSelector=app%20in%20(web");
  EXPECT_EQ(bad.status_code(), 400);
  simdjson::dom::parser bad_parser;
  EXPECT_EQ(std::string_view(Parse(bad_parser, Body(bad))["reason"].get_string()), "BadRequest");

  // The kubelet serves the model's values at the clock's time.
  http_response summary = Get(sim.kubelet_url(0), "/stats/summary?only_cpu_and_memory=true");
  ASSERT_EQ(summary.status_code(), 200);
  simdjson::dom::parser summary_parser;
  simdjson::dom::element s = Parse(summary_parser, Body(summary));
  EXPECT_EQ(uint64_t(s["node"]["cpu"]["usageCoreNanoSeconds"]),
            sim.model().NodeUsage(0, kT0).usage_core_nano_seconds);
  EXPECT_TRUE(s["node"]["fs"].error() == simdjson::NO_SUCH_FIELD);
  http_response metrics = Get(sim.kubelet_url(1), "/metrics/resource");
  EXPECT_EQ(metrics.status_code(), 200);
  EXPECT_NE(Body(metrics).find("resource_scrape_error 0"), std::string::npos);
  sim.Stop();
}

TEST(SimulatorTest, ChurnDrivenByTheClockArrivesAsWatchEvents) {
  FakeClock clock(kT0);
  SimulatorOptions options = SmallCluster();
  options.watch_history = 4;
  Simulator sim(options, clock);
  ASSERT_TRUE(sim.Start().ok());
  const uint64_t rv = sim.resource_version();

  http_client client(sim.apiserver_url());
  http_response watch = WatchPods(client, rv);
  ASSERT_EQ(watch.status_code(), 200);

  // Within 20 minutes some of the 12 pods (mean lifetime 10 minutes) are replaced.
  clock.Advance(std::chrono::minutes(20));
  sim.Tick();
  ASSERT_GT(sim.resource_version(), rv);
  simdjson::dom::parser parser;
  const std::string first = ReadLine(watch.body(), std::chrono::seconds(20));
  simdjson::dom::element ev = Parse(parser, first);
  EXPECT_EQ(std::string_view(ev["type"].get_string()), "DELETED");
  const std::string deleted_name(std::string_view(ev["object"]["metadata"]["name"].get_string()));
  simdjson::dom::parser parser2;
  const std::string second = ReadLine(watch.body(), std::chrono::seconds(20));
  simdjson::dom::element added = Parse(parser2, second);
  EXPECT_EQ(std::string_view(added["type"].get_string()), "ADDED");
  EXPECT_NE(std::string_view(added["object"]["metadata"]["name"].get_string()), deleted_name);
  EXPECT_GT(std::stoull(std::string(
                std::string_view(added["object"]["metadata"]["resourceVersion"].get_string()))),
            rv);

  // The history holds 4 events; the starting version is gone by now.
  if (sim.resource_version() > rv + 5) {
    http_response expired = WatchPods(client, rv);
    simdjson::dom::parser parser3;
    simdjson::dom::element err = Parse(parser3, ReadLine(expired.body(), std::chrono::seconds(20)));
    EXPECT_EQ(std::string_view(err["type"].get_string()), "ERROR");
    EXPECT_EQ(int64_t(err["object"]["code"]), 410);
  }
  sim.Stop();
}

TEST(SimulatorTest, ResourceVersionsStartAtTheStartTimeInMicroseconds) {
  EXPECT_EQ(InitialResourceVersion(kT0), uint64_t{1795255200} * 1000000);
  EXPECT_EQ(InitialResourceVersion(Timestamp()), 1u);
  FakeClock clock(kT0);
  Simulator sim(SmallCluster(), clock);
  ASSERT_TRUE(sim.Start().ok());
  EXPECT_EQ(sim.resource_version(), InitialResourceVersion(kT0));
  simdjson::dom::parser parser;
  simdjson::dom::element nodes = Parse(parser, Body(Get(sim.apiserver_url(), "/api/v1/nodes")));
  EXPECT_EQ(std::string_view(nodes["metadata"]["resourceVersion"].get_string()),
            std::to_string(InitialResourceVersion(kT0)));
  sim.Stop();
}

TEST(SimulatorTest, ARestartedSimulatorNeverHandsOutAVersionHandedOutBefore) {
  FakeClock clock(kT0);
  uint64_t last_before_restart = 0;
  {
    Simulator sim(SmallCluster(), clock);
    ASSERT_TRUE(sim.Start().ok());
    // An hour of churn: many events, each one more version.
    clock.Advance(std::chrono::hours(1));
    sim.Tick();
    last_before_restart = sim.resource_version();
    ASSERT_GT(last_before_restart, InitialResourceVersion(kT0) + 5);
    sim.Stop();
  }
  clock.Advance(std::chrono::seconds(1));
  Simulator restarted(SmallCluster(), clock);
  ASSERT_TRUE(restarted.Start().ok());
  EXPECT_GT(restarted.resource_version(), last_before_restart);

  // A watch resumed from the earlier simulator's last version is told to list again.
  http_client client(restarted.apiserver_url());
  for (const std::string resource : {"nodes", "pods"}) {
    http_response watch =
        client
            .request(methods::GET, "/api/v1/" + resource + "?watch=true&timeoutSeconds=5&" +
                                       "resourceVersion=" + std::to_string(last_before_restart))
            .get();
    ASSERT_EQ(watch.status_code(), 200) << resource;
    simdjson::dom::parser parser;
    simdjson::dom::element event = Parse(parser, ReadLine(watch.body(), std::chrono::seconds(20)));
    EXPECT_EQ(std::string_view(event["type"].get_string()), "ERROR") << resource;
    EXPECT_EQ(int64_t(event["object"]["code"]), 410) << resource;
    EXPECT_EQ(std::string_view(event["object"]["reason"].get_string()), "Expired") << resource;
  }
  restarted.Stop();
}

TEST(SimulatorTest, NodeWatchFromAVersionOutsideTheHistoryIsExpired) {
  FakeClock clock(kT0);
  SimulatorOptions options = SmallCluster();
  options.watch_history = 2;
  Simulator sim(options, clock);
  ASSERT_TRUE(sim.Start().ok());
  const uint64_t listed = sim.resource_version();
  clock.Advance(std::chrono::hours(1));
  sim.Tick();
  ASSERT_GT(sim.resource_version(), listed + 3);
  http_client client(sim.apiserver_url());
  // Older than the two events kept, and newer than any handed out: list again.
  for (const uint64_t rv : {listed, sim.resource_version() + 1}) {
    http_response watch =
        client
            .request(methods::GET, "/api/v1/nodes?watch=true&resourceVersion=" + std::to_string(rv))
            .get();
    ASSERT_EQ(watch.status_code(), 200) << rv;
    simdjson::dom::parser parser;
    simdjson::dom::element event = Parse(parser, ReadLine(watch.body(), std::chrono::seconds(20)));
    EXPECT_EQ(std::string_view(event["type"].get_string()), "ERROR") << rv;
    EXPECT_EQ(int64_t(event["object"]["code"]), 410) << rv;
  }
  sim.Stop();
}

TEST(SimulatorTest, FaultsChangeWhatTheKubeletAnswers) {
  FakeClock clock(kT0);
  SimulatorOptions options = SmallCluster();
  options.faults["node-0001"] = Fault::kHttp500;
  Simulator sim(options, clock);
  ASSERT_TRUE(sim.Start().ok());

  EXPECT_EQ(Get(sim.kubelet_url(1), "/stats/summary").status_code(), 500);

  // Set through the apiserver's fault API.
  http_client api(sim.apiserver_url());
  http_response put = api.request(methods::PUT, "/sim/v1/faults/node-0002", "truncated").get();
  ASSERT_EQ(put.status_code(), 200);
  EXPECT_EQ(sim.faults().Get("node-0002"), Fault::kTruncated);
  EXPECT_EQ(api.request(methods::PUT, "/sim/v1/faults/node-0002", "explode").get().status_code(),
            400);
  const std::string full = RenderSummary(sim.model().Snapshot(2, kT0), false);
  const std::string cut = Body(Get(sim.kubelet_url(2), "/stats/summary"));
  EXPECT_LT(cut.size(), full.size());
  EXPECT_EQ(cut, full.substr(0, cut.size()));
  simdjson::dom::parser parser;
  simdjson::dom::element ignored;
  EXPECT_NE(parser.parse(cut).get(ignored), simdjson::SUCCESS);

  const std::string listed = Body(api.request(methods::GET, "/sim/v1/faults").get());
  EXPECT_NE(listed.find("\"node-0002\":\"truncated\""), std::string::npos) << listed;

  sim.faults().Set("node-0000", Fault::kTimeout);
  EXPECT_THROW(Get(sim.kubelet_url(0), "/stats/summary", std::chrono::seconds(1)),
               web::http::http_exception);

  sim.faults().Set("node-0000", Fault::kGarbage);
  http_response garbage = Get(sim.kubelet_url(0), "/stats/summary");
  EXPECT_EQ(garbage.status_code(), 200);
  EXPECT_EQ(Body(garbage).size(), 4096u);
  sim.Stop();
}

// The zero-timestamp fault serves the model's values at the clock's time, every reading
// stamped 0: each summary time is the Unix epoch, each /metrics/resource sample's
// timestamp column 0. Start times are left as they are.
TEST(SimulatorTest, ZeroTimestampFaultStampsEveryReadingWithTheEpoch) {
  FakeClock clock(kT0);
  Simulator sim(SmallCluster(), clock);
  ASSERT_TRUE(sim.Start().ok());
  http_client api(sim.apiserver_url());
  ASSERT_EQ(
      api.request(methods::PUT, "/sim/v1/faults/node-0001", "zero-timestamp").get().status_code(),
      200);
  EXPECT_EQ(sim.faults().Get("node-0001"), Fault::kZeroTimestamp);

  for (const bool only_cpu_and_memory : {true, false}) {
    SCOPED_TRACE(only_cpu_and_memory ? "only cpu and memory" : "full summary");
    http_response summary =
        Get(sim.kubelet_url(1),
            only_cpu_and_memory ? "/stats/summary?only_cpu_and_memory=true" : "/stats/summary");
    ASSERT_EQ(summary.status_code(), 200);
    const std::string body = Body(summary);
    simdjson::dom::parser parser;
    simdjson::dom::element s = Parse(parser, body);
    EXPECT_EQ(std::string_view(s["node"]["cpu"]["time"].get_string()), "1970-01-01T00:00:00Z");
    EXPECT_EQ(std::string_view(s["node"]["memory"]["time"].get_string()), "1970-01-01T00:00:00Z");
    EXPECT_EQ(uint64_t(s["node"]["memory"]["workingSetBytes"]),
              sim.model().NodeUsage(1, kT0).working_set_bytes);
    EXPECT_EQ(std::string_view(s["node"]["startTime"].get_string()),
              FormatRfc3339(sim.model().node(1).start_time));
    const std::string epoch = "\"time\":\"1970-01-01T00:00:00Z\"";
    size_t stamped = 0;
    for (size_t at = body.find("\"time\":"); at != std::string::npos;
         at = body.find("\"time\":", at + 1)) {
      EXPECT_EQ(body.compare(at, epoch.size(), epoch), 0) << body.substr(at, 40);
      ++stamped;
    }
    EXPECT_GT(stamped, 10u);
  }

  http_response metrics = Get(sim.kubelet_url(1), "/metrics/resource");
  ASSERT_EQ(metrics.status_code(), 200);
  std::istringstream lines(Body(metrics));
  std::string line;
  size_t samples = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("container_start_time_seconds", 0) == 0 ||
        line.rfind("resource_scrape_error", 0) == 0) {
      continue;
    }
    EXPECT_EQ(line.substr(line.rfind(' ')), " 0") << line;
    ++samples;
  }
  EXPECT_GT(samples, 10u);

  // Another node's kubelet is unaffected.
  simdjson::dom::parser parser;
  simdjson::dom::element healthy =
      Parse(parser, Body(Get(sim.kubelet_url(2), "/stats/summary?only_cpu_and_memory=true")));
  EXPECT_EQ(std::string_view(healthy["node"]["cpu"]["time"].get_string()), FormatRfc3339(kT0));
  sim.Stop();
}

TEST(SimulatorTest, DeletedPodIsReplacedInTheListTheWatchAndTheKubelet) {
  FakeClock clock(kT0);
  Simulator sim(SmallCluster(), clock);
  ASSERT_TRUE(sim.Start().ok());
  const uint64_t rv = sim.resource_version();
  http_client api(sim.apiserver_url());
  http_response watch = WatchPods(api, rv);
  ASSERT_EQ(watch.status_code(), 200);

  const PodInfo pod = sim.model().Pod(1, 2, kT0);
  const std::string path = "/sim/v1/namespaces/" + pod.namespace_name + "/pods/" + pod.name;
  http_response deleted = api.request(methods::DEL, path).get();
  ASSERT_EQ(deleted.status_code(), 200);
  simdjson::dom::parser parser;
  EXPECT_EQ(std::string_view(Parse(parser, Body(deleted))["metadata"]["name"].get_string()),
            pod.name);
  const PodInfo replacement = sim.model().Pod(1, 2, kT0);
  ASSERT_NE(replacement.name, pod.name);

  const std::string listed = Body(Get(sim.apiserver_url(), "/api/v1/pods"));
  EXPECT_EQ(listed.find("\"" + pod.name + "\""), std::string::npos);
  EXPECT_NE(listed.find("\"" + replacement.name + "\""), std::string::npos);

  simdjson::dom::parser first_parser;
  simdjson::dom::element first =
      Parse(first_parser, ReadLine(watch.body(), std::chrono::seconds(20)));
  EXPECT_EQ(std::string_view(first["type"].get_string()), "DELETED");
  EXPECT_EQ(std::string_view(first["object"]["metadata"]["name"].get_string()), pod.name);
  simdjson::dom::parser second_parser;
  simdjson::dom::element second =
      Parse(second_parser, ReadLine(watch.body(), std::chrono::seconds(20)));
  EXPECT_EQ(std::string_view(second["type"].get_string()), "ADDED");
  EXPECT_EQ(std::string_view(second["object"]["metadata"]["name"].get_string()), replacement.name);

  simdjson::dom::parser summary_parser;
  simdjson::dom::element summary =
      Parse(summary_parser, Body(Get(sim.kubelet_url(1), "/stats/summary")));
  std::vector<std::string> names;
  for (simdjson::dom::element p : summary["pods"].get_array()) {
    names.emplace_back(std::string_view(p["podRef"]["name"].get_string()));
  }
  EXPECT_EQ(std::count(names.begin(), names.end(), pod.name), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), replacement.name), 1);

  http_response again = api.request(methods::DEL, path).get();
  EXPECT_EQ(again.status_code(), 404);
  simdjson::dom::parser status_parser;
  simdjson::dom::element status = Parse(status_parser, Body(again));
  EXPECT_EQ(std::string_view(status["kind"].get_string()), "Status");
  EXPECT_EQ(std::string_view(status["reason"].get_string()), "NotFound");
  EXPECT_EQ(api.request(methods::DEL, "/sim/v1/namespaces/nowhere/pods/" + replacement.name)
                .get()
                .status_code(),
            404);
  EXPECT_EQ(api.request(methods::GET, "/sim/v1/namespaces/" + replacement.namespace_name +
                                          "/pods/" + replacement.name)
                .get()
                .status_code(),
            405);
  sim.Stop();
}

TEST(SimulatorTest, ServesLimitRangesAndChangesThemAsWatchEvents) {
  FakeClock clock(kT0);
  Simulator sim(SmallCluster(), clock);
  ASSERT_TRUE(sim.Start().ok());
  http_client api(sim.apiserver_url());
  // The default: "limits" in shop, listed in the whole cluster and in its namespace.
  simdjson::dom::parser parser;
  simdjson::dom::element list =
      Parse(parser, Body(Get(sim.apiserver_url(), "/api/v1/limitranges")));
  EXPECT_EQ(std::string_view(list["kind"].get_string()), "LimitRangeList");
  ASSERT_EQ(list["items"].get_array().size(), 1u);
  simdjson::dom::element item = list["items"].at(0);
  EXPECT_EQ(std::string_view(item["metadata"]["namespace"].get_string()), "shop");
  EXPECT_EQ(std::string_view(item["spec"]["limits"].at(0)["max"]["cpu"].get_string()), "1");
  EXPECT_NE(
      Body(Get(sim.apiserver_url(), "/api/v1/namespaces/search/limitranges")).find("\"items\":[]"),
      std::string::npos);
  EXPECT_EQ(Get(sim.apiserver_url(), "/api/v1/namespaces/shop/limitranges/limits").status_code(),
            200);
  EXPECT_EQ(Get(sim.apiserver_url(), "/api/v1/namespaces/shop/limitranges/none").status_code(),
            404);

  http_response watch =
      api.request(methods::GET, "/api/v1/namespaces/shop/limitranges?watch=true&resourceVersion=" +
                                    std::to_string(sim.resource_version()))
          .get();
  ASSERT_EQ(watch.status_code(), 200);
  const std::string path = "/sim/v1/namespaces/shop/limitranges/limits";
  http_response put = api.request(methods::PUT, path,
                                  R"({"apiVersion":"v1","kind":"LimitRange","spec":{"limits":[)"
                                  R"({"type":"Container","max":{"cpu":"300m"}}]}})",
                                  "application/json")
                          .get();
  ASSERT_EQ(put.status_code(), 200);
  // Another namespace's change does not reach this watch.
  ASSERT_EQ(api.request(methods::PUT, "/sim/v1/namespaces/search/limitranges/l",
                        R"({"limits":[{"type":"Pod","max":{"memory":"1Gi"}}]})", "application/json")
                .get()
                .status_code(),
            200);
  ASSERT_EQ(api.request(methods::DEL, path).get().status_code(), 200);
  simdjson::dom::parser p1;
  simdjson::dom::element modified = Parse(p1, ReadLine(watch.body(), std::chrono::seconds(20)));
  EXPECT_EQ(std::string_view(modified["type"].get_string()), "MODIFIED");
  EXPECT_EQ(std::string_view(modified["object"]["spec"]["limits"].at(0)["max"]["cpu"].get_string()),
            "300m");
  simdjson::dom::parser p2;
  simdjson::dom::element deleted = Parse(p2, ReadLine(watch.body(), std::chrono::seconds(20)));
  EXPECT_EQ(std::string_view(deleted["type"].get_string()), "DELETED");
  EXPECT_EQ(Get(sim.apiserver_url(), "/api/v1/namespaces/shop/limitranges/limits").status_code(),
            404);

  http_response bad = api.request(methods::PUT, path, R"({"spec":{}})", "application/json").get();
  EXPECT_EQ(bad.status_code(), 400);
  simdjson::dom::parser p3;
  EXPECT_EQ(std::string_view(Parse(p3, Body(bad))["reason"].get_string()), "BadRequest");
  EXPECT_EQ(api.request(methods::DEL, path).get().status_code(), 404);
  sim.Stop();
}

TEST(SimulatorTest, PodsNameTheirController) {
  FakeClock clock(kT0);
  Simulator sim(SmallCluster(), clock);
  ASSERT_TRUE(sim.Start().ok());
  simdjson::dom::parser parser;
  simdjson::dom::element list = Parse(parser, Body(Get(sim.apiserver_url(), "/api/v1/pods")));
  int replica_sets = 0;
  int daemon_sets = 0;
  for (simdjson::dom::element pod : list["items"].get_array()) {
    simdjson::dom::element owner = pod["metadata"]["ownerReferences"].at(0);
    EXPECT_TRUE(owner["controller"].get_bool().value());
    const std::string_view kind = owner["kind"].get_string();
    const std::string_view name = owner["name"].get_string();
    const std::string_view app = pod["metadata"]["labels"]["app"].get_string();
    if (kind == "ReplicaSet") {
      ++replica_sets;
      EXPECT_EQ(std::string(name),
                std::string(app) + "-" +
                    std::string(std::string_view(
                        pod["metadata"]["labels"]["pod-template-hash"].get_string())));
    } else {
      ++daemon_sets;
      EXPECT_EQ(kind, "DaemonSet");
      EXPECT_EQ(name, app);
    }
  }
  EXPECT_EQ(daemon_sets, 6);  // two per node
  EXPECT_EQ(replica_sets, 6);
  sim.Stop();
}

TEST(SimulatorTest, ProxiesMetricsGroupsToTheBackend) {
  const std::string backend_url = "http://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  web::http::experimental::listener::http_listener backend(backend_url);
  backend.support([](web::http::http_request req) {
    web::http::http_response resp(203);
    resp.headers().add("X-Backend-Path", req.relative_uri().to_string());
    resp.headers().add("X-Backend-Accept",
                       req.headers().has("Accept") ? req.headers()["Accept"] : "");
    resp.set_body(std::string("{\"kind\":\"NodeMetricsList\"}"), "application/json");
    req.reply(resp);
  });
  backend.open().wait();

  FakeClock clock(kT0);
  SimulatorOptions options = SmallCluster();
  options.metrics_backend = backend_url;
  Simulator sim(options, clock);
  ASSERT_TRUE(sim.Start().ok());

  const std::string apis = Body(Get(sim.apiserver_url(), "/apis"));
  EXPECT_NE(apis.find("\"metrics.k8s.io\""), std::string::npos);
  EXPECT_NE(apis.find("\"metrics/v1alpha1\""), std::string::npos);
  // Both metrics.k8s.io versions, v1 first and preferred.
  EXPECT_NE(apis.find("\"versions\":[{\"groupVersion\":\"metrics.k8s.io/v1\",\"version\":\"v1\"},"
                      "{\"groupVersion\":\"metrics.k8s.io/v1beta1\",\"version\":\"v1beta1\"}],"
                      "\"preferredVersion\":{\"groupVersion\":\"metrics.k8s.io/v1\""),
            std::string::npos)
      << apis;

  http_client client(sim.apiserver_url());
  web::http::http_request req(methods::GET);
  req.set_request_uri("/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=a%3Db");
  req.headers().add("Accept", "application/json");
  http_response resp = client.request(req).get();
  EXPECT_EQ(resp.status_code(), 203);
  EXPECT_EQ(resp.headers()["X-Backend-Path"],
            "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=a%3Db");
  EXPECT_EQ(resp.headers()["X-Backend-Accept"], "application/json");
  EXPECT_EQ(Body(resp), "{\"kind\":\"NodeMetricsList\"}");

  sim.Stop();
  backend.close().wait();

  // Nothing listens on the backend's port: 503 with a Status.
  options.metrics_backend = "http://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  Simulator orphan(options, clock);
  ASSERT_TRUE(orphan.Start().ok());
  http_response down = Get(orphan.apiserver_url(), "/apis/metrics/v1alpha1/nodes");
  EXPECT_EQ(down.status_code(), 503);
  EXPECT_NE(Body(down).find("\"ServiceUnavailable\""), std::string::npos);
  orphan.Stop();
}

TEST(SimulatorTest, TlsKubeletsVerifyWithTheGeneratedCaAndRequireTheToken) {
  const TempDir scratch("kubestat-sim-test");
  const std::filesystem::path& dir = scratch.path();
  FakeClock clock(kT0);
  SimulatorOptions options = SmallCluster();
  options.tls = true;
  options.tls_dir = dir.string();
  options.kubelet_token = "s3cret";
  Simulator sim(options, clock);
  ASSERT_TRUE(sim.Start().ok());
  ASSERT_EQ(sim.ca_path(), (dir / "ca.crt").string());
  EXPECT_EQ(sim.kubelet_url(0).rfind("https://", 0), 0u);

  http_client_config config;
  config.set_validate_certificates(true);
  const std::string ca = sim.ca_path();
  config.set_ssl_context_callback(
      [ca](boost::asio::ssl::context& ctx) { ctx.load_verify_file(ca); });
  http_client client(sim.kubelet_url(0), config);
  web::http::http_request req(methods::GET);
  req.set_request_uri("/stats/summary");
  req.headers().add("Authorization", "Bearer s3cret");
  http_response ok = client.request(req).get();
  EXPECT_EQ(ok.status_code(), 200);
  EXPECT_NE(Body(ok).find("\"nodeName\":\"node-0000\""), std::string::npos);
  EXPECT_EQ(client.request(methods::GET, "/stats/summary").get().status_code(), 401);

  // A client that does not trust the CA refuses the connection.
  http_client_config untrusting;
  untrusting.set_validate_certificates(true);
  untrusting.set_ssl_context_callback([](boost::asio::ssl::context& ctx) {
    SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
  });
  http_client stranger(sim.kubelet_url(0), untrusting);
  EXPECT_THROW(stranger.request(methods::GET, "/healthz").get(), web::http::http_exception);
  sim.Stop();
}

// ---- authentication, authorization, reviews and the aggregation proxy ---------------

using test_users::kUsersYaml;

struct Answer {
  int code = 0;
  std::string body;
  web::http::http_headers headers;
};

// One request to `base` with an optional bearer token, headers and JSON body; `ca` is the
// CA to verify an https server with.
Answer Send(const std::string& base, const web::http::method& method, const std::string& path,
            const std::string& token, const std::string& body = "",
            const std::vector<std::pair<std::string, std::string>>& headers = {},
            const std::string& ca = "") {
  http_client_config config;
  config.set_timeout(std::chrono::seconds(30));
  if (!ca.empty()) {
    config.set_ssl_context_callback(
        [ca](boost::asio::ssl::context& ctx) { ctx.load_verify_file(ca); });
  }
  http_client client(base, config);
  web::http::http_request req(method);
  req.set_request_uri(path);
  if (!token.empty()) req.headers().add("Authorization", "Bearer " + token);
  for (const auto& [k, v] : headers) req.headers().add(k, v);
  if (!body.empty()) req.set_body(body, "application/json");
  http_response resp = client.request(req).get();
  Answer a;
  a.code = resp.status_code();
  a.headers = resp.headers();
  a.body = resp.extract_utf8string(true).get();
  return a;
}

SimulatorOptions WithUsers(const TempDir& dir) {
  dir.Write("users.yaml", kUsersYaml);
  SimulatorOptions o = SmallCluster();
  o.users_file = dir.File("users.yaml");
  return o;
}

std::string_view Field(simdjson::dom::element e) { return std::string_view(e.get_string()); }

TEST(SimulatorAuthTest, RequiresAKnownTokenAndAnAllowingRule) {
  TempDir dir("kubestat-sim-auth");
  FakeClock clock(kT0);
  Simulator sim(WithUsers(dir), clock);
  ASSERT_TRUE(sim.Start().ok());
  const std::string api = sim.apiserver_url();

  for (const std::string& token : {std::string(), std::string("wrong-token")}) {
    Answer a = Send(api, methods::GET, "/api/v1/nodes", token);
    EXPECT_EQ(a.code, 401) << token;
    simdjson::dom::parser parser;
    simdjson::dom::element status = Parse(parser, a.body);
    EXPECT_EQ(Field(status["kind"]), "Status");
    EXPECT_EQ(Field(status["reason"]), "Unauthorized");
    EXPECT_EQ(int64_t(status["code"]), 401);
  }
  // Not a bearer token.
  EXPECT_EQ(Send(api, methods::GET, "/api", "", "", {{"Authorization", "Basic YTpi"}}).code, 401);

  Answer forbidden = Send(api, methods::GET, "/api/v1/nodes", "alice-token");
  EXPECT_EQ(forbidden.code, 403);
  simdjson::dom::parser parser;
  simdjson::dom::element status = Parse(parser, forbidden.body);
  EXPECT_EQ(Field(status["reason"]), "Forbidden");
  EXPECT_EQ(Field(status["message"]),
            "nodes is forbidden: User \"alice\" cannot list resource \"nodes\" in API group \"\" "
            "at the cluster scope");
  EXPECT_EQ(Field(status["details"]["kind"]), "nodes");

  simdjson::dom::parser watch_parser;
  EXPECT_EQ(Field(Parse(watch_parser,
                        Send(api, methods::GET, "/api/v1/namespaces/shop/pods/x", "alice-token")
                            .body)["message"]),
            "pods \"x\" is forbidden: User \"alice\" cannot get resource \"pods\" in API group "
            "\"\" in the namespace \"shop\"");

  Answer nodes = Send(api, methods::GET, "/api/v1/nodes", "agg-token");
  EXPECT_EQ(nodes.code, 200);
  simdjson::dom::parser nodes_parser;
  EXPECT_EQ(Parse(nodes_parser, nodes.body)["items"].get_array().size(), 3u);
  EXPECT_EQ(Send(api, methods::GET, "/api", "alice-token").code, 200);
  EXPECT_EQ(Send(api, methods::GET, "/apis", "alice-token").code, 200);
  EXPECT_EQ(Send(api, methods::GET, "/api/v1/pods", "admin-token").code, 200);

  // Health and version are open to everyone, as in Kubernetes.
  EXPECT_EQ(Send(api, methods::GET, "/healthz", "").code, 200);
  EXPECT_EQ(Send(api, methods::GET, "/version", "").code, 200);

  // The fault API is a non-resource URL: system:masters may use it, alice may not.
  EXPECT_EQ(Send(api, methods::GET, "/sim/v1/faults", "alice-token").code, 403);
  EXPECT_EQ(Send(api, methods::GET, "/sim/v1/faults", "").code, 401);
  Answer put = Send(api, methods::PUT, "/sim/v1/faults/node-0001", "admin-token", "http500");
  EXPECT_EQ(put.code, 200) << put.body;
  EXPECT_EQ(sim.faults().Get("node-0001"), Fault::kHttp500);
  const PodInfo pod = sim.model().Pod(0, 0, kT0);
  const std::string pod_path = "/sim/v1/namespaces/" + pod.namespace_name + "/pods/" + pod.name;
  EXPECT_EQ(Send(api, methods::DEL, pod_path, "alice-token").code, 403);
  EXPECT_EQ(Send(api, methods::DEL, pod_path, "").code, 401);
  EXPECT_EQ(Send(api, methods::DEL, pod_path, "admin-token").code, 200);

  // The review groups are discoverable.
  const std::string apis = Send(api, methods::GET, "/apis", "alice-token").body;
  EXPECT_NE(apis.find("\"authentication.k8s.io/v1\""), std::string::npos) << apis;
  EXPECT_NE(apis.find("\"authorization.k8s.io/v1\""), std::string::npos) << apis;
  EXPECT_NE(Send(api, methods::GET, "/apis/authorization.k8s.io/v1", "alice-token")
                .body.find("\"subjectaccessreviews\""),
            std::string::npos);
  sim.Stop();
}

TEST(SimulatorAuthTest, WithoutAUsersFileNothingIsChecked) {
  FakeClock clock(kT0);
  Simulator sim(SmallCluster(), clock);
  ASSERT_TRUE(sim.Start().ok());
  EXPECT_EQ(Send(sim.apiserver_url(), methods::GET, "/api/v1/nodes", "").code, 200);
  EXPECT_EQ(Send(sim.apiserver_url(), methods::GET, "/api/v1/nodes", "anything").code, 200);
  // The review endpoints are not served: a POST there is refused as before.
  EXPECT_EQ(Send(sim.apiserver_url(), methods::POST, "/apis/authentication.k8s.io/v1/tokenreviews",
                 "", "{}")
                .code,
            405);
  sim.Stop();
}

TEST(SimulatorAuthTest, ABadUsersFileStopsStartNamingTheFile) {
  TempDir dir("kubestat-sim-badusers");
  dir.Write("users.yaml", "users:\n- name: a\n  token: t\n  groups: nope\n");
  FakeClock clock(kT0);
  SimulatorOptions options = SmallCluster();
  options.users_file = dir.File("users.yaml");
  Simulator sim(options, clock);
  absl::Status s = sim.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("--users-file: " + dir.File("users.yaml") + ":4:"),
            std::string::npos)
      << s.message();

  options.users_file = dir.File("missing.yaml");
  Simulator sim2(options, clock);
  EXPECT_FALSE(sim2.Start().ok());

  dir.Write("users.yaml", kUsersYaml);
  options.users_file = dir.File("users.yaml");
  options.kubeconfig_user = "mallory";
  Simulator sim3(options, clock);
  absl::Status s3 = sim3.Start();
  ASSERT_FALSE(s3.ok());
  EXPECT_NE(std::string(s3.message()).find("--kubeconfig-user"), std::string::npos);
}

TEST(SimulatorAuthTest, TokenReviewAndSubjectAccessReview) {
  TempDir dir("kubestat-sim-reviews");
  FakeClock clock(kT0);
  Simulator sim(WithUsers(dir), clock);
  ASSERT_TRUE(sim.Start().ok());
  const std::string api = sim.apiserver_url();
  const std::string token_reviews = "/apis/authentication.k8s.io/v1/tokenreviews";
  const std::string access_reviews = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

  Answer known = Send(api, methods::POST, token_reviews, "agg-token",
                      R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",)"
                      R"("spec":{"token":"alice-token"}})");
  ASSERT_EQ(known.code, 201) << known.body;
  simdjson::dom::parser parser;
  simdjson::dom::element review = Parse(parser, known.body);
  EXPECT_EQ(Field(review["kind"]), "TokenReview");
  EXPECT_TRUE(bool(review["status"]["authenticated"]));
  EXPECT_EQ(Field(review["status"]["user"]["username"]), "alice");
  EXPECT_EQ(Field(review["status"]["user"]["uid"]), "1001");
  ASSERT_EQ(review["status"]["user"]["groups"].get_array().size(), 2u);
  EXPECT_EQ(Field(review["status"]["user"]["groups"].at(0)), "team-a");
  EXPECT_EQ(Field(review["status"]["user"]["groups"].at(1)), "system:authenticated");

  Answer unknown = Send(api, methods::POST, token_reviews, "agg-token",
                        R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",)"
                        R"("spec":{"token":"guess"}})");
  ASSERT_EQ(unknown.code, 201);
  simdjson::dom::parser parser2;
  simdjson::dom::element denied = Parse(parser2, unknown.body);
  EXPECT_FALSE(bool(denied["status"]["authenticated"]));
  EXPECT_FALSE(Field(denied["status"]["error"]).empty());

  // The endpoints authorize their caller: alice may not create reviews.
  EXPECT_EQ(
      Send(api, methods::POST, token_reviews, "alice-token", R"({"spec":{"token":"x"}})").code,
      403);
  EXPECT_EQ(Send(api, methods::POST, token_reviews, "", R"({"spec":{"token":"x"}})").code, 401);
  EXPECT_EQ(Send(api, methods::GET, token_reviews, "admin-token").code, 405);
  Answer huge = Send(api, methods::POST, access_reviews, "agg-token",
                     "{\"spec\":{\"user\":\"" + std::string(70000, 'a') + "\"}}");
  EXPECT_EQ(huge.code, 413);
  EXPECT_NE(huge.body.find("\"RequestEntityTooLarge\""), std::string::npos);

  auto sar = [&](const std::string& spec) {
    Answer a = Send(api, methods::POST, access_reviews, "agg-token",
                    R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",)"
                    R"("spec":)" +
                        spec + "}");
    EXPECT_EQ(a.code, 201) << a.body;
    simdjson::dom::parser p;
    simdjson::dom::element e;
    if (p.parse(a.body).get(e) != simdjson::SUCCESS) return false;
    return bool(e["status"]["allowed"]);
  };
  const std::string pods_in =
      R"({"user":"alice","groups":["team-a"],"resourceAttributes":{"verb":"list",)"
      R"("group":"metrics.k8s.io","version":"v1beta1","resource":"pods","namespace":")";
  EXPECT_TRUE(sar(pods_in + "team-a\"}}"));
  EXPECT_FALSE(sar(pods_in + "team-b\"}}"));
  EXPECT_FALSE(sar(
      R"({"user":"alice","resourceAttributes":{"verb":"list","group":"metrics.k8s.io","resource":"nodes"}})"));
  EXPECT_TRUE(sar(
      R"({"user":"alice","groups":["system:authenticated"],"nonResourceAttributes":{"path":"/apis/metrics.k8s.io/v1beta1","verb":"get"}})"));
  EXPECT_FALSE(
      sar(R"({"user":"alice","nonResourceAttributes":{"path":"/sim/v1/faults","verb":"get"}})"));
  Answer invalid =
      Send(api, methods::POST, access_reviews, "agg-token", R"({"spec":{"user":"x"}})");
  EXPECT_EQ(invalid.code, 422);
  sim.Stop();
}

// ---- an HTTPS metrics backend that asks for client certificates ----------------------

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

struct SeenRequest {
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  bool client_cert = false;
  long verify_result = -1;
  std::string client_cn;

  std::vector<std::string> Values(std::string_view name) const {
    std::vector<std::string> out;
    for (const auto& [k, v] : headers) {
      if (beast::iequals(k, beast::string_view(name.data(), name.size()))) out.push_back(v);
    }
    return out;
  }
};

// Answers every request on its own thread, one connection at a time, recording what it
// saw. Paths ending in "/gzip" get a gzip body; others a JSON body of `body_bytes`.
class TlsBackend {
 public:
  TlsBackend(const TempDir& dir, size_t body_bytes)
      : cert_(dir.File("backend.crt")), key_(dir.File("backend.key")), body_bytes_(body_bytes) {
    const testing::TestCertificate pair =
        testing::SelfSignedServer("metrics-backend", {"IP:127.0.0.1"});
    dir.Write("backend.crt", pair.cert_pem);
    dir.Write("backend.key", pair.key_pem);
    acceptor_.open(boost::asio::ip::tcp::v4());
    acceptor_.bind({boost::asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
  }
  ~TlsBackend() { Stop(); }

  // Starts serving; client certificates are verified against `client_ca`.
  void Serve(const std::string& client_ca) {
    client_ca_ = client_ca;
    Accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  void Stop() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  const std::string& cert() const { return cert_; }
  std::vector<SeenRequest> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  static std::string GzipBody() { return GzipCompress("{\"kind\":\"PodMetricsList\"}"); }

 private:
  void Accept() {
    acceptor_.async_accept([this](beast::error_code ec, boost::asio::ip::tcp::socket socket) {
      if (ec) return;
      Handle(std::move(socket));
      Accept();
    });
  }

  void Handle(boost::asio::ip::tcp::socket socket) {
    boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_server);
    ctx.use_certificate_chain_file(cert_);
    ctx.use_private_key_file(key_, boost::asio::ssl::context::pem);
    ctx.load_verify_file(client_ca_);
    // Ask for a certificate, accept the handshake either way, and record the outcome.
    ctx.set_verify_mode(boost::asio::ssl::verify_peer);
    ctx.set_verify_callback([](bool, boost::asio::ssl::verify_context&) { return true; });
    beast::ssl_stream<boost::asio::ip::tcp::socket> stream(std::move(socket), ctx);
    beast::error_code ec;
    stream.handshake(boost::asio::ssl::stream_base::server, ec);
    if (ec) return;
    SeenRequest seen;
    if (X509* peer = SSL_get1_peer_certificate(stream.native_handle())) {
      seen.client_cert = true;
      seen.verify_result = SSL_get_verify_result(stream.native_handle());
      char cn[256] = {};
      X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof(cn));
      seen.client_cn = cn;
      X509_free(peer);
    }
    beast::flat_buffer buffer;
    bhttp::request<bhttp::string_body> req;
    bhttp::read(stream, buffer, req, ec);
    if (ec) return;
    seen.target = std::string(req.target());
    for (const auto& field : req) {
      seen.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(seen);
    }
    bhttp::response<bhttp::string_body> resp(bhttp::status::ok, 11);
    resp.set(bhttp::field::content_type, "application/json");
    if (seen.target.ends_with("/gzip")) {
      resp.set(bhttp::field::content_encoding, "gzip");
      resp.body() = GzipBody();
    } else {
      std::string body = "{\"kind\":\"PodMetricsList\",\"pad\":\"";
      body.resize(body_bytes_ - 2, 'x');
      resp.body() = body + "\"}";
    }
    resp.prepare_payload();
    bhttp::write(stream, resp, ec);
    stream.shutdown(ec);
  }

  std::string cert_;
  std::string key_;
  size_t body_bytes_;
  std::string client_ca_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_{io_};
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<SeenRequest> seen_;
};

TEST(SimulatorProxyTest, ForwardsOverHttpsWithTheFrontProxyCertificateAndUserHeaders) {
  TempDir dir("kubestat-sim-proxy");
  constexpr size_t kBodyBytes = 3 << 20;  // several reads and writes on the way through
  TlsBackend backend(dir, kBodyBytes);
  FakeClock clock(kT0);
  SimulatorOptions options = WithUsers(dir);
  options.metrics_backend = backend.url();
  // The backend's certificate appears there only later; the proxy reads it when it changes.
  options.metrics_backend_ca_file = dir.File("backend-ca.crt");
  options.tls_dir = dir.File("tls");
  Simulator sim(options, clock);
  ASSERT_TRUE(sim.Start().ok());
  const std::string api = sim.apiserver_url();
  ASSERT_EQ(sim.front_proxy_ca_path(), dir.File("tls") + "/front-proxy-ca.crt");
  ASSERT_TRUE(std::filesystem::exists(sim.front_proxy_ca_path()));
  backend.Serve(sim.front_proxy_ca_path());
  const std::string team_a = "/apis/metrics.k8s.io/v1beta1/namespaces/team-a/pods?limit=5";

  Answer no_ca = Send(api, methods::GET, team_a, "alice-token");
  EXPECT_EQ(no_ca.code, 503);
  EXPECT_NE(no_ca.body.find("\"ServiceUnavailable\""), std::string::npos);
  EXPECT_NE(no_ca.body.find("--metrics-backend-ca-file"), std::string::npos) << no_ca.body;

  std::filesystem::copy_file(backend.cert(), dir.File("backend-ca.crt"));
  Answer ok = Send(api, methods::GET, team_a, "alice-token", "",
                   {{"X-Remote-User", "admin"},
                    {"X-Remote-Group", "system:masters"},
                    {"x-remote-extra-scopes", "everything"}});
  ASSERT_EQ(ok.code, 200) << ok.body.substr(0, 300);
  EXPECT_EQ(ok.body.size(), kBodyBytes);
  EXPECT_TRUE(ok.body.ends_with("xx\"}"));
  EXPECT_EQ(ok.headers.content_type(), "application/json");

  std::vector<SeenRequest> seen = backend.seen();
  ASSERT_EQ(seen.size(), 1u);
  const SeenRequest& r = seen[0];
  EXPECT_EQ(r.target, team_a);
  EXPECT_TRUE(r.client_cert);
  EXPECT_EQ(r.verify_result, X509_V_OK);  // chains to front-proxy-ca.crt, clientAuth
  EXPECT_EQ(r.client_cn, "front-proxy-client");
  EXPECT_EQ(r.Values("X-Remote-User"), std::vector<std::string>{"alice"});
  EXPECT_EQ(r.Values("X-Remote-Group"),
            (std::vector<std::string>{"team-a", "system:authenticated"}));
  EXPECT_EQ(r.Values("X-Remote-Extra-scopes"), (std::vector<std::string>{"read", "write"}));
  EXPECT_TRUE(r.Values("Authorization").empty());

  // Content-Encoding passes through with the bytes unchanged.
  Answer gz = Send(api, methods::GET, "/apis/metrics/v1alpha1/namespaces/team-a/pods/gzip",
                   "alice-token", "", {{"Accept-Encoding", "gzip"}});
  EXPECT_EQ(gz.code, 200);
  EXPECT_EQ(gz.headers["Content-Encoding"], "gzip");

  // Authorized before proxying: alice may not read node metrics, and the backend never
  // hears of it.
  Answer nodes = Send(api, methods::GET, "/apis/metrics.k8s.io/v1beta1/nodes", "alice-token");
  EXPECT_EQ(nodes.code, 403);
  EXPECT_NE(nodes.body.find("nodes.metrics.k8s.io is forbidden: User \\\"alice\\\" cannot list "
                            "resource \\\"nodes\\\" in API group \\\"metrics.k8s.io\\\""),
            std::string::npos)
      << nodes.body;
  EXPECT_EQ(Send(api, methods::GET, team_a, "").code, 401);
  EXPECT_EQ(backend.seen().size(), 2u);
  sim.Stop();

  // With authorize_proxied_requests off, the backend decides: it now sees alice's request
  // for node metrics. Its new certificate replaces the CA file, which the proxy re-reads.
  backend.Stop();
  TlsBackend backend2(dir, 64);
  std::filesystem::copy_file(backend2.cert(), dir.File("backend-ca.crt"),
                             std::filesystem::copy_options::overwrite_existing);
  options.metrics_backend = backend2.url();
  options.authorize_proxied_requests = false;
  options.tls_dir = dir.File("tls2");
  Simulator lenient(options, clock);
  ASSERT_TRUE(lenient.Start().ok());
  backend2.Serve(lenient.front_proxy_ca_path());
  Answer passed = Send(lenient.apiserver_url(), methods::GET, "/apis/metrics.k8s.io/v1beta1/nodes",
                       "alice-token");
  EXPECT_EQ(passed.code, 200) << passed.body;
  ASSERT_EQ(backend2.seen().size(), 1u);
  EXPECT_EQ(backend2.seen()[0].Values("X-Remote-User"), std::vector<std::string>{"alice"});
  EXPECT_EQ(backend2.seen()[0].client_cn, "front-proxy-client");
  EXPECT_EQ(
      Send(lenient.apiserver_url(), methods::GET, "/apis/metrics.k8s.io/v1beta1/nodes", "").code,
      401);
  lenient.Stop();
  backend2.Stop();
}

TEST(SimulatorProxyTest, UnreachableOrUntrustedBackendsGive503) {
  TempDir dir("kubestat-sim-proxy-down");
  TlsBackend backend(dir, 64);
  FakeClock clock(kT0);
  SimulatorOptions options = WithUsers(dir);
  // Verified with the system roots, which do not know the backend's certificate.
  options.metrics_backend = backend.url();
  Simulator sim(options, clock);
  ASSERT_TRUE(sim.Start().ok());
  backend.Serve(sim.front_proxy_ca_path());
  const std::string front_proxy_ca = sim.front_proxy_ca_path();
  Answer untrusted =
      Send(sim.apiserver_url(), methods::GET, "/apis/metrics.k8s.io/v1beta1/nodes", "admin-token");
  EXPECT_EQ(untrusted.code, 503);
  EXPECT_NE(untrusted.body.find("TLS handshake"), std::string::npos) << untrusted.body;
  sim.Stop();
  backend.Stop();
  // A temporary certificate directory is removed with the simulator.
  EXPECT_FALSE(std::filesystem::exists(front_proxy_ca));

  options.metrics_backend = "https://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  options.metrics_backend_insecure_skip_tls_verify = true;
  Simulator orphan(options, clock);
  ASSERT_TRUE(orphan.Start().ok());
  Answer down =
      Send(orphan.apiserver_url(), methods::GET, "/apis/metrics/v1alpha1/nodes", "admin-token");
  EXPECT_EQ(down.code, 503);
  simdjson::dom::parser parser;
  simdjson::dom::element status = Parse(parser, down.body);
  EXPECT_EQ(Field(status["reason"]), "ServiceUnavailable");
  EXPECT_NE(Field(status["message"]).find("error trying to reach service"), std::string::npos);
  orphan.Stop();
}

TEST(SimulatorKubeconfigTest, KubeconfigsCarryEachUsersToken) {
  TempDir dir("kubestat-sim-kubeconfig");
  FakeClock clock(kT0);
  SimulatorOptions options = WithUsers(dir);
  options.apiserver_tls = true;
  options.tls_dir = dir.File("tls");
  options.kubeconfig_out = dir.File("kubeconfig");
  options.kubeconfig_user = "kubestat-aggregator";
  options.kubeconfig_dir = dir.File("users");
  Simulator sim(options, clock);
  ASSERT_TRUE(sim.Start().ok());
  EXPECT_EQ(sim.apiserver_url().rfind("https://127.0.0.1:", 0), 0u);
  ASSERT_EQ(sim.apiserver_ca_path(), dir.File("tls") + "/apiserver-ca.crt");

  const std::string main = ReadAll(options.kubeconfig_out);
  EXPECT_NE(main.find("token: \"agg-token\""), std::string::npos) << main;
  EXPECT_NE(main.find("server: " + sim.apiserver_url()), std::string::npos);
  EXPECT_NE(main.find("certificate-authority-data: "), std::string::npos);
  for (const auto& [user, token] :
       std::vector<std::pair<std::string, std::string>>{{"admin", "admin-token"},
                                                        {"kubestat-aggregator", "agg-token"},
                                                        {"alice", "alice-token"}}) {
    const std::string path = dir.File("users") + "/" + user + ".kubeconfig";
    EXPECT_EQ(sim.user_kubeconfig_path(user), path);
    const std::string text = ReadAll(path);
    EXPECT_NE(text.find("token: \"" + token + "\""), std::string::npos) << user;
    EXPECT_NE(text.find("name: " + user), std::string::npos) << user;
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << user;
  }
  // The generated CA verifies the apiserver.
  EXPECT_EQ(Send(sim.apiserver_url(), methods::GET, "/api/v1/nodes", "agg-token", "", {},
                 sim.apiserver_ca_path())
                .code,
            200);

  // kubectl, a client nobody here wrote, reads them (it sends tokens only over HTTPS).
  if (std::system("kubectl version --client >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "kubectl is not on PATH: skipping the kubectl part";
  }
  auto kubectl = [](const std::string& kubeconfig, const std::string& args) {
    std::string out;
    FILE* p = ::popen(("kubectl --kubeconfig=" + kubeconfig + " " + args + " 2>&1").c_str(), "r");
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
    const int rc = ::pclose(p);
    return std::make_pair(rc, out);
  };
  const std::string alice = sim.user_kubeconfig_path("alice");
  auto [rc, api] = kubectl(alice, "get --raw /api");
  EXPECT_EQ(rc, 0) << api;
  EXPECT_NE(api.find("\"APIVersions\""), std::string::npos) << api;
  auto [rc2, nodes] = kubectl(alice, "get --raw /api/v1/nodes");
  EXPECT_NE(rc2, 0);
  EXPECT_NE(nodes.find("cannot list resource \"nodes\""), std::string::npos) << nodes;
  auto [rc3, listed] = kubectl(options.kubeconfig_out, "get nodes -o name");
  EXPECT_EQ(rc3, 0) << listed;
  EXPECT_NE(listed.find("node/node-0002"), std::string::npos) << listed;
  sim.Stop();
}

}  // namespace
}  // namespace kubestat::sim
