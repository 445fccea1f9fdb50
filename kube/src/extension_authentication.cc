#include "kubestat/kube/extension_authentication.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>
#include <utility>

#include "absl/strings/str_join.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/file.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/url.h"
#include "kubestat/http/client.h"
#include "kubestat/kube/kube_api_tls.h"
#include "kubestat/kube/list_watch.h"
#include "kubestat/kube/watch_event.h"
#include "simdjson.h"

namespace kubestat::kube {
namespace {

namespace dom = simdjson::dom;

constexpr std::string_view kClientCaKey = "client-ca-file";
constexpr std::string_view kRequestHeaderCaKey = "requestheader-client-ca-file";
constexpr std::string_view kCertificateBegin = "-----BEGIN CERTIFICATE-----";

absl::Status Invalid(std::string_view what) {
  return absl::InvalidArgumentError(StrCat("ConfigMap ", kExtensionAuthenticationNamespace, "/",
                                           kExtensionAuthenticationName, ": ", what));
}

// A data value that holds a JSON array of strings, as kube-apiserver writes the lists; ""
// is the empty list.
absl::StatusOr<std::vector<std::string>> ReadList(std::string_view key, std::string_view text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  dom::parser parser;
  dom::element root;
  dom::array array;
  if (parser.parse(text.data(), text.size()).get(root) != simdjson::SUCCESS ||
      root.get(array) != simdjson::SUCCESS) {
    return Invalid(StrCat(key, " is not a JSON array of strings"));
  }
  for (dom::element item : array) {
    std::string_view value;
    if (item.get(value) != simdjson::SUCCESS) {
      return Invalid(StrCat(key, " is not a JSON array of strings"));
    }
    out.emplace_back(value);
  }
  return out;
}

std::string PathOfConfigMaps() {
  return StrCat("/api/v1/namespaces/", kExtensionAuthenticationNamespace, "/configmaps");
}

}  // namespace

FrontProxyOptions ExtensionAuthentication::FrontProxy() const {
  FrontProxyOptions options;
  options.enabled = true;
  options.allowed_names = allowed_names;
  options.username_headers = username_headers;
  options.uid_headers = uid_headers;
  options.group_headers = group_headers;
  options.extra_headers_prefixes = extra_headers_prefixes;
  return options;
}

bool ExtensionAuthentication::SameTrust(const ExtensionAuthentication& other) const {
  return client_ca_pem == other.client_ca_pem &&
         requestheader_client_ca_pem == other.requestheader_client_ca_pem &&
         allowed_names == other.allowed_names && username_headers == other.username_headers &&
         uid_headers == other.uid_headers && group_headers == other.group_headers &&
         extra_headers_prefixes == other.extra_headers_prefixes;
}

absl::StatusOr<ExtensionAuthentication> ParseExtensionAuthentication(
    std::string_view configmap_json) {
  dom::parser parser;
  dom::element root;
  dom::object object;
  if (parser.parse(configmap_json.data(), configmap_json.size()).get(root) != simdjson::SUCCESS ||
      root.get(object) != simdjson::SUCCESS) {
    return Invalid("not a JSON object");
  }
  std::string_view kind;
  if (object.at_key("kind").get(kind) == simdjson::SUCCESS && !kind.empty() &&
      kind != "ConfigMap") {
    return Invalid(StrCat("kind is ", kind, ", not ConfigMap"));
  }
  ExtensionAuthentication out;
  dom::object metadata;
  std::string_view resource_version;
  if (object.at_key("metadata").get(metadata) == simdjson::SUCCESS &&
      metadata.at_key("resourceVersion").get(resource_version) == simdjson::SUCCESS) {
    out.resource_version = std::string(resource_version);
  }
  dom::element data_element;
  if (object.at_key("data").get(data_element) != simdjson::SUCCESS || data_element.is_null()) {
    return out;
  }
  dom::object data;
  if (data_element.get(data) != simdjson::SUCCESS) return Invalid("data is not an object");
  std::map<std::string_view, std::vector<std::string>*> lists = {
      {"requestheader-allowed-names", &out.allowed_names},
      {"requestheader-username-headers", &out.username_headers},
      {"requestheader-uid-headers", &out.uid_headers},
      {"requestheader-group-headers", &out.group_headers},
      {"requestheader-extra-headers-prefix", &out.extra_headers_prefixes},
  };
  for (dom::key_value_pair field : data) {
    std::string_view value;
    if (field.value.get(value) != simdjson::SUCCESS) {
      return Invalid(StrCat("data.", field.key, " is not a string"));
    }
    if (field.key == kClientCaKey || field.key == kRequestHeaderCaKey) {
      if (value.find(kCertificateBegin) == std::string_view::npos) {
        return Invalid(StrCat(field.key, " holds no PEM certificate"));
      }
      (field.key == kClientCaKey ? out.client_ca_pem : out.requestheader_client_ca_pem) = value;
      continue;
    }
    auto list = lists.find(field.key);
    if (list == lists.end()) continue;
    absl::StatusOr<std::vector<std::string>> values = ReadList(field.key, value);
    if (!values.ok()) return values.status();
    *list->second = *std::move(values);
  }
  return out;
}

std::string ExtensionClientCaFile(const std::string& dir) { return dir + "/client-ca.crt"; }
std::string ExtensionRequestHeaderCaFile(const std::string& dir) {
  return dir + "/requestheader-client-ca.crt";
}

struct ExtensionAuthenticationFollower::Impl : ListWatchHandler {
  ExtensionAuthenticationOptions options;
  OnChange on_change;
  std::unique_ptr<http::Client> list_client;
  std::unique_ptr<http::Client> watch_client;
  std::unique_ptr<ListWatch> watch;
  prometheus::Counter* applied = nullptr;
  prometheus::Counter* unchanged = nullptr;
  prometheus::Counter* rejected = nullptr;
  prometheus::Counter* errors = nullptr;

  mutable std::mutex mu;
  std::optional<ExtensionAuthentication> current;  // guarded by mu
  std::string last_said;                           // guarded by mu: the last warning logged
  // Items of the list being read (at most one: the field selector names it).
  std::optional<std::string> listed;

  static void Count(prometheus::Counter* counter) {
    if (counter != nullptr) counter->Increment();
  }

  // Logs `message` unless it was the last one logged.
  void SayOnce(const std::string& message) {
    {
      std::lock_guard lock(mu);
      if (message == last_said) return;
      last_said = message;
    }
    KLOG(WARNING) << message;
  }

  // Why `trust` cannot be applied, or OK.
  absl::Status Usable(const ExtensionAuthentication& trust) const {
    if (!options.request_header) return absl::OkStatus();
    if (trust.requestheader_client_ca_pem.empty()) {
      return Invalid(StrCat("holds no ", kRequestHeaderCaKey));
    }
    if (absl::Status s = trust.FrontProxy().Validate(); !s.ok())
      return Invalid(StdView(s.message()));
    return absl::OkStatus();
  }

  absl::Status WriteIfChanged(const std::string& path, const std::string& pem,
                              const std::string& before) {
    if (pem == before && std::filesystem::exists(path)) return absl::OkStatus();
    return WriteFileAtomically(path, pem, 0644);
  }

  // Applies one version of the ConfigMap's JSON; OK also when it is refused (that is logged
  // and counted, and the last trust stays).
  absl::Status Apply(std::string_view configmap_json) {
    absl::StatusOr<ExtensionAuthentication> trust = ParseExtensionAuthentication(configmap_json);
    absl::Status usable = trust.ok() ? Usable(*trust) : trust.status();
    if (!usable.ok()) {
      Count(rejected);
      SayOnce(StrCat(StdView(usable.message()), "; keeping the trust applied before"));
      return usable;
    }
    std::optional<ExtensionAuthentication> before;
    {
      std::lock_guard lock(mu);
      before = current;
    }
    if (!options.client_ca) trust->client_ca_pem.clear();
    if (!options.request_header) {
      trust->requestheader_client_ca_pem.clear();
      trust->allowed_names.clear();
      trust->username_headers.clear();
      trust->uid_headers.clear();
      trust->group_headers.clear();
      trust->extra_headers_prefixes.clear();
    }
    if (before && before->SameTrust(*trust)) {
      Count(unchanged);
      std::lock_guard lock(mu);
      current->resource_version = trust->resource_version;
      return absl::OkStatus();
    }
    const ExtensionAuthentication empty;
    const ExtensionAuthentication& old = before ? *before : empty;
    if (options.client_ca) {
      if (absl::Status s = WriteIfChanged(ExtensionClientCaFile(options.dir), trust->client_ca_pem,
                                          old.client_ca_pem);
          !s.ok()) {
        Count(errors);
        SayOnce(StrCat("cannot keep the cluster's client CA: ", StdView(s.message())));
        return s;
      }
    }
    if (options.request_header) {
      if (absl::Status s =
              WriteIfChanged(ExtensionRequestHeaderCaFile(options.dir),
                             trust->requestheader_client_ca_pem, old.requestheader_client_ca_pem);
          !s.ok()) {
        Count(errors);
        SayOnce(StrCat("cannot keep the cluster's front-proxy CA: ", StdView(s.message())));
        return s;
      }
    }
    {
      std::lock_guard lock(mu);
      current = *trust;
      last_said.clear();
    }
    Count(applied);
    KLOG(INFO) << "ConfigMap " << kExtensionAuthenticationNamespace << "/"
               << kExtensionAuthenticationName << " (resourceVersion " << trust->resource_version
               << ") applied: client CA " << (trust->client_ca_pem.empty() ? "none" : "given")
               << (options.request_header
                       ? StrCat(", front-proxy CA given, allowed names [",
                                absl::StrJoin(trust->allowed_names, ","), "], user headers [",
                                absl::StrJoin(trust->username_headers, ","), "]")
                       : std::string());
    if (on_change) on_change(*trust);
    return absl::OkStatus();
  }

  // ListWatchHandler.
  void OnListStart() override { listed.reset(); }
  void OnListItem(std::string_view object_json) override { listed = std::string(object_json); }
  void OnListComplete(std::string_view) override {
    if (listed) {
      (void)Apply(*listed);
      return;
    }
    Count(rejected);
    SayOnce(StrCat("ConfigMap ", kExtensionAuthenticationNamespace, "/",
                   kExtensionAuthenticationName,
                   " is not there; keeping the trust applied before"));
  }
  absl::Status OnEvent(const WatchEvent& event) override {
    if (event.type == WatchEventType::kDeleted) {
      Count(rejected);
      SayOnce(StrCat("ConfigMap ", kExtensionAuthenticationNamespace, "/",
                     kExtensionAuthenticationName,
                     " was deleted; keeping the trust applied before"));
      return absl::OkStatus();
    }
    (void)Apply(event.object_json);
    return absl::OkStatus();
  }
  void OnError(const ListWatchError& error) override {
    Count(errors);
    SayOnce(StrCat("following ConfigMap ", kExtensionAuthenticationNamespace, "/",
                   kExtensionAuthenticationName, ": ", StdView(error.status.message())));
  }
};

absl::StatusOr<std::unique_ptr<ExtensionAuthenticationFollower>>
ExtensionAuthenticationFollower::Create(const KubeApiConfig& config,
                                        ExtensionAuthenticationOptions options, const Clock& clock,
                                        prometheus::Registry* registry, OnChange on_change) {
  if (options.dir.empty()) {
    return absl::InvalidArgumentError("extension authentication: no directory for its CA files");
  }
  if (!options.client_ca && !options.request_header) {
    return absl::InvalidArgumentError("extension authentication: nothing to look up");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return absl::InternalError(StrCat("cannot create ", options.dir, ": ", StdView(ec.message())));
  }
  absl::StatusOr<http::ClientOptions> list_options = KubeApiClientOptions(config);
  if (!list_options.ok()) return list_options.status();
  list_options->timeout = options.request_timeout;
  list_options->max_response_bytes = size_t{4} << 20;  // a ConfigMap is at most 1 MiB
  http::ClientOptions watch_options = *list_options;
  watch_options.timeout = options.watch_timeout + std::chrono::seconds(30);
  auto impl = std::make_unique<Impl>();
  absl::StatusOr<std::unique_ptr<http::Client>> list_client =
      http::Client::Create(*std::move(list_options), clock);
  if (!list_client.ok()) {
    return absl::InvalidArgumentError(
        StrCat("kube API client: ", StdView(list_client.status().message())));
  }
  absl::StatusOr<std::unique_ptr<http::Client>> watch_client =
      http::Client::Create(std::move(watch_options), clock);
  if (!watch_client.ok()) {
    return absl::InvalidArgumentError(
        StrCat("kube API client: ", StdView(watch_client.status().message())));
  }
  impl->list_client = *std::move(list_client);
  impl->watch_client = *std::move(watch_client);
  ListWatchOptions watch;
  watch.path = PathOfConfigMaps();
  watch.field_selector = StrCat("metadata.name=", kExtensionAuthenticationName);
  watch.watch_timeout = options.watch_timeout;
  watch.retry_backoff = options.retry_backoff;
  watch.max_event_bytes = size_t{4} << 20;
  impl->watch =
      std::make_unique<ListWatch>(std::move(watch), *impl->list_client, *impl->watch_client, *impl);
  if (registry != nullptr) {
    auto& family = prometheus::BuildCounter()
                       .Name("kubestat_extension_authentication_updates_total")
                       .Help(
                           "Versions of the cluster's extension-apiserver-authentication "
                           "ConfigMap seen, by what became of them.")
                       .Register(*registry);
    impl->applied = &family.Add({{"result", "applied"}});
    impl->unchanged = &family.Add({{"result", "unchanged"}});
    impl->rejected = &family.Add({{"result", "rejected"}});
    impl->errors = &family.Add({{"result", "error"}});
  }
  impl->options = std::move(options);
  impl->on_change = std::move(on_change);
  return std::unique_ptr<ExtensionAuthenticationFollower>(
      new ExtensionAuthenticationFollower(std::move(impl)));
}

ExtensionAuthenticationFollower::ExtensionAuthenticationFollower(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

ExtensionAuthenticationFollower::~ExtensionAuthenticationFollower() { Stop(); }

absl::Status ExtensionAuthenticationFollower::LoadOnce() {
  const std::string path = StrCat(PathOfConfigMaps(), "/", kExtensionAuthenticationName);
  absl::StatusOr<http::ClientResponse> response = impl_->list_client->Get(path);
  if (!response.ok()) {
    Impl::Count(impl_->errors);
    return absl::UnavailableError(StrCat("GET ", path, ": ", StdView(response.status().message())));
  }
  if (response->code == 403 || response->code == 404) {
    Impl::Count(impl_->errors);
    // kube's own servers give this hint.
    return absl::FailedPreconditionError(StrCat(
        "GET ", path, ": HTTP ", response->code,
        " (usually fixed by 'kubectl create rolebinding -n ", kExtensionAuthenticationNamespace,
        " ROLEBINDING_NAME --role=extension-apiserver-authentication-reader "
        "--serviceaccount=YOUR_NS:YOUR_SA')"));
  }
  if (response->code < 200 || response->code > 299) {
    Impl::Count(impl_->errors);
    return absl::UnavailableError(StrCat("GET ", path, ": HTTP ", response->code));
  }
  return impl_->Apply(response->body);
}

void ExtensionAuthenticationFollower::Start() { impl_->watch->Start(); }
void ExtensionAuthenticationFollower::Stop() { impl_->watch->Stop(); }

std::optional<ExtensionAuthentication> ExtensionAuthenticationFollower::current() const {
  std::lock_guard lock(impl_->mu);
  return impl_->current;
}

}  // namespace kubestat::kube
