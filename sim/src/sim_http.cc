#include "sim_http.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/core/clock.h"

namespace kubestat::sim {

std::map<std::string, std::string> SplitQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    if (eq == 0) continue;
    if (eq == std::string_view::npos) {
      out[std::string(pair)] = "";
    } else {
      out[std::string(pair.substr(0, eq))] = std::string(pair.substr(eq + 1));
    }
  }
  return out;
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> parts;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    if (slash != 0) parts.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

std::string QueryParam(const std::map<std::string, std::string>& q, const std::string& key) {
  auto it = q.find(key);
  return it == q.end() ? std::string() : it->second;
}

http::Response Reply(int code, std::string body, const char* content_type) {
  http::Response response;
  response.code = code;
  response.body = std::move(body);
  response.content_type = content_type;
  return response;
}

http::Response ReplyError(const ApiError& error) { return http::ErrorResponse(error); }

absl::StatusOr<std::string> ReadBody(const http::Request& req, size_t limit) {
  if (req.body.size() > limit) {
    return ApiError::RequestEntityTooLarge(absl::StrCat("limit is ", limit, " bytes")).ToStatus();
  }
  return std::string(req.body);
}

absl::StatusOr<std::string> ListenAddress(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  if (!ec) return host;
  boost::asio::io_context io;
  boost::asio::ip::tcp::resolver resolver(io);
  const auto results = resolver.resolve(host, "", ec);
  if (ec || results.empty()) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", ec.message()));
  }
  return results.begin()->endpoint().address().to_string();
}

absl::StatusOr<std::unique_ptr<http::Server>> StartSimServer(SimServerOptions options,
                                                             http::Handler handler,
                                                             prometheus::Registry& registry) {
  absl::StatusOr<std::string> address = ListenAddress(options.host);
  if (!address.ok()) return address.status();
  http::ServerOptions o;
  o.address = *address;
  o.port = options.port;
  o.more_listeners = std::move(options.more_listeners);
  o.limits.max_connections = options.max_connections;
  o.io_threads = options.io_threads;
  o.worker_threads = options.worker_threads;
  o.metrics_name = options.name;
  o.limits.max_requests_per_connection = 0;
  o.limits.max_body_bytes = kProxiedBodyLimit;
  o.compression.enabled = false;
  o.tls.enabled = options.tls != nullptr;
  if (options.tls != nullptr) {
    o.tls.cert_file = options.tls->server_cert;
    o.tls.key_file = options.tls->server_key;
  }
  auto server =
      std::make_unique<http::Server>(std::move(o), std::move(handler), registry, RealClock::Get());
  if (absl::Status st = server->Start(); !st.ok()) return st;
  return server;
}

}  // namespace kubestat::sim
