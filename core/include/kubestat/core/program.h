// What every kubestat binary's main does around its own parts: read the command line into
// its options, set up logging, fail with one clear line, and wait for SIGINT or SIGTERM.
//
//   Options options;
//   FlagSet flags("kubestat-x", "...");
//   options.RegisterFlags(flags);
//   if (auto exit = StartProgram("kubestat-x", flags, argc, argv, options.verbosity)) {
//     return *exit;
//   }
//   if (absl::Status s = options.Validate(); !s.ok()) return FailProgram("kubestat-x", s);
//   TerminationSignals signals;  // before any thread starts
//   ... start ...
//   signals.Wait();
//   ... stop ...
//
// Not thread-safe: for main, before it starts threads (TerminationSignals' mask is inherited
// by every thread started after it).
#ifndef KUBESTAT_CORE_PROGRAM_H_
#define KUBESTAT_CORE_PROGRAM_H_

#include <signal.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
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

}  // namespace kubestat

#endif  // KUBESTAT_CORE_PROGRAM_H_
