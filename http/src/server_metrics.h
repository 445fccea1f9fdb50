// The server's self-metrics (the families and labels are listed in server.h). Pointers to
// series are looked up once per label set and cached; recording is lock-free after that.
// Thread-safe.
#ifndef KUBESTAT_HTTP_SRC_SERVER_METRICS_H_
#define KUBESTAT_HTTP_SRC_SERVER_METRICS_H_

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "kubestat/http/server_request_reader.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace kubestat::http::internal {

// The series of one listener ("main" or "health").
struct ListenerMetrics {
  prometheus::Gauge* open = nullptr;
  prometheus::Counter* accepted = nullptr;
  prometheus::Counter* over_capacity = nullptr;
  prometheus::Counter* evicted = nullptr;  // health listener: made room for a newer one
  prometheus::Counter* tls_handshake_failed = nullptr;
  prometheus::Counter* accept_failed = nullptr;
};

// The `method` label: the standard methods as themselves, anything else as "other".
std::string_view MethodLabel(std::string_view method);
// The `content_type` label of a Content-Type value: its media type (parameters dropped, lower
// case) when it is application/json, application/vnd.kubernetes.protobuf or text/plain;
// "none" when empty; "other" for anything else. Points at static storage.
std::string_view ContentTypeLabel(std::string_view content_type);

class ServerMetrics {
 public:
  ServerMetrics(prometheus::Registry& registry, std::string server_name);

  // `route`, `encoding` and `content_type_label` (ContentTypeLabel) must point to static
  // storage.
  void RecordRequest(std::string_view route, int code, std::string_view method_label,
                     double seconds, std::string_view encoding, size_t body_bytes,
                     std::string_view content_type_label);
  void RecordRejection(RejectionReason reason);
  ListenerMetrics ForListener(const std::string& listener);

 private:
  const std::string server_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& durations_;
  prometheus::Family<prometheus::Counter>& response_bytes_;
  prometheus::Family<prometheus::Counter>& responses_;
  prometheus::Family<prometheus::Counter>& rejected_;
  prometheus::Family<prometheus::Gauge>& open_connections_;
  prometheus::Family<prometheus::Counter>& connections_;
  std::array<prometheus::Counter*, 12> rejected_by_reason_{};

  std::mutex mu_;  // guards the caches
  std::map<std::tuple<std::string_view, int, std::string_view>, prometheus::Counter*> counters_;
  std::map<std::string_view, prometheus::Histogram*> histograms_;
  std::map<std::pair<std::string_view, std::string_view>, prometheus::Counter*> bytes_;
  std::map<std::pair<std::string_view, std::string_view>, prometheus::Counter*> responses_by_type_;
};

}  // namespace kubestat::http::internal

#endif  // KUBESTAT_HTTP_SRC_SERVER_METRICS_H_
