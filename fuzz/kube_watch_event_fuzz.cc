// Feeds arbitrary bytes to the watch event readers (kube/watch_event.h), as a kube API
// server or anything in between could send them on a watch. The first byte picks the
// reader, the rest is its input:
//   'E' a watch event line, 'S' a Status object, 'M' an object's metadata.
// Errors must be InvalidArgument with a message. A parsed event must write back to a line
// that parses to the same event (its object text is kept byte for byte).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/kube/watch_event.h"

namespace {

void CheckError(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument || status.message().empty()) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char kind = static_cast<char>(data[0]);
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (kind) {
    case 'E': {
      absl::StatusOr<kubestat::kube::WatchEvent> event = kubestat::kube::ParseWatchEvent(input);
      if (!event.ok()) {
        CheckError(event.status());
        break;
      }
      // ParseWatchEvent reads its whole input as one event, whatever whitespace the
      // object holds.
      absl::StatusOr<kubestat::kube::WatchEvent> again = kubestat::kube::ParseWatchEvent(
          kubestat::kube::WriteWatchEvent(event->type, event->object_json));
      if (!again.ok() || *again != *event) std::abort();
      break;
    }
    case 'S': {
      absl::StatusOr<kubestat::ApiError> status = kubestat::kube::ParseStatusObject(input);
      if (!status.ok()) CheckError(status.status());
      break;
    }
    case 'M': {
      absl::StatusOr<kubestat::ObjectMeta> meta = kubestat::kube::ParseObjectMeta(input);
      if (!meta.ok()) CheckError(meta.status());
      break;
    }
    default:
      break;
  }
  return 0;
}
