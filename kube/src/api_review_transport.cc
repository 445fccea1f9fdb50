#include "kubestat/kube/api_review_transport.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/http/client.h"
#include "kubestat/kube/bearer_token.h"
#include "kubestat/kube/kube_api_tls.h"
#include "kubestat/kube/token_review.h"
#include "review_json.h"
#include "simdjson.h"

namespace kubestat::kube {
namespace {

constexpr size_t kMessageBytes = 200;

// The start of `text`: at most kMessageBytes, not cutting a UTF-8 sequence, control bytes
// as spaces (the message goes into logs).
std::string Excerpt(std::string_view text) {
  size_t n = std::min(text.size(), kMessageBytes);
  if (n < text.size()) {
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  }
  std::string out(text.substr(0, n));
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
  }
  return out;
}

// The `message` of a metav1.Status body; "" when the body is not one.
std::string StatusMessage(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS) return "";
  std::string_view message;
  if (root["message"].get(message) != simdjson::SUCCESS) return "";
  return std::string(message);
}

// spec.token of a TokenReview request body; "" otherwise.
std::string ReviewedToken(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS) return "";
  std::string_view token;
  if (root["spec"]["token"].get(token) != simdjson::SUCCESS) return "";
  return std::string(token);
}

absl::StatusCode CodeOf(int http_code) {
  if (http_code == 401) return absl::StatusCode::kUnauthenticated;
  if (http_code == 403) return absl::StatusCode::kPermissionDenied;
  if (http_code == 429 || (http_code >= 500 && http_code <= 599)) {
    return absl::StatusCode::kUnavailable;
  }
  return absl::StatusCode::kFailedPrecondition;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ApiReviewTransport>> ApiReviewTransport::Create(
    const KubeApiConfig& config, const Clock& clock, Duration timeout) {
  std::shared_ptr<BearerTokenFile> token_file;
  absl::StatusOr<http::ClientOptions> client_options = KubeApiClientOptions(config, &token_file);
  if (!client_options.ok()) return client_options.status();
  http::ClientOptions options = *std::move(client_options);
  options.timeout = timeout;
  options.max_response_bytes = kMaxReviewResponseBytes;
  absl::StatusOr<std::unique_ptr<http::Client>> client =
      http::Client::Create(std::move(options), clock);
  if (!client.ok()) {
    return absl::Status(client.status().code(),
                        absl::StrCat("kube API config: ", client.status().message()));
  }
  return std::unique_ptr<ApiReviewTransport>(
      new ApiReviewTransport(std::move(*client), std::move(token_file)));
}

ApiReviewTransport::ApiReviewTransport(std::unique_ptr<http::Client> client,
                                       std::shared_ptr<BearerTokenFile> token_file)
    : client_(std::move(client)), token_file_(std::move(token_file)) {}

ApiReviewTransport::~ApiReviewTransport() = default;

std::string ApiReviewTransport::Redacted(std::string message, std::string_view body) const {
  message = internal::Redact(std::move(message), client_->options().bearer_token);
  if (token_file_ != nullptr) {
    if (absl::StatusOr<std::string> token = token_file_->Get(); token.ok()) {
      message = internal::Redact(std::move(message), *token);
    }
  }
  return internal::Redact(std::move(message), ReviewedToken(body));
}

absl::StatusOr<std::string> ApiReviewTransport::Create(std::string_view path, std::string body) {
  http::ClientRequest request;
  request.method = "POST";
  request.path_and_query = std::string(path);
  request.content_type = "application/json";
  request.headers = {{"Accept", "application/json"}};
  request.body = std::move(body);
  absl::StatusOr<http::ClientResponse> response = client_->Do(request);
  if (!response.ok()) {
    // The client's messages hold neither tokens nor bodies.
    return absl::UnavailableError(response.status().message());
  }
  if (response->code >= 200 && response->code <= 299) return std::move(response->body);
  std::string message = StatusMessage(response->body);
  std::string detail =
      message.empty() ? "no Status message" : Excerpt(Redacted(std::move(message), request.body));
  return absl::Status(CodeOf(response->code), absl::StrCat("POST ", AbslView(path), ": HTTP ",
                                                           response->code, ": ", detail));
}

}  // namespace kubestat::kube
