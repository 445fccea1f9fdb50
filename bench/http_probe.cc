// kubestat-http-probe: attacks a running kubestat HTTP server on loopback and prints what it
// cost the server, one line per figure:
//   (a) a request declaring a huge body (and streaming it): the answer, how much was sent
//       before it, the server's RSS;
//   (b) a huge header line, likewise;
//   (c) N connections opened and held at once (a third idle, a third with a partial head,
//       a third trickling a head byte a second) from forked workers, while /livez and
//       /readyz are asked on the health URL: their codes and latency, the server's RSS;
//   (d) how long idle and partial connections stay open.
// It only targets loopback addresses and stops by itself (bounded counts and times).
// --self starts a kubestat::http::Server in a child process (HTTPS, self-signed, health
// listener) and probes that.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "kubestat/core/clock.h"
#include "kubestat/http/server.h"
#include "prometheus/registry.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string url;
  std::string health_url;
  int pid = 0;
  std::string token;
  bool self = false;
  long connections = 20000;
  long per_worker = 9000;
  long long body_bytes = 1LL << 30;
  long long header_bytes = 256LL << 20;
  int hold_seconds = 10;
  int observe_seconds = 120;
  int lifetime_connections = 50;
};

void Usage() {
  std::printf(
      "kubestat-http-probe: abuse figures for a kubestat HTTP server on loopback\n"
      "  --url URL                 server to attack, http(s)://127.0.0.1:PORT (required unless "
      "--self)\n"
      "  --health-url URL          where /livez and /readyz are asked (default: --url)\n"
      "  --pid PID                 the server's process id, for its RSS (required unless --self)\n"
      "  --token TOKEN             bearer token sent with every request (default: none)\n"
      "  --self                    start a kubestat::http::Server in a child and probe it\n"
      "  --connections N           connections held at once in (c) (default: 20000)\n"
      "  --per-worker N            connections per forked worker, at most 9000 (default: 9000)\n"
      "  --body-bytes N            declared and streamed body in (a) (default: 1073741824)\n"
      "  --header-bytes N          header line streamed in (b) (default: 268435456)\n"
      "  --hold-seconds N          how long (c) holds its connections (default: 10)\n"
      "  --observe-seconds N       longest wait in (d) for the server to close (default: 120)\n"
      "  --lifetime-connections N  idle and partial connections each in (d) (default: 50)\n");
}

struct Target {
  bool tls = false;
  std::string host;  // numeric
  int port = 0;
};

// Parses http(s)://HOST:PORT[/...] and refuses anything but loopback.
bool ParseTarget(const std::string& url, Target* target, std::string* error) {
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    target->tls = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    *error = "the URL must start with http:// or https://";
    return false;
  }
  rest = rest.substr(0, rest.find('/'));
  std::string host;
  std::string port;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      *error = "bad IPv6 host";
      return false;
    }
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos) {
      *error = "the URL needs a port";
      return false;
    }
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host == "localhost") host = "127.0.0.1";
  in_addr v4{};
  in6_addr v6{};
  const bool loopback =
      (inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) ||
      (inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6));
  if (!loopback) {
    *error = "refusing " + host + ": only loopback addresses may be probed";
    return false;
  }
  target->host = host;
  target->port = std::atoi(port.c_str());
  if (target->port <= 0 || target->port > 65535) {
    *error = "bad port";
    return false;
  }
  return true;
}

long RssKb(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

std::string Mb(long kb) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1fMB", static_cast<double>(kb) / 1024.0);
  return text;
}

SSL_CTX* ClientContext() {
  static SSL_CTX* ctx = [] {
    SSL_CTX* c = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nullptr);  // probing, not trusting
    return c;
  }();
  return ctx;
}

// One connection, plain or TLS, with blocking I/O bounded by socket timeouts.
class Conn {
 public:
  ~Conn() { Close(); }
  bool Open(const Target& target, bool handshake, int timeout_seconds = 10) {
    sockaddr_storage addr{};
    socklen_t len;
    if (target.host.find(':') != std::string::npos) {
      auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
      a6->sin6_family = AF_INET6;
      a6->sin6_port = htons(static_cast<uint16_t>(target.port));
      inet_pton(AF_INET6, target.host.c_str(), &a6->sin6_addr);
      len = sizeof(sockaddr_in6);
    } else {
      auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
      a4->sin_family = AF_INET;
      a4->sin_port = htons(static_cast<uint16_t>(target.port));
      inet_pton(AF_INET, target.host.c_str(), &a4->sin_addr);
      len = sizeof(sockaddr_in);
    }
    fd_ = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    SetTimeout(timeout_seconds);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0) return false;
    // Requests leave at once: with Nagle's algorithm a request written in pieces waits for
    // the server's delayed ACK (40 ms), which would be counted as the server's latency.
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (target.tls && handshake) {
      ssl_ = SSL_new(ClientContext());
      SSL_set_fd(ssl_, fd_);
      if (SSL_connect(ssl_) != 1) {
        ERR_clear_error();
        return false;
      }
    }
    return true;
  }
  void SetTimeout(int seconds) {
    timeval tv{seconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  bool Send(const char* data, size_t size) {
    size_t sent = 0;
    while (sent < size) {
      const int n = ssl_ ? SSL_write(ssl_, data + sent, static_cast<int>(size - sent))
                         : static_cast<int>(::send(fd_, data + sent, size - sent, MSG_NOSIGNAL));
      if (n <= 0) {
        ERR_clear_error();
        return false;
      }
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  bool Send(const std::string& s) { return Send(s.data(), s.size()); }
  // Something to read (or the peer closed) within `ms`.
  bool Readable(int ms) {
    if (ssl_ && SSL_pending(ssl_) > 0) return true;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, ms) > 0;
  }
  // Reads what arrives until the head of a response is complete or the peer closes;
  // returns the status code, 0 when none came.
  int ReadStatus() {
    std::string got;
    char buf[4096];
    while (got.find("\r\n\r\n") == std::string::npos) {
      const int n = ssl_ ? SSL_read(ssl_, buf, sizeof(buf))
                         : static_cast<int>(::recv(fd_, buf, sizeof(buf), 0));
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    ERR_clear_error();
    if (got.size() < 12 || got.rfind("HTTP/1.", 0) != 0) return 0;
    return std::atoi(got.c_str() + 9);
  }
  // True when the server has closed the connection (EOF or reset).
  bool ClosedByPeer() {
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  void Close() {
    if (ssl_) SSL_free(ssl_);
    ssl_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  SSL* ssl_ = nullptr;
};

std::string Auth(const Flags& flags) {
  return flags.token.empty() ? "" : "Authorization: Bearer " + flags.token + "\r\n";
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// (a) and (b): sends `head`, then streams `total` filler bytes until the server answers,
// stops reading, or closes.
void StreamAttack(const char* label, const Target& target, int pid, const std::string& head,
                  long long total) {
  const long rss_before = RssKb(pid);
  long rss_max = rss_before;
  Conn conn;
  if (!conn.Open(target, true)) {
    std::printf("%s: cannot connect\n", label);
    return;
  }
  conn.SetTimeout(2);
  const auto start = Clock::now();
  const std::string chunk(64 * 1024, 'a');
  long long sent = 0;
  int code = 0;
  bool blocked = !conn.Send(head);
  while (!blocked && sent < total && SecondsSince(start) < 120) {
    const size_t n = static_cast<size_t>(std::min<long long>(chunk.size(), total - sent));
    if (!conn.Send(chunk.data(), n)) break;  // the server stopped reading, or closed
    sent += static_cast<long long>(n);
    if ((sent & ((16 << 20) - 1)) == 0) rss_max = std::max(rss_max, RssKb(pid));
    if (conn.Readable(0)) break;
  }
  conn.SetTimeout(5);
  if (conn.Readable(5000)) code = conn.ReadStatus();
  const double seconds = SecondsSince(start);
  rss_max = std::max(rss_max, RssKb(pid));
  std::printf(
      "%s: answer=%d sent_before_answer=%lld bytes of %lld in %.2fs rss_before=%s rss_max=%s "
      "rss_after=%s\n",
      label, code, sent, total, seconds, Mb(rss_before).c_str(), Mb(rss_max).c_str(),
      Mb(RssKb(pid)).c_str());
}

// One health request on a fresh connection: the code (0 = none) and the latency.
std::pair<int, double> Ask(const Target& target, const std::string& path, const Flags& flags) {
  const auto start = Clock::now();
  Conn conn;
  if (!conn.Open(target, true, 5)) return {0, SecondsSince(start)};
  if (!conn.Send("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n" + Auth(flags) +
                 "Connection: close\r\n\r\n")) {
    return {0, SecondsSince(start)};
  }
  const int code = conn.ReadStatus();
  return {code, SecondsSince(start)};
}

void RaiseDescriptorLimit() {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
}

// A forked worker of (c): opens `count` connections, holds them for hold_seconds (the
// slow third trickling a byte a second), then reports "opened handshaken still_open".
[[noreturn]] void FloodWorker(const Target& target, long count, int hold_seconds, int report_fd) {
  RaiseDescriptorLimit();
  std::vector<Conn> conns(static_cast<size_t>(count));
  long opened = 0, handshaken = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  for (long i = 0; i < count && Clock::now() < deadline; ++i) {
    const int kind = static_cast<int>(i % 3);  // 0 idle, 1 partial head, 2 slow head
    Conn& c = conns[static_cast<size_t>(i)];
    if (!c.Open(target, /*handshake=*/kind != 0, 5)) {
      c.Close();
      continue;
    }
    ++opened;
    if (kind != 0) {
      ++handshaken;
      if (!c.Send("GET /apis HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")) c.Close();
    }
  }
  const auto hold_end = Clock::now() + std::chrono::seconds(hold_seconds);
  while (Clock::now() < hold_end) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    for (long i = 2; i < count; i += 3) {
      Conn& c = conns[static_cast<size_t>(i)];
      if (c.fd() >= 0 && !c.Send("a", 1)) c.Close();
    }
  }
  long still_open = 0;
  for (Conn& c : conns) {
    if (c.fd() >= 0 && !c.ClosedByPeer()) ++still_open;
  }
  char line[128];
  const int n = std::snprintf(line, sizeof(line), "%ld %ld %ld\n", opened, handshaken, still_open);
  (void)!::write(report_fd, line, static_cast<size_t>(n));
  _exit(0);
}

void Flood(const Target& target, const Target& health, int pid, const Flags& flags) {
  const long rss_before = RssKb(pid);
  const long per_worker = std::clamp<long>(flags.per_worker, 1, 9000);
  const long workers = (flags.connections + per_worker - 1) / per_worker;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return;
  std::vector<pid_t> children;
  for (long w = 0; w < workers; ++w) {
    const long count = std::min(per_worker, flags.connections - w * per_worker);
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(pipe_fds[0]);
      FloodWorker(target, count, flags.hold_seconds, pipe_fds[1]);
    }
    if (child > 0) children.push_back(child);
  }
  ::close(pipe_fds[1]);
  // Ask the health paths while the workers connect and hold.
  int asked = 0, failed = 0;
  double worst = 0, total_latency = 0;
  int livez_code = 0, readyz_code = 0;
  long rss_max = rss_before;
  const auto end = Clock::now() + std::chrono::seconds(flags.hold_seconds + 60);
  while (Clock::now() < end) {
    for (const char* path : {"/livez", "/readyz"}) {
      auto [code, latency] = Ask(health, path, flags);
      ++asked;
      if (code != 200) ++failed;
      worst = std::max(worst, latency);
      total_latency += latency;
      (std::string(path) == "/livez" ? livez_code : readyz_code) = code;
    }
    rss_max = std::max(rss_max, RssKb(pid));
    pollfd p{pipe_fds[0], POLLIN, 0};
    // Stop asking once every worker has reported (they report after holding).
    int status;
    bool all_done = true;
    for (pid_t child : children) all_done = all_done && ::waitpid(child, &status, WNOHANG) == child;
    if (all_done && ::poll(&p, 1, 0) >= 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  long opened = 0, handshaken = 0, still_open = 0;
  FILE* reports = ::fdopen(pipe_fds[0], "r");
  long a, b, c;
  while (reports != nullptr && std::fscanf(reports, "%ld %ld %ld", &a, &b, &c) == 3) {
    opened += a;
    handshaken += b;
    still_open += c;
  }
  if (reports != nullptr) std::fclose(reports);
  for (pid_t child : children) {
    int status;
    ::waitpid(child, &status, 0);
  }
  std::printf(
      "flood_connections: asked=%ld opened=%ld handshaken=%ld still_open_after_%ds=%ld "
      "workers=%ld\n",
      flags.connections, opened, handshaken, flags.hold_seconds, still_open, workers);
  std::printf(
      "flood_health: health_url=%s:%d requests=%d failed=%d last_livez=%d last_readyz=%d "
      "mean_latency=%.3fs max_latency=%.3fs\n",
      health.host.c_str(), health.port, asked, failed, livez_code, readyz_code,
      asked ? total_latency / asked : 0.0, worst);
  std::printf("flood_rss: rss_before=%s rss_max=%s rss_after=%s\n", Mb(rss_before).c_str(),
              Mb(rss_max).c_str(), Mb(RssKb(pid)).c_str());
}

// (d): how long the server keeps idle (nothing sent) and partial (head begun) connections.
void Lifetimes(const Target& target, const Flags& flags) {
  struct Held {
    Conn conn;
    bool partial;
    double closed_after = -1;
  };
  std::vector<Held> held(static_cast<size_t>(2 * flags.lifetime_connections));
  const auto start = Clock::now();
  for (size_t i = 0; i < held.size(); ++i) {
    held[i].partial = i % 2 == 1;
    if (!held[i].conn.Open(target, /*handshake=*/held[i].partial, 5)) {
      held[i].closed_after = 0;
      continue;
    }
    if (held[i].partial) held[i].conn.Send("GET / HTTP/1.1\r\nHost: localhost\r\n");
  }
  const auto end = start + std::chrono::seconds(flags.observe_seconds);
  size_t open = held.size();
  while (open > 0 && Clock::now() < end) {
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < held.size(); ++i) {
      if (held[i].closed_after < 0) {
        fds.push_back({held[i].conn.fd(), POLLIN, 0});
        index.push_back(i);
      }
    }
    ::poll(fds.data(), fds.size(), 200);
    open = 0;
    for (size_t k = 0; k < fds.size(); ++k) {
      Held& h = held[index[k]];
      if (fds[k].revents != 0) {
        // An answer (408) may come first; read it away and look again.
        char buf[4096];
        const ssize_t n = ::recv(h.conn.fd(), buf, sizeof(buf), MSG_DONTWAIT);
        if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) {
          h.closed_after = SecondsSince(start);
          continue;
        }
      }
      ++open;
    }
  }
  for (bool partial : {false, true}) {
    std::vector<double> times;
    long never = 0;
    for (const Held& h : held) {
      if (h.partial != partial) continue;
      if (h.closed_after < 0) {
        ++never;
      } else {
        times.push_back(h.closed_after);
      }
    }
    std::sort(times.begin(), times.end());
    std::printf(
        "%s_connection_lifetime: count=%zu closed=%zu still_open_after_%ds=%ld min=%.2fs "
        "median=%.2fs max=%.2fs\n",
        partial ? "partial" : "idle", times.size() + static_cast<size_t>(never), times.size(),
        flags.observe_seconds, never, times.empty() ? 0 : times.front(),
        times.empty() ? 0 : times[times.size() / 2], times.empty() ? 0 : times.back());
  }
}

// --self: a kubestat::http::Server in a child; returns its pid and fills the URLs.
pid_t StartSelfServer(Flags* flags) {
  int ports[2];
  if (::pipe(ports) != 0) return -1;
  char dir_template[] = "/tmp/kubestat-http-probe-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return -1;
  const std::string cert_dir = dir_template;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ports[0]);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    prometheus::Registry registry;
    kubestat::http::ServerOptions options;
    options.address = "127.0.0.1";
    options.health_port = 0;
    options.tls.cert_dir = cert_dir;
    kubestat::http::Server server(
        options,
        [](const kubestat::http::Request&) {
          kubestat::http::Response response;
          response.content_type = "text/plain";
          response.body = "ok";
          return response;
        },
        registry, kubestat::RealClock::Get());
    if (!server.Start().ok()) _exit(1);
    char line[64];
    const int n = std::snprintf(line, sizeof(line), "%d %d\n", server.port(), server.health_port());
    (void)!::write(ports[1], line, static_cast<size_t>(n));
    int signal;
    sigwait(&set, &signal);
    server.Stop();
    std::filesystem::remove_all(cert_dir);
    _exit(0);
  }
  ::close(ports[1]);
  char line[64] = {0};
  const ssize_t n = ::read(ports[0], line, sizeof(line) - 1);
  ::close(ports[0]);
  int port = 0, health_port = 0;
  if (n <= 0 || std::sscanf(line, "%d %d", &port, &health_port) != 2) return -1;
  flags->url = "https://127.0.0.1:" + std::to_string(port);
  flags->health_url = "https://127.0.0.1:" + std::to_string(health_port);
  flags->pid = child;
  std::printf("self_server: pid=%d url=%s health_url=%s\n", child, flags->url.c_str(),
              flags->health_url.c_str());
  return child;
}

bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--help" || arg == "-h") {
      Usage();
      std::exit(0);
    } else if (arg == "--self") {
      flags->self = true;
    } else if (arg == "--url") {
      flags->url = value();
    } else if (arg == "--health-url") {
      flags->health_url = value();
    } else if (arg == "--pid") {
      flags->pid = std::atoi(value().c_str());
    } else if (arg == "--token") {
      flags->token = value();
    } else if (arg == "--connections") {
      flags->connections = std::clamp(std::atol(value().c_str()), 0L, 100000L);
    } else if (arg == "--per-worker") {
      flags->per_worker = std::atol(value().c_str());
    } else if (arg == "--body-bytes") {
      flags->body_bytes = std::clamp(std::atoll(value().c_str()), 0LL, 16LL << 30);
    } else if (arg == "--header-bytes") {
      flags->header_bytes = std::clamp(std::atoll(value().c_str()), 0LL, 4LL << 30);
    } else if (arg == "--hold-seconds") {
      flags->hold_seconds = std::clamp(std::atoi(value().c_str()), 1, 600);
    } else if (arg == "--observe-seconds") {
      flags->observe_seconds = std::clamp(std::atoi(value().c_str()), 1, 900);
    } else if (arg == "--lifetime-connections") {
      flags->lifetime_connections = std::clamp(std::atoi(value().c_str()), 1, 5000);
    } else {
      std::fprintf(stderr, "unknown flag %s (see --help)\n", arg.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) return 2;
  std::signal(SIGPIPE, SIG_IGN);
  RaiseDescriptorLimit();
  pid_t self_child = -1;
  if (flags.self) {
    self_child = StartSelfServer(&flags);
    if (self_child <= 0) {
      std::fprintf(stderr, "--self: the server did not start\n");
      return 1;
    }
  }
  if (flags.url.empty() || flags.pid <= 0) {
    std::fprintf(stderr, "--url and --pid are required (or --self); see --help\n");
    return 2;
  }
  if (flags.health_url.empty()) flags.health_url = flags.url;
  Target target, health;
  std::string error;
  if (!ParseTarget(flags.url, &target, &error) || !ParseTarget(flags.health_url, &health, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    if (self_child > 0) ::kill(self_child, SIGTERM);
    return 2;
  }
  const std::string host = "Host: localhost\r\n";
  StreamAttack("body_declared", target, flags.pid,
               "PUT /apis/probe HTTP/1.1\r\n" + host + Auth(flags) +
                   "Content-Type: application/json\r\nContent-Length: " +
                   std::to_string(flags.body_bytes) + "\r\n\r\n",
               flags.body_bytes);
  StreamAttack(
      "header_line", target, flags.pid,
      "GET /apis/probe HTTP/1.1\r\n" + host + Auth(flags) + "X-Probe: ", flags.header_bytes);
  Flood(target, health, flags.pid, flags);
  Lifetimes(target, flags);
  if (self_child > 0) {
    ::kill(self_child, SIGTERM);
    int status;
    ::waitpid(self_child, &status, 0);
  }
  return 0;
}
