// What the simulator's two servers, the kubelets (kubelets.h) and the fake kube-apiserver
// (fake_apiserver.h), share about HTTP: content types, replies, splitting a target, and
// starting an http::Server as the real components run theirs. No state; thread-safe.
#ifndef KUBESTAT_SIM_SRC_SIM_HTTP_H_
#define KUBESTAT_SIM_SRC_SIM_HTTP_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/http/server.h"
#include "prometheus/registry.h"
#include "tls.h"

namespace kubestat::sim {

inline constexpr const char* kJson = "application/json";
inline constexpr const char* kPromText = "text/plain; version=0.0.4; charset=utf-8";
// Largest request body the servers read: what the aggregation proxy forwards.
inline constexpr size_t kProxiedBodyLimit = size_t{64} << 20;
// Largest TokenReview, SubjectAccessReview or stored object (PUT) body.
inline constexpr size_t kReviewBodyLimit = size_t{64} << 10;
inline constexpr const char* kNotFoundMessage = "the server could not find the requested resource";

// "a=1&b=2" as a map, values still encoded; a key without '=' has an empty value, and a
// repeated key keeps its last value.
std::map<std::string, std::string> SplitQuery(std::string_view query);
// The non-empty segments of a path, still encoded.
std::vector<std::string> SplitPath(std::string_view path);
// The value of `key` in `q`, "" when absent.
std::string QueryParam(const std::map<std::string, std::string>& q, const std::string& key);

http::Response Reply(int code, std::string body, const char* content_type);
// The Status of `error` (code, JSON body).
http::Response ReplyError(const ApiError& error);

// The request body, at most `limit` bytes (RequestEntityTooLarge beyond).
absl::StatusOr<std::string> ReadBody(const http::Request& req, size_t limit);

// `host` as an IP literal: itself when it is one, else its first address.
absl::StatusOr<std::string> ListenAddress(const std::string& host);

struct SimServerOptions {
  std::string name;               // the server's metrics name
  std::string host;               // resolved with ListenAddress()
  int port = 0;                   // 0: the kernel picks (read back with http::Server::port())
  const TlsFiles* tls = nullptr;  // nullptr: plain HTTP
  int io_threads = 1;
  int worker_threads = 1;
  std::vector<http::ListenerAddress> more_listeners;
  size_t max_connections = http::ServerLimits{}.max_connections;
};

// A started server for `handler`: as the real components, no cap on requests per
// connection, no compression of its own, request bodies up to kProxiedBodyLimit. Its
// metrics go to `registry`, which must outlive it. Errors: the host that cannot be resolved,
// or http::Server::Start()'s.
absl::StatusOr<std::unique_ptr<http::Server>> StartSimServer(SimServerOptions options,
                                                             http::Handler handler,
                                                             prometheus::Registry& registry);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_SIM_HTTP_H_
