// A fixed set of threads running queued tasks, with a bounded queue: TrySubmit refuses
// instead of growing without bound. Thread-safe.
#ifndef KUBESTAT_HTTP_SRC_SERVER_WORKER_POOL_H_
#define KUBESTAT_HTTP_SRC_SERVER_WORKER_POOL_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kubestat::http::internal {

class WorkerPool {
 public:
  WorkerPool(int threads, size_t max_queued);
  ~WorkerPool();  // Stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Start();
  // False when max_queued tasks already wait, or after Stop().
  bool TrySubmit(std::function<void()> task);
  // Drops the queued tasks (destroying them on this thread), lets running ones finish and
  // joins the threads. Idempotent.
  void Stop();

 private:
  void Run();

  const int threads_;
  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace kubestat::http::internal

#endif  // KUBESTAT_HTTP_SRC_SERVER_WORKER_POOL_H_
