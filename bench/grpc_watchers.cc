// kubestat-grpc-watchers: N concurrent Watch streams on kubestat-aggregator's gRPC server
// (kubestat.v1.Aggregator, every node and every pod), each reading every event, as the
// bridge's watch does: a bearer token from a file in the `authorization` metadata, plain
// text to a loopback address or TLS with a CA (or without verifying the server). A stream
// that ends, well or not, is started again after --reconnect-delay.
//
// Prints one line per --report-every, and a last one when it stops (after --duration, or
// on SIGINT or SIGTERM):
//   watchers elapsed_s=60 streams=8 events=96000 per_stream=12000,12000,... reconnects=0
//   errors=0 snapshots=8
// events, per_stream, reconnects and errors are totals since the start: reconnects counts
// streams started again after one ended, errors the streams that ended with a gRPC error
// (and token files that could not be read); snapshots the SNAPSHOT_END events received.
// Exits 0 when stopped, 2 for a bad flag.
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/file.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/program.h"
#include "kubestat/kube/bearer_token.h"
#include "kubestat/v1/aggregator.grpc.pb.h"

namespace {

using SteadyClock = std::chrono::steady_clock;

struct WatcherFlags {
  std::string address = "127.0.0.1:8081";
  std::string token_file;
  std::string ca_file;
  bool insecure_skip_tls_verify = false;
  int64_t streams = 8;
  kubestat::Duration duration = kubestat::Duration::zero();
  kubestat::Duration report_every = std::chrono::seconds(60);
  kubestat::Duration reconnect_delay = std::chrono::seconds(1);

  void Register(kubestat::FlagSet& flags) {
    flags.AddString("address", &address, "host:port of the aggregator's gRPC server");
    flags.AddString("token-file", &token_file,
                    "bearer token file, re-read when it changes; empty: no token");
    flags.AddString("ca-file", &ca_file,
                    "CA of the aggregator's gRPC serving certificate (TLS); empty: plain text "
                    "unless --insecure-skip-tls-verify");
    flags.AddBool("insecure-skip-tls-verify", &insecure_skip_tls_verify,
                  "TLS without verifying the server's certificate");
    flags.AddInt64("streams", &streams, "concurrent Watch streams");
    flags.AddDuration("duration", &duration, "how long to watch; 0: until SIGINT or SIGTERM");
    flags.AddDuration("report-every", &report_every, "period of the report line");
    flags.AddDuration("reconnect-delay", &reconnect_delay,
                      "wait before a stream that ended is started again");
  }

  absl::Status Validate() const {
    if (address.empty()) return absl::InvalidArgumentError("--address: required");
    if (!ca_file.empty() && insecure_skip_tls_verify) {
      return absl::InvalidArgumentError(
          "--insecure-skip-tls-verify: not with --ca-file (one way of TLS)");
    }
    if (streams < 1 || streams > 10000) {
      return absl::InvalidArgumentError("--streams: must be 1 to 10000");
    }
    if (duration < kubestat::Duration::zero()) {
      return absl::InvalidArgumentError("--duration: must not be negative");
    }
    if (report_every <= kubestat::Duration::zero()) {
      return absl::InvalidArgumentError("--report-every: must be positive");
    }
    if (reconnect_delay < kubestat::Duration::zero()) {
      return absl::InvalidArgumentError("--reconnect-delay: must not be negative");
    }
    return absl::OkStatus();
  }
};

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(const WatcherFlags& flags) {
  if (flags.insecure_skip_tls_verify) {
    grpc::experimental::TlsChannelCredentialsOptions tls;
    tls.set_verify_server_certs(false);
    tls.set_check_call_host(false);
    tls.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
    return grpc::experimental::TlsCredentials(tls);
  }
  if (flags.ca_file.empty()) return grpc::InsecureChannelCredentials();
  absl::StatusOr<std::string> ca = kubestat::ReadFile(flags.ca_file, "--ca-file");
  if (!ca.ok()) return ca.status();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = *std::move(ca);
  return grpc::SslCredentials(ssl);
}

// One line to standard error, whole even when streams end at once.
void LogLine(const std::string& line) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "%s\n", line.c_str());
}

// One stream's totals, written by its thread and read by the reporter.
struct StreamCounts {
  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> snapshots{0};
  std::atomic<uint64_t> reconnects{0};
  std::atomic<uint64_t> errors{0};
};

// One Watch stream, run again after it ends until stopped: every node and every pod, each
// event read and counted.
class WatchStream {
 public:
  WatchStream(std::unique_ptr<kubestat::v1::Aggregator::Stub> stub,
              kubestat::kube::BearerTokenFile* token, kubestat::Duration reconnect_delay,
              StreamCounts& counts)
      : stub_(std::move(stub)), token_(token), reconnect_delay_(reconnect_delay), counts_(counts) {}

  void Run(const std::stop_token& stop) {
    for (bool first = true; !stop.stop_requested(); first = false) {
      if (!first) counts_.reconnects.fetch_add(1);
      RunOnce(stop);
      std::mutex mu;
      std::unique_lock<std::mutex> lock(mu);
      std::condition_variable_any().wait_for(lock, stop, reconnect_delay_, [] { return false; });
    }
  }

 private:
  void RunOnce(const std::stop_token& stop) {
    grpc::ClientContext context;
    if (token_ != nullptr) {
      absl::StatusOr<std::string> token = token_->Get();
      if (!token.ok()) {
        counts_.errors.fetch_add(1);
        LogLine("watch: no bearer token: " + std::string(token.status().message()));
        return;
      }
      context.AddMetadata("authorization", "Bearer " + *token);
    }
    std::stop_callback cancel(stop, [&context] { context.TryCancel(); });
    kubestat::v1::WatchRequest request;
    request.mutable_nodes();
    request.mutable_pods();
    std::unique_ptr<grpc::ClientReader<kubestat::v1::WatchEvent>> reader =
        stub_->Watch(&context, request);
    kubestat::v1::WatchEvent event;
    while (reader->Read(&event)) {
      counts_.events.fetch_add(1, std::memory_order_relaxed);
      if (event.type() == kubestat::v1::WatchEvent::SNAPSHOT_END) counts_.snapshots.fetch_add(1);
    }
    const grpc::Status status = reader->Finish();
    if (stop.stop_requested()) return;
    if (!status.ok()) {
      counts_.errors.fetch_add(1);
      LogLine("watch ended: gRPC " + std::to_string(static_cast<int>(status.error_code())) + ": " +
              status.error_message());
    } else {
      LogLine("watch ended by the aggregator");
    }
  }

  const std::unique_ptr<kubestat::v1::Aggregator::Stub> stub_;
  kubestat::kube::BearerTokenFile* const token_;
  const kubestat::Duration reconnect_delay_;
  StreamCounts& counts_;
};

void Report(const std::vector<std::unique_ptr<StreamCounts>>& counts,
            SteadyClock::time_point start) {
  uint64_t events = 0, reconnects = 0, errors = 0, snapshots = 0;
  std::string per_stream;
  for (const std::unique_ptr<StreamCounts>& c : counts) {
    const uint64_t stream_events = c->events.load(std::memory_order_relaxed);
    events += stream_events;
    reconnects += c->reconnects.load();
    errors += c->errors.load();
    snapshots += c->snapshots.load();
    if (!per_stream.empty()) per_stream += ',';
    per_stream += std::to_string(stream_events);
  }
  const double elapsed = std::chrono::duration<double>(SteadyClock::now() - start).count();
  std::printf(
      "watchers elapsed_s=%.0f streams=%zu events=%llu per_stream=%s reconnects=%llu "
      "errors=%llu snapshots=%llu\n",
      elapsed, counts.size(), static_cast<unsigned long long>(events), per_stream.c_str(),
      static_cast<unsigned long long>(reconnects), static_cast<unsigned long long>(errors),
      static_cast<unsigned long long>(snapshots));
  std::fflush(stdout);
}

// Waits for SIGINT or SIGTERM (blocked in every thread) until `deadline`. True when one came.
bool WaitForSignal(const sigset_t& signals, SteadyClock::time_point deadline) {
  for (;;) {
    const auto left = deadline - SteadyClock::now();
    if (left <= SteadyClock::duration::zero()) return false;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(left);
    const timespec timeout{static_cast<time_t>(seconds.count()),
                           static_cast<long>(std::chrono::nanoseconds(left - seconds).count())};
    if (sigtimedwait(&signals, nullptr, &timeout) > 0) return true;
  }
}

}  // namespace

int main(int argc, char** argv) {
  WatcherFlags options;
  kubestat::FlagSet flags("kubestat-grpc-watchers",
                          "concurrent Watch streams on kubestat-aggregator's gRPC server, each "
                          "reading every event; prints the events received");
  options.Register(flags);
  const int64_t verbosity = 0;
  if (std::optional<int> exit =
          kubestat::StartProgram("kubestat-grpc-watchers", flags, argc, argv, verbosity)) {
    return *exit;
  }
  absl::Status valid = options.Validate();
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = Credentials(options);
  if (valid.ok() && !credentials.ok()) valid = credentials.status();
  if (!valid.ok()) return kubestat::FailProgram("kubestat-grpc-watchers", valid);

  // Blocked before any thread starts, so that only sigtimedwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<kubestat::kube::BearerTokenFile> token;
  if (!options.token_file.empty()) {
    token = std::make_unique<kubestat::kube::BearerTokenFile>(options.token_file);
  }
  const SteadyClock::time_point start = SteadyClock::now();
  std::vector<std::unique_ptr<StreamCounts>> counts;
  std::vector<std::unique_ptr<WatchStream>> streams;
  std::vector<std::jthread> threads;
  for (int64_t i = 0; i < options.streams; ++i) {
    // A channel (and connection) per stream, as separate clients would have.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    counts.push_back(std::make_unique<StreamCounts>());
    streams.push_back(
        std::make_unique<WatchStream>(kubestat::v1::Aggregator::NewStub(grpc::CreateCustomChannel(
                                          options.address, *credentials, args)),
                                      token.get(), options.reconnect_delay, *counts.back()));
    WatchStream* stream = streams.back().get();
    threads.emplace_back([stream](const std::stop_token& stop) { stream->Run(stop); });
  }

  const auto report_every = std::chrono::duration_cast<SteadyClock::duration>(options.report_every);
  const SteadyClock::time_point end =
      options.duration > kubestat::Duration::zero()
          ? start + std::chrono::duration_cast<SteadyClock::duration>(options.duration)
          : SteadyClock::time_point::max();
  for (SteadyClock::time_point next = start + report_every;; next += report_every) {
    const bool stopped = WaitForSignal(signals, std::min(next, end));
    if (stopped || SteadyClock::now() >= end) break;
    Report(counts, start);
  }
  for (std::jthread& thread : threads) thread.request_stop();
  threads.clear();  // joins
  Report(counts, start);
  return 0;
}
