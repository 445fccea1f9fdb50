// For the bridge's tests: a kubestat.v1.Aggregator gRPC server on loopback whose Watch
// streams what the test scripted. Each Watch call takes the next script: its events are
// written in order, then the stream ends (end_stream) or stays open until the client
// cancels or the server stops, writing what Emit() adds. Calls beyond the scripts stay open without
// events.
#ifndef KUBESTAT_TESTS_BRIDGE_FAKE_AGGREGATOR_H_
#define KUBESTAT_TESTS_BRIDGE_FAKE_AGGREGATOR_H_

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kubestat/metrics_api/proto.h"
#include "kubestat/v1/aggregator.grpc.pb.h"

namespace kubestat::bridge::testing {

inline v1::WatchEvent Event(v1::WatchEvent::Type type, const metrics_api::NodeMetrics& node) {
  v1::WatchEvent event;
  event.set_type(type);
  *event.mutable_node() = metrics_api::ToProto(node);
  return event;
}
inline v1::WatchEvent Event(v1::WatchEvent::Type type, const metrics_api::PodMetrics& pod) {
  v1::WatchEvent event;
  event.set_type(type);
  *event.mutable_pod() = metrics_api::ToProto(pod);
  return event;
}
inline v1::WatchEvent SnapshotEnd() {
  v1::WatchEvent event;
  event.set_type(v1::WatchEvent::SNAPSHOT_END);
  return event;
}

struct WatchScript {
  std::vector<v1::WatchEvent> events;
  bool end_stream = false;
};

class FakeAggregator final : public v1::Aggregator::Service {
 public:
  FakeAggregator() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    EXPECT_NE(port_, 0);
  }
  ~FakeAggregator() override { Shutdown(); }

  void Shutdown() {
    stopping_.store(true);
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }

  std::string Address() const { return "127.0.0.1:" + std::to_string(port_); }

  void AddScript(WatchScript script) {
    std::lock_guard<std::mutex> lock(mu_);
    scripts_.push_back(std::move(script));
  }
  // Sends `event` on the open Watch stream that has written its script (or the next one).
  void Emit(v1::WatchEvent event) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.push_back(std::move(event));
  }
  int watch_calls() const { return calls_.load(); }
  std::vector<std::string> authorizations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return authorizations_;
  }

  grpc::Status Watch(grpc::ServerContext* context, const v1::WatchRequest* /*request*/,
                     grpc::ServerWriter<v1::WatchEvent>* writer) override {
    WatchScript script;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto& metadata = context->client_metadata();
      auto it = metadata.find("authorization");
      authorizations_.push_back(
          it == metadata.end() ? "" : std::string(it->second.data(), it->second.size()));
      if (!scripts_.empty()) {
        script = std::move(scripts_.front());
        scripts_.pop_front();
      }
    }
    ++calls_;
    for (const v1::WatchEvent& event : script.events) {
      if (!writer->Write(event)) return grpc::Status::CANCELLED;
    }
    if (script.end_stream) return grpc::Status::OK;
    while (!context->IsCancelled() && !stopping_.load()) {
      std::deque<v1::WatchEvent> live;
      {
        std::lock_guard<std::mutex> lock(mu_);
        live.swap(live_);
      }
      for (const v1::WatchEvent& event : live) {
        if (!writer->Write(event)) return grpc::Status::CANCELLED;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return grpc::Status::OK;
  }

 private:
  mutable std::mutex mu_;
  std::deque<WatchScript> scripts_;
  std::deque<v1::WatchEvent> live_;  // Emit()ted, not yet written
  std::vector<std::string> authorizations_;
  std::atomic<int> calls_{0};
  std::atomic<bool> stopping_{false};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace kubestat::bridge::testing

#endif  // KUBESTAT_TESTS_BRIDGE_FAKE_AGGREGATOR_H_
