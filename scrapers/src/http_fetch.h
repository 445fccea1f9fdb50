// Internal: one HTTP(S) GET with an overall deadline and a body size cap, over cpprestsdk.
//
// cpprestsdk's own timeout applies to each socket operation, so a peer that drips a few
// bytes per second would never time out; Fetch enforces one deadline over the whole
// exchange and cancels the request when it passes. The body is read in chunks and reading
// stops (the request is cancelled) as soon as it exceeds the cap. Every exception from
// cpprestsdk is caught here and becomes a Status carrying a failure reason
// (fetch_error.h). Thread-safe (http_client is).
#ifndef KUBESTAT_SCRAPERS_SRC_HTTP_FETCH_H_
#define KUBESTAT_SCRAPERS_SRC_HTTP_FETCH_H_

#include <cpprest/http_client.h>

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"

namespace kubestat::scrapers::internal {

// TLS material for a client, as PEM text (already read from files).
struct TlsMaterial {
  std::string ca_pem;           // trusted CAs; empty: the system's roots
  std::string client_cert_pem;  // client certificate chain; empty: none
  std::string client_key_pem;   // its private key
  bool insecure_skip_verify = false;
};

// Checks that the PEM blocks load into an OpenSSL context (InvalidArgument naming `what`).
[[nodiscard]] absl::Status ValidateTlsMaterial(const TlsMaterial& tls, std::string_view what);

// A client config with `tls` applied and cpprestsdk's per-operation timeout set.
web::http::client::http_client_config MakeClientConfig(const TlsMaterial& tls, Duration timeout);

struct FetchResult {
  int status_code = 0;
  std::string content_type;
  std::string body;
};

// GETs `path_and_query` with the given headers. Non-2xx answers are errors with reason
// http_<code> whose message includes the start of the body. `reserve_extra` bytes of spare
// capacity are reserved past the body (for parsers that read past the end). Triggering
// `stop` abandons the request within about 100 ms: Cancelled ("stopped").
[[nodiscard]] absl::StatusOr<FetchResult> Fetch(
    web::http::client::http_client& client, const std::string& path_and_query,
    const std::vector<std::pair<std::string, std::string>>& headers, Duration timeout,
    size_t max_bytes, size_t reserve_extra = 0,
    pplx::cancellation_token stop = pplx::cancellation_token::none());

// A streaming GET: calls `on_chunk` with each piece of the body as it arrives, until the
// body ends (OK), `on_chunk` returns false (OK), `cancel` is triggered (Cancelled), or an
// error. The response headers must arrive within `header_timeout`. Used for watches.
[[nodiscard]] absl::Status Stream(web::http::client::http_client& client,
                                  const std::string& path_and_query,
                                  const std::vector<std::pair<std::string, std::string>>& headers,
                                  Duration header_timeout, const pplx::cancellation_token& cancel,
                                  const std::function<bool(std::string_view)>& on_chunk,
                                  int* status_code, std::string* error_body);

}  // namespace kubestat::scrapers::internal

#endif  // KUBESTAT_SCRAPERS_SRC_HTTP_FETCH_H_
