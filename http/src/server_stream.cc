#include "server_stream.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <utility>

namespace kubestat::http::internal {

StreamChannel::StreamChannel(boost::asio::any_io_executor strand, std::function<void()> pump)
    : strand_(std::move(strand)), pump_(std::move(pump)) {}

bool StreamChannel::Write(std::string chunk) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || finish_) return false;
  head_ = true;
  if (!chunk.empty()) {
    queued_bytes_ += chunk.size();
    queue_.push_back(std::move(chunk));
  }
  PumpLocked();
  return true;
}

bool StreamChannel::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  head_ = true;
  PumpLocked();
  return true;
}

void StreamChannel::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || finish_) return;
  head_ = true;
  finish_ = true;
  PumpLocked();
}

size_t StreamChannel::queued_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_bytes_;
}

bool StreamChannel::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

void StreamChannel::OnClose(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closed_) {
      on_close_ = std::move(callback);
      return;
    }
  }
  if (callback) callback();
}

StreamChannel::Batch StreamChannel::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  Batch batch;
  pump_posted_ = false;
  batch.chunks.swap(queue_);
  for (const std::string& chunk : batch.chunks) batch.bytes += chunk.size();
  batch.head = head_;
  batch.finish = finish_;
  return batch;
}

void StreamChannel::Written(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  queued_bytes_ -= std::min(bytes, queued_bytes_);
}

void StreamChannel::Close() {
  std::function<void()> callback;
  boost::asio::any_io_executor strand;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    strand = std::exchange(strand_, boost::asio::any_io_executor());
    queue_.clear();
    queued_bytes_ = 0;
    callback.swap(on_close_);
  }
  if (callback) callback();
}

void StreamChannel::PumpLocked() {
  if (pump_posted_ || closed_) return;
  pump_posted_ = true;
  boost::asio::post(strand_, pump_);
}

}  // namespace kubestat::http::internal
