#include "server_worker_pool.h"

#include <utility>

#include "kubestat/core/thread.h"

namespace kubestat::http::internal {

WorkerPool::WorkerPool(int threads, size_t max_queued)
    : threads_(threads), max_queued_(max_queued) {}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Start() {
  for (int i = 0; i < threads_; ++i) {
    workers_.emplace_back([this] {
      NameThisThread("http-worker");
      Run();
    });
  }
}

bool WorkerPool::TrySubmit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::Stop() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  dropped.clear();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  workers_.clear();
}

void WorkerPool::Run() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace kubestat::http::internal
