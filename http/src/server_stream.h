// The StreamWriter of one streamed response (server.h), shared by the producer and the
// connection. Producers call the StreamWriter methods from any thread; the connection
// takes what they queued on its strand. A write posts at most one pump to the strand
// until the connection takes the queue.
//
// Lifetime: the channel holds the connection weakly and posts to its strand only while
// open, under its lock; Close() (the connection ending, or ServerCore::CloseStreams()
// before the io_context goes away) stops that for good, so a producer may keep the writer
// after the server is gone.
#ifndef KUBESTAT_HTTP_SRC_SERVER_STREAM_H_
#define KUBESTAT_HTTP_SRC_SERVER_STREAM_H_

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kubestat/http/server.h"

namespace kubestat::http::internal {

class StreamChannel final : public StreamWriter {
 public:
  // `pump` runs on `strand` after writes; it must hold the connection weakly.
  StreamChannel(boost::asio::any_io_executor strand, std::function<void()> pump);

  bool Write(std::string chunk) override;
  bool Flush() override;
  void Finish() override;
  size_t queued_bytes() const override;
  bool closed() const override;
  void OnClose(std::function<void()> callback) override;

  // What the producers queued since the last Take (connection side, on the strand).
  struct Batch {
    std::vector<std::string> chunks;
    size_t bytes = 0;
    bool head = false;    // Flush, Write or Finish was called
    bool finish = false;  // Finish was called
  };
  Batch Take();
  // `bytes` of a batch reached the socket.
  void Written(size_t bytes);
  // Ends the stream: later writes fail, the OnClose callback runs (on this thread).
  // Idempotent.
  void Close();

 private:
  // Posts a pump unless one is pending. Requires mu_.
  void PumpLocked();

  // Released at Close(): a strand must not outlive its io_context.
  boost::asio::any_io_executor strand_;
  const std::function<void()> pump_;
  mutable std::mutex mu_;
  std::vector<std::string> queue_;
  size_t queued_bytes_ = 0;
  bool head_ = false;
  bool finish_ = false;
  bool closed_ = false;
  bool pump_posted_ = false;
  std::function<void()> on_close_;
};

}  // namespace kubestat::http::internal

#endif  // KUBESTAT_HTTP_SRC_SERVER_STREAM_H_
