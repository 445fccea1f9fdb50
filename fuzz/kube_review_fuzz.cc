// Feeds arbitrary bytes to the parsers of the authentication and authorization code. The
// first byte picks the parser, the rest is its input:
//   'T' a TokenReview response, 'S' a SubjectAccessReview response, 'R' a request
//   (method, path and query on three lines), 'F' a --token-auth-file.
// Errors must be InvalidArgument with a message; results must be usable (a parsed request
// builds a SubjectAccessReview body; a token file error is one of the fixed messages, so
// nothing of the file, which holds secrets, is quoted back).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "kubestat/kube/request_attributes.h"
#include "kubestat/kube/subject_access_review.h"
#include "kubestat/kube/token_file.h"
#include "kubestat/kube/token_review.h"

namespace {

void CheckError(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument || status.message().empty()) {
    std::abort();
  }
}

std::string_view NextLine(std::string_view& rest) {
  const size_t newline = rest.find('\n');
  std::string_view line = rest.substr(0, newline);
  rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char selector = static_cast<char>(data[0]);
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (selector) {
    case 'T': {
      absl::StatusOr<kubestat::kube::TokenReviewStatus> status =
          kubestat::kube::ParseTokenReviewResponse(input);
      if (!status.ok()) CheckError(status.status());
      break;
    }
    case 'S': {
      absl::StatusOr<kubestat::kube::SubjectAccessReviewStatus> status =
          kubestat::kube::ParseSubjectAccessReviewResponse(input);
      if (!status.ok()) {
        CheckError(status.status());
      } else if (status->allowed && status->denied) {
        std::abort();
      } else {
        (void)kubestat::kube::AnswerFromStatus(*status);
      }
      break;
    }
    case 'R': {
      const std::string_view method = NextLine(input);
      const std::string_view path = NextLine(input);
      const std::string_view query = input;
      absl::StatusOr<kubestat::kube::RequestAttributes> attrs =
          kubestat::kube::ParseRequestAttributes(method, path, query);
      if (!attrs.ok()) {
        CheckError(attrs.status());
        break;
      }
      if (!attrs->resource_request && !attrs->resource.empty()) std::abort();
      const std::string body =
          kubestat::kube::BuildSubjectAccessReviewRequest(kubestat::kube::UserInfo{}, *attrs);
      if (body.empty()) std::abort();
      break;
    }
    case 'F': {
      absl::StatusOr<kubestat::kube::StaticTokens> tokens =
          kubestat::kube::ParseTokenAuthFile(input, "fuzz.csv");
      if (!tokens.ok()) {
        CheckError(tokens.status());
        // Messages are fixed texts after the line number: nothing of the input (which may
        // hold tokens) is quoted back.
        std::string_view message(tokens.status().message().data(),
                                 tokens.status().message().size());
        constexpr std::string_view kPrefix = "token file fuzz.csv: line ";
        if (!message.starts_with(kPrefix)) std::abort();
        message.remove_prefix(kPrefix.size());
        const size_t digits = message.find_first_not_of("0123456789");
        if (digits == 0 || digits == std::string_view::npos) std::abort();
        message.remove_prefix(digits);
        constexpr std::string_view kColumns =
            ": must have at least 3 columns (token, user name, user uid), found ";
        const bool known = message == ": empty user name" ||
                           message == ": bare \" in non-quoted field" ||
                           message == ": extraneous or missing \" in quoted field" ||
                           message == ": quoted field is not closed" ||
                           (message.starts_with(kColumns) && message.size() > kColumns.size() &&
                            message.substr(kColumns.size()).find_first_not_of("0123456789") ==
                                std::string_view::npos);
        if (!known) std::abort();
      }
      break;
    }
    default:
      break;
  }
  return 0;
}
