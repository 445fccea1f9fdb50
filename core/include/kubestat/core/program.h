// What every kubestat binary's main does around its own parts: read the command line into
// its options, set up logging, fail with one clear line, and wait for SIGINT or SIGTERM.
//
// A server's main is one call (RunServer): the options type, the program's name and
// description, and how to start its parts:
//
//   int main(int argc, char** argv) {
//     return kubestat::RunServer<XOptions>(
//         "kubestat-x", "Does x.", argc, argv, [](const XOptions& options) {
//           return StartCreated(X::Create(options, RealClock::Get()), /*exit_code=*/2);
//         });
//   }
//
// Exit codes: 0 after --help or a clean stop; 2 for a bad command line or options (the
// message names the flag); what the start says (ServerStart::Failed) when the parts cannot
// start; 1 when stopping reports that the parts failed while they ran.
//
// Not thread-safe: for main, before it starts threads (TerminationSignals' mask is inherited
// by every thread started after it).
#ifndef KUBESTAT_CORE_PROGRAM_H_
#define KUBESTAT_CORE_PROGRAM_H_

#include <signal.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/flags.h"

namespace kubestat {

// Prints "<program>: <message>" to standard error and returns `code`.
int FailProgram(std::string_view program, const absl::Status& status, int code = 2);

// Parses the command line into `flags`: --help prints the usage (exit 0); a bad flag or a
// positional argument prints the error (exit 2); otherwise logging is configured at
// `verbosity` (as parsed) and std::nullopt says go on. `program` names the binary in errors.
std::optional<int> StartProgram(std::string_view program, FlagSet& flags, int argc, char** argv,
                                const int64_t& verbosity);

// Blocks SIGINT and SIGTERM in the calling thread and in every thread it starts later, so
// that Wait() receives them.
class TerminationSignals {
 public:
  TerminationSignals();
  // Blocks until SIGINT or SIGTERM arrives; logs and returns its number.
  int Wait();

 private:
  sigset_t signals_;
};

// How a server program's parts started (RunServer): running, with the call that stops
// them, or not, with why and the exit code.
struct ServerStart {
  // Stops the parts after SIGINT or SIGTERM; returns the failure they met while they ran
  // (the program prints it and exits 1), or OK. Empty when the parts did not start.
  std::function<absl::Status()> stop;
  absl::Status error;  // why the parts did not start
  int exit_code = 0;   // the program's exit code when they did not

  static ServerStart Running(std::function<absl::Status()> stop) {
    ServerStart start;
    start.stop = std::move(stop);
    return start;
  }
  // `exit_code`: 2 when the configuration is unusable, 1 when starting failed.
  static ServerStart Failed(absl::Status error, int exit_code) {
    ServerStart start;
    start.error = std::move(error);
    start.exit_code = exit_code;
    return start;
  }
};

// The usual start of a server's parts: `created` (a T::Create answer) is started (T::Start())
// and stopped by T::Stop(); a failed create exits with `exit_code`.
template <typename T>
ServerStart StartCreated(absl::StatusOr<std::unique_ptr<T>> created, int exit_code) {
  if (!created.ok()) return ServerStart::Failed(created.status(), exit_code);
  std::shared_ptr<T> parts = *std::move(created);
  parts->Start();
  return ServerStart::Running([parts] {
    parts->Stop();
    return absl::OkStatus();
  });
}

// The body of RunServer for options already registered in `flags`: StartProgram, `validate`
// (a bad option exits 2), TerminationSignals, `start`, the wait for a signal, the stop and
// the "stopped" log line. Returns the exit code (see the file comment).
int RunServerProgram(std::string_view program, FlagSet& flags, int argc, char** argv,
                     const int64_t& verbosity, const std::function<absl::Status()>& validate,
                     const std::function<ServerStart()>& start);

// A server program's main: `Options` (RegisterFlags(FlagSet&), a `verbosity` flag field,
// Validate()) read from the command line, then `start(options)` returns a ServerStart; it
// runs until SIGINT or SIGTERM. Returns the exit code (see the file comment).
template <typename Options, typename Start>
int RunServer(std::string_view program, std::string_view description, int argc, char** argv,
              Start&& start) {
  Options options;
  FlagSet flags{std::string(program), std::string(description)};
  options.RegisterFlags(flags);
  return RunServerProgram(
      program, flags, argc, argv, options.verbosity, [&] { return options.Validate(); },
      [&] { return std::forward<Start>(start)(static_cast<const Options&>(options)); });
}

}  // namespace kubestat

#endif  // KUBESTAT_CORE_PROGRAM_H_
