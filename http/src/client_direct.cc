#include "client_direct.h"

#include <arpa/inet.h>
#include <cpprest/base_uri.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"

namespace kubestat::http::internal {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

// A response head longer than this is refused.
constexpr uint32_t kHeaderLimit = 64 * 1024;
// What one read takes from a socket: a kubelet's summary (100-200 KiB) in a few reads.
constexpr size_t kReadBytes = size_t{256} * 1024;
// Idle connections kept per client; more are closed when they come back.
constexpr size_t kMaxIdle = 32;

// A string body that reserves room for the caller's parser padding once, when the length
// is known, so the body is never copied to make room for it. `data` may come with capacity
// of its own (ClientRequest::body_buffer): reserve only grows it, so a body that fits is
// read into that storage.
struct SparedBody {
  struct value_type {
    std::string data;
    size_t spare = 0;
  };

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(bhttp::header<isRequest, Fields>& /*head*/, value_type& body) : body_(body) {}

    // `length` is within the parser's body limit here.
    void init(const boost::optional<uint64_t>& length, beast::error_code& ec) {
      if (length) body_.data.reserve(static_cast<size_t>(*length) + body_.spare);
      ec = {};
    }

    template <class ConstBufferSequence>
    size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      size_t n = 0;
      for (const auto b : beast::buffers_range_ref(buffers)) {
        body_.data.append(static_cast<const char*>(b.data()), b.size());
        n += b.size();
      }
      ec = {};
      return n;
    }

    void finish(beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

absl::Status Unavailable(const DirectRequest& request, std::string_view what,
                         std::string_view reason) {
  return WithReason(absl::UnavailableError(StrCat(request.label, ": ", what)), reason);
}

std::string Errno(int error) { return std::strerror(error); }

// Whether an SSL call's error only asks for the socket to become readable or writable.
bool WantsIo(int ssl_error) {
  return ssl_error == SSL_ERROR_WANT_READ || ssl_error == SSL_ERROR_WANT_WRITE;
}

// Why an SSL call failed for good: the system's error when OpenSSL has none queued.
std::string TlsFailure(int ssl_error, int system_error, std::string_view otherwise) {
  if (ssl_error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && system_error != 0) {
    return Errno(system_error);
  }
  return TakeOpenSslError(otherwise);
}

bool IsIpAddress(const std::string& host) {
  in6_addr addr6{};
  in_addr addr4{};
  return inet_pton(AF_INET, host.c_str(), &addr4) == 1 ||
         inet_pton(AF_INET6, host.c_str(), &addr6) == 1;
}

// Ignores SIGPIPE once in the process (unless someone installed a handler): a write to a
// connection its peer closed must fail with EPIPE rather than end the process. OpenSSL
// writes with write(2), which has no MSG_NOSIGNAL.
void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigemptyset(&ignore.sa_mask);
      sigaction(SIGPIPE, &ignore, nullptr);
    }
  });
}

}  // namespace

absl::Status WithReason(absl::Status status, std::string_view reason) {
  status.SetPayload(AbslView(kReasonPayload), absl::Cord(AbslView(reason)));
  return status;
}

std::string Printable(std::string_view text) {
  std::string out(text.substr(0, 300));
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
  }
  return out;
}

absl::StatusOr<DirectEndpoint> DirectEndpoint::Parse(std::string_view base_url) {
  try {
    // The grammar ClientOptions::Validate() checked base_url with.
    const web::uri uri{std::string(base_url)};
    DirectEndpoint e;
    e.tls = uri.scheme() == "https";
    std::string host = uri.host();  // an IPv6 address in brackets
    e.host_field = uri.port() > 0 ? StrCat(host, ":", uri.port()) : host;
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    e.host = std::move(host);
    e.port = StrCat(uri.port() > 0 ? uri.port() : (e.tls ? 443 : 80));
    if (uri.path() != "/") e.path_prefix = uri.path();
    return e;
  } catch (const std::exception& error) {
    return absl::InvalidArgumentError(StrCat("ClientOptions.base_url: ", Printable(error.what())));
  }
}

// One connection: its socket and its TLS state (null for http).
struct DirectTransport::Connection {
  int fd = -1;
  SSL* ssl = nullptr;

  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    if (ssl != nullptr) {
      SSL_shutdown(ssl);  // one try at close_notify; a non-blocking socket never waits
      SSL_free(ssl);
      ERR_clear_error();
    }
    if (fd >= 0) ::close(fd);
  }

  // Whether a pooled connection can carry a request: the peer has not closed it, and it
  // holds nothing unasked for. A TLS 1.3 session ticket that came after the handshake is
  // taken in passing.
  bool Alive() const {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) == 0) return true;
    if (ssl == nullptr) {
      char byte = 0;
      const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    char byte = 0;
    const int n = SSL_peek(ssl, &byte, 1);
    const bool alive = n <= 0 && SSL_get_error(ssl, n) == SSL_ERROR_WANT_READ;
    ERR_clear_error();
    return alive;
  }
};

struct DirectTransport::Outcome {
  absl::StatusOr<ClientResponse> result;
  bool keep = false;              // the connection may carry another request
  bool nothing_received = false;  // failed before any byte of a response came
};

DirectTransport::DirectTransport(DirectEndpoint endpoint, TlsContext tls_context,
                                 ClientTls material,
                                 std::function<absl::StatusOr<ClientTls>()> tls_source, bool verify,
                                 std::shared_ptr<TlsVerifyLog> verify_log, const Clock& clock)
    : endpoint_(std::move(endpoint)),
      tls_source_(std::move(tls_source)),
      tls_context_(std::move(tls_context)),
      tls_material_(std::move(material)),
      verify_(verify),
      host_is_ip_(IsIpAddress(endpoint_.host)),
      verify_log_(std::move(verify_log)),
      clock_(clock) {
  IgnoreSigpipe();
}

absl::StatusOr<DirectTransport::TlsContext> DirectTransport::NewTlsContext(
    const ClientTls& material, bool verify, const std::shared_ptr<TlsVerifyLog>& verify_log) {
  TlsContext context(SSL_CTX_new(TLS_client_method()), &SSL_CTX_free);
  if (context == nullptr) return absl::InternalError("cannot create a TLS context");
  SSL_CTX_set_verify(context.get(), verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  // An idle kept connection (one per kubelet) gives its record buffers back.
  SSL_CTX_set_mode(context.get(), SSL_MODE_RELEASE_BUFFERS);
  // The system's roots unless ca_pem replaces them.
  if (verify && material.ca_pem.empty()) SSL_CTX_set_default_verify_paths(context.get());
  if (verify) RecordVerifyFailures(context.get(), verify_log);
  if (absl::Status s = ApplyClientTls(context.get(), material); !s.ok()) return s;
  return context;
}

absl::StatusOr<std::unique_ptr<DirectTransport>> DirectTransport::Create(
    const ClientOptions& options, std::shared_ptr<TlsVerifyLog> verify_log, const Clock& clock) {
  absl::StatusOr<DirectEndpoint> endpoint = DirectEndpoint::Parse(options.base_url);
  if (!endpoint.ok()) return endpoint.status();
  const bool verify = !options.insecure_skip_tls_verify;
  ClientTls material{options.ca_pem, options.client_cert_pem, options.client_key_pem};
  TlsContext context;
  if (endpoint->tls && !options.tls_source) {
    absl::StatusOr<TlsContext> made = NewTlsContext(material, verify, verify_log);
    if (!made.ok()) return made.status();
    context = *std::move(made);
  }
  return std::unique_ptr<DirectTransport>(
      new DirectTransport(*std::move(endpoint), std::move(context), std::move(material),
                          options.tls_source, verify, std::move(verify_log), clock));
}

absl::StatusOr<DirectTransport::TlsContext> DirectTransport::CurrentTlsContext(
    const DirectRequest& request) {
  if (!tls_source_) return tls_context_;
  absl::StatusOr<ClientTls> material = tls_source_();
  if (!material.ok()) {
    return Unavailable(request, StrCat("TLS: ", StdView(material.status().message())), "tls");
  }
  std::lock_guard lock(tls_mu_);
  if (tls_context_ != nullptr && *material == tls_material_) return tls_context_;
  absl::StatusOr<TlsContext> made = NewTlsContext(*material, verify_, verify_log_);
  if (!made.ok())
    return Unavailable(request, StrCat("TLS: ", StdView(made.status().message())), "tls");
  if (tls_context_ != nullptr) {
    KLOG(INFO) << "http client for " << endpoint_.host
               << ": the TLS material changed; new connections use it";
  }
  tls_context_ = *std::move(made);
  tls_material_ = *std::move(material);
  return tls_context_;
}

DirectTransport::~DirectTransport() { idle_.clear(); }

std::unique_ptr<DirectTransport::Connection> DirectTransport::TakeIdle() {
  while (true) {
    std::unique_ptr<Connection> connection;
    {
      std::lock_guard lock(mu_);
      if (idle_.empty()) return nullptr;
      connection = std::move(idle_.back());
      idle_.pop_back();
    }
    if (connection->Alive()) return connection;
    // Closed by the peer while idle (outside the lock): try the next one.
  }
}

void DirectTransport::PutIdle(std::unique_ptr<Connection> connection) {
  std::lock_guard lock(mu_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(connection));
  // Otherwise `connection` closes as it goes out of scope, after the lock.
}

absl::Status DirectTransport::Wait(int fd, short events, const DirectRequest& request) const {
  while (true) {
    if (request.stop != nullptr && request.stop->stop_requested()) {
      return WithReason(absl::CancelledError(StrCat(request.label, ": stopped")), "cancelled");
    }
    const Timestamp now = clock_.MonotonicNow();
    if (now >= request.deadline) {
      return WithReason(absl::DeadlineExceededError(StrCat(request.label, ": ", request.timed_out)),
                        "timeout");
    }
    const Duration slice = std::min<Duration>(request.deadline - now, kClockCheck);
    const auto ms =
        std::max<int64_t>(1, std::chrono::ceil<std::chrono::milliseconds>(slice).count());
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(ms));
    if (ready > 0) return absl::OkStatus();  // an error or a hang-up shows in the next call
    if (ready < 0 && errno != EINTR) {
      return Unavailable(request, StrCat("waiting on the connection: ", Errno(errno)), "read");
    }
  }
}

absl::Status DirectTransport::WaitForTls(const Connection& connection, int ssl_error,
                                         const DirectRequest& request) const {
  return Wait(connection.fd, ssl_error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, request);
}

absl::StatusOr<std::unique_ptr<DirectTransport::Connection>> DirectTransport::Connect(
    const DirectRequest& request) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  // A name is resolved on the caller's thread (the kubelets and the API server are
  // addressed by IP, which getaddrinfo answers without a lookup).
  if (const int rc = getaddrinfo(endpoint_.host.c_str(), endpoint_.port.c_str(), &hints, &found);
      rc != 0) {
    return Unavailable(
        request,
        StrCat("connecting: resolving ", Printable(endpoint_.host), ": ", gai_strerror(rc)),
        "connect");
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, &freeaddrinfo);
  std::string last_error = "no address";
  auto connection = std::make_unique<Connection>();
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last_error = Errno(errno);
      continue;
    }
    connection->fd = fd;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int error = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
      error = errno;
      if (error == EINPROGRESS) {
        if (absl::Status s = Wait(fd, POLLOUT, request); !s.ok()) return s;
        socklen_t length = sizeof(error);
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0) error = errno;
      }
    }
    if (error == 0) break;
    last_error = Errno(error);
    ::close(fd);
    connection->fd = -1;
  }
  if (connection->fd < 0) {
    return Unavailable(request, StrCat("connecting: ", last_error), "connect");
  }
  if (endpoint_.tls) {
    absl::StatusOr<TlsContext> context = CurrentTlsContext(request);
    if (!context.ok()) return context.status();
    if (absl::Status s = Handshake(*connection, context->get(), request); !s.ok()) return s;
  }
  return connection;
}

absl::Status DirectTransport::Handshake(Connection& connection, SSL_CTX* context,
                                        const DirectRequest& request) {
  ERR_clear_error();
  connection.ssl = SSL_new(context);  // holds a reference to the context
  SSL* ssl = connection.ssl;
  if (ssl == nullptr || SSL_set_fd(ssl, connection.fd) != 1) {
    return Unavailable(request, StrCat("TLS: ", TakeOpenSslError("no TLS state")), "tls");
  }
  if (!host_is_ip_) SSL_set_tlsext_host_name(ssl, endpoint_.host.c_str());
  if (verify_) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const int set = host_is_ip_ ? X509_VERIFY_PARAM_set1_ip_asc(param, endpoint_.host.c_str())
                                : X509_VERIFY_PARAM_set1_host(param, endpoint_.host.c_str(), 0);
    if (set != 1) {
      return Unavailable(request, StrCat("TLS: ", TakeOpenSslError("bad host for checking")),
                         "tls");
    }
  }
  SSL_set_connect_state(ssl);
  const uint64_t verify_failures_before = verify_log_ ? verify_log_->failures() : 0;
  while (true) {
    const int rc = SSL_do_handshake(ssl);
    if (rc == 1) return absl::OkStatus();
    const int error = SSL_get_error(ssl, rc);
    if (WantsIo(error)) {
      if (absl::Status s = WaitForTls(connection, error, request); !s.ok()) return s;
      continue;
    }
    const int system_error = errno;
    if (verify_ && SSL_get_verify_result(ssl) != X509_V_OK) {
      std::string why = verify_log_ ? verify_log_->ReasonSince(verify_failures_before) : "";
      if (why.empty()) why = X509_verify_cert_error_string(SSL_get_verify_result(ssl));
      ERR_clear_error();
      return Unavailable(
          request, StrCat("TLS: the server's certificate was refused: ", Printable(why)), "tls");
    }
    const std::string what =
        TlsFailure(error, rc == 0 ? 0 : system_error, "the connection closed during the handshake");
    return Unavailable(request, StrCat("TLS: handshake: ", Printable(what)), "tls");
  }
}

absl::Status DirectTransport::WriteAll(Connection& connection, const DirectRequest& request) const {
  const std::string_view bytes = request.bytes;
  size_t sent = 0;
  while (sent < bytes.size()) {
    const size_t left = std::min<size_t>(bytes.size() - sent, INT_MAX);
    if (connection.ssl != nullptr) {
      ERR_clear_error();
      const int n = SSL_write(connection.ssl, bytes.data() + sent, static_cast<int>(left));
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      const int error = SSL_get_error(connection.ssl, n);
      if (WantsIo(error)) {
        if (absl::Status s = WaitForTls(connection, error, request); !s.ok()) return s;
        continue;
      }
      return absl::UnavailableError(TlsFailure(error, errno, "write failed"));
    }
    const ssize_t n = ::send(connection.fd, bytes.data() + sent, left, MSG_NOSIGNAL);
    if (n >= 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (absl::Status s = Wait(connection.fd, POLLOUT, request); !s.ok()) return s;
      continue;
    }
    return absl::UnavailableError(Errno(errno));
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> DirectTransport::ReadSome(Connection& connection, char* out, size_t room,
                                                 const DirectRequest& request) const {
  const size_t want = std::min<size_t>(room, INT_MAX);
  while (true) {
    if (connection.ssl != nullptr) {
      ERR_clear_error();
      const int n = SSL_read(connection.ssl, out, static_cast<int>(want));
      if (n > 0) return static_cast<size_t>(n);
      const int error = SSL_get_error(connection.ssl, n);
      if (error == SSL_ERROR_ZERO_RETURN) return 0;
      if (WantsIo(error)) {
        if (absl::Status s = WaitForTls(connection, error, request); !s.ok()) return s;
        continue;
      }
      const int system_error = errno;
      if (error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && (n == 0 || system_error == 0)) {
        return 0;  // closed without close_notify: the end of the bytes, which the parser judges
      }
      return absl::UnavailableError(TlsFailure(error, system_error, "read failed"));
    }
    const ssize_t n = ::recv(connection.fd, out, want, 0);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (absl::Status s = Wait(connection.fd, POLLIN, request); !s.ok()) return s;
      continue;
    }
    return absl::UnavailableError(Errno(errno));
  }
}

DirectTransport::Outcome DirectTransport::Exchange(Connection& connection,
                                                   const DirectRequest& request) {
  Outcome out;
  // Cancelled and DeadlineExceeded come from Wait whole; the other errors are told apart by
  // how far the response had come.
  const auto passed = [](const absl::Status& s) {
    return s.code() == absl::StatusCode::kCancelled ||
           s.code() == absl::StatusCode::kDeadlineExceeded;
  };
  if (absl::Status s = WriteAll(connection, request); !s.ok()) {
    out.nothing_received = true;
    out.result = passed(s) ? s
                           : Unavailable(request,
                                         StrCat("connecting: sending the request: ",
                                                Printable(StdView(s.message()))),
                                         "connect");
    return out;
  }

  bhttp::response_parser<SparedBody> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(request.max_response_bytes);
  parser.skip(request.head);
  SparedBody::value_type& body = parser.get().body();
  body.spare = request.body_spare_capacity;
  if (request.body_buffer != nullptr) {
    body.data = std::move(*request.body_buffer);
    body.data.clear();
  }
  // Whatever storage the body holds when Exchange returns goes back to the caller's buffer:
  // on a failure all of it, after a success (the body moved to the response) nothing.
  struct GiveBack {
    std::string* to;
    std::string& from;
    ~GiveBack() {
      if (to == nullptr) return;
      from.clear();
      *to = std::move(from);
    }
  } give_back{request.body_buffer, body.data};
  // Bytes read and not yet taken by the parser are kept between reads (a head is parsed
  // only whole). One buffer per thread, kept: a scrape worker reads a kubelet after another.
  thread_local std::unique_ptr<char[]> buffer(new char[kReadBytes]);
  size_t begin = 0;
  size_t end = 0;
  bool received = false;
  auto too_large = [&]() {
    std::string declared;
    if (parser.is_header_done() && parser.content_length()) {
      declared = StrCat(" (", *parser.content_length(), " declared)");
    }
    return WithReason(
        absl::ResourceExhaustedError(StrCat(request.label, ": response larger than ",
                                            request.max_response_bytes, " bytes", declared)),
        "too_large");
  };
  auto broken = [&](std::string_view what) {
    out.nothing_received = !received;
    return received ? Unavailable(request,
                                  StrCat(parser.is_header_done() ? "reading the response body: "
                                                                 : "reading the response head: ",
                                         what),
                                  "read")
                    : Unavailable(request, StrCat("connecting: ", what), "connect");
  };
  while (!parser.is_done()) {
    if (begin == end) {
      begin = end = 0;
    } else if (end == kReadBytes) {
      std::memmove(buffer.get(), buffer.get() + begin, end - begin);
      end -= begin;
      begin = 0;
    }
    absl::StatusOr<size_t> n = ReadSome(connection, buffer.get() + end, kReadBytes - end, request);
    if (!n.ok()) {
      out.result =
          passed(n.status()) ? n.status() : broken(Printable(StdView(n.status().message())));
      return out;
    }
    beast::error_code ec;
    if (*n == 0) {
      if (!received) {
        out.result = broken("the connection closed before the response");
        return out;
      }
      parser.put_eof(ec);
      if (ec) {
        out.result = broken("the connection closed before the response was complete");
        return out;
      }
      break;
    }
    received = true;
    end += *n;
    while (begin < end && !parser.is_done()) {
      const size_t used = parser.put(boost::asio::buffer(buffer.get() + begin, end - begin), ec);
      begin += used;
      if (ec == bhttp::error::need_more) break;
      if (ec == bhttp::error::body_limit) {
        out.result = too_large();
        return out;
      }
      if (ec == bhttp::error::header_limit) {
        out.result = broken(StrCat("a response head longer than ", kHeaderLimit, " bytes"));
        return out;
      }
      if (ec) {
        out.result = broken(StrCat("a malformed response: ", Printable(ec.message())));
        return out;
      }
    }
  }

  auto& message = parser.get();
  ClientResponse response;
  response.code = static_cast<int>(message.result_int());
  for (const auto& field : message) {
    const std::string_view name(field.name_string().data(), field.name_string().size());
    const std::string_view value(field.value().data(), field.value().size());
    auto same = std::find_if(response.headers.begin(), response.headers.end(), [&](const auto& h) {
      return absl::EqualsIgnoreCase(AbslView(h.first), AbslView(name));
    });
    if (same != response.headers.end()) {
      same->second.append(", ").append(value);
    } else {
      response.headers.emplace_back(std::string(name), std::string(value));
    }
  }
  response.content_type = response.Header("Content-Type");
  response.body = std::move(message.body().data);
  if (response.body.capacity() < response.body.size() + request.body_spare_capacity) {
    response.body.reserve(response.body.size() + request.body_spare_capacity);
  }
  // Bytes past the response (nothing was asked for) or a peer that closes: not kept.
  out.keep = message.keep_alive() && begin == end;
  out.result = std::move(response);
  return out;
}

absl::StatusOr<ClientResponse> DirectTransport::Do(const DirectRequest& request) {
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<Connection> connection = TakeIdle();
    const bool reused = connection != nullptr;
    if (!reused) {
      absl::StatusOr<std::unique_ptr<Connection>> made = Connect(request);
      if (!made.ok()) return made.status();
      connection = std::move(*made);
    }
    Outcome outcome = Exchange(*connection, request);
    if (outcome.result.ok()) {
      if (outcome.keep) PutIdle(std::move(connection));
      return std::move(outcome.result);
    }
    // A kept-alive connection the peer closed as the request went out: once more on a new
    // one, when sending the request again cannot do anything twice.
    const absl::StatusCode code = outcome.result.status().code();
    if (reused && attempt == 0 && outcome.nothing_received && request.idempotent &&
        code == absl::StatusCode::kUnavailable) {
      continue;
    }
    return outcome.result.status();
  }
}

}  // namespace kubestat::http::internal
