#include <algorithm>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <charconv>
#include <cstdint>
#include <limits>

#include "kubestat/core/str_cat.h"
#include "kubestat/http/server_request_reader.h"
#include "server_strings.h"

namespace kubestat::http {
namespace {

namespace beast_http = boost::beast::http;
using boost::beast::error_code;

// Beast refuses with bad_version both a version it does not speak and a request line that
// does not end in CRLF. True for the first: a well-formed "HTTP/<digits>.<digits>" token
// other than 1.0 and 1.1 (505); the rest is malformed (400). `bytes` starts at the line.
bool HasOtherWellFormedVersion(std::string_view bytes) {
  const size_t end = bytes.find_first_of("\r\n");
  std::string_view line = bytes.substr(0, end);
  const size_t space = line.rfind(' ');
  if (space == std::string_view::npos) return false;
  std::string_view version = line.substr(space + 1);
  if (version.substr(0, 5) != "HTTP/") return false;
  version.remove_prefix(5);
  const size_t dot = version.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == version.size()) return false;
  auto all_digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!all_digits(version.substr(0, dot)) || !all_digits(version.substr(dot + 1))) return false;
  return version != "1.0" && version != "1.1";
}

ApiError BadRequest(std::string_view message) { return ApiError::BadRequest(message); }

}  // namespace

std::string_view RejectionReasonLabel(RejectionReason reason) {
  switch (reason) {
    case RejectionReason::kMalformed:
      return "malformed";
    case RejectionReason::kMethodNotAllowed:
      return "method_not_allowed";
    case RejectionReason::kTimeout:
      return "timeout";
    case RejectionReason::kBodyTooLarge:
      return "body_too_large";
    case RejectionReason::kUriTooLong:
      return "uri_too_long";
    case RejectionReason::kHeaderTooLarge:
      return "header_too_large";
    case RejectionReason::kTooManyHeaders:
      return "too_many_headers";
    case RejectionReason::kNotImplemented:
      return "not_implemented";
    case RejectionReason::kVersionNotSupported:
      return "version_not_supported";
    case RejectionReason::kOverCapacity:
      return "over_capacity";
    case RejectionReason::kOverloaded:
      return "overloaded";
    case RejectionReason::kNotFound:
      return "not_found";
  }
  return "malformed";
}

// Beast's callbacks fill the reader; a limit they detect sets the reader's rejection and
// stops Beast with an error code (any code: the reader's rejection is what counts).
class RequestReader::Parser final : public beast_http::basic_parser<true> {
 public:
  explicit Parser(RequestReader& reader) : reader_(reader) {
    // Beast checks the head against this too, but counts only the bytes it has not yet
    // consumed; RequestReader::Parse counts the whole head.
    header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(reader.limits_.max_header_bytes, std::numeric_limits<uint32_t>::max())));
    body_limit(static_cast<std::uint64_t>(reader.limits_.max_body_bytes));
    // One step per put(), so Parse() knows exactly where the head ends.
    eager(false);
  }

  size_t field_count = 0;
  size_t host_count = 0;
  bool has_transfer_encoding = false;
  bool has_content_length = false;
  bool expect_continue = false;
  bool rejected = false;

 private:
  void Stop(error_code& ec) {
    rejected = true;
    ec = beast_http::error::bad_field;
  }

  void on_request_impl(beast_http::verb, boost::beast::string_view method,
                       boost::beast::string_view target, int version, error_code& ec) override {
    RequestReader& r = reader_;
    r.saw_request_line_ = true;
    r.method_.assign(method.data(), method.size());
    r.target_.assign(target.data(), target.size());
    r.version_ = version;
    if (target.size() > r.limits_.max_target_bytes) {
      r.Reject(RejectionReason::kUriTooLong,
               ApiError(414, StatusReason::kUnknown,
                        StrCat("request-target of ", target.size(), " bytes exceeds the limit of ",
                               r.limits_.max_target_bytes, " bytes")));
      return Stop(ec);
    }
    const bool allowed =
        method != "TRACE" && method != "CONNECT" &&
        std::find(r.limits_.allowed_methods.begin(), r.limits_.allowed_methods.end(),
                  std::string_view(method.data(), method.size())) !=
            r.limits_.allowed_methods.end();
    if (!allowed) {
      r.Reject(RejectionReason::kMethodNotAllowed,
               ApiError(405, StatusReason::kMethodNotAllowed,
                        StrCat("the server does not allow the method ",
                               std::string_view(method.data(), method.size()))));
      return Stop(ec);
    }
    const bool origin_form = !target.empty() && target[0] == '/';
    const bool asterisk_form = target == "*" && method == "OPTIONS";
    if (!origin_form && !asterisk_form) {
      r.Reject(RejectionReason::kMalformed,
               BadRequest("the request-target must be an absolute path (origin-form)"));
      return Stop(ec);
    }
  }

  void on_response_impl(int, boost::beast::string_view, int, error_code& ec) override {
    ec = beast_http::error::bad_method;  // never called for a request parser
  }

  void on_field_impl(beast_http::field name, boost::beast::string_view name_string,
                     boost::beast::string_view value, error_code& ec) override {
    RequestReader& r = reader_;
    if (++field_count > r.limits_.max_header_count) {
      r.Reject(RejectionReason::kTooManyHeaders,
               ApiError(431, StatusReason::kUnknown,
                        StrCat("more than ", r.limits_.max_header_count,
                               " header fields in the request")));
      return Stop(ec);
    }
    std::string_view v(value.data(), value.size());
    switch (name) {
      case beast_http::field::content_length: {
        has_content_length = true;
        // Beast accepts any uint64; Go (and so Kubernetes) refuses more than 2^63-1.
        uint64_t length = 0;
        const std::string_view digits = internal::TrimOws(v);
        const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), length);
        if (digits.empty() || parsed.ec != std::errc() ||
            parsed.ptr != digits.data() + digits.size() ||
            length > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          r.Reject(RejectionReason::kMalformed, BadRequest("bad Content-Length"));
          return Stop(ec);
        }
        break;
      }
      case beast_http::field::transfer_encoding:
        has_transfer_encoding = true;
        if (!internal::EqualsIgnoreCase(internal::TrimOws(v), "chunked")) {
          r.Reject(RejectionReason::kNotImplemented,
                   ApiError(501, StatusReason::kUnknown,
                            "unsupported Transfer-Encoding: only chunked is implemented"));
          return Stop(ec);
        }
        break;
      case beast_http::field::host:
        ++host_count;
        break;
      case beast_http::field::expect:
        if (internal::EqualsIgnoreCase(internal::TrimOws(v), "100-continue")) {
          expect_continue = true;
        }
        break;
      default:
        break;
    }
    r.headers_.emplace_back(std::string(name_string.data(), name_string.size()), std::string(v));
  }

  void on_header_impl(error_code& ec) override {
    RequestReader& r = reader_;
    if (has_transfer_encoding && has_content_length) {
      r.Reject(RejectionReason::kMalformed,
               BadRequest("a request may not carry both Transfer-Encoding and Content-Length"));
      return Stop(ec);
    }
    if (r.version_ == 11 && host_count != 1) {
      r.Reject(
          RejectionReason::kMalformed,
          BadRequest(host_count == 0 ? "missing required Host header" : "too many Host headers"));
      return Stop(ec);
    }
    r.keep_alive_ = keep_alive();
  }

  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         error_code&) override {
    // Grow with the bytes that arrive, not with what the client declared.
    if (content_length) {
      reader_.body_.reserve(std::min<uint64_t>(*content_length, 64 * 1024));
    }
  }

  size_t on_body_impl(boost::beast::string_view body, error_code& ec) override {
    return Append(body, ec);
  }

  void on_chunk_header_impl(std::uint64_t size, boost::beast::string_view,
                            error_code& ec) override {
    if (size > reader_.limits_.max_body_bytes -
                   std::min(reader_.limits_.max_body_bytes, reader_.body_.size())) {
      TooLarge(ec);
    }
  }

  size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                            error_code& ec) override {
    return Append(body, ec);
  }

  void on_finish_impl(error_code&) override {}

  size_t Append(boost::beast::string_view body, error_code& ec) {
    if (reader_.body_.size() + body.size() > reader_.limits_.max_body_bytes) {
      TooLarge(ec);
      return 0;
    }
    reader_.body_.append(body.data(), body.size());
    return body.size();
  }

  void TooLarge(error_code& ec) {
    reader_.Reject(RejectionReason::kBodyTooLarge, ApiError::RequestEntityTooLarge(StrCat(
                                                       "the request body exceeds the limit of ",
                                                       reader_.limits_.max_body_bytes, " bytes")));
    Stop(ec);
  }

  RequestReader& reader_;
};

RequestReader::RequestReader(RequestReaderLimits limits) : limits_(std::move(limits)) { Reset(); }

RequestReader::~RequestReader() = default;

void RequestReader::Reset() {
  parser_ = std::make_unique<Parser>(*this);
  state_ = State::kNeedMore;
  head_consumed_ = 0;
  stalled_at_ = 0;
  started_ = false;
  saw_request_line_ = false;
  method_.clear();
  target_.clear();
  version_ = 11;
  headers_.clear();
  body_.clear();
  keep_alive_ = true;
  rejection_.reset();
}

bool RequestReader::started() const { return started_; }
bool RequestReader::head_complete() const { return parser_->is_header_done(); }
bool RequestReader::expects_continue() const {
  return parser_->is_header_done() && version_ == 11 && parser_->expect_continue &&
         !parser_->is_done();
}

void RequestReader::Reject(RejectionReason reason, ApiError error) {
  if (rejection_ == nullptr) {
    rejection_ = std::make_unique<Rejection>(Rejection{reason, std::move(error)});
  }
  state_ = State::kRejected;
}

RequestReader::State RequestReader::Parse(std::string_view bytes, size_t* consumed) {
  *consumed = 0;
  if (state_ != State::kNeedMore) return state_;
  // Keep-alive clients may send a stray CRLF between requests (RFC 9112 §2.2).
  if (!started_) {
    while (*consumed < bytes.size() && (bytes[*consumed] == '\r' || bytes[*consumed] == '\n')) {
      ++*consumed;
    }
    bytes.remove_prefix(*consumed);
    if (bytes.empty()) return state_;
    started_ = true;
  }
  // Beast keeps its place only in what it consumed: it reads the unconsumed bytes again
  // from their start, and needs more of them than last time to get further.
  if (bytes.size() <= stalled_at_) return state_;
  // Offered again a chunk header it stalled on, Beast 1.74 parses it from its start and
  // asserts that a last chunk comes with at least 5 bytes ("0\r\n" and more). A chunked
  // body always ends with at least that much ("0\r\n\r\n"), so fewer bytes wait for more.
  if (stalled_at_ > 0 && parser_->is_header_done() && parser_->chunked() && bytes.size() < 5) {
    return state_;
  }
  stalled_at_ = 0;
  while (!bytes.empty() && state_ == State::kNeedMore) {
    const bool in_head = !parser_->is_header_done();
    error_code ec;
    const size_t used = parser_->put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
    *consumed += used;
    if (in_head) {
      // The whole head counts, consumed or still waiting for its end.
      size_t head_bytes = head_consumed_ + used;
      if (!parser_->is_header_done()) {
        head_bytes = head_consumed_ + bytes.size();
        head_consumed_ += used;
      }
      if (head_bytes > limits_.max_header_bytes && !parser_->rejected) {
        if (!saw_request_line_) {
          Reject(RejectionReason::kUriTooLong,
                 ApiError(414, StatusReason::kUnknown,
                          StrCat("request line exceeds the limit of ", limits_.max_header_bytes,
                                 " bytes")));
        } else {
          Reject(RejectionReason::kHeaderTooLarge,
                 ApiError(431, StatusReason::kUnknown,
                          StrCat("request header fields exceed the limit of ",
                                 limits_.max_header_bytes, " bytes")));
        }
        return state_;
      }
    }
    bytes.remove_prefix(used);
    if (parser_->rejected) return state_;
    if (ec == beast_http::error::need_more) {
      stalled_at_ = bytes.size();
      return state_;
    }
    if (ec) {
      if (ec == beast_http::error::header_limit) {
        Reject(saw_request_line_ ? RejectionReason::kHeaderTooLarge : RejectionReason::kUriTooLong,
               ApiError(saw_request_line_ ? 431 : 414, StatusReason::kUnknown,
                        StrCat(saw_request_line_ ? "request header fields" : "request line",
                               " exceed the limit of ", limits_.max_header_bytes, " bytes")));
      } else if (ec == beast_http::error::body_limit) {
        Reject(RejectionReason::kBodyTooLarge,
               ApiError::RequestEntityTooLarge(StrCat("the request body exceeds the limit of ",
                                                      limits_.max_body_bytes, " bytes")));
      } else if (ec == beast_http::error::bad_version && !saw_request_line_ &&
                 HasOtherWellFormedVersion(bytes)) {
        Reject(RejectionReason::kVersionNotSupported,
               ApiError(505, StatusReason::kUnknown,
                        "HTTP version not supported: only HTTP/1.0 and HTTP/1.1 are"));
      } else {
        Reject(RejectionReason::kMalformed,
               BadRequest(StrCat("malformed HTTP request: ", ec.message())));
      }
      return state_;
    }
    if (parser_->is_done()) {
      state_ = State::kComplete;
      return state_;
    }
    if (used == 0) {  // Beast wants more bytes before it can go on
      stalled_at_ = bytes.size();
      return state_;
    }
  }
  return state_;
}

RequestReader::State RequestReader::Eof() {
  if (state_ != State::kNeedMore || !started_) return state_;
  Reject(RejectionReason::kMalformed, BadRequest("the request ended before it was complete"));
  return state_;
}

}  // namespace kubestat::http
