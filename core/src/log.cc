#include "kubestat/core/log.h"

#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

#include "kubestat/core/time.h"

namespace kubestat {
namespace {

struct LogState {
  std::mutex mu;
  LogSink sink;                  // empty: stderr
  const Clock* clock = nullptr;  // nullptr: RealClock
};

LogState& State() {
  static LogState* state = new LogState();  // never destroyed: logging works during exit
  return *state;
}

std::string_view BaseName(const char* path) {
  std::string_view p(path);
  const size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

}  // namespace

std::string_view LogSeverityName(LogSeverity severity) {
  switch (severity) {
    case LogSeverity::kInfo:
      return "INFO";
    case LogSeverity::kWarning:
      return "WARNING";
    case LogSeverity::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

absl::Status LogOptions::Validate() const {
  if (verbosity < 0) {
    return absl::InvalidArgumentError("log verbosity must be >= 0, got " +
                                      std::to_string(verbosity));
  }
  return absl::OkStatus();
}

void ConfigureLogging(const LogOptions& options) {
  SetLogVerbosity(options.verbosity);
  SetMinLogSeverity(options.min_severity);
}

void SetLogVerbosity(int verbosity) {
  log_internal::verbosity.store(verbosity, std::memory_order_relaxed);
}

int LogVerbosity() { return log_internal::verbosity.load(std::memory_order_relaxed); }

void SetMinLogSeverity(LogSeverity severity) {
  log_internal::min_severity.store(static_cast<int>(severity), std::memory_order_relaxed);
}

void SetLogSink(LogSink sink) {
  LogState& state = State();
  std::lock_guard lock(state.mu);
  state.sink = std::move(sink);
}

void SetLogClock(const Clock* clock) {
  LogState& state = State();
  std::lock_guard lock(state.mu);
  state.clock = clock;
}

namespace log_internal {

LogMessage::LogMessage(LogSeverity severity, const char* file, int line)
    : severity_(severity), file_(file), line_(line) {
  LogState& state = State();
  std::lock_guard lock(state.mu);
  time_ = state.clock != nullptr ? state.clock->Now() : RealClock::Get().Now();
}

LogMessage::~LogMessage() {
  std::string line = FormatRfc3339Nano(time_);
  line.push_back(' ');
  line += LogSeverityName(severity_);
  line.push_back(' ');
  line += BaseName(file_);
  line.push_back(':');
  line += std::to_string(line_);
  line += "] ";
  for (char c : stream_.view()) {
    if (c == '\n') {
      line += "\\n";
    } else {
      line.push_back(c);
    }
  }
  line.push_back('\n');

  LogState& state = State();
  std::lock_guard lock(state.mu);
  if (state.sink) {
    state.sink(line);
  } else {
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }
}

}  // namespace log_internal
}  // namespace kubestat
