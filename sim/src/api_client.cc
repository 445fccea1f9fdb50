#include "api_client.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "kubestat/core/file.h"
#include "kubestat/core/str_cat.h"
#include "sim_url.h"

namespace kubestat::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Answers larger than this are refused: the objects hollow nodes read are small.
constexpr size_t kMaxAnswerBytes = size_t{8} << 20;

std::string TrimToken(std::string token) {
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  return token;
}

// One kept-alive connection, used by one call at a time.
struct Connection {
  std::mutex mu;
  asio::io_context io;
  // Empty when there is none.
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_stream;
  std::optional<beast::tcp_stream> plain_stream;

  beast::tcp_stream& Tcp() {
    return tls_stream ? beast::get_lowest_layer(*tls_stream) : *plain_stream;
  }
  bool Connected() const { return tls_stream.has_value() || plain_stream.has_value(); }
  void Drop() {
    tls_stream.reset();
    plain_stream.reset();
  }
};

}  // namespace

struct ApiClient::Impl {
  ApiClientOptions options;
  ParsedUrl url;
  std::string token;
  asio::ssl::context tls{asio::ssl::context::tls_client};
  std::vector<std::unique_ptr<Connection>> connections;
  std::atomic<size_t> next{0};

  // A connection no call holds, locked in `lock`; when all are busy, the next in turn, once
  // its call is done.
  Connection& Take(std::unique_lock<std::mutex>& lock) {
    const size_t start = next.fetch_add(1);
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& c = *connections[(start + i) % connections.size()];
      lock = std::unique_lock(c.mu, std::try_to_lock);
      if (lock.owns_lock()) return c;
    }
    Connection& c = *connections[start % connections.size()];
    lock = std::unique_lock(c.mu);
    return c;
  }

  // The headers every request carries: the host, who asks, JSON wanted, the token.
  template <class Request>
  void Identify(Request& request) const {
    request.set(http::field::host, url.host);
    request.set(http::field::user_agent, "kubestat-sim");
    request.set(http::field::accept, "application/json");
    if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
  }

  // Connects `tcp` to the server and, for `stream` over TLS, shakes hands verifying its
  // name; each step bounded by the timeout. Throws on failure.
  void Open(beast::ssl_stream<beast::tcp_stream>* stream, beast::tcp_stream& tcp,
            asio::io_context& context) const {
    tcp::resolver resolver(context);
    auto endpoints = resolver.resolve(url.host, url.port);
    if (stream != nullptr && !SSL_set_tlsext_host_name(stream->native_handle(), url.host.c_str())) {
      throw beast::system_error(
          beast::error_code(static_cast<int>(::ERR_get_error()), asio::error::get_ssl_category()));
    }
    if (stream != nullptr) stream->set_verify_callback(asio::ssl::host_name_verification(url.host));
    tcp.expires_after(options.timeout);
    tcp.connect(endpoints);
    if (stream == nullptr) return;
    tcp.expires_after(options.timeout);
    stream->handshake(asio::ssl::stream_base::client);
  }

  void Connect(Connection& c) {
    if (url.tls) {
      c.tls_stream.emplace(c.io, tls);
      Open(&*c.tls_stream, c.Tcp(), c.io);
    } else {
      c.plain_stream.emplace(c.io);
      Open(nullptr, c.Tcp(), c.io);
    }
  }

  ApiReply Exchange(Connection& c, const http::request<http::string_body>& request) {
    c.Tcp().expires_after(options.timeout);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxAnswerBytes);
    if (c.tls_stream) {
      http::write(*c.tls_stream, request);
      http::read(*c.tls_stream, buffer, parser);
    } else {
      http::write(*c.plain_stream, request);
      http::read(*c.plain_stream, buffer, parser);
    }
    http::response<http::string_body> response = parser.release();
    if (!response.keep_alive()) c.Drop();
    return ApiReply{static_cast<int>(response.result_int()), std::move(response.body())};
  }
};

absl::StatusOr<std::unique_ptr<ApiClient>> ApiClient::Create(ApiClientOptions options) {
  auto impl = std::make_unique<Impl>();
  absl::StatusOr<ParsedUrl> url = ParseUrl(options.url, "API server URL");
  if (!url.ok()) return url.status();
  impl->url = *std::move(url);
  if (!options.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadFile(options.token_file, "token file");
    if (!token.ok()) return absl::InvalidArgumentError(token.status().message());
    impl->token = TrimToken(*std::move(token));
  }
  if (options.client_cert_file.empty() != options.client_key_file.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs its key, and a key its certificate");
  }
  try {
    SSL_CTX_set_min_proto_version(impl->tls.native_handle(), TLS1_2_VERSION);
    if (!options.client_cert_file.empty()) {
      impl->tls.use_certificate_chain_file(options.client_cert_file);
      impl->tls.use_private_key_file(options.client_key_file, asio::ssl::context::pem);
    }
    impl->tls.set_verify_mode(asio::ssl::verify_peer);
    if (options.ca_file.empty()) {
      impl->tls.set_default_verify_paths();
    } else {
      impl->tls.load_verify_file(options.ca_file);
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(StrCat("API server TLS: ", e.what()));
  }
  if (options.connections < 1) {
    return absl::InvalidArgumentError("an API server client needs at least one connection");
  }
  for (int i = 0; i < options.connections; ++i) {
    impl->connections.push_back(std::make_unique<Connection>());
  }
  impl->options = std::move(options);
  return std::unique_ptr<ApiClient>(new ApiClient(std::move(impl)));
}

ApiClient::ApiClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ApiClient::~ApiClient() = default;

absl::StatusOr<ApiReply> ApiClient::Call(std::string_view method, std::string_view path,
                                         std::string_view body, std::string_view content_type) {
  Impl& c = *impl_;
  http::request<http::string_body> request;
  request.method(http::string_to_verb(std::string(method)));
  request.target(c.url.base_path + std::string(path));
  request.version(11);
  c.Identify(request);
  if (!body.empty()) {
    request.set(http::field::content_type, std::string(content_type));
    request.body() = std::string(body);
  }
  request.keep_alive(true);
  request.prepare_payload();
  std::unique_lock<std::mutex> lock;
  Connection& connection = c.Take(lock);
  std::string failure;
  // A kept-alive connection the server closed meanwhile fails the first try: once more on a
  // new one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      if (!connection.Connected()) c.Connect(connection);
      return c.Exchange(connection, request);
    } catch (const std::exception& e) {
      connection.Drop();
      failure = e.what();
    }
  }
  return absl::UnavailableError(StrCat(method, " ", path, ": ", failure));
}

absl::Status ApiClient::Watch(std::string_view path,
                              const std::function<absl::Status(std::string_view)>& on_line,
                              std::stop_token stop, Duration idle_timeout) {
  Impl& c = *impl_;
  asio::io_context io;
  http::request<http::empty_body> request{http::verb::get, c.url.base_path + std::string(path), 11};
  c.Identify(request);
  // Reads the answer of `stream`, line by line.
  const auto stream_lines = [&](auto& stream, beast::tcp_stream& tcp) -> absl::Status {
    // A stop shuts the socket down, which ends the blocking read below.
    std::stop_callback on_stop(stop,
                               [&tcp] { ::shutdown(tcp.socket().native_handle(), SHUT_RDWR); });
    if (stop.stop_requested()) return absl::OkStatus();
    tcp.expires_after(c.options.timeout);
    http::write(stream, request);
    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    http::read_header(stream, buffer, parser);
    const int code = static_cast<int>(parser.get().result_int());
    std::string pending;
    char chunk[64 * 1024];
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof(chunk);
      tcp.expires_after(idle_timeout);
      beast::error_code ec;
      // read_some: returns with what has come (a watch sends an event at a time).
      http::read_some(stream, buffer, parser, ec);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        if (stop.stop_requested()) return absl::OkStatus();
        return absl::UnavailableError(StrCat("GET ", path, ": ", ec.message()));
      }
      pending.append(chunk, sizeof(chunk) - parser.get().body().size);
      if (code != 200) {
        if (pending.size() > kMaxAnswerBytes) break;
        continue;
      }
      size_t start = 0;
      for (size_t nl = pending.find('\n'); nl != std::string::npos;
           nl = pending.find('\n', start)) {
        if (nl > start) {
          if (absl::Status s = on_line(std::string_view(pending).substr(start, nl - start));
              !s.ok()) {
            return s;
          }
        }
        start = nl + 1;
      }
      pending.erase(0, start);
      if (pending.size() > kMaxAnswerBytes) {
        return absl::ResourceExhaustedError(
            StrCat("GET ", path, ": a line over ", kMaxAnswerBytes, " bytes"));
      }
    }
    if (code != 200) {
      return absl::FailedPreconditionError(
          StrCat("GET ", path, ": HTTP ", code, ": ", pending.substr(0, 300)));
    }
    return absl::OkStatus();
  };
  try {
    if (c.url.tls) {
      beast::ssl_stream<beast::tcp_stream> stream(io, c.tls);
      c.Open(&stream, beast::get_lowest_layer(stream), io);
      return stream_lines(stream, beast::get_lowest_layer(stream));
    }
    beast::tcp_stream stream(io);
    c.Open(nullptr, stream, io);
    return stream_lines(stream, stream);
  } catch (const std::exception& e) {
    if (stop.stop_requested()) return absl::OkStatus();
    return absl::UnavailableError(StrCat("GET ", path, ": ", e.what()));
  }
}

}  // namespace kubestat::sim
