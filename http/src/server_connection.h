// The server's parts below the public API: what every connection shares (ServerCore), a
// listener with its cap, and one connection's state machine.
//
// A connection lives on its own strand: every socket, timer and parser access happens
// there. A request for a health path runs the handler on that strand; any other request
// runs on a worker and posts its response back to the strand. One timer per connection
// enforces the phase's deadline: a handshake or head (header_timeout), a body
// (read_timeout from the first byte), a write (write_timeout), waiting for the next request
// (idle_timeout); when it fires the pending operation is cancelled and the phase decides
// (close, or answer 408).
//
// A streamed response (server.h) puts the connection in kStreaming: the head and the
// chunks the producer queued are written as they come (write_timeout per write, no timer
// while nothing is queued), and one read stays pending so that a client that goes away
// ends the stream. After the last chunk the connection lingers and closes.
#ifndef KUBESTAT_HTTP_SRC_SERVER_CONNECTION_H_
#define KUBESTAT_HTTP_SRC_SERVER_CONNECTION_H_

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kubestat/http/server.h"
#include "kubestat/http/server_request_reader.h"
#include "server_metrics.h"
#include "server_stream.h"
#include "server_worker_pool.h"
#include "tls_context.h"

namespace kubestat::http::internal {

class Connection;

// What connections share; owned by Server::Impl, outlives every connection.
class ServerCore {
 public:
  ServerCore(ServerOptions options, Handler handler, prometheus::Registry& registry,
             const Clock& clock);

  const ServerOptions& options() const { return options_; }
  const RequestReaderLimits& reader_limits() const { return reader_limits_; }
  const Clock& clock() const { return clock_; }
  ServerMetrics& metrics() { return metrics_; }
  WorkerPool& workers() { return workers_; }
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  void set_stopping() { stopping_.store(true, std::memory_order_release); }
  bool IsHealthPath(std::string_view path) const;
  // "GET, HEAD, …" for the Allow header of a 405.
  const std::string& allow_header() const { return allow_header_; }

  // Calls the handler (an exception becomes a 500), checks the response, compresses it
  // when CompressionOptions say so, and records the request metrics.
  Response Run(const Request& request);

  // A stream's channel, registered so that CloseStreams() reaches it; closed at once when
  // the streams were already closed.
  std::shared_ptr<StreamChannel> OpenStream(boost::asio::any_io_executor strand,
                                            std::function<void()> pump);
  // Closes every open stream and every later one (Stop(), before the io_context goes).
  void CloseStreams();

 private:
  const ServerOptions options_;
  const Handler handler_;
  const Clock& clock_;
  RequestReaderLimits reader_limits_;
  std::string allow_header_;
  ServerMetrics metrics_;
  WorkerPool workers_;
  std::atomic<bool> stopping_{false};
  std::mutex streams_mu_;
  bool streams_closed_ = false;
  std::vector<std::weak_ptr<StreamChannel>> streams_;
};

// A listening socket with its own connection cap, on its own strand.
struct Listener {
  Listener(boost::asio::io_context& io, std::string name, bool health_only, size_t cap,
           ListenerMetrics metrics, size_t index = 0);

  const std::string name;  // "main" or "health"
  const bool health_only;
  const size_t index;  // Request::listener
  const size_t cap;
  const ListenerMetrics metrics;
  // Released before the io_context (asio objects must not outlive it), while the
  // listener itself stays for the connections the context's destruction releases.
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor;
  std::unique_ptr<boost::asio::steady_timer> backoff;  // after EMFILE and the like
  std::atomic<size_t> open{0};
  int port = 0;

  // Live connections, for Stop() and EvictLeastProgress(); a connection adds and removes
  // itself.
  std::mutex mu;
  std::unordered_set<Connection*> live;

  // Closes a live connection so that a newer one can have its slot (the health listener at
  // its cap): from the peer address with the most connections, the one that has made the
  // least progress (nothing of a request received before a partial head), the oldest
  // first; never one already being closed for this, nor one whose request is being handled
  // or answered. False when none could be chosen. Thread-safe.
  bool EvictLeastProgress();
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `listener.open` was already incremented for this connection; the destructor
  // decrements it. `tls` is null for plain HTTP.
  Connection(ServerCore& core, Listener& listener, boost::asio::ip::tcp::socket socket,
             std::shared_ptr<const TlsServing> tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Begins serving on the connection's strand.
  void Start();
  // Closes the socket on the strand (Stop()).
  void Close();

  // How far the connection has come with its current request, readable from any thread
  // (Listener::EvictLeastProgress): kNothing from the accept (or the end of a response)
  // until a request's first byte; kHello once a TLS handshake has the client's whole
  // ClientHello and is being answered, until the first request's first byte; kPartialHead
  // until the head and body are in; kBusy while the request is handled and answered.
  enum class Progress : uint8_t { kNothing, kHello, kPartialHead, kBusy };
  Progress progress() const { return progress_.load(std::memory_order_acquire); }
  std::chrono::steady_clock::time_point accepted_at() const { return accepted_at_; }
  const std::string& remote_address() const { return remote_address_; }
  // Chosen by Listener::EvictLeastProgress (under the listener's mutex, which guards it).
  bool evicted = false;

 private:
  enum class Phase {
    kHandshake,
    kIdle,
    kHead,
    kBody,
    kHandling,
    kWriting,
    kStreaming,
    kLinger,
    kClosed
  };
  using SteadyTime = std::chrono::steady_clock::time_point;

  void Begin();
  void OnHandshake(const boost::system::error_code& ec);
  void StartRequest(bool first);
  void Read();
  void OnRead(const boost::system::error_code& ec, size_t n);
  void ParseBuffered();
  void Dispatch();
  void Respond(Response response, bool keep_alive, std::shared_ptr<StreamChannel> stream = nullptr);
  // Creates the channel of a streamed response and hands it to the handler's StreamStart.
  std::shared_ptr<StreamChannel> StartStream(const Response& response);
  void BeginStream(std::shared_ptr<StreamChannel> stream);
  void PumpStream();
  void OnStreamWritten(const boost::system::error_code& ec, size_t bytes);
  void StreamRead();
  void Reject(RejectionReason reason, const ApiError& error);
  void Write(bool close_after);
  void OnWritten(const boost::system::error_code& ec);
  void Linger();
  void Drain();
  void CloseNow();
  void ArmTimer(SteadyTime deadline);
  void SetProgress(Progress progress) { progress_.store(progress, std::memory_order_release); }
  // OpenSSL's info callback of the connection's handshake: kHello once the ServerHello is
  // being written (the whole ClientHello has arrived).
  static void OnTlsState(const SSL* ssl, int where, int ret);
  // header_timeout, or health_header_timeout on the health listener.
  std::chrono::milliseconds HeaderTimeout() const;
  void OnTimer(const boost::system::error_code& ec);

  ServerCore& core_;
  Listener& listener_;
  boost::asio::ip::tcp::socket socket_;
  std::shared_ptr<const TlsServing> tls_serving_;
  std::unique_ptr<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;
  boost::asio::steady_timer timer_;
  boost::beast::flat_buffer buffer_;
  RequestReader reader_;
  std::unique_ptr<PeerCertificate> peer_;
  std::string remote_address_;
  int remote_port_ = 0;

  Phase phase_ = Phase::kHandshake;
  const SteadyTime accepted_at_;
  std::atomic<Progress> progress_{Progress::kNothing};

  SteadyTime body_deadline_;
  bool timed_out_ = false;
  size_t requests_served_ = 0;
  bool keep_alive_ = false;
  bool is_head_request_ = false;

  // The response being written.
  std::string out_head_;
  std::string out_body_;
  bool close_after_write_ = false;
  bool continue_pending_ = false;
  std::array<char, 4096> drain_buffer_;
  size_t drained_ = 0;

  // The streamed response being written.
  std::shared_ptr<StreamChannel> stream_;
  bool stream_head_sent_ = false;
  bool stream_body_ = false;     // body bytes are sent (not HEAD, not 1xx/204/304)
  bool stream_chunked_ = false;  // HTTP/1.1 chunked framing
  bool stream_writing_ = false;
  bool stream_finishing_ = false;
  size_t stream_batch_bytes_ = 0;
};

}  // namespace kubestat::http::internal

#endif  // KUBESTAT_HTTP_SRC_SERVER_CONNECTION_H_
