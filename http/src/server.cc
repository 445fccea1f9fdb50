#include "kubestat/http/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <cerrno>
#include <cstring>
#include <exception>
#include <future>
#include <thread>
#include <vector>

#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/thread.h"
#include "server_connection.h"
#include "server_strings.h"
#include "tls_context.h"

namespace kubestat::http {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using internal::Connection;
using internal::Listener;

constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);
// Descriptors beyond the connections: listeners, epoll, eventfds, files, logs.
constexpr rlim_t kSpareDescriptors = 64;

std::string HostForUrl(const std::string& address) {
  std::string host = address;
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) return StrCat("[", host, "]");
  return host;
}

// Raises the soft descriptor limit toward the hard one when the caps need more (as Go's
// runtime does at start); warns when even the hard limit is short.
void EnsureDescriptors(size_t connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t needed = static_cast<rlim_t>(connections) + kSpareDescriptors;
  if (limit.rlim_cur >= needed) return;
  rlimit raised = limit;
  raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? needed : std::min(needed, limit.rlim_max);
  if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  if (limit.rlim_cur < needed) {
    KLOG(WARNING) << "HTTP server: the connection caps need about " << needed
                  << " file descriptors but RLIMIT_NOFILE allows " << limit.rlim_cur
                  << "; accept() will back off when they run out";
  }
}

void WriteOverCapacity(asio::ip::tcp::socket& socket) {
  static const std::string kAnswer = [] {
    const std::string body =
        ApiError::ServiceUnavailable("the server is at its connection limit; retry later").ToJson();
    return StrCat("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n",
                  "Content-Length: ", body.size(),
                  "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n", body);
  }();
  error_code ec;
  socket.non_blocking(true, ec);
  // One small write into a fresh socket's empty send buffer: it does not block; if it
  // cannot go out at once, the client gets the close alone.
  socket.write_some(asio::buffer(kAnswer), ec);
  socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
}

}  // namespace

std::optional<std::string_view> Request::Header(std::string_view name) const {
  for (const HeaderField& field : headers) {
    if (internal::EqualsIgnoreCase(field.name, name)) return field.value;
  }
  return std::nullopt;
}

std::vector<std::string_view> Request::HeaderValues(std::string_view name) const {
  std::vector<std::string_view> values;
  for (const HeaderField& field : headers) {
    if (internal::EqualsIgnoreCase(field.name, name)) values.push_back(field.value);
  }
  return values;
}

std::string Request::CombinedHeader(std::string_view name) const {
  std::string combined;
  for (const HeaderField& field : headers) {
    if (!internal::EqualsIgnoreCase(field.name, name)) continue;
    if (!combined.empty()) combined += ", ";
    combined.append(field.value);
  }
  return combined;
}

Response ErrorResponse(const ApiError& error, std::string_view route) {
  Response response;
  response.code = error.code();
  response.content_type = "application/json";
  response.body = error.ToJson();
  response.route = route;
  return response;
}

Response TextResponse(int code, std::string body, std::string_view route) {
  Response response;
  response.code = code;
  response.content_type = "text/plain; charset=utf-8";
  response.body = std::move(body);
  response.route = route;
  return response;
}

class Server::Impl {
 public:
  Impl(ServerOptions options, Handler handler, prometheus::Registry& registry, const Clock& clock)
      : core_(std::move(options), std::move(handler), registry, clock) {}

  ~Impl() { Stop(); }

  absl::Status Start() {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_) return absl::FailedPreconditionError("the HTTP server was already started");
    if (absl::Status valid = options().Validate(); !valid.ok()) return valid;
    started_ = true;
    EnsureDescriptors(options().limits.max_connections * (1 + options().more_listeners.size()) +
                      (options().health_port >= 0 ? options().health_max_connections : 0));
    if (options().tls.enabled) {
      absl::StatusOr<std::unique_ptr<internal::TlsContextSource>> tls =
          internal::TlsContextSource::Create(options().tls, core_.clock());
      if (!tls.ok()) return Abandon(tls.status());
      tls_ = *std::move(tls);
    }
    io_ = std::make_unique<asio::io_context>(options().io_threads);
    absl::StatusOr<std::unique_ptr<Listener>> main =
        Listen("main", options().address, options().port, /*health_only=*/false,
               options().limits.max_connections);
    if (!main.ok()) return Abandon(main.status());
    main_ = *std::move(main);
    main_port_ = main_->port;
    ports_.push_back(main_->port);
    for (size_t i = 0; i < options().more_listeners.size(); ++i) {
      const ListenerAddress& more = options().more_listeners[i];
      // They share the main listener's metrics: one label set, however many there are.
      absl::StatusOr<std::unique_ptr<Listener>> listener =
          Listen("main", more.address, more.port, /*health_only=*/false,
                 options().limits.max_connections, i + 1);
      if (!listener.ok()) return Abandon(listener.status());
      ports_.push_back((*listener)->port);
      more_.push_back(*std::move(listener));
    }
    if (options().health_port >= 0) {
      absl::StatusOr<std::unique_ptr<Listener>> health =
          Listen("health", options().address, options().health_port, /*health_only=*/true,
                 options().health_max_connections);
      if (!health.ok()) return Abandon(health.status());
      health_ = *std::move(health);
      health_port_ = health_->port;
    }
    core_.workers().Start();
    work_ = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
        io_->get_executor());
    for (Listener* listener : Listeners()) Accept(*listener);
    for (int i = 0; i < options().io_threads; ++i) {
      threads_.emplace_back([this] {
        NameThisThread("http-io");
        RunIo();
      });
    }
    KLOG(INFO) << "HTTP server " << options().metrics_name << " listening on " << BaseUrlOf(port())
               << (health_ ? StrCat(", health on ", BaseUrlOf(health_port())) : "");
    return absl::OkStatus();
  }

  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopped_ || io_ == nullptr) {
      stopped_ = true;
      return;
    }
    stopped_ = true;
    core_.set_stopping();
    for (Listener* listener : Listeners()) {
      asio::post(listener->acceptor->get_executor(), [listener] {
        error_code ignored;
        listener->acceptor->close(ignored);
        listener->backoff->cancel();
      });
      // Owners are taken under the lock and released after it: the last owner of a
      // connection destroys it, and its destructor takes the same lock.
      std::vector<std::shared_ptr<Connection>> alive;
      {
        std::lock_guard<std::mutex> live_lock(listener->mu);
        for (Connection* connection : listener->live) {
          // A connection being destroyed has no owner left; it closes its socket itself.
          if (std::shared_ptr<Connection> owner = connection->weak_from_this().lock()) {
            alive.push_back(std::move(owner));
          }
        }
      }
      for (const std::shared_ptr<Connection>& connection : alive) connection->Close();
    }
    // Running handlers finish; queued requests are dropped.
    core_.workers().Stop();
    // Producers may hold stream writers past this point: they stop posting to the strands
    // before the io_context goes away.
    core_.CloseStreams();
    work_.reset();
    io_->stop();
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
    ReleaseParts();
  }

  int port() const { return main_port_; }
  int port(size_t listener) const {
    std::lock_guard<std::mutex> lock(mu_);
    return listener < ports_.size() ? ports_[listener] : 0;
  }
  int health_port() const { return health_port_; }

  std::string BaseUrlOf(int port) const {
    return StrCat(options().tls.enabled ? "https://" : "http://", HostForUrl(options().address),
                  ":", port);
  }

 private:
  const ServerOptions& options() const { return core_.options(); }

  // Releases the listeners and the I/O context (no thread runs it any more). Destroying the
  // context destroys the handlers it still held, and with them the remaining connections
  // (they need the listeners, destroyed after).
  void ReleaseParts() {
    for (Listener* listener : Listeners()) {
      listener->backoff.reset();
      listener->acceptor.reset();
    }
    io_.reset();
    main_.reset();
    more_.clear();
    health_.reset();
  }

  // Every listener there is (mu_ held, or the server started and not yet stopping).
  std::vector<Listener*> Listeners() const {
    std::vector<Listener*> all;
    all.reserve(more_.size() + 2);
    if (main_) all.push_back(main_.get());
    for (const std::unique_ptr<Listener>& more : more_) all.push_back(more.get());
    if (health_) all.push_back(health_.get());
    return all;
  }

  // Start() failed after creating some parts: release them.
  absl::Status Abandon(absl::Status status) {
    ReleaseParts();
    stopped_ = true;
    return status;
  }

  absl::StatusOr<std::unique_ptr<Listener>> Listen(const std::string& name, const std::string& host,
                                                   int port, bool health_only, size_t cap,
                                                   size_t index = 0) {
    auto listener = std::make_unique<Listener>(*io_, name, health_only, cap,
                                               core_.metrics().ForListener(name), index);
    error_code ec;
    const asio::ip::address address = asio::ip::make_address(host, ec);
    const asio::ip::tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
    auto fail = [&](std::string_view what) {
      return absl::UnavailableError(StrCat("cannot ", what, " on ", HostForBind(host), ":", port,
                                           " (", name, " listener): ", ec.message()));
    };
    listener->acceptor->open(endpoint.protocol(), ec);
    if (ec) return fail("open a socket");
    listener->acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    listener->acceptor->bind(endpoint, ec);
    if (ec) return fail("bind");
    listener->acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return fail("listen");
    if (health_only) {
      // The kernel completes a connection that sends nothing without handing it over, for
      // up to the header timeout: such connections never take one of the listener's slots.
      const auto wait = std::chrono::duration_cast<std::chrono::seconds>(
          options().health_header_timeout + std::chrono::milliseconds(999));
      const int seconds = static_cast<int>(wait.count());
      if (setsockopt(listener->acceptor->native_handle(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds,
                     sizeof(seconds)) != 0) {
        KLOG(WARNING) << "HTTP health listener: TCP_DEFER_ACCEPT not set: " << strerror(errno);
      }
    }
    listener->port = listener->acceptor->local_endpoint(ec).port();
    if (ec) return fail("read the bound port");
    return listener;
  }

  static std::string HostForBind(const std::string& host) {
    return host.find(':') != std::string::npos ? StrCat("[", host, "]") : host;
  }

  void Accept(Listener& listener) {
    listener.acceptor->async_accept(asio::make_strand(*io_), [this, &listener](
                                                                 const error_code& ec,
                                                                 asio::ip::tcp::socket socket) {
      if (core_.stopping() || !listener.acceptor->is_open()) return;
      if (ec) {
        listener.metrics.accept_failed->Increment();
        if (ec == asio::error::operation_aborted) return;
        if (ec == boost::system::errc::too_many_files_open ||
            ec == boost::system::errc::too_many_files_open_in_system ||
            ec == boost::system::errc::no_buffer_space ||
            ec == boost::system::errc::not_enough_memory) {
          // Retrying at once would spin: the condition lasts until descriptors free up.
          KLOG(WARNING) << "HTTP " << listener.name << " listener: accept failed (" << ec.message()
                        << "); retrying in " << kAcceptBackoff.count() << "ms";
          listener.backoff->expires_after(kAcceptBackoff);
          listener.backoff->async_wait([this, &listener](const error_code& wait_ec) {
            if (!wait_ec && !core_.stopping()) Accept(listener);
          });
          return;
        }
        return Accept(listener);
      }
      // The health listener makes room by closing its least advanced connection (one that
      // holds a slot without asking for anything); the others turn the newcomer away.
      const bool full = listener.open.load(std::memory_order_acquire) >= listener.cap;
      if (full && listener.health_only && listener.EvictLeastProgress()) {
        listener.metrics.evicted->Increment();
      } else if (full) {
        listener.metrics.over_capacity->Increment();
        if (!tls_) {
          core_.metrics().RecordRejection(RejectionReason::kOverCapacity);
          WriteOverCapacity(socket);
        }
        error_code ignored;
        socket.close(ignored);
        return Accept(listener);
      }
      // Answers go out as soon as they are written: with Nagle's algorithm a small answer
      // written in two parts (head, body) waits for the client's delayed ACK, 40 ms.
      error_code nodelay_error;
      socket.set_option(asio::ip::tcp::no_delay(true), nodelay_error);
      listener.open.fetch_add(1, std::memory_order_acq_rel);
      listener.metrics.open->Increment();
      listener.metrics.accepted->Increment();
      std::shared_ptr<const internal::TlsServing> serving = tls_ ? tls_->Current() : nullptr;
      std::make_shared<Connection>(core_, listener, std::move(socket), std::move(serving))->Start();
      Accept(listener);
    });
  }

  void RunIo() {
    while (true) {
      try {
        io_->run();
        return;
      } catch (const std::exception& e) {
        // A handler ran out of memory or similar; that connection is gone, serving goes on.
        KLOG(ERROR) << "HTTP server I/O thread: " << e.what();
      }
    }
  }

  internal::ServerCore core_;
  mutable std::mutex mu_;  // serializes Start and Stop
  bool started_ = false;
  bool stopped_ = false;
  std::unique_ptr<internal::TlsContextSource> tls_;
  std::unique_ptr<asio::io_context> io_;
  std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::unique_ptr<Listener> main_;
  std::vector<std::unique_ptr<Listener>> more_;
  std::unique_ptr<Listener> health_;
  std::vector<int> ports_;  // bound, by Request::listener
  std::vector<std::thread> threads_;
  std::atomic<int> main_port_{0};
  std::atomic<int> health_port_{0};
};

Server::Server(ServerOptions options, Handler handler, prometheus::Registry& registry,
               const Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), registry, clock)) {}

Server::~Server() = default;

absl::Status Server::Start() { return impl_->Start(); }
void Server::Stop() { impl_->Stop(); }
int Server::port() const { return impl_->port(); }
int Server::port(size_t listener) const { return impl_->port(listener); }
int Server::health_port() const { return impl_->health_port(); }
std::string Server::BaseUrl() const { return impl_->BaseUrlOf(impl_->port()); }
std::string Server::HealthBaseUrl() const {
  return impl_->health_port() == 0 ? "" : impl_->BaseUrlOf(impl_->health_port());
}

}  // namespace kubestat::http
