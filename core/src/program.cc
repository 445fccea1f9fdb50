#include "kubestat/core/program.h"

#include <pthread.h>

#include <iostream>
#include <string>

#include "absl/status/statusor.h"
#include "kubestat/core/log.h"

namespace kubestat {

int FailProgram(std::string_view program, const absl::Status& status, int code) {
  std::cerr << program << ": " << status.message() << "\n";
  return code;
}

std::optional<int> StartProgram(std::string_view program, FlagSet& flags, int argc, char** argv,
                                const int64_t& verbosity) {
  absl::StatusOr<ParsedFlags> parsed = flags.Parse(argc, argv);
  if (!parsed.ok()) return FailProgram(program, parsed.status());
  if (parsed->help_requested) {
    std::cout << flags.Usage();
    return 0;
  }
  if (!parsed->positional.empty()) {
    return FailProgram(program, absl::InvalidArgumentError("unexpected argument \"" +
                                                           parsed->positional[0] + "\""));
  }
  LogOptions log_options;
  log_options.verbosity = static_cast<int>(verbosity);
  if (absl::Status s = log_options.Validate(); !s.ok()) return FailProgram(program, s);
  ConfigureLogging(log_options);
  return std::nullopt;
}

int RunServerProgram(std::string_view program, FlagSet& flags, int argc, char** argv,
                     const int64_t& verbosity, const std::function<absl::Status()>& validate,
                     const std::function<ServerStart()>& start) {
  if (std::optional<int> exit = StartProgram(program, flags, argc, argv, verbosity)) return *exit;
  if (absl::Status s = validate(); !s.ok()) return FailProgram(program, s);
  TerminationSignals signals;  // before any thread starts
  ServerStart started = start();
  if (!started.stop) return FailProgram(program, started.error, started.exit_code);
  signals.Wait();
  if (absl::Status failure = started.stop(); !failure.ok()) return FailProgram(program, failure, 1);
  KLOG(INFO) << "stopped";
  return 0;
}

TerminationSignals::TerminationSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

int TerminationSignals::Wait() {
  int signal_number = 0;
  sigwait(&signals_, &signal_number);
  KLOG(INFO) << "received signal " << signal_number << ", shutting down";
  return signal_number;
}

}  // namespace kubestat
