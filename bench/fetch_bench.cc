// fetch_bench: what the HTTP client (http::Client, the kubelet scrapes' client) costs per
// request, on its own. A forked child serves a fixed body of --body_bytes over plain HTTP/1.1
// with keep-alive on loopback (the child is forked before this process starts a thread, so
// the figures below are the client's alone); --threads threads each fetch it with their own
// client, as the scrape workers do, for --seconds; with --body-buffer (the default), each
// thread hands the storage of its last body in for the next (ClientRequest::body_buffer), as
// the kubelet scrapes do. Prints, per fetch: the process's CPU (its threads and the client
// library's), and its context switches, voluntary and not (getrusage). A fetch that fails
// stops the run with its status.
//
//   ./build/bench/fetch_bench [--threads=8] [--seconds=5] [--body-bytes=98304]
//                             [--body-buffer=true]
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kubestat/core/clock.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/program.h"
#include "kubestat/http/client.h"
#include "process_figures.h"

namespace {

using kubestat::bench::CpuSeconds;
using kubestat::bench::WallSeconds;

// The child: answers every request on every connection with `response`, until killed.
[[noreturn]] void Serve(int listener, const std::string& response) {
  while (true) {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) continue;
    std::thread([fd, &response] {
      std::string pending;
      char buffer[4096];
      while (true) {
        const ssize_t n = read(fd, buffer, sizeof buffer);
        if (n <= 0) break;
        pending.append(buffer, static_cast<size_t>(n));
        // Requests carry no body: each ends at its blank line.
        for (size_t end; (end = pending.find("\r\n\r\n")) != std::string::npos;) {
          pending.erase(0, end + 4);
          for (size_t sent = 0; sent < response.size();) {
            const ssize_t w = write(fd, response.data() + sent, response.size() - sent);
            if (w <= 0) {
              close(fd);
              return;
            }
            sent += static_cast<size_t>(w);
          }
        }
      }
      close(fd);
    }).detach();
  }
}

}  // namespace

int main(int argc, char** argv) {
  int64_t threads = 8;
  int64_t seconds = 5;
  int64_t body_bytes = 98304;
  bool body_buffer = true;
  kubestat::FlagSet flags("fetch_bench",
                          "the HTTP client's CPU and context switches per fetch of a fixed body");
  flags.AddInt64("threads", &threads, "fetching threads, each with its own client");
  flags.AddInt64("seconds", &seconds, "how long the threads fetch");
  flags.AddInt64("body-bytes", &body_bytes, "size of the body the server answers");
  flags.AddBool("body-buffer", &body_buffer,
                "each thread reads a body into the storage of its last one (false: a new "
                "string per fetch)");
  const int64_t verbosity = 0;
  if (std::optional<int> exit =
          kubestat::StartProgram("fetch_bench", flags, argc, argv, verbosity)) {
    return *exit;
  }
  if (threads < 1 || seconds < 1 || body_bytes < 0) {
    std::fprintf(stderr, "--threads and --seconds must be >= 1, --body-bytes >= 0\n");
    return 2;
  }
  const std::string body(static_cast<size_t>(body_bytes), 'x');
  const std::string response =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;

  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      listen(listener, 128) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("fetch_bench: listen");
    return 1;
  }
  const pid_t server = fork();
  if (server < 0) {
    std::perror("fetch_bench: fork");
    return 1;
  }
  if (server == 0) Serve(listener, response);
  close(listener);
  const std::string base = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));

  std::vector<std::unique_ptr<kubestat::http::Client>> clients;
  for (int64_t i = 0; i < threads; ++i) {
    kubestat::http::ClientOptions options;
    options.base_url = base;
    auto client = kubestat::http::Client::Create(options, kubestat::RealClock::Get());
    if (!client.ok()) {
      std::fprintf(stderr, "fetch_bench: %s\n", client.status().ToString().c_str());
      kill(server, SIGKILL);
      return 1;
    }
    clients.push_back(*std::move(client));
  }
  // One fetch per client first: connections open and the library's threads start outside
  // the measurement.
  for (auto& client : clients) {
    if (!client->Do(kubestat::http::ClientRequest{}).ok()) {
      std::fprintf(stderr, "fetch_bench: the first fetch failed\n");
      kill(server, SIGKILL);
      return 1;
    }
  }

  std::atomic<long> fetches{0};
  std::atomic<bool> failed{false};
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  const double cpu0 = CpuSeconds();
  const double wall0 = WallSeconds();
  std::vector<std::thread> workers;
  for (int64_t i = 0; i < threads; ++i) {
    workers.emplace_back([&, i] {
      kubestat::http::ClientRequest request;
      request.path_and_query = "/stats/summary";
      std::string storage;
      if (body_buffer) request.body_buffer = &storage;
      while (!failed.load() && WallSeconds() - wall0 < static_cast<double>(seconds)) {
        absl::StatusOr<kubestat::http::ClientResponse> answer = clients[i]->Do(request);
        if (!answer.ok() || answer->body.size() != body.size()) {
          std::fprintf(stderr, "fetch_bench: %s\n",
                       answer.ok() ? "short body" : answer.status().ToString().c_str());
          failed = true;
          return;
        }
        if (body_buffer) storage = std::move(answer->body);
        fetches.fetch_add(1);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  const double cpu = CpuSeconds() - cpu0;
  const double wall = WallSeconds() - wall0;
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  kill(server, SIGKILL);
  waitpid(server, nullptr, 0);
  if (failed) return 1;

  const auto n = static_cast<double>(fetches.load());
  std::printf("fetch: %lld threads, %lld-byte body%s, %.0f fetches in %.1f s (%.0f per s)\n",
              static_cast<long long>(threads), static_cast<long long>(body_bytes),
              body_buffer ? " read into the last one's storage" : " in a new string", n, wall,
              n / wall);
  std::printf("client CPU per fetch: %.1f us\n", 1e6 * cpu / n);
  std::printf("context switches per fetch: %.2f voluntary, %.2f involuntary\n",
              static_cast<double>(after.ru_nvcsw - before.ru_nvcsw) / n,
              static_cast<double>(after.ru_nivcsw - before.ru_nivcsw) / n);
  return 0;
}
