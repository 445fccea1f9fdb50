#include "kubestat/http/client.h"

#include <cpprest/http_client.h>
#include <pplx/pplx.h>

#include <algorithm>
#include <cassert>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "client_direct.h"
#include "client_tls.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/core/time.h"

namespace kubestat::http {
namespace {

// What a stream's read takes from cpprestsdk at most.
constexpr size_t kChunkBytes = size_t{64} * 1024;
// How much of a non-2xx streamed body is kept (see client.h, Stream).
constexpr size_t kErrorBodyBytes = size_t{64} * 1024;
using internal::kClockCheck;
using internal::kReasonPayload;
using internal::Printable;
using internal::WithReason;

bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

// A field value may hold visible bytes, spaces and tabs (and obs-text), no controls.
bool IsFieldValue(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

// A request-target: no controls, spaces or non-ASCII bytes (they must be percent-encoded).
bool IsTarget(std::string_view s) {
  return !s.empty() && s.front() == '/' && std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u < 0x7f;
  });
}

// What one request's waits share with its task continuations and its stop callback.
struct Wakeup {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t completed = 0;  // tasks of this request that have finished, in order
  bool stopped = false;
};

enum class WaitResult { kDone, kDeadline, kStopped };

// One request's deadline, cancellation and waiting. The request's tasks run on cpprestsdk's
// threads; the caller's thread waits here and gives up at the deadline or on stop without
// blocking on the task, whose continuation keeps what it writes into alive.
class Exchange {
 public:
  Exchange(const Clock& clock, Timestamp deadline, const std::stop_token& stop)
      : clock_(clock),
        deadline_(deadline),
        // Runs at once when `stop` is already triggered; every member it uses is built.
        stop_callback_(stop, [this] { Stop(); }) {}
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  pplx::cancellation_token token() const { return cancel_.get_token(); }
  void Cancel() { cancel_.cancel(); }
  bool stopped() const {
    std::lock_guard lock(wakeup_->mu);
    return wakeup_->stopped;
  }
  bool past_deadline() const { return clock_.MonotonicNow() >= deadline_; }
  // Replaces the deadline for the waits that follow (a stream's body has none).
  void set_deadline(Timestamp deadline) { deadline_ = deadline; }

  // Waits until `task` is done, the deadline passes or the request is stopped; cancels the
  // request in the last two cases. Tasks are waited for one at a time, in order.
  template <typename T>
  WaitResult Wait(const pplx::task<T>& task, std::shared_ptr<void> keep_alive) {
    const uint64_t target = ++issued_;
    // The wake-up runs on the thread that completes the task (_Then; then() would go through
    // the ambient scheduler, which posts it to the library's pool where pplx was in use
    // before the first client: one more thread woken per wait, in bench/fetch_bench a third
    // of a fetch's CPU at 32 threads and under a tenth at 2). It takes only the wake-up's
    // lock, which the waiter never holds while calling into the library, so it cannot
    // deadlock whatever lock the completing thread holds.
    task._Then(
        [wakeup = wakeup_, keep_alive = std::move(keep_alive)](pplx::task<T> finished) {
          try {
            finished.wait();
          } catch (...) {
            // Observed by the waiter through get(), or abandoned after it gave up.
          }
          std::lock_guard lock(wakeup->mu);
          ++wakeup->completed;
          wakeup->cv.notify_all();
        },
        nullptr);
    WaitResult result = WaitResult::kDone;
    {
      std::unique_lock lock(wakeup_->mu);
      while (wakeup_->completed < target) {
        if (wakeup_->stopped) {
          result = WaitResult::kStopped;
          break;
        }
        const Timestamp now = clock_.MonotonicNow();
        if (now >= deadline_) {
          result = WaitResult::kDeadline;
          break;
        }
        wakeup_->cv.wait_for(lock, std::min<Duration>(deadline_ - now, kClockCheck));
      }
    }
    if (result != WaitResult::kDone) Cancel();
    return result;
  }

 private:
  // Marks the request stopped before cancelling it, so whatever the cancellation makes the
  // request fail with is read as a stop.
  void Stop() {
    {
      std::lock_guard lock(wakeup_->mu);
      wakeup_->stopped = true;
      wakeup_->cv.notify_all();
    }
    cancel_.cancel();
  }

  const Clock& clock_;
  Timestamp deadline_;
  uint64_t issued_ = 0;
  pplx::cancellation_token_source cancel_;
  std::shared_ptr<Wakeup> wakeup_ = std::make_shared<Wakeup>();
  std::stop_callback<std::function<void()>> stop_callback_;
};

// An exception from cpprestsdk as a Status. `after_head`: the response had started, so a
// broken connection means a truncated body.
absl::Status FromException(const std::string& label, const std::exception& e, bool after_head,
                           const std::string& verify_failure) {
  const std::string what = Printable(e.what());
  if (const auto* http = dynamic_cast<const web::http::http_exception*>(&e);
      http != nullptr && http->error_code() == std::errc::timed_out) {
    return WithReason(absl::DeadlineExceededError(absl::StrCat(label, ": timed out: ", what)),
                      "timeout");
  }
  if (absl::StrContains(what, "SSL") || absl::StrContains(what, "ssl") ||
      absl::StrContains(what, "certificate") || absl::StrContains(what, "handshake")) {
    if (!verify_failure.empty()) {
      return WithReason(
          absl::UnavailableError(absl::StrCat(
              label, ": TLS: the server's certificate was refused: ", Printable(verify_failure))),
          "tls");
    }
    return WithReason(absl::UnavailableError(absl::StrCat(label, ": TLS: ", what)), "tls");
  }
  if (after_head) {
    return WithReason(
        absl::UnavailableError(absl::StrCat(label, ": reading the response body: ", what)), "read");
  }
  return WithReason(absl::UnavailableError(absl::StrCat(label, ": connecting: ", what)), "connect");
}

bool MethodSendsLength(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH";
}

// Moves what `stream` holds now (at most `room` bytes) to `out` without waiting, under the
// buffer's lock (in_avail() reads the producer's count without it). Returns the count.
size_t TakeAvailable(concurrency::streams::streambuf<uint8_t>& stream, uint8_t* out, size_t room) {
  size_t taken = 0;
  while (taken < room) {
    uint8_t* block = nullptr;
    size_t available = 0;
    if (!stream.acquire(block, available) || block == nullptr || available == 0) break;
    const size_t n = std::min(available, room - taken);
    std::memcpy(out + taken, block, n);
    stream.release(block, n);
    taken += n;
  }
  return taken;
}

// cpprestsdk hands each step of a request (the request written, the head read, a piece of
// the body passed on) to the next through a pplx continuation, which pplx's default
// scheduler posts to the library's thread pool: one more thread woken per step. This one
// runs it on the thread that finished the step, as asio runs its own handlers. The
// library's continuations only start the next asynchronous operation or pass data on, never
// wait; Exchange's wake-up takes only its own lock. pplx takes the scheduler once, at its
// first task, so it is set at the first client's creation; in a process that used pplx
// before (cpprestsdk's own HTTP listener, in tests) pplx refuses, and continuations keep
// going through the pool.
class InlineScheduler final : public pplx::scheduler_interface {
 public:
  void schedule(pplx::TaskProc_t proc, void* param) override { proc(param); }
};

void RunContinuationsInline() {
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      pplx::set_ambient_scheduler(std::make_shared<InlineScheduler>());
    } catch (const std::exception&) {
      // pplx is in use already: its default scheduler stays.
    }
  });
}

}  // namespace

class Client::Impl {
 public:
  Impl(ClientOptions options, const Clock& clock,
       std::unique_ptr<web::http::client::http_client> client,
       std::shared_ptr<internal::TlsVerifyLog> verify_log,
       std::unique_ptr<internal::DirectTransport> direct)
      : options_(std::move(options)),
        clock_(clock),
        client_(std::move(client)),
        verify_log_(std::move(verify_log)),
        direct_(std::move(direct)) {}

  absl::StatusOr<ClientResponse> Do(const ClientRequest& request);
  absl::Status Stream(const ClientRequest& request, Duration header_timeout,
                      const std::function<bool(std::string_view)>& on_chunk, int* status_code,
                      std::string* error_body);
  const ClientOptions& options() const { return options_; }

 private:
  // "GET /api/v1/nodes": how every message of a request starts.
  static std::string Label(const ClientRequest& request) {
    std::string_view path = request.path_and_query;
    path = path.substr(0, path.find('?'));
    return Printable(absl::StrCat(AbslView(request.method), " ", AbslView(path)));
  }

  // The Authorization value for `request`; "" when none is sent.
  absl::StatusOr<std::string> Authorization(const ClientRequest& request,
                                            const std::string& label) const;

  // InvalidArgument ("request") when `request` is malformed.
  static absl::Status Check(const ClientRequest& request, const std::string& label);

  // Checks `request` and builds the message to send: InvalidArgument ("request") when it is
  // malformed, the token source's error ("auth").
  absl::StatusOr<web::http::http_request> Prepare(const ClientRequest& request,
                                                  const std::string& label) const;

  // The outcome of a wait that gave up: Cancelled when stopped, else DeadlineExceeded.
  static absl::Status Abandoned(Exchange& exchange, WaitResult result, const std::string& label,
                                std::string_view what) {
    exchange.Cancel();
    if (result == WaitResult::kStopped || exchange.stopped()) {
      return WithReason(absl::CancelledError(absl::StrCat(label, ": stopped")), "cancelled");
    }
    return WithReason(absl::DeadlineExceededError(absl::StrCat(label, ": ", AbslView(what))),
                      "timeout");
  }

  // One exchange: sends `message`, waits for the response head within `head_deadline`
  // (DeadlineExceeded "<label>: <timed_out>" past it), then returns what `read_body`
  // makes of the response; read_body(exchange, response, abandoned) waits through the
  // exchange and returns abandoned(result) when a wait gives up. Stop, the deadline and
  // cpprestsdk's exceptions become statuses here, classified as Do's are. Stream's only.
  template <typename Result, typename ReadBody>
  Result Send(web::http::http_request& message, const ClientRequest& request,
              const std::string& label, Timestamp head_deadline, const std::string& timed_out,
              ReadBody read_body);

  const ClientOptions options_;
  const Clock& clock_;
  // Stream's transport.
  const std::unique_ptr<web::http::client::http_client> client_;
  const std::shared_ptr<internal::TlsVerifyLog> verify_log_;
  // Do's transport.
  const std::unique_ptr<internal::DirectTransport> direct_;
};

absl::StatusOr<std::string> Client::Impl::Authorization(const ClientRequest& request,
                                                        const std::string& label) const {
  for (const auto& [name, value] : request.headers) {
    if (absl::EqualsIgnoreCase(AbslView(name), "Authorization")) return std::string();
  }
  if (!options_.bearer_token.empty()) return absl::StrCat("Bearer ", options_.bearer_token);
  if (!options_.bearer_token_source) return std::string();
  absl::StatusOr<std::string> token = options_.bearer_token_source();
  if (!token.ok()) {
    return WithReason(
        absl::Status(token.status().code(),
                     absl::StrCat(label, ": bearer token: ", token.status().message())),
        "auth");
  }
  if (token->empty() || !IsFieldValue(*token)) {
    // The token itself is never shown.
    return WithReason(absl::InvalidArgumentError(absl::StrCat(
                          label, ": bearer token: empty or holding bytes a header cannot carry")),
                      "auth");
  }
  return absl::StrCat("Bearer ", *token);
}

absl::Status Client::Impl::Check(const ClientRequest& request, const std::string& label) {
  if (!IsToken(request.method)) {
    return WithReason(absl::InvalidArgumentError(absl::StrCat(label, ": not a method name")),
                      "request");
  }
  if (!IsTarget(request.path_and_query)) {
    return WithReason(
        absl::InvalidArgumentError(absl::StrCat(
            label, ": the path must start with '/' and hold only printable ASCII without spaces")),
        "request");
  }
  for (const auto& [name, value] : request.headers) {
    if (!IsToken(name) || !IsFieldValue(value)) {
      return WithReason(absl::InvalidArgumentError(absl::StrCat(label, ": header field ",
                                                                Printable(name), " is malformed")),
                        "request");
    }
  }
  if (!request.body.empty() && !IsFieldValue(request.content_type)) {
    return WithReason(
        absl::InvalidArgumentError(absl::StrCat(label, ": content_type is malformed")), "request");
  }
  return absl::OkStatus();
}

absl::StatusOr<web::http::http_request> Client::Impl::Prepare(const ClientRequest& request,
                                                              const std::string& label) const {
  if (absl::Status s = Check(request, label); !s.ok()) return s;
  absl::StatusOr<std::string> authorization = Authorization(request, label);
  if (!authorization.ok()) return authorization.status();
  try {
    web::http::http_request message(request.method);
    message.set_request_uri(web::uri(request.path_and_query));
    web::http::http_headers& headers = message.headers();
    headers.add("User-Agent", options_.user_agent);
    for (const auto& [name, value] : request.headers) headers.add(name, value);
    if (!authorization->empty()) headers.add("Authorization", *authorization);
    if (!request.body.empty()) {
      message.set_body(request.body, request.content_type);
    } else if (MethodSendsLength(request.method)) {
      headers.set_content_length(0);
    }
    return message;
  } catch (const web::uri_exception& e) {
    return WithReason(absl::InvalidArgumentError(
                          absl::StrCat(label, ": the path is not a URI: ", Printable(e.what()))),
                      "request");
  }
}

absl::StatusOr<ClientResponse> Client::Impl::Do(const ClientRequest& request) {
  // Emptied whatever the outcome (client.h, body_buffer).
  if (request.body_buffer != nullptr) request.body_buffer->clear();
  const std::string label = Label(request);
  if (absl::Status s = Check(request, label); !s.ok()) return s;
  absl::StatusOr<std::string> authorization = Authorization(request, label);
  if (!authorization.ok()) return authorization.status();

  std::string bytes;
  bytes.reserve(256 + request.path_and_query.size() + request.body.size());
  const internal::DirectEndpoint& endpoint = direct_->endpoint();
  absl::StrAppend(&bytes, AbslView(request.method), " ", AbslView(endpoint.path_prefix),
                  AbslView(request.path_and_query),
                  " HTTP/1.1\r\nHost: ", AbslView(endpoint.host_field),
                  "\r\nUser-Agent: ", AbslView(options_.user_agent), "\r\n");
  for (const auto& [name, value] : request.headers) {
    absl::StrAppend(&bytes, AbslView(name), ": ", AbslView(value), "\r\n");
  }
  if (!authorization->empty()) {
    absl::StrAppend(&bytes, "Authorization: ", AbslView(*authorization), "\r\n");
  }
  if (!request.body.empty()) {
    absl::StrAppend(&bytes, "Content-Type: ", AbslView(request.content_type),
                    "\r\nContent-Length: ", request.body.size(), "\r\n");
  } else if (MethodSendsLength(request.method)) {
    bytes.append("Content-Length: 0\r\n");
  }
  bytes.append("\r\n");
  bytes.append(request.body);

  const std::string timed_out =
      absl::StrCat("no complete response within ", FormatDuration(options_.timeout));
  internal::DirectRequest direct;
  direct.label = label;
  direct.bytes = bytes;
  const std::string_view method = request.method;
  direct.idempotent = method == "GET" || method == "HEAD" || method == "PUT" ||
                      method == "DELETE" || method == "OPTIONS";
  direct.head = method == "HEAD";
  // The deadline covers the whole exchange, body included.
  direct.deadline = clock_.MonotonicNow() + options_.timeout;
  direct.timed_out = timed_out;
  direct.stop = &request.stop;
  direct.max_response_bytes = options_.max_response_bytes;
  direct.body_spare_capacity = request.body_spare_capacity;
  direct.body_buffer = request.body_buffer;
  return direct_->Do(direct);
}

absl::Status Client::Impl::Stream(const ClientRequest& request, Duration header_timeout,
                                  const std::function<bool(std::string_view)>& on_chunk,
                                  int* status_code, std::string* error_body) {
  assert(status_code != nullptr && error_body != nullptr);
  *status_code = 0;
  error_body->clear();
  const std::string label = Label(request);
  if (header_timeout <= Duration::zero()) {
    return WithReason(
        absl::InvalidArgumentError(absl::StrCat(label, ": header_timeout must be positive")),
        "request");
  }
  absl::StatusOr<web::http::http_request> message = Prepare(request, label);
  if (!message.ok()) return message.status();

  const std::string timed_out =
      absl::StrCat("no response head within ", FormatDuration(header_timeout));
  const auto read_body = [&](Exchange& exchange, web::http::http_response& response,
                             const auto& abandoned) -> absl::Status {
    *status_code = response.status_code();
    const bool success = *status_code >= 200 && *status_code <= 299;
    if (request.on_stream_head) request.on_stream_head(*status_code);
    // The body is waited for without a deadline; only stop (or the backstop) ends a wait.
    exchange.set_deadline(Timestamp::max());

    auto stream = response.body().streambuf();
    auto buffer = std::make_shared<std::vector<uint8_t>>(kChunkBytes);
    while (true) {
      // Events are small: wait for one byte, then take whatever else is already there (a
      // read of a whole buffer would wait until the buffer is full).
      pplx::task<size_t> read = stream.getn(buffer->data(), 1);
      if (WaitResult r = exchange.Wait(read, buffer); r != WaitResult::kDone) return abandoned(r);
      size_t n = read.get();
      if (n == 0) return absl::OkStatus();
      n += TakeAvailable(stream, buffer->data() + 1, buffer->size() - 1);
      const std::string_view chunk(reinterpret_cast<const char*>(buffer->data()), n);
      if (!success) {
        error_body->append(chunk.substr(0, kErrorBodyBytes - error_body->size()));
        if (error_body->size() >= kErrorBodyBytes) break;
        continue;
      }
      if (!on_chunk(chunk)) break;
    }
    exchange.Cancel();  // the rest of the body is not wanted: close the connection
    return absl::OkStatus();
  };
  return Send<absl::Status>(*message, request, label, clock_.MonotonicNow() + header_timeout,
                            timed_out, read_body);
}

template <typename Result, typename ReadBody>
Result Client::Impl::Send(web::http::http_request& message, const ClientRequest& request,
                          const std::string& label, Timestamp head_deadline,
                          const std::string& timed_out, ReadBody read_body) {
  const uint64_t verify_failures_before = verify_log_->failures();
  Exchange exchange(clock_, head_deadline, request.stop);
  auto abandoned = [&](WaitResult result) { return Abandoned(exchange, result, label, timed_out); };
  bool after_head = false;
  try {
    pplx::task<web::http::http_response> response_task =
        client_->request(message, exchange.token());
    if (WaitResult r = exchange.Wait(response_task, nullptr); r != WaitResult::kDone) {
      return abandoned(r);
    }
    web::http::http_response response = response_task.get();
    after_head = true;
    return read_body(exchange, response, abandoned);
  } catch (const pplx::task_canceled&) {
    // Cancelled from outside a wait: by stop, or by the deadline between two waits.
    return abandoned(exchange.stopped() ? WaitResult::kStopped : WaitResult::kDeadline);
  } catch (const std::exception& e) {
    if (exchange.stopped()) return abandoned(WaitResult::kStopped);
    // A body without a deadline (a stream) has Timestamp::max() here, never past.
    if (exchange.past_deadline()) return abandoned(WaitResult::kDeadline);
    return FromException(label, e, after_head, verify_log_->ReasonSince(verify_failures_before));
  }
}

absl::StatusOr<std::unique_ptr<Client>> Client::Create(ClientOptions options, const Clock& clock) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  RunContinuationsInline();
  const bool verify = !options.insecure_skip_tls_verify;
  web::http::client::http_client_config config;
  // A backstop per socket operation; the deadline over the whole exchange is Exchange's.
  config.set_timeout(std::chrono::duration_cast<std::chrono::microseconds>(options.timeout));
  config.set_validate_certificates(verify);
  config.set_max_redirects(0);
  internal::ClientTlsMaterial tls{options.ca_pem, options.client_cert_pem, options.client_key_pem};
  auto verify_log = std::make_shared<internal::TlsVerifyLog>();
  absl::StatusOr<std::unique_ptr<internal::DirectTransport>> direct =
      internal::DirectTransport::Create(options, verify_log, clock);
  if (!direct.ok()) return direct.status();
  config.set_ssl_context_callback([tls = std::move(tls), source = options.tls_source, verify_log,
                                   verify](boost::asio::ssl::context& context) {
    if (verify) internal::RecordVerifyFailures(context.native_handle(), verify_log);
    // Each connection's context, from the source's material when there is one.
    internal::ClientTlsMaterial material = tls;
    if (source) {
      absl::StatusOr<ClientTls> current = source();
      if (!current.ok()) {
        KLOG(ERROR) << "http client TLS setup: " << current.status();
        internal::TrustNothing(context.native_handle());
        return;
      }
      material = *std::move(current);
    }
    // Checked by Validate() (or a source that should have); should it fail now, the trust
    // store is already replaced and the certificate not presented, so the handshake fails
    // rather than trusting more.
    if (absl::Status s = internal::ApplyClientTls(context.native_handle(), material); !s.ok()) {
      KLOG(ERROR) << "http client TLS setup: " << s;
      internal::TrustNothing(context.native_handle());
    }
  });
  try {
    auto client =
        std::make_unique<web::http::client::http_client>(web::uri(options.base_url), config);
    return std::unique_ptr<Client>(new Client(std::make_unique<Impl>(
        std::move(options), clock, std::move(client), std::move(verify_log), *std::move(direct))));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("ClientOptions.base_url: ", Printable(e.what())));
  }
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

absl::StatusOr<ClientResponse> Client::Do(const ClientRequest& request) {
  return impl_->Do(request);
}

absl::Status Client::Stream(const ClientRequest& request, Duration header_timeout,
                            const std::function<bool(std::string_view chunk)>& on_chunk,
                            int* status_code, std::string* error_body) {
  return impl_->Stream(request, header_timeout, on_chunk, status_code, error_body);
}

absl::StatusOr<ClientResponse> Client::Do(std::string_view method, std::string_view path_and_query,
                                          std::string_view body, std::string_view content_type,
                                          const HeaderList& headers) {
  ClientRequest request;
  request.method = std::string(method);
  request.path_and_query = std::string(path_and_query);
  request.body = std::string(body);
  request.content_type = std::string(content_type);
  request.headers = headers;
  return impl_->Do(request);
}

absl::StatusOr<ClientResponse> Client::Get(std::string_view path_and_query,
                                           const HeaderList& headers) {
  return Do("GET", path_and_query, "", "application/json", headers);
}

absl::StatusOr<ClientResponse> Client::Post(std::string_view path_and_query, std::string_view body,
                                            std::string_view content_type,
                                            const HeaderList& headers) {
  return Do("POST", path_and_query, body, content_type, headers);
}

absl::StatusOr<ClientResponse> Client::Put(std::string_view path_and_query, std::string_view body,
                                           std::string_view content_type,
                                           const HeaderList& headers) {
  return Do("PUT", path_and_query, body, content_type, headers);
}

absl::StatusOr<ClientResponse> Client::Delete(std::string_view path_and_query,
                                              const HeaderList& headers) {
  return Do("DELETE", path_and_query, "", "application/json", headers);
}

const ClientOptions& Client::options() const { return impl_->options(); }

std::string ClientResponse::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(AbslView(key), AbslView(name))) return value;
  }
  return "";
}

std::string FailureReason(const absl::Status& status) {
  if (status.ok()) return "";
  absl::optional<absl::Cord> reason = status.GetPayload(AbslView(kReasonPayload));
  if (!reason.has_value()) return "other";
  return std::string(*reason);
}

}  // namespace kubestat::http
