#include "http_fetch.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <boost/asio/ssl.hpp>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/scrapers/fetch_error.h"

namespace kubestat::scrapers::internal {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;
constexpr size_t kChunkBytes = size_t{64} * 1024;

// Completion flag shared with a task continuation, so a waiter can give up at a deadline
// without blocking on the task.
struct Completion {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
};

// Waits until `task` completes or `deadline` passes (or `cancel` is triggered). Returns
// whether it completed. The continuation keeps `keep_alive` (e.g. the buffer a read writes
// into) alive until the task really ends, and observes its exception.
template <typename T>
bool WaitFor(const pplx::task<T>& task, SteadyTime deadline, std::shared_ptr<void> keep_alive,
             const pplx::cancellation_token* cancel = nullptr) {
  auto completion = std::make_shared<Completion>();
  task.then([completion, keep_alive = std::move(keep_alive)](pplx::task<T> finished) {
    try {
      finished.wait();
    } catch (...) {
      // Observed by the waiter through task.get(), or abandoned after a timeout.
    }
    std::lock_guard<std::mutex> lock(completion->mu);
    completion->done = true;
    completion->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(completion->mu);
  while (!completion->done) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    if (cancel != nullptr && cancel->is_canceled()) return false;
    auto slice = cancel != nullptr ? std::min<std::chrono::steady_clock::duration>(
                                         deadline - now, std::chrono::milliseconds(100))
                                   : deadline - now;
    completion->cv.wait_for(lock, slice);
  }
  return true;
}

// A cancellation source of its own that is also cancelled when `parent` is, for as long as
// it lives. pplx's create_linked_source never removes its callback from the parent, so each
// request would leave one behind on a long-lived parent (the discovery's stop token).
class LinkedCancellation {
 public:
  explicit LinkedCancellation(pplx::cancellation_token parent) : parent_(std::move(parent)) {
    if (parent_.is_cancelable()) {
      registration_ = parent_.register_callback([source = source_] { source.cancel(); });
      registered_ = true;
    }
  }
  ~LinkedCancellation() {
    if (registered_) parent_.deregister_callback(registration_);
  }
  LinkedCancellation(const LinkedCancellation&) = delete;
  LinkedCancellation& operator=(const LinkedCancellation&) = delete;

  pplx::cancellation_token token() const { return source_.get_token(); }
  void Cancel() const { source_.cancel(); }

 private:
  pplx::cancellation_token_source source_;
  pplx::cancellation_token parent_;
  pplx::cancellation_token_registration registration_;
  bool registered_ = false;
};

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

absl::Status ReasonError(absl::StatusCode code, const std::string& message,
                         std::string_view reason) {
  return WithFailureReason(absl::Status(code, message), reason);
}

absl::Status HttpStatusError(int code, std::string_view body) {
  std::string snippet(body.substr(0, 200));
  for (char& c : snippet) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  absl::StatusCode status_code = absl::StatusCode::kUnavailable;
  if (code == 401) status_code = absl::StatusCode::kUnauthenticated;
  if (code == 403) status_code = absl::StatusCode::kPermissionDenied;
  if (code == 404) status_code = absl::StatusCode::kNotFound;
  if (code == 410) status_code = absl::StatusCode::kOutOfRange;
  return ReasonError(status_code, absl::StrCat("HTTP ", code, ": ", snippet),
                     absl::StrCat("http_", code));
}

// Turns an exception from cpprestsdk into a Status. `after_headers`: the response had
// started, so a broken connection means a truncated body.
absl::Status FromException(const std::exception& e, bool after_headers) {
  std::string what = e.what();
  if (const auto* http = dynamic_cast<const web::http::http_exception*>(&e)) {
    if (http->error_code() == std::errc::timed_out) {
      return ReasonError(absl::StatusCode::kDeadlineExceeded, absl::StrCat("timed out: ", what),
                         "timeout");
    }
  }
  if (absl::StrContains(what, "SSL") || absl::StrContains(what, "ssl") ||
      absl::StrContains(what, "certificate") || absl::StrContains(what, "handshake")) {
    return ReasonError(absl::StatusCode::kUnavailable, absl::StrCat("TLS: ", what), "tls");
  }
  if (after_headers) {
    return ReasonError(absl::StatusCode::kUnavailable,
                       absl::StrCat("reading the response body: ", what), "read");
  }
  return ReasonError(absl::StatusCode::kUnavailable, absl::StrCat("connecting: ", what), "connect");
}

web::http::http_request MakeGet(const std::string& path_and_query,
                                const std::vector<std::pair<std::string, std::string>>& headers) {
  web::http::http_request request(web::http::methods::GET);
  request.set_request_uri(path_and_query);
  for (const auto& [name, value] : headers) request.headers().add(name, value);
  return request;
}

}  // namespace

absl::Status ValidateTlsMaterial(const TlsMaterial& tls, std::string_view what) {
  try {
    boost::asio::ssl::context context(boost::asio::ssl::context::tls_client);
    if (!tls.ca_pem.empty()) {
      context.add_certificate_authority(boost::asio::buffer(tls.ca_pem));
    }
    if (!tls.client_cert_pem.empty() || !tls.client_key_pem.empty()) {
      if (tls.client_cert_pem.empty() || tls.client_key_pem.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            AbslView(what), ": a client certificate needs both the certificate and the key"));
      }
      context.use_certificate_chain(boost::asio::buffer(tls.client_cert_pem));
      context.use_private_key(boost::asio::buffer(tls.client_key_pem),
                              boost::asio::ssl::context::pem);
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(what), ": unusable TLS material: ", e.what()));
  }
  return absl::OkStatus();
}

web::http::client::http_client_config MakeClientConfig(const TlsMaterial& tls, Duration timeout) {
  web::http::client::http_client_config config;
  config.set_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  config.set_validate_certificates(!tls.insecure_skip_verify);
  config.set_max_redirects(0);
  config.set_ssl_context_callback([tls](boost::asio::ssl::context& context) {
    // Material was checked by ValidateTlsMaterial; a failure here surfaces as a TLS error.
    if (!tls.ca_pem.empty()) {
      context.add_certificate_authority(boost::asio::buffer(tls.ca_pem));
    }
    if (!tls.client_cert_pem.empty()) {
      context.use_certificate_chain(boost::asio::buffer(tls.client_cert_pem));
      context.use_private_key(boost::asio::buffer(tls.client_key_pem),
                              boost::asio::ssl::context::pem);
    }
  });
  return config;
}

absl::StatusOr<FetchResult> Fetch(web::http::client::http_client& client,
                                  const std::string& path_and_query,
                                  const std::vector<std::pair<std::string, std::string>>& headers,
                                  Duration timeout, size_t max_bytes, size_t reserve_extra,
                                  pplx::cancellation_token stop) {
  const SteadyTime deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  // Cancelled at the deadline, on a size overrun, or when `stop` is.
  LinkedCancellation cancel(stop);
  // A wait that gave up: stopped, or past the deadline.
  auto abandoned = [&]() -> absl::Status {
    cancel.Cancel();
    if (stop.is_canceled()) return absl::CancelledError("stopped");
    return ReasonError(
        absl::StatusCode::kDeadlineExceeded,
        absl::StrCat("no complete response within ", timeout.count() / 1000000, "ms"), "timeout");
  };
  const pplx::cancellation_token* stop_wait = stop.is_cancelable() ? &stop : nullptr;
  bool after_headers = false;
  try {
    pplx::task<web::http::http_response> response_task =
        client.request(MakeGet(path_and_query, headers), cancel.token());
    if (!WaitFor(response_task, deadline, nullptr, stop_wait)) return abandoned();
    web::http::http_response response = response_task.get();
    after_headers = true;

    FetchResult result;
    result.status_code = response.status_code();
    result.content_type = response.headers().content_type();
    const uint64_t declared = response.headers().content_length();
    if (declared > max_bytes) {
      cancel.Cancel();
      return ReasonError(
          absl::StatusCode::kResourceExhausted,
          absl::StrCat("response larger than ", max_bytes, " bytes (", declared, " declared)"),
          "too_large");
    }
    if (declared > 0) result.body.reserve(declared + reserve_extra);

    auto stream = response.body().streambuf();
    auto buffer = std::make_shared<std::vector<uint8_t>>(kChunkBytes);
    while (true) {
      pplx::task<size_t> read = stream.getn(buffer->data(), buffer->size());
      if (!WaitFor(read, deadline, buffer, stop_wait)) return abandoned();
      size_t n = read.get();
      if (n == 0) break;
      if (result.body.size() + n > max_bytes) {
        cancel.Cancel();
        return ReasonError(absl::StatusCode::kResourceExhausted,
                           absl::StrCat("response larger than ", max_bytes, " bytes"), "too_large");
      }
      result.body.append(reinterpret_cast<const char*>(buffer->data()), n);
    }
    if (result.status_code < 200 || result.status_code > 299) {
      return HttpStatusError(result.status_code, result.body);
    }
    if (result.body.capacity() < result.body.size() + reserve_extra) {
      result.body.reserve(result.body.size() + reserve_extra);
    }
    return result;
  } catch (const pplx::task_canceled&) {
    return abandoned();
  } catch (const std::exception& e) {
    if (stop.is_canceled()) return absl::CancelledError("stopped");
    return FromException(e, after_headers);
  }
}

absl::Status Stream(web::http::client::http_client& client, const std::string& path_and_query,
                    const std::vector<std::pair<std::string, std::string>>& headers,
                    Duration header_timeout, const pplx::cancellation_token& cancel,
                    const std::function<bool(std::string_view)>& on_chunk, int* status_code,
                    std::string* error_body) {
  const SteadyTime header_deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(header_timeout);
  // Our own source, linked to the caller's, so this request can also be cancelled alone.
  LinkedCancellation linked(cancel);
  bool after_headers = false;
  try {
    pplx::task<web::http::http_response> response_task =
        client.request(MakeGet(path_and_query, headers), linked.token());
    if (!WaitFor(response_task, header_deadline, nullptr, &cancel)) {
      linked.Cancel();
      if (cancel.is_canceled()) return absl::CancelledError("stopped");
      return ReasonError(absl::StatusCode::kDeadlineExceeded, "no response headers in time",
                         "timeout");
    }
    web::http::http_response response = response_task.get();
    after_headers = true;
    *status_code = response.status_code();
    auto stream = response.body().streambuf();
    auto buffer = std::make_shared<std::vector<uint8_t>>(kChunkBytes);
    const bool ok_status = *status_code >= 200 && *status_code <= 299;
    while (true) {
      // A watch delivers small events: wait for one byte, then take whatever else is
      // already there (a read of a whole buffer would wait until the buffer is full).
      pplx::task<size_t> read = stream.getn(buffer->data(), 1);
      if (!WaitFor(read, SteadyTime::max(), buffer, &cancel)) {
        linked.Cancel();
        return absl::CancelledError("stopped");
      }
      size_t n = read.get();
      if (n == 0) break;
      n += TakeAvailable(stream, buffer->data() + 1, buffer->size() - 1);
      std::string_view chunk(reinterpret_cast<const char*>(buffer->data()), n);
      if (!ok_status) {
        if (error_body->size() < size_t{64} * 1024) error_body->append(chunk);
        continue;
      }
      if (!on_chunk(chunk)) {
        linked.Cancel();
        return absl::OkStatus();
      }
    }
    if (!ok_status) return HttpStatusError(*status_code, *error_body);
    return absl::OkStatus();
  } catch (const pplx::task_canceled&) {
    if (cancel.is_canceled()) return absl::CancelledError("stopped");
    return ReasonError(absl::StatusCode::kUnavailable, "request cancelled", "read");
  } catch (const std::exception& e) {
    if (cancel.is_canceled()) return absl::CancelledError("stopped");
    return FromException(e, after_headers);
  }
}

}  // namespace kubestat::scrapers::internal
