// The simulator's own client of a real kube-apiserver (hollow nodes register there):
// `connections` kept-alive HTTP/1.1 connections over TLS, written on Boost.Beast so that the
// simulator shares no client with the code it tests. Each Call is one request with a JSON (or
// merge-patch) body, bounded by `timeout`, on a connection no other call holds (or, when all
// are busy, the next in turn once it is free); a connection that broke is made again once per
// call. A Watch has a connection of its own.
//
// Thread-safe: as many calls at once as there are connections.
#ifndef KUBESTAT_SIM_SRC_API_CLIENT_H_
#define KUBESTAT_SIM_SRC_API_CLIENT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"

namespace kubestat::sim {

struct ApiClientOptions {
  // https://host:port of the API server. Required.
  std::string url;
  // Its CA (PEM file); "" trusts the system's roots.
  std::string ca_file;
  // A client certificate and key (PEM files), and/or a bearer token file.
  std::string client_cert_file;
  std::string client_key_file;
  std::string token_file;
  // Bound of one call (connect, TLS, request and answer). Default: 10s
  Duration timeout = std::chrono::seconds(10);
  // Calls that can be under way at once, each on its own connection. At least 1. Default: 1
  int connections = 1;
};

struct ApiReply {
  int code = 0;
  std::string body;
};

class ApiClient {
 public:
  // InvalidArgument for a URL that is not http(s), files that cannot be read or a
  // certificate without its key.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ApiClient>> Create(ApiClientOptions options);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // `method` `path` (with its query) with `body` of `content_type` (none when empty); the
  // answer whatever its code, or Unavailable naming what failed when none came.
  [[nodiscard]] absl::StatusOr<ApiReply> Call(std::string_view method, std::string_view path,
                                              std::string_view body = "",
                                              std::string_view content_type = "application/json");

  // GET `path` (a watch: ?watch=true&...) on a connection of its own, each line of the
  // streamed answer given to on_line as it arrives, until the server ends it (OK), `stop` is
  // requested (OK: the connection is shut down at once), a read waits longer than
  // `idle_timeout`, or on_line returns an error (that error). A non-200 answer is
  // FailedPrecondition "HTTP <code>: <body>"; no answer, Unavailable.
  [[nodiscard]] absl::Status Watch(std::string_view path,
                                   const std::function<absl::Status(std::string_view)>& on_line,
                                   std::stop_token stop,
                                   Duration idle_timeout = std::chrono::minutes(6));

 private:
  struct Impl;
  explicit ApiClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_API_CLIENT_H_
