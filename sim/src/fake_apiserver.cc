#include "fake_apiserver.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <mutex>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kubeconfig.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/file.h"
#include "kubestat/core/url.h"
#include "kubestat/sim/access_review.h"
#include "kubestat/sim/request_info.h"
#include "sim_http.h"
#include "sim_strings.h"
#include "stored_objects.h"

namespace kubestat::sim {

using http::Request;
using http::Response;
using http::StreamWriter;

namespace {

// Paths kube-apiserver's system:public-info-viewer role opens to everyone.
bool IsPublicPath(const std::string& path) {
  if (path == "/version" || path == "/version/") return true;
  for (const char* p : {"/healthz", "/livez", "/readyz"}) {
    if (path == p || (path.rfind(p, 0) == 0 && path[std::string_view(p).size()] == '/')) {
      return true;
    }
  }
  return false;
}

bool IsMetricsGroupPath(const std::string& path) {
  return path.rfind("/apis/metrics.k8s.io/", 0) == 0 || path == "/apis/metrics.k8s.io" ||
         path.rfind("/apis/metrics/", 0) == 0 || path == "/apis/metrics";
}

// The bearer token of "Authorization: Bearer <token>" (scheme in any case), or "".
std::string BearerToken(const Request& req) {
  const std::optional<std::string_view> header = req.Header("Authorization");
  if (!header) return "";
  std::string_view value = *header;
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  const size_t space = value.find(' ');
  if (space == std::string_view::npos) return "";
  std::string scheme(value.substr(0, space));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "bearer") return "";
  std::string_view token = value.substr(space + 1);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  if (token.find(' ') != std::string_view::npos) return "";
  return std::string(token);
}

// kube-apiserver's 403 for a request the rules do not allow.
ApiError ForbiddenError(const std::string& user, const RequestInfo& info) {
  const std::string why = ForbiddenMessage(user, info);
  if (!info.is_resource_request) {
    return ApiError(403, StatusReason::kForbidden, "forbidden: " + why);
  }
  return ApiError::Forbidden(info.api_group, info.resource, info.name, why);
}

std::string ApiGroupJson(std::string_view group) {
  const std::string g(group);
  return absl::StrCat("{\"name\":\"", g, "\",\"versions\":[{\"groupVersion\":\"", g,
                      "/v1\",\"version\":\"v1\"}],\"preferredVersion\":{\"groupVersion\":\"", g,
                      "/v1\",\"version\":\"v1\"}}");
}

std::string ReviewResourceListJson(std::string_view group, std::string_view resource,
                                   std::string_view kind) {
  return absl::StrCat("{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":\"",
                      std::string(group), "/v1\",\"resources\":[{\"name\":\"",
                      std::string(resource),
                      "\",\"singularName\":\"\",\"namespaced\":false,\"kind\":\"",
                      std::string(kind), "\",\"verbs\":[\"create\"]}]}");
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The PEM in `path`, or "" for no path.
std::string ReadPem(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Hands a proxied answer to the client as it arrives: the head is awaited by the handler
// (Head()), the body goes through the stream writer once the server provides it.
class ReplySink : public ProxyResponseSink {
 public:
  std::future<absl::StatusOr<ProxiedResponseHead>> Head() { return head_.get_future(); }

  void OnHead(absl::StatusOr<ProxiedResponseHead> head) override {
    head_.set_value(std::move(head));
  }

  void OnData(std::string_view chunk) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (writer_) {
      writer_->Write(std::string(chunk));
    } else {
      pending_.append(chunk);
    }
  }

  void OnEnd(absl::Status) override {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    if (writer_) writer_->Finish();
  }

  void Attach(std::shared_ptr<StreamWriter> writer) {
    std::lock_guard<std::mutex> lock(mu_);
    writer_ = std::move(writer);
    writer_->Write(std::move(pending_));
    pending_.clear();
    writer_->Flush();
    if (ended_) writer_->Finish();
  }

 private:
  std::promise<absl::StatusOr<ProxiedResponseHead>> head_;
  std::mutex mu_;
  std::string pending_;
  bool ended_ = false;
  std::shared_ptr<StreamWriter> writer_;
};

}  // namespace

FakeApiServer::FakeApiServer(const SimulatorOptions& options, const Clock& clock,
                             KubeletView& kubelets, KubeletFaults faults)
    : options_(options), clock_(clock), kubelets_(kubelets), faults_(faults) {}

FakeApiServer::~FakeApiServer() { Stop(); }

absl::Status FakeApiServer::LoadUsers() {
  if (options_.users_file.empty()) return absl::OkStatus();
  absl::StatusOr<UsersFile> users = UsersFile::Load(options_.users_file);
  if (!users.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--users-file: ", users.status().message()));
  }
  if (!options_.kubeconfig_user.empty() && users->Find(options_.kubeconfig_user) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kubeconfig-user: no user \"", options_.kubeconfig_user, "\" in ", options_.users_file));
  }
  users_.emplace(*std::move(users));
  return absl::OkStatus();
}

absl::Status FakeApiServer::Prepare(const FrontProxyFiles* front_proxy, uint64_t initial_version) {
  if (front_proxy != nullptr) {
    BackendProxyOptions proxy;
    proxy.url = options_.metrics_backend;
    proxy.ca_file = options_.metrics_backend_ca_file;
    proxy.insecure_skip_tls_verify = options_.metrics_backend_insecure_skip_tls_verify;
    proxy.client_cert_file = front_proxy->client_cert;
    proxy.client_key_file = front_proxy->client_key;
    absl::StatusOr<std::unique_ptr<BackendProxy>> backend = BackendProxy::Create(proxy);
    if (!backend.ok()) return backend.status();
    backend_ = *std::move(backend);
  }
  resources_ = std::make_unique<ApiResources>(kubelets_, clock_, initial_version,
                                              options_.watch_history, options_.model.seed);
  if (front_proxy != nullptr) {
    // As kube-apiserver publishes the front proxy's trust for the servers it aggregates.
    absl::StatusOr<std::string> ca = ReadFile(front_proxy->ca_cert, "front-proxy CA");
    if (!ca.ok()) return ca.status();
    resources_->KeepInitial(kConfigMaps, ExtensionAuthenticationConfigMap(*ca, clock_.Now()));
  }
  if (options_.default_limit_ranges) {
    for (StoredObject& lr : DefaultLimitRanges(clock_.Now())) {
      resources_->KeepInitial(kLimitRanges, std::move(lr));
    }
  }
  return absl::OkStatus();
}

absl::Status FakeApiServer::Start(const TlsFiles* tls) {
  SimServerOptions server;
  server.name = "apiserver";
  server.host = options_.apiserver_address;
  server.port = options_.apiserver_port;
  server.tls = tls;
  server.io_threads = 2;
  server.worker_threads = 8;
  absl::StatusOr<std::unique_ptr<http::Server>> started = StartSimServer(
      std::move(server), [this](const Request& req) { return Handle(req); }, registry_);
  if (!started.ok()) {
    return absl::UnavailableError(absl::StrCat("apiserver: ", started.status().message()));
  }
  server_ = *std::move(started);
  url_ = absl::StrCat(tls != nullptr ? "https://" : "http://", options_.apiserver_address, ":",
                      server_->port());
  return WriteKubeconfigs(ReadPem(tls != nullptr ? tls->ca_cert : ""));
}

absl::Status FakeApiServer::WriteKubeconfigs(const std::string& ca_pem) {
  if (!options_.kubeconfig_out.empty()) {
    // Without a users file nobody checks the token; it only has to be there.
    KubeconfigContent content{url_, "kubestat-sim", "kubestat-sim", ca_pem};
    if (users_) {
      const UserEntry* user = options_.kubeconfig_user.empty()
                                  ? &users_->users().front()
                                  : users_->Find(options_.kubeconfig_user);
      content.user = user->info.name;
      content.token = user->token;
    }
    if (absl::Status st = WriteKubeconfig(options_.kubeconfig_out, content); !st.ok()) {
      return absl::InternalError(absl::StrCat("--kubeconfig-out: ", st.message()));
    }
    kubeconfig_path_ = options_.kubeconfig_out;
  }
  if (users_ && !options_.kubeconfig_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options_.kubeconfig_dir, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat("--kubeconfig-dir: cannot create ",
                                              options_.kubeconfig_dir, ": ", ec.message()));
    }
    for (const UserEntry& user : users_->users()) {
      std::string file;
      for (char c : user.info.name) file += c == '/' ? "%2F" : std::string(1, c);
      const std::string path =
          (std::filesystem::path(options_.kubeconfig_dir) / (file + ".kubeconfig")).string();
      KubeconfigContent content{url_, user.info.name, user.token, ca_pem};
      if (absl::Status st = WriteKubeconfig(path, content); !st.ok()) {
        return absl::InternalError(absl::StrCat("--kubeconfig-dir: ", st.message()));
      }
      user_kubeconfigs_[user.info.name] = path;
    }
  }
  return absl::OkStatus();
}

void FakeApiServer::Stop() {
  // Ends proxied answers still streaming, and answers handlers waiting for a backend.
  if (backend_) backend_->Stop();
  if (resources_) resources_->Stop();
  // Closes every connection, open streams included, and joins the server's threads.
  if (server_) server_->Stop();
}

void FakeApiServer::ServiceStreams() {
  if (resources_) resources_->ServiceStreams();
}

std::string FakeApiServer::user_kubeconfig_path(const std::string& user) const {
  auto it = user_kubeconfigs_.find(user);
  return it == user_kubeconfigs_.end() ? "" : it->second;
}

Response FakeApiServer::Handle(const Request& req) {
  try {
    return Route(req);
  } catch (const std::exception& e) {
    return ReplyError(ApiError::InternalError(e.what()));
  }
}

Response FakeApiServer::Route(const Request& req) {
  const std::string path(req.path);
  const auto query = SplitQuery(req.query);
  std::vector<std::string> parts = SplitPath(path);

  const UserInfo* user = nullptr;
  if (users_ && !IsPublicPath(path)) {
    user = users_->Authenticate(BearerToken(req));
    if (user == nullptr) {
      return ReplyError(ApiError::Unauthorized());
    }
    if (!IsMetricsGroupPath(path) || options_.authorize_proxied_requests) {
      const RequestInfo info = ParseRequestInfo(std::string(req.method),
                                                PercentDecodeLenient(path, /*plus_is_space=*/false),
                                                std::string(req.query));
      if (!users_->Authorize(user->name, user->groups, info).allowed) {
        return ReplyError(ForbiddenError(user->name, info));
      }
    }
  }

  if (IsMetricsGroupPath(path)) {
    return Proxy(req, user);
  }
  if (users_ && (path == "/apis/authentication.k8s.io/v1/tokenreviews" ||
                 path == "/apis/authorization.k8s.io/v1/subjectaccessreviews")) {
    return Review(req, path);
  }
  if (parts.size() >= 2 && parts[0] == "sim" && parts[1] == "v1") {
    if (parts.size() == 6 && parts[2] == "namespaces" && parts[4] == "limitranges") {
      return resources_->ChangeStored(kLimitRanges, req, parts[3], parts[5]);
    }
    if (parts.size() == 6 && parts[2] == "namespaces" && parts[4] == "configmaps") {
      return resources_->ChangeStored(kConfigMaps, req, parts[3], parts[5]);
    }
    if (parts.size() == 6 && parts[2] == "namespaces" && parts[4] == "pods") {
      if (req.method != "DELETE") {
        return ReplyError(ApiError::MethodNotAllowed("", "pods", req.method));
      }
      return resources_->DeletePod(parts[3], parts[5]);
    }
    return ControlFaults(faults_, req, parts);
  }
  if (req.method != "GET") {
    return ReplyError(ApiError(405, StatusReason::kMethodNotAllowed,
                               "the server does not allow this method on the requested resource"));
  }
  if (std::optional<Response> discovery = Discovery(path)) return *std::move(discovery);
  if (parts.size() >= 3 && parts[0] == "api" && parts[1] == "v1") {
    if (parts[2] == "nodes" && parts.size() <= 4) {
      return resources_->Nodes(parts.size() == 4 ? parts[3] : "", query);
    }
    if (parts[2] == "pods" && parts.size() == 3) {
      return resources_->Pods("", "", query);
    }
    if (parts[2] == "limitranges" && parts.size() == 3) {
      return resources_->Stored(kLimitRanges, "", "", query);
    }
    if (parts[2] == "namespaces") {
      if (parts.size() <= 4) {
        return resources_->Namespaces(parts.size() == 4 ? parts[3] : "");
      }
      if (parts[4] == "pods" && parts.size() <= 6) {
        return resources_->Pods(parts[3], parts.size() == 6 ? parts[5] : "", query);
      }
      if (parts[4] == "limitranges" && parts.size() <= 6) {
        return resources_->Stored(kLimitRanges, parts[3], parts.size() == 6 ? parts[5] : "", query);
      }
      if (parts[4] == "configmaps" && parts.size() <= 6) {
        return resources_->Stored(kConfigMaps, parts[3], parts.size() == 6 ? parts[5] : "", query);
      }
    }
  }
  return ReplyError(ApiError(404, StatusReason::kNotFound, kNotFoundMessage));
}

std::optional<Response> FakeApiServer::Discovery(const std::string& path) const {
  if (path == "/healthz" || path == "/readyz" || path == "/livez") {
    return Reply(200, "ok", "text/plain; charset=utf-8");
  }
  if (path == "/version") {
    return Reply(
        200,
        "{\"major\":\"1\",\"minor\":\"31\",\"gitVersion\":\"v1.31.4\",\"gitCommit\":"
        "\"kubestat-sim\",\"gitTreeState\":\"clean\",\"buildDate\":\"2026-01-01T00:00:00Z\","
        "\"goVersion\":\"go1.22.0\",\"compiler\":\"gc\",\"platform\":\"linux/amd64\"}",
        kJson);
  }
  if (path == "/api") {
    return Reply(200,
                 absl::StrCat("{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],"
                              "\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\","
                              "\"serverAddress\":\"",
                              url_.substr(url_.find("//") + 2), "\"}]}"),
                 kJson);
  }
  if (path == "/apis") return Reply(200, ApiGroupList(), kJson);
  if (users_) {
    for (const auto& [group, resource, kind] :
         {std::tuple<std::string, std::string, std::string>{"authentication.k8s.io", "tokenreviews",
                                                            "TokenReview"},
          {"authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview"}}) {
      if (path == "/apis/" + group) {
        return Reply(200,
                     absl::StrCat("{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",",
                                  ApiGroupJson(group).substr(1)),
                     kJson);
      }
      if (path == "/apis/" + group + "/v1") {
        return Reply(200, ReviewResourceListJson(group, resource, kind), kJson);
      }
    }
  }
  if (path == "/api/v1") {
    return Reply(200,
                 "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
                 "{\"name\":\"namespaces\",\"singularName\":\"namespace\",\"namespaced\":false,"
                 "\"kind\":\"Namespace\",\"verbs\":[\"get\",\"list\"],\"shortNames\":[\"ns\"]},"
                 "{\"name\":\"nodes\",\"singularName\":\"node\",\"namespaced\":false,\"kind\":"
                 "\"Node\",\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":[\"no\"]},"
                 "{\"name\":\"configmaps\",\"singularName\":\"configmap\",\"namespaced\":true,"
                 "\"kind\":\"ConfigMap\",\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":"
                 "[\"cm\"]},"
                 "{\"name\":\"limitranges\",\"singularName\":\"limitrange\",\"namespaced\":true,"
                 "\"kind\":\"LimitRange\",\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":"
                 "[\"limits\"]},"
                 "{\"name\":\"pods\",\"singularName\":\"pod\",\"namespaced\":true,\"kind\":\"Pod\","
                 "\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":[\"po\"],\"categories\":"
                 "[\"all\"]}]}",
                 kJson);
  }
  return std::nullopt;
}

std::string FakeApiServer::ApiGroupList() const {
  std::string groups;
  if (users_) {
    groups = absl::StrCat(ApiGroupJson("authentication.k8s.io"), ",",
                          ApiGroupJson("authorization.k8s.io"));
  }
  if (backend_) {
    if (!groups.empty()) groups += ",";
    groups +=
        // Both versions the backend serves, v1 preferred, as two APIService registrations
        // (v1.metrics.k8s.io, v1beta1.metrics.k8s.io) show them.
        "{\"name\":\"metrics.k8s.io\",\"versions\":[{\"groupVersion\":\"metrics.k8s.io/"
        "v1\",\"version\":\"v1\"},{\"groupVersion\":\"metrics.k8s.io/v1beta1\",\"version\":"
        "\"v1beta1\"}],\"preferredVersion\":{\"groupVersion\":\"metrics.k8s.io/v1\","
        "\"version\":\"v1\"}},"
        "{\"name\":\"metrics\",\"versions\":[{\"groupVersion\":\"metrics/v1alpha1\","
        "\"version\":\"v1alpha1\"}],\"preferredVersion\":{\"groupVersion\":"
        "\"metrics/v1alpha1\",\"version\":\"v1alpha1\"}}";
  }
  return absl::StrCat("{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[", groups,
                      "]}");
}

Response FakeApiServer::Review(const Request& req, const std::string& path) {
  if (req.method != "POST") {
    const bool tokens = path.find("tokenreviews") != std::string::npos;
    return ReplyError(ApiError::MethodNotAllowed(
        tokens ? "authentication.k8s.io" : "authorization.k8s.io",
        tokens ? "tokenreviews" : "subjectaccessreviews", std::string(req.method)));
  }
  const std::string type(req.Header("Content-Type").value_or(""));
  if (!type.empty() && type.rfind("application/json", 0) != 0) {
    return ReplyError(ApiError::UnsupportedMediaType(
        absl::StrCat("the body of the request was in an unknown format - "
                     "accepted media types include: application/json")));
  }
  absl::StatusOr<std::string> body = ReadBody(req, kReviewBodyLimit);
  if (!body.ok()) {
    return ReplyError(ApiError::FromStatus(body.status()));
  }
  absl::StatusOr<std::string> answer = path.find("tokenreviews") != std::string::npos
                                           ? ReviewToken(*body, *users_)
                                           : ReviewSubjectAccess(*body, *users_);
  if (!answer.ok()) {
    return ReplyError(ApiError::FromStatus(answer.status()));
  }
  return Reply(201, *std::move(answer), kJson);
}

Response FakeApiServer::Proxy(const Request& req, const UserInfo* user) {
  if (!backend_) {
    return ReplyError(ApiError(404, StatusReason::kNotFound, kNotFoundMessage));
  }
  ProxiedRequest out;
  out.method = std::string(req.method);
  out.target = std::string(req.target);
  HeaderList incoming;
  for (const http::HeaderField& h : req.headers) incoming.emplace_back(h.name, h.value);
  out.headers = FrontProxyHeaders(incoming, user);
  absl::StatusOr<std::string> body = ReadBody(req, kProxiedBodyLimit);
  if (!body.ok()) {
    return ReplyError(ApiError::FromStatus(body.status()));
  }
  out.body = *std::move(body);
  auto sink = std::make_shared<ReplySink>();
  std::future<absl::StatusOr<ProxiedResponseHead>> head_future = sink->Head();
  backend_->Forward(std::move(out), sink);
  // The backend's head comes within the proxy's step timeout, or with an error when
  // the proxy stops.
  absl::StatusOr<ProxiedResponseHead> head = head_future.get();
  if (!head.ok()) {
    return ReplyError(head.status().code() == absl::StatusCode::kUnavailable
                          ? ApiError::ServiceUnavailable(Sv(head.status().message()))
                          : ApiError::FromStatus(head.status()));
  }
  Response response;
  response.code = head->status;
  response.content_type.clear();
  for (auto& [name, value] : head->headers) {
    if (EqualsIgnoreCase(name, "Content-Type")) {
      response.content_type = value;
    } else if (EqualsIgnoreCase(name, "Content-Encoding")) {
      response.content_encoding = value;
    } else {
      response.headers.emplace_back(std::move(name), std::move(value));
    }
  }
  response.stream = [sink](std::shared_ptr<StreamWriter> writer) {
    sink->Attach(std::move(writer));
  };
  return response;
}

}  // namespace kubestat::sim
