#include "server_connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/status.hpp>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <exception>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "kubestat/core/gzip.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "server_strings.h"

namespace kubestat::http::internal {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

constexpr size_t kReadChunk = 16 * 1024;
// After an answer that closes the connection: how long and how much of what the client
// still sends is read and dropped, so its kernel does not turn our close into a reset
// that destroys the answer before the client reads it (Go waits 500 ms too).
constexpr auto kLingerTime = std::chrono::milliseconds(500);
constexpr size_t kLingerBytes = 1024 * 1024;
constexpr std::string_view kGzip = "gzip";
constexpr int kGzipLevel = 1;

// RFC 9110 IMF-fixdate.
std::string HttpDate(Timestamp now) {
  const std::time_t t = std::chrono::system_clock::to_time_t(
      std::chrono::time_point_cast<std::chrono::system_clock::duration>(now));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[64];
  const size_t n = std::strftime(text, sizeof(text), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(text, n);
}

bool HasControl(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

// Header names the server writes itself; a handler's copies are dropped.
bool IsServerHeader(std::string_view name) {
  for (std::string_view own : {"content-length", "transfer-encoding", "connection", "content-type",
                               "content-encoding", "date", "keep-alive"}) {
    if (internal::EqualsIgnoreCase(name, own)) return true;
  }
  return false;
}

std::string_view ReasonPhrase(int code) {
  const auto status = boost::beast::http::int_to_status(static_cast<unsigned>(code));
  if (status == boost::beast::http::status::unknown) return "Unknown";
  const auto reason = boost::beast::http::obsolete_reason(status);
  return std::string_view(reason.data(), reason.size());
}

}  // namespace

// --- ServerCore ---

ServerCore::ServerCore(ServerOptions options, Handler handler, prometheus::Registry& registry,
                       const Clock& clock)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      clock_(clock),
      metrics_(registry, options_.metrics_name),
      workers_(options_.worker_threads, options_.limits.max_queued_requests) {
  reader_limits_.max_target_bytes = options_.limits.max_target_bytes;
  reader_limits_.max_header_bytes = options_.limits.max_header_bytes;
  reader_limits_.max_header_count = options_.limits.max_header_count;
  reader_limits_.max_body_bytes = options_.limits.max_body_bytes;
  reader_limits_.allowed_methods = options_.allowed_methods;
  for (const std::string& method : options_.allowed_methods) {
    if (!allow_header_.empty()) allow_header_ += ", ";
    allow_header_ += method;
  }
}

bool ServerCore::IsHealthPath(std::string_view path) const {
  for (const std::string& health : options_.health_paths) {
    if (path == health) return true;
  }
  return false;
}

Response ServerCore::Run(const Request& request) {
  const Timestamp start = clock_.MonotonicNow();
  Response response;
  try {
    response = handler_(request);
  } catch (const std::exception& e) {
    KLOG(ERROR) << "HTTP handler threw on " << request.method << " " << request.path << ": "
                << e.what();
    response = ErrorResponse(ApiError::InternalError(e.what()));
  } catch (...) {
    KLOG(ERROR) << "HTTP handler threw on " << request.method << " " << request.path;
    response = ErrorResponse(ApiError::InternalError("the handler failed"));
  }
  bool bad = response.code < 100 || response.code > 599 || HasControl(response.content_type) ||
             HasControl(response.content_encoding);
  for (const auto& [name, value] : response.headers) {
    bad = bad || name.empty() || HasControl(name) || HasControl(value) ||
          name.find(':') != std::string::npos;
  }
  if (bad) {
    KLOG(ERROR) << "HTTP handler returned an invalid response (code " << response.code
                << " or a header with CR, LF or NUL) for " << request.method << " " << request.path;
    const std::string_view route = response.route;
    response =
        ErrorResponse(ApiError::InternalError("the handler returned an invalid response"), route);
  }
  if (response.stream) response.body.clear();
  if (options_.compression.enabled && request.accepts_gzip && response.content_encoding.empty() &&
      !response.stream && response.body.size() >= options_.compression.min_bytes) {
    response.body = GzipCompress(response.body, kGzipLevel);
    response.content_encoding = std::string(kGzip);
  }
  const double seconds = std::chrono::duration<double>(clock_.MonotonicNow() - start).count();
  // Label values must be static: "identity", "gzip", or "other" for anything else a
  // handler chose (a bounded set).
  std::string_view encoding = "identity";
  if (response.content_encoding == kGzip) {
    encoding = kGzip;
  } else if (!response.content_encoding.empty()) {
    encoding = "other";
  }
  const size_t sent = request.method == "HEAD" ? 0 : response.body.size();
  metrics_.RecordRequest(response.route, response.code, MethodLabel(request.method), seconds,
                         encoding, sent, ContentTypeLabel(response.content_type));
  return response;
}

std::shared_ptr<StreamChannel> ServerCore::OpenStream(asio::any_io_executor strand,
                                                      std::function<void()> pump) {
  auto channel = std::make_shared<StreamChannel>(std::move(strand), std::move(pump));
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    if (!streams_closed_) {
      if (streams_.size() >= 64 && streams_.size() == streams_.capacity()) {
        std::erase_if(streams_, [](const std::weak_ptr<StreamChannel>& s) { return s.expired(); });
      }
      streams_.push_back(channel);
      return channel;
    }
  }
  channel->Close();
  return channel;
}

void ServerCore::CloseStreams() {
  std::vector<std::weak_ptr<StreamChannel>> streams;
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    streams_closed_ = true;
    streams.swap(streams_);
  }
  for (const std::weak_ptr<StreamChannel>& weak : streams) {
    if (std::shared_ptr<StreamChannel> channel = weak.lock()) channel->Close();
  }
}

// --- Listener ---

Listener::Listener(asio::io_context& io, std::string name_in, bool health_only_in, size_t cap_in,
                   ListenerMetrics metrics_in, size_t index_in)
    : name(std::move(name_in)),
      health_only(health_only_in),
      index(index_in),
      cap(cap_in),
      metrics(metrics_in),
      acceptor(std::make_unique<asio::ip::tcp::acceptor>(asio::make_strand(io))),
      backoff(std::make_unique<asio::steady_timer>(acceptor->get_executor())) {}

bool Listener::EvictLeastProgress() {
  std::shared_ptr<Connection> victim;
  {
    std::lock_guard<std::mutex> lock(mu);
    // From the address holding the most slots first: a flood from one place then costs
    // that place its own connections, not the kubelet's probes from another.
    std::unordered_map<std::string_view, size_t> per_address;
    for (const Connection* connection : live) ++per_address[connection->remote_address()];
    Connection* chosen = nullptr;
    auto rank = [&](const Connection* connection) {
      return std::tuple(-static_cast<std::ptrdiff_t>(per_address[connection->remote_address()]),
                        connection->progress(), connection->accepted_at());
    };
    for (Connection* connection : live) {
      // A connection chosen by an earlier call is already on its way out.
      if (connection->evicted || connection->progress() == Connection::Progress::kBusy) continue;
      if (chosen == nullptr || rank(connection) < rank(chosen)) chosen = connection;
    }
    if (chosen == nullptr) return false;
    chosen->evicted = true;
    // Null while its destructor waits for this mutex to take it out of `live`: its slot is
    // being freed already.
    victim = chosen->weak_from_this().lock();
  }
  if (victim == nullptr) return true;
  victim->Close();
  return true;
}

// --- Connection ---

namespace {

// The SSL ex_data slot holding a connection's Connection* during its handshake (asio keeps
// the app data slot for itself).
int ConnectionSlot() {
  static const int slot = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return slot;
}

}  // namespace

void Connection::OnTlsState(const SSL* ssl, int where, int /*ret*/) {
  if ((where & SSL_CB_ACCEPT_LOOP) == 0 || SSL_get_state(ssl) != TLS_ST_SW_SRVR_HELLO) return;
  auto* connection = static_cast<Connection*>(SSL_get_ex_data(ssl, ConnectionSlot()));
  if (connection != nullptr && connection->progress() == Progress::kNothing) {
    connection->SetProgress(Progress::kHello);
  }
}

Connection::Connection(ServerCore& core, Listener& listener, asio::ip::tcp::socket socket,
                       std::shared_ptr<const TlsServing> tls)
    : core_(core),
      listener_(listener),
      socket_(std::move(socket)),
      tls_serving_(std::move(tls)),
      timer_(socket_.get_executor()),
      buffer_(core.options().limits.max_header_bytes + kReadChunk),
      reader_(core.reader_limits()),
      accepted_at_(std::chrono::steady_clock::now()) {
  error_code ec;
  const auto remote = socket_.remote_endpoint(ec);
  if (!ec) {
    remote_address_ = remote.address().to_string();
    remote_port_ = remote.port();
  }
  std::lock_guard<std::mutex> lock(listener_.mu);
  listener_.live.insert(this);
}

Connection::~Connection() {
  if (stream_) stream_->Close();
  {
    std::lock_guard<std::mutex> lock(listener_.mu);
    listener_.live.erase(this);
  }
  error_code ignored;
  socket_.close(ignored);
  listener_.open.fetch_sub(1, std::memory_order_acq_rel);
  listener_.metrics.open->Decrement();
}

void Connection::Start() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->Begin(); });
}

void Connection::Close() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
}

void Connection::Begin() {
  if (core_.stopping()) return CloseNow();
  // The handshake and the first request's head share header_timeout from the accept.
  ArmTimer(accepted_at_ + HeaderTimeout());
  if (tls_serving_ == nullptr) return StartRequest(/*first=*/true);
  phase_ = Phase::kHandshake;
  tls_ =
      std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket_, tls_serving_->context());
  if (listener_.health_only) {
    // Only EvictLeastProgress reads kHello. Called only from inside OpenSSL calls on this
    // strand, while the connection is alive.
    SSL_set_ex_data(tls_->native_handle(), ConnectionSlot(), this);
    SSL_set_info_callback(tls_->native_handle(), &Connection::OnTlsState);
  }
  tls_->async_handshake(
      asio::ssl::stream_base::server,
      [self = shared_from_this()](const error_code& ec) { self->OnHandshake(ec); });
}

void Connection::OnHandshake(const error_code& ec) {
  if (phase_ == Phase::kClosed) return;
  if (ec || timed_out_) {
    listener_.metrics.tls_handshake_failed->Increment();
    KVLOG(1) << "TLS handshake with " << remote_address_
             << " failed: " << (timed_out_ ? "timed out" : ec.message());
    return CloseNow();
  }
  peer_ = tls_serving_->ReadPeer(tls_->native_handle());
  StartRequest(/*first=*/true);
}

void Connection::StartRequest(bool first) {
  if (core_.stopping()) return CloseNow();
  reader_.Reset();
  phase_ = Phase::kIdle;
  if (!first) {
    // After a handshake the first request keeps kHello until its first byte.
    SetProgress(Progress::kNothing);
    // Idle keep-alive connections hold no read memory.
    if (buffer_.size() == 0) buffer_.shrink_to_fit();
    ArmTimer(std::chrono::steady_clock::now() + core_.options().limits.idle_timeout);
  }
  if (buffer_.size() > 0) {
    // A pipelined request already arrived.
    const SteadyTime now = std::chrono::steady_clock::now();
    phase_ = Phase::kHead;
    SetProgress(Progress::kPartialHead);
    ArmTimer(now + HeaderTimeout());
    body_deadline_ = now + core_.options().limits.read_timeout;
    return ParseBuffered();
  }
  Read();
}

void Connection::Read() {
  const size_t room = buffer_.max_size() - buffer_.size();
  const size_t n = std::min(kReadChunk, room);
  auto handler = [self = shared_from_this()](const error_code& ec, size_t bytes) {
    self->OnRead(ec, bytes);
  };
  if (tls_) {
    tls_->async_read_some(buffer_.prepare(n), std::move(handler));
  } else {
    socket_.async_read_some(buffer_.prepare(n), std::move(handler));
  }
}

void Connection::OnRead(const error_code& ec, size_t n) {
  if (phase_ == Phase::kClosed) return;
  if (timed_out_) {
    timed_out_ = false;
    if (phase_ == Phase::kHead || phase_ == Phase::kBody) {
      return Reject(RejectionReason::kTimeout,
                    ApiError(408, StatusReason::kTimeout,
                             phase_ == Phase::kHead ? "the request head did not arrive in time"
                                                    : "the request body did not arrive in time"));
    }
    return CloseNow();  // idle: no request started, nothing to answer
  }
  if (ec) {
    // The peer closed or reset, or Stop() closed the socket. A half-closed peer that sent
    // a partial request cannot be answered usefully either.
    return CloseNow();
  }
  buffer_.commit(n);
  if (phase_ == Phase::kIdle) {
    const SteadyTime now = std::chrono::steady_clock::now();
    phase_ = Phase::kHead;
    SetProgress(Progress::kPartialHead);
    if (requests_served_ > 0) ArmTimer(now + HeaderTimeout());
    body_deadline_ = now + core_.options().limits.read_timeout;
  }
  ParseBuffered();
}

void Connection::ParseBuffered() {
  const auto data = buffer_.data();
  size_t consumed = 0;
  const RequestReader::State state = reader_.Parse(
      std::string_view(static_cast<const char*>(data.data()), data.size()), &consumed);
  buffer_.consume(consumed);
  switch (state) {
    case RequestReader::State::kRejected:
      return Reject(reader_.rejection().reason, reader_.rejection().error);
    case RequestReader::State::kComplete:
      timer_.cancel();
      phase_ = Phase::kHandling;
      SetProgress(Progress::kBusy);
      return Dispatch();
    case RequestReader::State::kNeedMore:
      break;
  }
  if (phase_ == Phase::kHead && !reader_.started()) {
    phase_ = Phase::kIdle;  // only the CRLF some clients send between requests
    SetProgress(Progress::kNothing);
  } else if (phase_ == Phase::kHead && reader_.head_complete()) {
    phase_ = Phase::kBody;
    ArmTimer(body_deadline_);
    if (reader_.expects_continue()) {
      continue_pending_ = true;
      out_head_ = "HTTP/1.1 100 Continue\r\n\r\n";
      out_body_.clear();
      auto handler = [self = shared_from_this()](const error_code& ec, size_t) {
        if (self->phase_ == Phase::kClosed) return;
        if (ec || self->timed_out_) return self->CloseNow();
        self->continue_pending_ = false;
        self->Read();
      };
      if (tls_) {
        asio::async_write(*tls_, asio::buffer(out_head_), std::move(handler));
      } else {
        asio::async_write(socket_, asio::buffer(out_head_), std::move(handler));
      }
      return;
    }
  }
  Read();
}

void Connection::Dispatch() {
  ++requests_served_;
  const size_t max_requests = core_.options().limits.max_requests_per_connection;
  keep_alive_ = reader_.keep_alive() && !core_.stopping() &&
                (max_requests == 0 || requests_served_ < max_requests);

  Request request;
  request.method = reader_.method();
  request.target = reader_.target();
  const size_t question = request.target.find('?');
  request.path = request.target.substr(0, question);
  if (question != std::string_view::npos) request.query = request.target.substr(question + 1);
  request.http_version = reader_.version();
  request.headers.reserve(reader_.headers().size());
  std::string accept_encoding;
  for (const auto& [name, value] : reader_.headers()) {
    request.headers.push_back(HeaderField{name, value});
    if (internal::EqualsIgnoreCase(name, "Accept-Encoding")) {
      if (!accept_encoding.empty()) accept_encoding += ", ";
      accept_encoding += value;
    }
  }
  request.body = reader_.body();
  request.peer_certificate = peer_.get();
  request.remote_address = remote_address_;
  request.remote_port = remote_port_;
  request.listener = listener_.index;
  request.accepts_gzip = AcceptsGzip(accept_encoding);
  is_head_request_ = request.method == "HEAD";

  const bool health = core_.IsHealthPath(request.path);
  if (listener_.health_only && !health) {
    core_.metrics().RecordRejection(RejectionReason::kNotFound);
    Response response = ErrorResponse(
        ApiError(404, StatusReason::kNotFound, "only health paths are served on this port"));
    return Respond(std::move(response), keep_alive_);
  }
  if (health) {
    // On the strand: health answers never wait behind the worker queue.
    Response response = core_.Run(request);
    std::shared_ptr<StreamChannel> stream = StartStream(response);
    return Respond(std::move(response), keep_alive_, std::move(stream));
  }
  auto self = shared_from_this();
  const bool queued = core_.workers().TrySubmit([self, request = std::move(request)]() {
    Response response = self->core_.Run(request);
    std::shared_ptr<StreamChannel> stream = self->StartStream(response);
    asio::post(self->socket_.get_executor(),
               [self, response = std::move(response), stream = std::move(stream)]() mutable {
                 self->Respond(std::move(response), self->keep_alive_, std::move(stream));
               });
  });
  if (!queued) {
    Reject(RejectionReason::kOverloaded,
           ApiError::TooManyRequests("Too many requests, please try again later.", 1));
  }
}

std::shared_ptr<StreamChannel> Connection::StartStream(const Response& response) {
  if (!response.stream) return nullptr;
  std::weak_ptr<Connection> weak = weak_from_this();
  std::shared_ptr<StreamChannel> channel = core_.OpenStream(socket_.get_executor(), [weak] {
    if (std::shared_ptr<Connection> self = weak.lock()) self->PumpStream();
  });
  try {
    response.stream(channel);
  } catch (const std::exception& e) {
    KLOG(ERROR) << "HTTP stream start threw: " << e.what();
    channel->Close();
  } catch (...) {
    KLOG(ERROR) << "HTTP stream start threw";
    channel->Close();
  }
  return channel;
}

void Connection::Respond(Response response, bool keep_alive,
                         std::shared_ptr<StreamChannel> stream) {
  if (phase_ == Phase::kClosed) {
    if (stream) stream->Close();
    return;
  }
  const bool close =
      !keep_alive || response.close_connection || core_.stopping() || stream != nullptr;
  const int code = response.code;
  const bool no_body = code < 200 || code == 204 || code == 304;
  std::string& h = out_head_;
  h.clear();
  h += StrCat("HTTP/1.1 ", code, " ", ReasonPhrase(code), "\r\n");
  h += StrCat("Date: ", HttpDate(core_.clock().Now()), "\r\n");
  if (!no_body) {
    if (!response.content_type.empty()) {
      h += StrCat("Content-Type: ", response.content_type, "\r\n");
    }
    if (!response.content_encoding.empty()) {
      h += StrCat("Content-Encoding: ", response.content_encoding, "\r\n");
    }
    if (stream == nullptr) {
      h += StrCat("Content-Length: ", response.body.size(), "\r\n");
    } else if (reader_.version() != 10) {
      h += "Transfer-Encoding: chunked\r\n";
    }
  }
  // Caches must not serve one client's encoding to another; a handler's own Vary (e.g.
  // Accept) joins the server's in one field.
  std::string vary = core_.options().compression.enabled ? "Accept-Encoding" : "";
  for (const auto& [name, value] : response.headers) {
    if (!internal::EqualsIgnoreCase(name, "vary")) continue;
    if (!vary.empty()) vary += ", ";
    vary += value;
  }
  if (!vary.empty()) h += StrCat("Vary: ", vary, "\r\n");
  h += "X-Content-Type-Options: nosniff\r\n";
  for (const auto& [name, value] : response.headers) {
    if (IsServerHeader(name) || internal::EqualsIgnoreCase(name, "vary")) continue;
    h += StrCat(name, ": ", value, "\r\n");
  }
  if (close) {
    h += "Connection: close\r\n";
  } else if (reader_.version() == 10) {
    h += "Connection: keep-alive\r\n";
  }
  h += "\r\n";
  out_body_.clear();
  if (stream != nullptr) {
    stream_body_ = !no_body && !is_head_request_;
    stream_chunked_ = stream_body_ && reader_.version() != 10;
    return BeginStream(std::move(stream));
  }
  if (!no_body && !is_head_request_) out_body_ = std::move(response.body);
  Write(close);
}

void Connection::BeginStream(std::shared_ptr<StreamChannel> stream) {
  phase_ = Phase::kStreaming;
  stream_ = std::move(stream);
  timer_.expires_at(SteadyTime::max());  // no deadline while the producer has nothing
  StreamRead();
  PumpStream();
}

void Connection::StreamRead() {
  auto handler = [self = shared_from_this()](const error_code& ec, size_t n) {
    if (self->phase_ == Phase::kClosed) return;
    // The client went away, a write timed out (the timer cancels both), or Stop().
    if (ec || self->timed_out_) return self->CloseNow();
    if (self->phase_ == Phase::kLinger) {
      self->drained_ += n;
      if (self->drained_ > kLingerBytes) return self->CloseNow();
    }
    // What a client sends during a stream is dropped.
    self->StreamRead();
  };
  if (tls_) {
    tls_->async_read_some(asio::buffer(drain_buffer_), std::move(handler));
  } else {
    socket_.async_read_some(asio::buffer(drain_buffer_), std::move(handler));
  }
}

void Connection::PumpStream() {
  if (phase_ != Phase::kStreaming || stream_ == nullptr || stream_writing_) return;
  StreamChannel::Batch batch = stream_->Take();
  if (!batch.head) return;  // the head is held back until the producer sends something
  out_body_.clear();
  if (!stream_head_sent_) {
    out_body_ = std::move(out_head_);
    out_head_.clear();
    stream_head_sent_ = true;
  }
  if (stream_body_) {
    for (const std::string& chunk : batch.chunks) {
      if (stream_chunked_) {
        char size[32];
        const int n = std::snprintf(size, sizeof(size), "%zx\r\n", chunk.size());
        out_body_.append(size, static_cast<size_t>(n));
        out_body_ += chunk;
        out_body_ += "\r\n";
      } else {
        out_body_ += chunk;
      }
    }
  }
  if (batch.finish) {
    stream_finishing_ = true;
    if (stream_chunked_) out_body_ += "0\r\n\r\n";
  }
  stream_batch_bytes_ = batch.bytes;
  if (out_body_.empty()) {
    stream_->Written(batch.bytes);
    if (stream_finishing_) OnStreamWritten(error_code(), 0);
    return;
  }
  stream_writing_ = true;
  ArmTimer(std::chrono::steady_clock::now() + core_.options().limits.write_timeout);
  auto handler = [self = shared_from_this()](const error_code& ec, size_t n) {
    self->OnStreamWritten(ec, n);
  };
  if (tls_) {
    asio::async_write(*tls_, asio::buffer(out_body_), std::move(handler));
  } else {
    asio::async_write(socket_, asio::buffer(out_body_), std::move(handler));
  }
}

void Connection::OnStreamWritten(const error_code& ec, size_t) {
  stream_writing_ = false;
  if (phase_ == Phase::kClosed) return;
  if (ec || timed_out_) {
    KVLOG(1) << "HTTP stream to " << remote_address_
             << " ended: " << (timed_out_ ? "write timed out" : ec.message());
    return CloseNow();
  }
  timer_.expires_at(SteadyTime::max());
  stream_->Written(stream_batch_bytes_);
  stream_batch_bytes_ = 0;
  if (!stream_finishing_) return PumpStream();
  // The last chunk is out: the stream is complete. The pending read drains what the
  // client still sends until it closes or the linger time passes.
  out_body_.clear();
  out_body_.shrink_to_fit();
  stream_->Close();
  phase_ = Phase::kLinger;
  drained_ = 0;
  ArmTimer(std::chrono::steady_clock::now() + kLingerTime);
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

void Connection::Reject(RejectionReason reason, const ApiError& error) {
  core_.metrics().RecordRejection(reason);
  Response response = ErrorResponse(error);
  if (reason == RejectionReason::kMethodNotAllowed) {
    response.headers.emplace_back("Allow", core_.allow_header());
  } else if (reason == RejectionReason::kOverloaded) {
    response.headers.emplace_back("Retry-After", "1");
  }
  is_head_request_ = false;
  Respond(std::move(response), /*keep_alive=*/false);
}

void Connection::Write(bool close_after) {
  phase_ = Phase::kWriting;
  close_after_write_ = close_after;
  ArmTimer(std::chrono::steady_clock::now() + core_.options().limits.write_timeout);
  const std::array<asio::const_buffer, 2> buffers = {asio::buffer(out_head_),
                                                     asio::buffer(out_body_)};
  auto handler = [self = shared_from_this()](const error_code& ec, size_t) { self->OnWritten(ec); };
  if (tls_) {
    asio::async_write(*tls_, buffers, std::move(handler));
  } else {
    asio::async_write(socket_, buffers, std::move(handler));
  }
}

void Connection::OnWritten(const error_code& ec) {
  if (phase_ == Phase::kClosed) return;
  if (ec || timed_out_) {
    KVLOG(1) << "HTTP response to " << remote_address_
             << " not delivered: " << (timed_out_ ? "write timed out" : ec.message());
    return CloseNow();
  }
  out_body_.clear();
  out_body_.shrink_to_fit();
  if (close_after_write_) return Linger();
  StartRequest(/*first=*/false);
}

void Connection::Linger() {
  phase_ = Phase::kLinger;
  drained_ = 0;
  ArmTimer(std::chrono::steady_clock::now() + kLingerTime);
  if (tls_) {
    // close_notify, then wait (bounded by the timer) for the client's.
    tls_->async_shutdown([self = shared_from_this()](const error_code&) { self->CloseNow(); });
    return;
  }
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  Drain();
}

void Connection::Drain() {
  socket_.async_read_some(asio::buffer(drain_buffer_),
                          [self = shared_from_this()](const error_code& ec, size_t n) {
                            if (self->phase_ == Phase::kClosed) return;
                            self->drained_ += n;
                            if (ec || self->timed_out_ || self->drained_ > kLingerBytes) {
                              return self->CloseNow();
                            }
                            self->Drain();
                          });
}

void Connection::CloseNow() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  if (stream_) stream_->Close();
  timer_.cancel();
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

std::chrono::milliseconds Connection::HeaderTimeout() const {
  return listener_.health_only ? core_.options().health_header_timeout
                               : core_.options().limits.header_timeout;
}

void Connection::ArmTimer(SteadyTime deadline) {
  timed_out_ = false;
  timer_.expires_at(deadline);
  timer_.async_wait([self = shared_from_this()](const error_code& ec) { self->OnTimer(ec); });
}

void Connection::OnTimer(const error_code& ec) {
  if (ec || phase_ == Phase::kClosed || phase_ == Phase::kHandling) return;
  // A wait that completed just before the timer was re-armed for a later deadline.
  if (std::chrono::steady_clock::now() < timer_.expiry()) return;
  timed_out_ = true;
  error_code ignored;
  socket_.cancel(ignored);  // the pending operation completes with operation_aborted
}

}  // namespace kubestat::http::internal
