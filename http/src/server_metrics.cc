#include "server_metrics.h"

#include <string>
#include <utility>

namespace kubestat::http::internal {

std::string_view MethodLabel(std::string_view method) {
  static constexpr std::string_view kKnown[] = {"GET",   "HEAD",    "POST",    "PUT",  "DELETE",
                                                "PATCH", "OPTIONS", "CONNECT", "TRACE"};
  for (std::string_view known : kKnown) {
    if (method == known) return known;
  }
  return "other";
}

ServerMetrics::ServerMetrics(prometheus::Registry& registry, std::string server_name)
    : server_(std::move(server_name)),
      requests_(prometheus::BuildCounter()
                    .Name("kubestat_http_requests_total")
                    .Help("HTTP requests answered by the handler, by server, route template, "
                          "status code and method.")
                    .Register(registry)),
      durations_(prometheus::BuildHistogram()
                     .Name("kubestat_http_request_duration_seconds")
                     .Help("Time to handle one HTTP request (handler and compression), by "
                           "server and route template, in seconds.")
                     .Register(registry)),
      response_bytes_(prometheus::BuildCounter()
                          .Name("kubestat_http_response_bytes_total")
                          .Help("Bytes of response bodies as sent, by server, route template and "
                                "content encoding (gzip or identity).")
                          .Register(registry)),
      responses_(prometheus::BuildCounter()
                     .Name("kubestat_http_responses_total")
                     .Help("Responses the handler answered, by server, route template and "
                           "media type of the body (application/json, "
                           "application/vnd.kubernetes.protobuf, text/plain, other, none).")
                     .Register(registry)),
      rejected_(prometheus::BuildCounter()
                    .Name("kubestat_http_rejected_requests_total")
                    .Help("Requests the server answered itself without calling the handler "
                          "(malformed, over a limit, timed out, over capacity), by reason.")
                    .Register(registry)),
      open_connections_(prometheus::BuildGauge()
                            .Name("kubestat_http_open_connections")
                            .Help("Connections currently open, by server and listener.")
                            .Register(registry)),
      connections_(prometheus::BuildCounter()
                       .Name("kubestat_http_connections_total")
                       .Help("Connections accepted, turned away, or closed to make room "
                             "for a newer one, by server, listener and result.")
                       .Register(registry)) {
  for (size_t i = 0; i < rejected_by_reason_.size(); ++i) {
    const auto reason = static_cast<RejectionReason>(i);
    rejected_by_reason_[i] = &rejected_.Add(
        {{"server", server_}, {"reason", std::string(RejectionReasonLabel(reason))}});
  }
}

std::string_view ContentTypeLabel(std::string_view content_type) {
  std::string media_type(content_type.substr(0, content_type.find(';')));
  std::erase_if(media_type, [](char c) { return c == ' ' || c == '\t'; });
  if (media_type.empty()) return "none";
  for (char& c : media_type) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  static constexpr std::string_view kKnown[] = {
      "application/json", "application/vnd.kubernetes.protobuf", "text/plain"};
  for (std::string_view known : kKnown) {
    if (media_type == known) return known;
  }
  return "other";
}

void ServerMetrics::RecordRequest(std::string_view route, int code, std::string_view method_label,
                                  double seconds, std::string_view encoding, size_t body_bytes,
                                  std::string_view content_type_label) {
  prometheus::Counter* counter;
  prometheus::Histogram* histogram;
  prometheus::Counter* bytes;
  prometheus::Counter* responses;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto key = std::make_tuple(route, code, method_label);
    auto it = counters_.find(key);
    if (it == counters_.end()) {
      prometheus::Counter& added = requests_.Add({{"server", server_},
                                                  {"route", std::string(route)},
                                                  {"code", std::to_string(code)},
                                                  {"method", std::string(method_label)}});
      it = counters_.emplace(key, &added).first;
    }
    counter = it->second;
    auto hit = histograms_.find(route);
    if (hit == histograms_.end()) {
      prometheus::Histogram& added = durations_.Add(
          {{"server", server_}, {"route", std::string(route)}},
          prometheus::Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                  0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5});
      hit = histograms_.emplace(route, &added).first;
    }
    histogram = hit->second;
    auto bit = bytes_.find(std::make_pair(route, encoding));
    if (bit == bytes_.end()) {
      prometheus::Counter& added =
          response_bytes_.Add({{"server", server_},
                               {"route", std::string(route)},
                               {"content_encoding", std::string(encoding)}});
      bit = bytes_.emplace(std::make_pair(route, encoding), &added).first;
    }
    bytes = bit->second;
    auto rit = responses_by_type_.find(std::make_pair(route, content_type_label));
    if (rit == responses_by_type_.end()) {
      prometheus::Counter& added =
          responses_.Add({{"server", server_},
                          {"route", std::string(route)},
                          {"content_type", std::string(content_type_label)}});
      rit = responses_by_type_.emplace(std::make_pair(route, content_type_label), &added).first;
    }
    responses = rit->second;
  }
  counter->Increment();
  responses->Increment();
  histogram->Observe(seconds);
  bytes->Increment(static_cast<double>(body_bytes));
}

void ServerMetrics::RecordRejection(RejectionReason reason) {
  rejected_by_reason_[static_cast<size_t>(reason)]->Increment();
}

ListenerMetrics ServerMetrics::ForListener(const std::string& listener) {
  ListenerMetrics m;
  m.open = &open_connections_.Add({{"server", server_}, {"listener", listener}});
  auto result = [&](const char* value) {
    return &connections_.Add({{"server", server_}, {"listener", listener}, {"result", value}});
  };
  m.accepted = result("accepted");
  m.over_capacity = result("over_capacity");
  m.evicted = result("evicted");
  m.tls_handshake_failed = result("tls_handshake_failed");
  m.accept_failed = result("accept_failed");
  return m;
}

}  // namespace kubestat::http::internal
