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
#include <simdjson.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <future>

#include "kubestat/sim/render.h"

namespace kubestat::sim {
namespace {

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
  http_response watch =
      client.request(methods::GET, "/api/v1/pods?watch=true&resourceVersion=" + std::to_string(rv))
          .get();
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
    http_response expired =
        client
            .request(methods::GET, "/api/v1/pods?watch=true&resourceVersion=" + std::to_string(rv))
            .get();
    simdjson::dom::parser parser3;
    simdjson::dom::element err = Parse(parser3, ReadLine(expired.body(), std::chrono::seconds(20)));
    EXPECT_EQ(std::string_view(err["type"].get_string()), "ERROR");
    EXPECT_EQ(int64_t(err["object"]["code"]), 410);
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

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(SimulatorTest, ProxiesMetricsGroupsToTheBackend) {
  const std::string backend_url = "http://127.0.0.1:" + std::to_string(FreePort());
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
  options.metrics_backend = "http://127.0.0.1:" + std::to_string(FreePort());
  Simulator orphan(options, clock);
  ASSERT_TRUE(orphan.Start().ok());
  http_response down = Get(orphan.apiserver_url(), "/apis/metrics/v1alpha1/nodes");
  EXPECT_EQ(down.status_code(), 503);
  EXPECT_NE(Body(down).find("\"ServiceUnavailable\""), std::string::npos);
  orphan.Stop();
}

TEST(SimulatorTest, TlsKubeletsVerifyWithTheGeneratedCaAndRequireTheToken) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kubestat-sim-test-" + std::to_string(::getpid()));
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
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kubestat::sim
