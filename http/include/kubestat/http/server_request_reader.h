// The server's HTTP/1.x request parser, with every limit checked as bytes arrive. It takes
// bytes and returns a parsed request or the rejection the server answers with; it does no
// I/O, so tests and the fuzz target drive it without sockets. The server (server.h) uses
// one per connection, Reset() between requests.
//
// Built on Boost.Beast's basic_parser, with what Beast does not check added here:
//   - request line longer than the head limit before it ends     -> 414 (kUriTooLong)
//   - request-target longer than max_target_bytes                -> 414 (kUriTooLong)
//   - head (request line + fields) beyond max_header_bytes       -> 431 (kHeaderTooLarge)
//   - more than max_header_count fields                          -> 431 (kTooManyHeaders)
//   - a version other than HTTP/1.0 and HTTP/1.1                 -> 505 (kVersionNotSupported)
//   - a method not in allowed_methods (TRACE, CONNECT never)     -> 405 (kMethodNotAllowed),
//     as soon as the request line is complete
//   - Content-Length above max_body_bytes, or chunks adding up to more -> 413
//     (kBodyTooLarge), from Content-Length before any body byte is read
//   - malformed bytes: bad method or target token, bare LF, obs-fold garbage, a negative,
//     non-numeric, repeated-and-different or > 2^63-1 Content-Length, Transfer-Encoding
//     with Content-Length, a missing or repeated Host in HTTP/1.1, a target that is not
//     origin-form (or "*" for OPTIONS)                          -> 400 (kMalformed)
//   - a Transfer-Encoding other than "chunked"                   -> 501 (kNotImplemented)
//
// Ownership: the views returned by the accessors point into the reader and stay valid
// until the next Parse() or Reset(). Thread-compatible.
#ifndef KUBESTAT_HTTP_SERVER_REQUEST_READER_H_
#define KUBESTAT_HTTP_SERVER_REQUEST_READER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "kubestat/apimachinery/api_error.h"

namespace kubestat::http {

// Why the server refused a request without calling the handler. The label values of
// kubestat_http_rejected_requests_total{reason} are RejectionReasonLabel() of these.
enum class RejectionReason {
  kMalformed,            // 400
  kMethodNotAllowed,     // 405
  kTimeout,              // 408
  kBodyTooLarge,         // 413
  kUriTooLong,           // 414
  kHeaderTooLarge,       // 431
  kTooManyHeaders,       // 431
  kNotImplemented,       // 501
  kVersionNotSupported,  // 505
  kOverCapacity,         // 503 (connection cap)
  kOverloaded,           // 429 (worker queue full)
  kNotFound,             // 404 (non-health path on the health listener)
};

// "malformed", "method_not_allowed", "timeout", "body_too_large", "uri_too_long",
// "header_too_large", "too_many_headers", "not_implemented", "version_not_supported",
// "over_capacity", "overloaded", "not_found".
std::string_view RejectionReasonLabel(RejectionReason reason);

// A rejection: the reason and the Status the client is sent.
struct Rejection {
  RejectionReason reason;
  ApiError error;
};

// The limits the reader enforces (a subset of ServerOptions).
struct RequestReaderLimits {
  size_t max_target_bytes = 8 * 1024;
  size_t max_header_bytes = 1024 * 1024;
  size_t max_header_count = 100;
  size_t max_body_bytes = 3 * 1024 * 1024;
  // Methods accepted (case-sensitive). TRACE and CONNECT are refused even when listed.
  std::vector<std::string> allowed_methods = {"GET",    "HEAD",  "POST",   "PUT",
                                              "DELETE", "PATCH", "OPTIONS"};
};

class RequestReader {
 public:
  enum class State {
    kNeedMore,  // give more bytes
    kComplete,  // a whole request is parsed (accessors valid)
    kRejected,  // rejection() says why; the connection must be answered and closed
  };

  explicit RequestReader(RequestReaderLimits limits);
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // Parses from the start of `bytes`, which holds every byte received and not yet
  // consumed. Sets *consumed to how many bytes were used (the caller drops them and passes
  // the rest, plus new bytes, next time). After kComplete the remaining bytes belong to
  // the next (pipelined) request: Reset() and call Parse() again. After kRejected or
  // kComplete, Parse() returns the same state without consuming.
  State Parse(std::string_view bytes, size_t* consumed);
  // The peer closed its side: a request in progress becomes a kMalformed rejection
  // (returns kRejected); with no byte of a request received it returns kNeedMore.
  State Eof();

  // Ready for a new request (keeps allocated capacity).
  void Reset();

  // True once any byte of the current request has been consumed.
  bool started() const;
  // True once the whole head of the current request has been parsed.
  bool head_complete() const;
  // After head_complete(): the request carries `Expect: 100-continue` (HTTP/1.1) and a
  // body is still to come.
  bool expects_continue() const;

  // Valid after kComplete.
  std::string_view method() const ABSL_ATTRIBUTE_LIFETIME_BOUND { return method_; }
  std::string_view target() const ABSL_ATTRIBUTE_LIFETIME_BOUND { return target_; }
  int version() const { return version_; }  // 10 or 11
  const std::vector<std::pair<std::string, std::string>>& headers() const
      ABSL_ATTRIBUTE_LIFETIME_BOUND {
    return headers_;
  }
  std::string_view body() const ABSL_ATTRIBUTE_LIFETIME_BOUND { return body_; }
  // HTTP/1.1 without `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`.
  bool keep_alive() const { return keep_alive_; }

  // Valid after kRejected.
  const Rejection& rejection() const { return *rejection_; }

 private:
  class Parser;
  friend class Parser;

  void Reject(RejectionReason reason, ApiError error);

  RequestReaderLimits limits_;
  std::unique_ptr<Parser> parser_;
  State state_ = State::kNeedMore;
  size_t head_consumed_ = 0;  // head bytes consumed so far
  // Unconsumed bytes Beast last asked more than; offering it no more than these again is
  // useless, and Beast's chunk parser asserts on it (a last chunk with a bare LF).
  size_t stalled_at_ = 0;
  bool started_ = false;
  bool saw_request_line_ = false;
  std::string method_;
  std::string target_;
  int version_ = 11;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::string body_;
  bool keep_alive_ = true;
  std::unique_ptr<Rejection> rejection_;
};

}  // namespace kubestat::http

#endif  // KUBESTAT_HTTP_SERVER_REQUEST_READER_H_
