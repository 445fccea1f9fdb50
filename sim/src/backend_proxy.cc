#include "backend_proxy.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "sim_url.h"

namespace kubestat::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool HopByHop(std::string_view lower_name) {
  for (std::string_view h :
       {"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
        "te", "trailer", "transfer-encoding", "upgrade", "content-length", "host"}) {
    if (lower_name == h) return true;
  }
  return false;
}

// url.PathEscape-like, but every byte outside [A-Za-z0-9-_.~] is escaped so the result is a
// valid header name.
std::string EscapeHeaderKey(std::string_view key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : key) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// What identifies one version of the CA file.
struct FileStamp {
  int64_t mtime_ns = -1;
  int64_t size = -1;
  uint64_t inode = 0;
  bool operator==(const FileStamp&) const = default;
};

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void Cancel() = 0;
};

}  // namespace

struct BackendProxy::Impl {
  BackendProxyOptions options;
  ParsedUrl url;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread;

  std::mutex mu;  // guards everything below
  bool stopped = false;
  uint64_t next_id = 0;
  std::map<uint64_t, std::weak_ptr<SessionBase>> live;
  std::shared_ptr<asio::ssl::context> tls_context;
  FileStamp ca_stamp;

  void Finished(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu);
    live.erase(id);
  }

  absl::Status Unreachable(std::string_view what) const {
    return absl::UnavailableError("error trying to reach service: " + std::string(what));
  }

  // The TLS context for new connections, rebuilt when the CA file changed.
  absl::StatusOr<std::shared_ptr<asio::ssl::context>> TlsContext() {
    std::lock_guard<std::mutex> lock(mu);
    FileStamp stamp;
    const bool use_ca_file = !options.ca_file.empty() && !options.insecure_skip_tls_verify;
    if (use_ca_file) {
      struct stat st {};
      if (::stat(options.ca_file.c_str(), &st) != 0) {
        return Unreachable(absl::StrCat("cannot read --metrics-backend-ca-file ", options.ca_file,
                                        ": ", std::strerror(errno)));
      }
      stamp = {int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
               static_cast<int64_t>(st.st_size), static_cast<uint64_t>(st.st_ino)};
    }
    if (tls_context && stamp == ca_stamp) return tls_context;

    auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
    try {
      if (!options.client_cert_file.empty()) {
        ctx->use_certificate_chain_file(options.client_cert_file);
        ctx->use_private_key_file(options.client_key_file, asio::ssl::context::pem);
      }
    } catch (const std::exception& e) {
      return absl::InternalError(
          absl::StrCat("cannot load the front-proxy client certificate: ", e.what()));
    }
    if (options.insecure_skip_tls_verify) {
      ctx->set_verify_mode(asio::ssl::verify_none);
    } else {
      ctx->set_verify_mode(asio::ssl::verify_peer);
      if (use_ca_file) {
        std::ifstream in(options.ca_file, std::ios::binary);
        std::ostringstream pem;
        pem << in.rdbuf();
        if (!in) {
          return Unreachable(
              absl::StrCat("cannot read --metrics-backend-ca-file ", options.ca_file));
        }
        const std::string text = pem.str();
        X509_STORE* store = X509_STORE_new();
        BIO* bio = BIO_new_mem_buf(text.data(), static_cast<int>(text.size()));
        int certs = 0;
        while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
          certs += X509_STORE_add_cert(store, cert) == 1;
          X509_free(cert);
        }
        BIO_free(bio);
        ERR_clear_error();
        SSL_CTX_set_cert_store(ctx->native_handle(), store);  // takes ownership
        if (certs == 0) {
          return Unreachable(absl::StrCat("--metrics-backend-ca-file ", options.ca_file,
                                          " holds no PEM certificate"));
        }
      } else {
        ctx->set_default_verify_paths();
      }
    }
    tls_context = ctx;
    ca_stamp = stamp;
    return ctx;
  }
};

namespace {

template <bool kTls>
class Session : public SessionBase, public std::enable_shared_from_this<Session<kTls>> {
 public:
  using Stream = std::conditional_t<kTls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;

  Session(BackendProxy::Impl& proxy, uint64_t id, std::shared_ptr<asio::ssl::context> ctx,
          http::request<http::string_body> request, std::shared_ptr<ProxyResponseSink> sink)
      : proxy_(proxy),
        id_(id),
        ctx_(std::move(ctx)),
        resolver_(proxy.io),
        stream_(MakeStream(proxy.io, ctx_.get())),
        request_(std::move(request)),
        sink_(std::move(sink)) {}

  void Start() {
    resolver_.async_resolve(
        proxy_.url.host, proxy_.url.port,
        [self = this->shared_from_this()](beast::error_code ec, tcp::resolver::results_type r) {
          self->OnResolve(ec, std::move(r));
        });
  }

  // Runs on the proxy's thread.
  void Cancel() override {
    resolver_.cancel();
    beast::error_code ignored;
    Tcp().socket().close(ignored);
  }

 private:
  static Stream MakeStream(asio::io_context& io, asio::ssl::context* ctx) {
    if constexpr (kTls) {
      return Stream(io, *ctx);
    } else {
      return Stream(io);
    }
  }

  beast::tcp_stream& Tcp() {
    if constexpr (kTls) {
      return beast::get_lowest_layer(stream_);
    } else {
      return stream_;
    }
  }

  std::string Where() const { return absl::StrCat(proxy_.url.host, ":", proxy_.url.port); }

  void OnResolve(beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) return Finish(proxy_.Unreachable(absl::StrCat("lookup ", Where(), ": ", ec.message())));
    Tcp().expires_after(proxy_.options.step_timeout);
    Tcp().async_connect(
        results, [self = this->shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
          self->OnConnect(ec);
        });
  }

  void OnConnect(beast::error_code ec) {
    if (ec) {
      return Finish(proxy_.Unreachable(absl::StrCat("connect ", Where(), ": ", ec.message())));
    }
    if constexpr (kTls) {
      SSL* ssl = stream_.native_handle();
      beast::error_code addr_ec;
      asio::ip::make_address(proxy_.url.host, addr_ec);
      if (addr_ec) {  // a name: SNI and a DNS SAN check
        SSL_set_tlsext_host_name(ssl, proxy_.url.host.c_str());
        SSL_set1_host(ssl, proxy_.url.host.c_str());
      } else {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), proxy_.url.host.c_str());
      }
      Tcp().expires_after(proxy_.options.step_timeout);
      stream_.async_handshake(
          asio::ssl::stream_base::client, [self = this->shared_from_this()](beast::error_code ec) {
            if (ec) {
              return self->Finish(self->proxy_.Unreachable(
                  absl::StrCat("TLS handshake with ", self->Where(), ": ", ec.message())));
            }
            self->Write();
          });
    } else {
      Write();
    }
  }

  void Write() {
    Tcp().expires_after(proxy_.options.step_timeout);
    http::async_write(stream_, request_,
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        if (ec) {
                          return self->Finish(self->proxy_.Unreachable(
                              absl::StrCat("write to ", self->Where(), ": ", ec.message())));
                        }
                        self->ReadHeader();
                      });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(64 * 1024);
    parser_->body_limit(proxy_.options.max_response_bytes);
    if (request_.method() == http::verb::head) parser_->skip(true);
    Tcp().expires_after(proxy_.options.step_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) {
      return Finish(proxy_.Unreachable(absl::StrCat("read from ", Where(), ": ", ec.message())));
    }
    const auto& msg = parser_->get();
    ProxiedResponseHead head;
    head.status = static_cast<int>(msg.result_int());
    for (const auto& field : msg) {
      const std::string name(field.name_string());
      if (HopByHop(Lower(name))) continue;
      head.headers.emplace_back(name, std::string(field.value()));
    }
    if (parser_->content_length()) head.content_length = *parser_->content_length();
    head.has_body = !(request_.method() == http::verb::head || head.status / 100 == 1 ||
                      head.status == 204 || head.status == 304);
    head_sent_ = true;
    sink_->OnHead(std::move(head));
    if (parser_->is_done()) return Finish(absl::OkStatus());
    ReadBody();
  }

  void ReadBody() {
    auto& body = parser_->get().body();
    body.data = chunk_;
    body.size = sizeof(chunk_);
    Tcp().expires_after(proxy_.options.step_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = sizeof(chunk_) - parser_->get().body().size;
    if (got > 0) sink_->OnData(std::string_view(chunk_, got));
    if (ec == http::error::body_limit) {
      return Finish(absl::ResourceExhaustedError(absl::StrCat(
          "the backend's answer exceeds ", proxy_.options.max_response_bytes, " bytes")));
    }
    if (ec) {
      return Finish(proxy_.Unreachable(absl::StrCat("read from ", Where(), ": ", ec.message())));
    }
    if (parser_->is_done()) return Finish(absl::OkStatus());
    ReadBody();
  }

  void Finish(absl::Status status) {
    if (finished_) return;
    finished_ = true;
    if (head_sent_) {
      sink_->OnEnd(std::move(status));
    } else {
      sink_->OnHead(std::move(status));
    }
    beast::error_code ignored;
    Tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
    Tcp().socket().close(ignored);
    proxy_.Finished(id_);
  }

  BackendProxy::Impl& proxy_;
  const uint64_t id_;
  std::shared_ptr<asio::ssl::context> ctx_;
  tcp::resolver resolver_;
  Stream stream_;
  http::request<http::string_body> request_;
  std::shared_ptr<ProxyResponseSink> sink_;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::buffer_body>> parser_;
  char chunk_[64 * 1024];
  bool head_sent_ = false;
  bool finished_ = false;
};

}  // namespace

BackendProxy::BackendProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

BackendProxy::~BackendProxy() { Stop(); }

absl::StatusOr<std::unique_ptr<BackendProxy>> BackendProxy::Create(BackendProxyOptions options) {
  absl::StatusOr<ParsedUrl> url = ParseUrl(options.url, "--metrics-backend");
  if (!url.ok()) return url.status();
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->url = *std::move(url);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<BackendProxy>(new BackendProxy(std::move(impl)));
}

void BackendProxy::Forward(ProxiedRequest request, std::shared_ptr<ProxyResponseSink> sink) {
  Impl& impl = *impl_;
  http::request<http::string_body> out;
  out.version(11);
  const http::verb verb = http::string_to_verb(request.method);
  if (verb == http::verb::unknown) {
    out.method_string(request.method);
  } else {
    out.method(verb);
  }
  out.target(impl.url.base_path + request.target);
  for (const auto& [name, value] : request.headers) out.insert(name, value);
  const bool default_port = impl.url.port == (impl.url.tls ? "443" : "80");
  const bool ipv6 = impl.url.host.find(':') != std::string::npos;
  std::string host = ipv6 ? absl::StrCat("[", impl.url.host, "]") : impl.url.host;
  if (!default_port) absl::StrAppend(&host, ":", impl.url.port);
  out.set(http::field::host, host);
  out.set(http::field::connection, "close");
  out.body() = std::move(request.body);
  out.prepare_payload();

  std::shared_ptr<asio::ssl::context> ctx;
  if (impl.url.tls) {
    absl::StatusOr<std::shared_ptr<asio::ssl::context>> c = impl.TlsContext();
    if (!c.ok()) {
      sink->OnHead(c.status());
      return;
    }
    ctx = *std::move(c);
  }
  std::shared_ptr<SessionBase> session;
  {
    std::lock_guard<std::mutex> lock(impl.mu);
    if (impl.stopped) {
      sink->OnHead(absl::UnavailableError("the aggregation proxy is shutting down"));
      return;
    }
    const uint64_t id = impl.next_id++;
    if (impl.url.tls) {
      auto s = std::make_shared<Session<true>>(impl, id, ctx, std::move(out), std::move(sink));
      asio::post(impl.io, [s] { s->Start(); });
      session = s;
    } else {
      auto s = std::make_shared<Session<false>>(impl, id, nullptr, std::move(out), std::move(sink));
      asio::post(impl.io, [s] { s->Start(); });
      session = s;
    }
    impl.live[id] = session;
  }
}

void BackendProxy::Stop() {
  Impl& impl = *impl_;
  {
    std::lock_guard<std::mutex> lock(impl.mu);
    if (impl.stopped) return;
    impl.stopped = true;
  }
  asio::post(impl.io, [&impl] {
    std::vector<std::shared_ptr<SessionBase>> sessions;
    {
      std::lock_guard<std::mutex> lock(impl.mu);
      for (auto& [id, weak] : impl.live) {
        if (auto s = weak.lock()) sessions.push_back(std::move(s));
      }
    }
    for (auto& s : sessions) s->Cancel();
  });
  impl.work.reset();
  if (impl.thread.joinable()) impl.thread.join();
}

HeaderList FrontProxyHeaders(const HeaderList& incoming, const UserInfo* user) {
  HeaderList out;
  for (const auto& [name, value] : incoming) {
    const std::string lower = Lower(name);
    if (HopByHop(lower) || lower.starts_with("x-remote-")) continue;
    if (user != nullptr && lower == "authorization") continue;
    out.emplace_back(name, value);
  }
  if (user != nullptr) {
    out.emplace_back("X-Remote-User", user->name);
    for (const std::string& group : user->groups) out.emplace_back("X-Remote-Group", group);
    for (const auto& [key, values] : user->extra) {
      for (const std::string& value : values) {
        out.emplace_back("X-Remote-Extra-" + EscapeHeaderKey(key), value);
      }
    }
  }
  return out;
}

}  // namespace kubestat::sim
