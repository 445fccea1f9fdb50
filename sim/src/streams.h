// Response bodies the simulator's servers write over time: watches, the kubelets' oversized
// and slow-drip bodies (faults.h), and requests held unanswered (the "timeout" fault).
//
// A StreamSet keeps the streams its server started. Service(), called every few
// milliseconds, tops up an oversized body (at most 4 MiB queued), drips a slow one four
// bytes a second of real time, and ends a stream whose deadline (the clock's monotonic
// time) passed, whose reader went away, or, for any other stream, whose reader lets more
// than 16 MiB queue. Stop() ends every stream and answers every held request with its 503;
// streams and held requests started after it end at once.
//
// Thread-safe. A Stream is written only by the thread that starts it until it joins the
// set, then only with the set's lock held (Service(), SendTo()).
#ifndef KUBESTAT_SIM_SRC_STREAMS_H_
#define KUBESTAT_SIM_SRC_STREAMS_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server.h"

namespace kubestat::sim {

struct Stream {
  enum class Kind {
    kPodWatch,
    kNodeWatch,
    kLimitRangeWatch,
    kConfigMapWatch,
    kOversized,
    kSlowdrip
  };
  Kind kind;
  std::shared_ptr<http::StreamWriter> writer;  // set when the server starts the stream
  Timestamp deadline;                          // monotonic; the stream is closed then
  // Watches: which pods (namespace and node) or stored objects (namespace and name); empty:
  // all.
  std::string namespace_filter;
  std::string node_filter;
  // Oversized: bytes left to write. Slowdrip: the payload and how much was sent.
  size_t remaining = 0;
  std::string payload;
  size_t sent = 0;
  Timestamp next_drip;
};

// Writes `data` to the stream; nothing when it is empty.
void Send(Stream& s, std::string_view data);

class StreamSet {
 public:
  // Borrows the clock, which must outlive the set.
  explicit StreamSet(const Clock& clock);
  ~StreamSet();  // Stop()
  StreamSet(const StreamSet&) = delete;
  StreamSet& operator=(const StreamSet&) = delete;

  // A new stream of `kind`, ended `lifetime` from now.
  std::shared_ptr<Stream> Open(Stream::Kind kind, Duration lifetime) const;
  // A 200 whose body is `s`: when the server starts it, `initial` is written and flushed
  // and `s` joins the set.
  http::Response Respond(const std::shared_ptr<Stream>& s, const char* content_type,
                         std::string initial);
  // Joins `s`, its writer set, to the serviced streams; ends it at once after Stop().
  void Add(std::shared_ptr<Stream> s);
  // Writes `data` to every serviced stream `matches` accepts.
  void SendTo(absl::FunctionRef<bool(const Stream&)> matches, std::string_view data);

  // The "timeout" fault: no answer while the client waits; the 503 Status "shutting down"
  // when Stop() comes first. The server sends no head before the writer's first write.
  http::Response Hold();
  // Whether Stop() was called.
  bool stopping() const;

  void Service();
  // Idempotent.
  void Stop();

 private:
  // A request held unanswered until it goes away or the set stops.
  struct Held {
    std::shared_ptr<http::StreamWriter> writer;
    std::string answer;  // sent at Stop()
  };

  const Clock& clock_;
  mutable std::mutex mu_;
  bool stopping_ = false;                         // guarded by mu_
  std::vector<std::shared_ptr<Stream>> streams_;  // guarded by mu_
  std::vector<Held> held_;                        // guarded by mu_
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_STREAMS_H_
