// For the bridge's tests: a metrics API server on loopback (a real kubestat::http::Server,
// plain HTTP) that records every request and answers as the test tells it, and a client
// for it. By default it acts as a tiny store: bulk writes, PUTs and DELETEs change the
// objects it holds, and the metrics/v1alpha1 lists page through them (limit/continue).
#ifndef KUBESTAT_TESTS_BRIDGE_FAKE_APISERVER_H_
#define KUBESTAT_TESTS_BRIDGE_FAKE_APISERVER_H_

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "http/plain_server_options.h"
#include "kubestat/bridge/push_queue.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/client.h"
#include "kubestat/http/server.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/metrics_api/write_batch.h"

namespace kubestat::bridge::testing {

struct RecordedRequest {
  std::string method;
  std::string path;
  std::string query;
  std::string body;
};

class FakeApiServer {
 public:
  // Returns an answer, or std::nullopt to let the store answer.
  using Answer = std::function<std::optional<http::Response>(const RecordedRequest&)>;

  FakeApiServer()
      : server_(
            http::PlainOptions(), [this](const http::Request& r) { return Handle(r); }, registry_,
            RealClock::Get()) {
    const absl::Status started = server_.Start();
    EXPECT_TRUE(started.ok()) << started;
  }

  void SetAnswer(Answer answer) {
    std::lock_guard<std::mutex> lock(mu_);
    answer_ = std::move(answer);
  }
  void Hold(ObjectKey key) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.insert(std::move(key));
  }
  std::set<ObjectKey> Held() const {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }
  std::vector<RecordedRequest> Requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  size_t RequestCount() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }

  // A client of this server on `clock`, with a deadline no test reaches.
  std::unique_ptr<http::Client> NewClient(const Clock& clock) const {
    http::ClientOptions options;
    options.base_url = server_.BaseUrl();
    options.timeout = std::chrono::hours(1);
    absl::StatusOr<std::unique_ptr<http::Client>> client = http::Client::Create(options, clock);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }
  std::string BaseUrl() const { return server_.BaseUrl(); }

 private:
  static http::Response Json(int code, std::string body) {
    http::Response response;
    response.code = code;
    response.body = std::move(body);
    return response;
  }

  http::Response Handle(const http::Request& request) {
    RecordedRequest recorded{std::string(request.method), std::string(request.path),
                             std::string(request.query), std::string(request.body)};
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(recorded);
    if (answer_) {
      if (std::optional<http::Response> answer = answer_(recorded)) return *answer;
    }
    return Store(recorded);
  }

  http::Response Store(const RecordedRequest& r) {
    constexpr std::string_view kNodes = "/apis/metrics/v1alpha1/nodes";
    constexpr std::string_view kPods = "/apis/metrics/v1alpha1/pods";
    if (r.method == "GET" && (r.path == kNodes || r.path == kPods)) {
      return List(r.path == kNodes ? metrics_api::Resource::kNodes : metrics_api::Resource::kPods,
                  r.query);
    }
    if (r.method == "POST" && r.path == metrics_api::kWriteBatchPath) {
      absl::StatusOr<metrics_api::WriteBatch> batch = metrics_api::ParseWriteBatch(r.body);
      if (!batch.ok()) return Json(422, "{}");
      for (const metrics_api::WriteItem& item : batch->items) {
        if (item.op == metrics_api::WriteItem::Op::kPut) {
          held_.insert(KeyOf(item));
        } else {
          held_.erase(KeyOf(item));
        }
      }
      return Json(200, "{\"kind\":\"WriteBatchResult\"}");
    }
    return Json(200, "{}");
  }

  // Pages of `limit` objects; the continue token is the index of the next object.
  http::Response List(metrics_api::Resource resource, const std::string& query) {
    const metrics_api::QueryParams params = metrics_api::ParseQueryString(query);
    const size_t limit = params.contains("limit") ? std::stoul(params.at("limit")) : 1000;
    const size_t start = params.contains("continue") ? std::stoul(params.at("continue")) : 0;
    std::vector<ObjectKey> keys;
    for (const ObjectKey& key : held_) {
      if (key.resource == resource) keys.push_back(key);
    }
    std::string items;
    size_t i = start;
    for (; i < keys.size() && i < start + limit; ++i) {
      if (!items.empty()) items += ",";
      items +=
          "{\"metadata\":{\"name\":\"" + keys[i].name + "\"" +
          (keys[i].namespace_name.empty() ? ""
                                          : ",\"namespace\":\"" + keys[i].namespace_name + "\"") +
          "}}";
    }
    const std::string metadata =
        i < keys.size() ? "{\"continue\":\"" + std::to_string(i) + "\"}" : "{}";
    return Json(200, "{\"kind\":\"" + std::string(metrics_api::ListKindName(resource)) +
                         "\",\"apiVersion\":\"metrics/v1alpha1\",\"metadata\":" + metadata +
                         ",\"items\":[" + items + "]}");
  }

  prometheus::Registry registry_;
  mutable std::mutex mu_;
  Answer answer_;
  std::set<ObjectKey> held_;
  std::vector<RecordedRequest> requests_;
  http::Server server_;  // last: stopped before the state its handler reads
};

}  // namespace kubestat::bridge::testing

#endif  // KUBESTAT_TESTS_BRIDGE_FAKE_APISERVER_H_
