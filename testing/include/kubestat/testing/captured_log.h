// The log lines written while a CapturedLog lives: it is the process's log sink from its
// construction to its destruction, so a test that returns early (a failed ASSERT) still
// leaves no sink pointing at its locals for the threads that go on logging. One at a time.
#ifndef KUBESTAT_TESTING_CAPTURED_LOG_H_
#define KUBESTAT_TESTING_CAPTURED_LOG_H_

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/core/log.h"

namespace kubestat::testing {

class CapturedLog {
 public:
  CapturedLog() {
    SetLogSink([this](std::string_view line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.emplace_back(line);
    });
  }
  ~CapturedLog() { SetLogSink({}); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  // Every line so far, in order.
  std::vector<std::string> Lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  // The first line holding `text`, or "".
  std::string Find(std::string_view text) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& line : lines_) {
      if (line.find(text) != std::string::npos) return line;
    }
    return "";
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_CAPTURED_LOG_H_
