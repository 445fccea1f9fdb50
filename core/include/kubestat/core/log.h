// Leveled logging to stderr.
//
//   KLOG(INFO) << "scraped " << n << " nodes";
//   KLOG(WARNING) << "kubelet " << node << ": " << status;
//   KLOG(ERROR) << "store: " << status;
//   KVLOG(2) << "request " << path;      // INFO, only when the verbosity is >= 2
//
// Each message is one line:
//   2026-11-21T10:00:10.25Z INFO scheduler.cc:88] scraped 3 nodes
// with the RFC 3339 nano time of the message, the level, the source file's base name and
// line, and the message (a newline inside it is written as "\n", so a message never spans
// lines). A line is written with one write under a lock, so lines of concurrent threads
// never interleave.
//
// When a level is off (below the minimum severity, or a KVLOG level above the verbosity)
// the stream arguments are not evaluated: the cost is one relaxed atomic load.
//
// The verbosity, the minimum severity, the sink (stderr by default) and the clock
// (RealClock by default) are process-wide; set them at start (SetLogSink and SetLogClock
// exist for tests). Every function here is thread-safe.
#ifndef KUBESTAT_CORE_LOG_H_
#define KUBESTAT_CORE_LOG_H_

#include <atomic>
#include <functional>
#include <sstream>
#include <string_view>

#include "absl/status/status.h"
#include "kubestat/core/clock.h"

namespace kubestat {

enum class LogSeverity { kInfo = 0, kWarning = 1, kError = 2 };

// "INFO", "WARNING", "ERROR".
std::string_view LogSeverityName(LogSeverity severity);

// Logging settings of a binary (usually bound to flags).
struct LogOptions {
  // KVLOG(n) is written when n <= verbosity. Default: 0
  int verbosity = 0;
  // Messages below this severity are dropped. Default: kInfo
  LogSeverity min_severity = LogSeverity::kInfo;

  // InvalidArgument when verbosity is negative.
  [[nodiscard]] absl::Status Validate() const;
};

// Applies `options` (call Validate() first).
void ConfigureLogging(const LogOptions& options);
void SetLogVerbosity(int verbosity);
int LogVerbosity();
void SetMinLogSeverity(LogSeverity severity);

// Receives every complete line, ending in '\n', while the logging lock is held (so it
// must not log). An empty function restores stderr.
using LogSink = std::function<void(std::string_view line)>;
void SetLogSink(LogSink sink);
// The clock that stamps lines; nullptr restores RealClock. The clock must outlive its use.
void SetLogClock(const Clock* clock);

namespace log_internal {

inline std::atomic<int> verbosity{0};
inline std::atomic<int> min_severity{0};

inline bool IsOn(LogSeverity severity) {
  return static_cast<int>(severity) >= min_severity.load(std::memory_order_relaxed);
}
inline bool VIsOn(int level) {
  return level <= verbosity.load(std::memory_order_relaxed) && IsOn(LogSeverity::kInfo);
}

// Collects one message and writes it when destroyed.
class LogMessage {
 public:
  LogMessage(LogSeverity severity, const char* file, int line);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogSeverity severity_;
  const char* file_;
  int line_;
  Timestamp time_;
  std::ostringstream stream_;
};

// Turns the stream expression into void so it fits the conditional operator.
struct Voidify {
  void operator&(std::ostream&) {}
};

inline constexpr LogSeverity kINFO = LogSeverity::kInfo;
inline constexpr LogSeverity kWARNING = LogSeverity::kWarning;
inline constexpr LogSeverity kERROR = LogSeverity::kError;

}  // namespace log_internal
}  // namespace kubestat

#define KLOG(severity)                                                                            \
  !::kubestat::log_internal::IsOn(::kubestat::log_internal::k##severity)                          \
      ? (void)0                                                                                   \
      : ::kubestat::log_internal::Voidify() &                                                     \
            ::kubestat::log_internal::LogMessage(::kubestat::log_internal::k##severity, __FILE__, \
                                                 __LINE__)                                        \
                .stream()

#define KVLOG(level)                                                                       \
  !::kubestat::log_internal::VIsOn(level)                                                  \
      ? (void)0                                                                            \
      : ::kubestat::log_internal::Voidify() &                                              \
            ::kubestat::log_internal::LogMessage(::kubestat::LogSeverity::kInfo, __FILE__, \
                                                 __LINE__)                                 \
                .stream()

#endif  // KUBESTAT_CORE_LOG_H_
