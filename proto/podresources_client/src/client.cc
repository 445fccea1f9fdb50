#include "kubestat/podresources/client.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "convert.h"
#include "podresources/v1/api.grpc.pb.h"

namespace kubestat::podresources {
namespace {

// sizeof(sockaddr_un::sun_path) on Linux is 108, including the terminating NUL.
constexpr size_t kMaxSocketPathBytes = 107;
// Below this no real response fits; a smaller value is a unit mistake.
constexpr int kMinReceiveMessageBytes = 4096;
// The kubelet's wording for a call its token bucket rejected.
constexpr char kRateLimitMessage[] = "rejected by rate limit";

}  // namespace

absl::Status ClientOptions::Validate() const {
  if (socket_path.empty()) {
    return absl::InvalidArgumentError("podresources socket_path must not be empty");
  }
  if (socket_path.size() > kMaxSocketPathBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("podresources socket_path \"", socket_path, "\" is ", socket_path.size(),
                     " bytes; a unix socket path holds at most ", kMaxSocketPathBytes));
  }
  if (call_timeout <= absl::ZeroDuration() || call_timeout == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("podresources call_timeout must be positive and finite, got ",
                     absl::FormatDuration(call_timeout)));
  }
  if (max_receive_message_bytes < kMinReceiveMessageBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("podresources max_receive_message_bytes must be at least ",
                     kMinReceiveMessageBytes, ", got ", max_receive_message_bytes));
  }
  return absl::OkStatus();
}

struct PodResourcesClient::Rpc {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;
};

absl::StatusOr<std::unique_ptr<PodResourcesClient>> PodResourcesClient::Create(
    ClientOptions options) {
  if (absl::Status valid = options.Validate(); !valid.ok()) return valid;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  // A local socket: retry a restarted kubelet soon rather than after gRPC's 1s-120s backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  auto rpc = std::make_unique<Rpc>();
  rpc->channel = grpc::CreateCustomChannel(absl::StrCat("unix:", options.socket_path),
                                           grpc::InsecureChannelCredentials(), args);
  rpc->stub = v1::PodResourcesLister::NewStub(rpc->channel);
  return std::unique_ptr<PodResourcesClient>(
      new PodResourcesClient(std::move(options), std::move(rpc)));
}

PodResourcesClient::PodResourcesClient(ClientOptions options, std::unique_ptr<Rpc> rpc)
    : options_(std::move(options)), rpc_(std::move(rpc)) {}

PodResourcesClient::~PodResourcesClient() = default;

ClientStats PodResourcesClient::stats() const {
  return ClientStats{.calls = calls_.load(std::memory_order_relaxed),
                     .failures = failures_.load(std::memory_order_relaxed),
                     .rate_limited = rate_limited_.load(std::memory_order_relaxed),
                     .unavailable = unavailable_.load(std::memory_order_relaxed),
                     .deadline_exceeded = deadline_exceeded_.load(std::memory_order_relaxed),
                     .unimplemented = unimplemented_.load(std::memory_order_relaxed)};
}

absl::Status PodResourcesClient::CallFailed(const char* method, int grpc_code,
                                            const std::string& message) {
  failures_.fetch_add(1, std::memory_order_relaxed);
  const std::string where =
      absl::StrCat("podresources ", method, " on unix socket ", options_.socket_path);
  switch (static_cast<grpc::StatusCode>(grpc_code)) {
    case grpc::StatusCode::UNAVAILABLE:
      unavailable_.fetch_add(1, std::memory_order_relaxed);
      return absl::UnavailableError(absl::StrCat(where, ": no kubelet answers (", message, ")"));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      deadline_exceeded_.fetch_add(1, std::memory_order_relaxed);
      return absl::DeadlineExceededError(absl::StrCat(where, ": no answer within call_timeout ",
                                                      absl::FormatDuration(options_.call_timeout),
                                                      " (", message, ")"));
    case grpc::StatusCode::UNIMPLEMENTED:
      unimplemented_.fetch_add(1, std::memory_order_relaxed);
      return absl::UnimplementedError(
          absl::StrCat(where, ": the kubelet does not implement ", method, " (", message, ")"));
    case grpc::StatusCode::UNKNOWN:
      // The kubelet's plain Go errors: a method switched off by its feature gate
      // ("PodResources API GetAllocatableResources disabled"), or Get of an unknown pod.
      if (absl::StrContains(message, "disabled")) {
        unimplemented_.fetch_add(1, std::memory_order_relaxed);
        return absl::UnimplementedError(absl::StrCat(where, ": the kubelet has ", method,
                                                     " switched off by a feature gate (", message,
                                                     ")"));
      }
      if (absl::StrContains(message, "not found")) {
        return absl::NotFoundError(absl::StrCat(where, ": ", message));
      }
      return absl::UnknownError(absl::StrCat(where, ": ", message));
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      if (absl::StrContains(message, kRateLimitMessage)) {
        rate_limited_.fetch_add(1, std::memory_order_relaxed);
        return absl::ResourceExhaustedError(
            absl::StrCat(where, ": ", kRateLimitMessage,
                         " (the kubelet allows 100 calls/s, burst 10); retry later"));
      }
      if (absl::StrContains(message, "larger than max")) {
        return absl::ResourceExhaustedError(
            absl::StrCat(where, ": response larger than max_receive_message_bytes ",
                         options_.max_receive_message_bytes, " (", message, ")"));
      }
      return absl::ResourceExhaustedError(absl::StrCat(where, ": ", message));
    default:
      // gRPC and absl share the canonical code numbering.
      return absl::Status(static_cast<absl::StatusCode>(grpc_code),
                          absl::StrCat(where, ": ", message));
  }
}

namespace {

// Unavailable with a clear message when the socket file is missing or is not a socket;
// OK otherwise (whether something listens is for the connection attempt to tell).
absl::Status CheckSocket(const std::string& path, const char* method) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    return absl::UnavailableError(absl::StrCat("podresources ", method, ": socket ", path,
                                               " is not reachable (", std::strerror(err),
                                               "); is the kubelet running on this node?"));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::UnavailableError(
        absl::StrCat("podresources ", method, ": ", path, " exists but is not a unix socket"));
  }
  return absl::OkStatus();
}

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(
                           absl::ToChronoNanoseconds(timeout)));
}

}  // namespace

absl::Status PodResourcesClient::BeginCall(const char* method) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  absl::Status socket = CheckSocket(options_.socket_path, method);
  if (!socket.ok()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    unavailable_.fetch_add(1, std::memory_order_relaxed);
  }
  return socket;
}

absl::StatusOr<std::vector<PodResources>> PodResourcesClient::List() {
  constexpr char kMethod[] = "List";
  if (absl::Status started = BeginCall(kMethod); !started.ok()) return started;
  grpc::ClientContext context;
  SetDeadline(context, options_.call_timeout);
  v1::ListPodResourcesResponse response;
  grpc::Status status = rpc_->stub->List(&context, v1::ListPodResourcesRequest(), &response);
  if (!status.ok()) return CallFailed(kMethod, status.error_code(), status.error_message());
  return FromProto(response);
}

absl::StatusOr<AllocatableResources> PodResourcesClient::GetAllocatableResources() {
  constexpr char kMethod[] = "GetAllocatableResources";
  if (absl::Status started = BeginCall(kMethod); !started.ok()) return started;
  grpc::ClientContext context;
  SetDeadline(context, options_.call_timeout);
  v1::AllocatableResourcesResponse response;
  grpc::Status status =
      rpc_->stub->GetAllocatableResources(&context, v1::AllocatableResourcesRequest(), &response);
  if (!status.ok()) return CallFailed(kMethod, status.error_code(), status.error_message());
  return FromProto(response);
}

absl::StatusOr<PodResources> PodResourcesClient::Get(std::string_view namespace_name,
                                                     std::string_view name) {
  constexpr char kMethod[] = "Get";
  if (absl::Status started = BeginCall(kMethod); !started.ok()) return started;
  grpc::ClientContext context;
  SetDeadline(context, options_.call_timeout);
  v1::GetPodResourcesRequest request;
  request.set_pod_name(std::string(name));
  request.set_pod_namespace(std::string(namespace_name));
  v1::GetPodResourcesResponse response;
  grpc::Status status = rpc_->stub->Get(&context, request, &response);
  if (!status.ok()) return CallFailed(kMethod, status.error_code(), status.error_message());
  return FromProto(response.pod_resources());
}

}  // namespace kubestat::podresources
