// Drives the server's request parser (RequestReader) with arbitrary bytes, delivered in
// pieces whose sizes come from the input, through pipelined requests, and checks the
// limits it promises: a completed request never exceeds them, a rejection carries a Status
// with a 4xx/5xx code, and Parse() never consumes more than it was given.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kubestat/core/gzip.h"
#include "kubestat/http/server_request_reader.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kubestat::http::RequestReader;
  if (size < 1) return 0;
  // The first byte picks the piece size (1..256), so the same bytes arrive split in
  // many ways across runs.
  const size_t step = static_cast<size_t>(data[0]) + 1;
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);

  kubestat::http::RequestReaderLimits limits;
  limits.max_target_bytes = 256;
  limits.max_header_bytes = 2048;
  limits.max_header_count = 16;
  limits.max_body_bytes = 1024;
  RequestReader reader(limits);

  std::string pending;
  size_t at = 0;
  int requests = 0;
  while (true) {
    if (at < input.size()) {
      pending.append(input.substr(at, step));
      at += step;
    }
    size_t consumed = 0;
    const RequestReader::State state = reader.Parse(pending, &consumed);
    Check(consumed <= pending.size());
    pending.erase(0, consumed);
    if (state == RequestReader::State::kRejected) {
      const int code = reader.rejection().error.code();
      Check(code >= 400 && code <= 599);
      Check(!reader.rejection().error.ToJson().empty());
      break;
    }
    if (state == RequestReader::State::kComplete) {
      Check(reader.body().size() <= limits.max_body_bytes);
      Check(reader.target().size() <= limits.max_target_bytes);
      Check(reader.headers().size() <= limits.max_header_count);
      Check(reader.version() == 10 || reader.version() == 11);
      Check(reader.method() != "TRACE" && reader.method() != "CONNECT");
      for (const auto& [name, value] : reader.headers()) {
        if (name.size() == 15 && (name[0] == 'A' || name[0] == 'a')) {
          (void)kubestat::AcceptsGzip(value);
        }
      }
      ++requests;
      reader.Reset();
      continue;
    }
    // kNeedMore: more input, or the peer is done.
    if (at >= input.size()) {
      // Without new bytes nothing can change; the peer's close ends the request.
      size_t again = 0;
      if (reader.Parse(pending, &again) == RequestReader::State::kNeedMore && again == 0) {
        (void)reader.Eof();
        break;
      }
      pending.erase(0, again);
    }
  }
  (void)requests;
  return 0;
}
