#include "kubestat/aggregator/rest_server.h"

#include <cpprest/containerstream.h>
#include <cpprest/http_listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "kubestat/core/gzip.h"
#include "kubestat/core/log.h"
#include "kubestat/core/status.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace kubestat::aggregator {
namespace {

namespace http = web::http;
using http::experimental::listener::http_listener;
using http::experimental::listener::http_listener_config;

constexpr std::string_view kRouteMetrics = "/metrics";
constexpr std::string_view kContentTypePrometheus = "text/plain; version=0.0.4";

// The `method` label: the standard methods as themselves, anything else as "other".
std::string_view MethodLabel(std::string_view method) {
  static constexpr std::string_view kKnown[] = {"GET",   "HEAD",    "POST",    "PUT",  "DELETE",
                                                "PATCH", "OPTIONS", "CONNECT", "TRACE"};
  for (std::string_view known : kKnown) {
    if (method == known) return known;
  }
  return "other";
}

RestResponse ErrorResponse(const ApiError& error) {
  RestResponse response;
  response.code = error.code();
  response.content_type = kContentTypeJson;
  response.body = error.ToJson();
  return response;
}

// A free port on `address`: bind a socket to port 0 and read back what the kernel chose.
absl::StatusOr<int> PickFreePort(const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(address.c_str(), "0", &hints, &found); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve listen address \"", address, "\": ", gai_strerror(rc)));
  }
  int port = -1;
  std::string error = "no usable address";
  for (addrinfo* ai = found; ai != nullptr && port < 0; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) continue;
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0) {
      port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    } else {
      error = strerror(errno);
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (port < 0) {
    return absl::UnavailableError(absl::StrCat("cannot bind a port on \"", address, "\": ", error));
  }
  return port;
}

std::string HostForUri(const std::string& address) {
  if (address.find(':') != std::string::npos) return absl::StrCat("[", address, "]");
  return address;
}

}  // namespace

absl::Status RestServerOptions::Validate() const {
  if (address.empty()) return absl::InvalidArgumentError("rest address must not be empty");
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("rest port must be in [0, 65535], got ", port));
  }
  if (max_request_body_bytes == 0) {
    return absl::InvalidArgumentError("rest max_request_body_bytes must be positive");
  }
  if (max_header_bytes == 0) {
    return absl::InvalidArgumentError("rest max_header_bytes must be positive");
  }
  if (connection_timeout < std::chrono::seconds(1)) {
    return absl::InvalidArgumentError("rest connection_timeout must be at least 1s");
  }
  return absl::OkStatus();
}

class RestServer::Impl {
 public:
  Impl(RestServerOptions options, const MetricsSource& source, prometheus::Registry& registry,
       const Clock& clock, LivenessCheck liveness)
      : options_(std::move(options)),
        handler_(source, clock, std::move(liveness), options_.compression),
        registry_(registry),
        clock_(clock),
        requests_(prometheus::BuildCounter()
                      .Name("kubestat_http_requests_total")
                      .Help("HTTP requests served by the REST front end, by route template, "
                            "status code and method.")
                      .Register(registry)),
        durations_(prometheus::BuildHistogram()
                       .Name("kubestat_http_request_duration_seconds")
                       .Help("Time to serve one HTTP request of the REST front end, by route "
                             "template, in seconds.")
                       .Register(registry)),
        response_bytes_(prometheus::BuildCounter()
                            .Name("kubestat_http_response_bytes_total")
                            .Help("Bytes of response bodies of the REST front end as sent, by "
                                  "route template and content encoding (gzip or identity).")
                            .Register(registry)) {}

  ~Impl() { Stop(); }

  absl::Status Start() {
    if (absl::Status valid = options_.Validate(); !valid.ok()) return valid;
    if (listener_) return absl::FailedPreconditionError("the REST server is already started");
    std::string last_error;
    // A chosen free port can be taken by another process before we listen on it; then
    // another is chosen.
    constexpr int kAttempts = 20;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      int port = options_.port;
      if (port == 0) {
        absl::StatusOr<int> free_port = PickFreePort(options_.address);
        if (!free_port.ok()) return free_port.status();
        port = *free_port;
      }
      const std::string uri = absl::StrCat("http://", HostForUri(options_.address), ":", port);
      try {
        http_listener_config config;
        config.set_timeout(options_.connection_timeout);
        auto listener = std::make_unique<http_listener>(uri, config);
        listener->support([this](const http::http_request& request) { Serve(request); });
        listener->open().wait();
        listener_ = std::move(listener);
        port_ = port;
        KLOG(INFO) << "REST front end listening on " << uri;
        return absl::OkStatus();
      } catch (const std::exception& e) {
        last_error = e.what();
      }
      if (options_.port != 0) break;
    }
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options_.address, ":", options_.port, ": ", last_error));
  }

  void Stop() {
    if (!listener_) return;
    try {
      listener_->close().wait();
    } catch (const std::exception& e) {
      KLOG(WARNING) << "REST front end: closing the listener: " << e.what();
    }
    listener_.reset();
  }

  int port() const { return port_; }
  RestHandler::Prepared Prepare() { return handler_.Prepare(); }

  std::string BaseUrl() const {
    std::string host = options_.address;
    if (host == "0.0.0.0") host = "127.0.0.1";
    if (host == "::") host = "::1";
    return absl::StrCat("http://", HostForUri(host), ":", port_);
  }

 private:
  void Serve(const http::http_request& request) {
    const Timestamp start = clock_.MonotonicNow();
    const std::string& method = request.method();
    bool close_connection = false;
    RestResponse response;
    try {
      response = Process(request, method, &close_connection);
    } catch (const std::exception& e) {
      KLOG(ERROR) << "REST " << method << ": " << e.what();
      response = ErrorResponse(ApiError::InternalError(e.what()));
    }
    // Counted before the reply is sent, so a client that reads /metrics after a response
    // always sees that request. The duration covers handling and rendering; sending is
    // asynchronous.
    const double seconds = std::chrono::duration<double>(clock_.MonotonicNow() - start).count();
    Record(response, MethodLabel(method), seconds);
    try {
      http::http_response reply(static_cast<http::status_code>(response.code));
      reply.set_body(std::move(response.body), std::string(response.content_type));
      if (!response.content_encoding.empty()) {
        reply.headers().add("Content-Encoding", std::string(response.content_encoding));
      }
      // Caches must not serve one client's encoding to another.
      if (options_.compression.enabled) reply.headers().add("Vary", "Accept-Encoding");
      if (close_connection) reply.headers().add("Connection", "close");
      // Observe the task: a client that went away is not an error of ours, and an
      // unobserved pplx exception would terminate the process.
      request.reply(reply).then([](const pplx::task<void>& sent) {
        try {
          sent.get();
        } catch (const std::exception& e) {
          KVLOG(1) << "REST reply not delivered: " << e.what();
        }
      });
    } catch (const std::exception& e) {
      KLOG(WARNING) << "REST reply failed: " << e.what();
    }
  }

  RestResponse Process(const http::http_request& request, const std::string& method,
                       bool* close_connection) {
    // The head: request line and headers, as they were on the wire (near enough).
    const std::string target = request.request_uri().to_string();
    size_t head_bytes = method.size() + target.size() + sizeof(" HTTP/1.1\r\n") - 1;
    for (const auto& [name, value] : request.headers()) {
      head_bytes += name.size() + value.size() + 4;  // ": " and CRLF
    }
    if (head_bytes > options_.max_header_bytes) {
      *close_connection = true;
      return ErrorResponse(ApiError::RequestEntityTooLarge(
          absl::StrCat("request headers of ", head_bytes, " bytes exceed the limit of ",
                       options_.max_header_bytes, " bytes")));
    }
    if (request.headers().content_length() > options_.max_request_body_bytes) {
      *close_connection = true;
      return ErrorResponse(ApiError::RequestEntityTooLarge(
          absl::StrCat("request body of ", request.headers().content_length(),
                       " bytes exceeds the limit of ", options_.max_request_body_bytes, " bytes")));
    }
    if (IsChunked(request) && !ChunkedBodyWithinLimit(request)) {
      *close_connection = true;
      return ErrorResponse(ApiError::RequestEntityTooLarge(absl::StrCat(
          "request body exceeds the limit of ", options_.max_request_body_bytes, " bytes")));
    }

    const std::string path = request.request_uri().path();
    const std::string query = request.request_uri().query();
    auto accept_encoding = request.headers().find("Accept-Encoding");
    const bool accepts_gzip =
        accept_encoding != request.headers().end() && AcceptsGzip(accept_encoding->second);
    if (path == kRouteMetrics || path == "/metrics/") {
      RestResponse response;
      response.route = kRouteMetrics;
      if (method != "GET") {
        response = ErrorResponse(
            ApiError(405, StatusReason::kMethodNotAllowed,
                     "the server does not allow this method on the requested resource"));
        response.route = kRouteMetrics;
        return response;
      }
      response.content_type = kContentTypePrometheus;
      response.body = prometheus::TextSerializer().Serialize(registry_.Collect());
      CompressResponse(options_.compression, accepts_gzip, &response);
      return response;
    }
    return handler_.Handle(RestRequest{method, path, query, accepts_gzip});
  }

  static bool IsChunked(const http::http_request& request) {
    auto it = request.headers().find("Transfer-Encoding");
    return it != request.headers().end() && it->second.find("chunked") != std::string::npos;
  }

  // Reads and drops a chunked body; false as soon as it exceeds the cap.
  bool ChunkedBodyWithinLimit(const http::http_request& request) {
    auto body = request.body();
    size_t total = 0;
    while (true) {
      concurrency::streams::container_buffer<std::vector<uint8_t>> chunk;
      const size_t read = body.read(chunk, size_t{16} * 1024).get();
      if (read == 0) return true;
      total += read;
      if (total > options_.max_request_body_bytes) return false;
    }
  }

  void Record(const RestResponse& response, std::string_view method, double seconds) {
    const std::string_view route = response.route;
    const int code = response.code;
    const std::string_view encoding =
        response.content_encoding.empty() ? "identity" : response.content_encoding;
    prometheus::Counter* counter;
    prometheus::Histogram* histogram;
    prometheus::Counter* bytes;
    {
      std::lock_guard<std::mutex> lock(metrics_mu_);
      // Routes and methods are static strings, so views make stable keys.
      auto key = std::make_tuple(route, code, method);
      auto it = counters_.find(key);
      if (it == counters_.end()) {
        prometheus::Counter& added = requests_.Add({{"route", std::string(route)},
                                                    {"code", std::to_string(code)},
                                                    {"method", std::string(method)}});
        it = counters_.emplace(key, &added).first;
      }
      counter = it->second;
      auto hit = histograms_.find(route);
      if (hit == histograms_.end()) {
        prometheus::Histogram& added = durations_.Add(
            {{"route", std::string(route)}},
            prometheus::Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5});
        hit = histograms_.emplace(route, &added).first;
      }
      histogram = hit->second;
      // The encoding is "identity" or kContentEncodingGzip, both static.
      auto bit = bytes_.find(std::make_pair(route, encoding));
      if (bit == bytes_.end()) {
        prometheus::Counter& added = response_bytes_.Add(
            {{"route", std::string(route)}, {"content_encoding", std::string(encoding)}});
        bit = bytes_.emplace(std::make_pair(route, encoding), &added).first;
      }
      bytes = bit->second;
    }
    counter->Increment();
    histogram->Observe(seconds);
    bytes->Increment(static_cast<double>(response.body.size()));
  }

  const RestServerOptions options_;
  const RestHandler handler_;
  prometheus::Registry& registry_;
  const Clock& clock_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& durations_;
  prometheus::Family<prometheus::Counter>& response_bytes_;

  std::mutex metrics_mu_;
  std::map<std::tuple<std::string_view, int, std::string_view>, prometheus::Counter*> counters_;
  std::map<std::string_view, prometheus::Histogram*> histograms_;
  std::map<std::pair<std::string_view, std::string_view>, prometheus::Counter*> bytes_;

  std::unique_ptr<http_listener> listener_;
  int port_ = 0;
};

RestServer::RestServer(RestServerOptions options, const MetricsSource& source,
                       prometheus::Registry& registry, const Clock& clock, LivenessCheck liveness)
    : impl_(std::make_unique<Impl>(std::move(options), source, registry, clock,
                                   std::move(liveness))) {}

RestServer::~RestServer() = default;

absl::Status RestServer::Start() { return impl_->Start(); }
void RestServer::Stop() { impl_->Stop(); }
RestHandler::Prepared RestServer::Prepare() { return impl_->Prepare(); }
int RestServer::port() const { return impl_->port(); }
std::string RestServer::BaseUrl() const { return impl_->BaseUrl(); }

}  // namespace kubestat::aggregator
