#include "kubestat/bridge/push_queue.h"

#include <algorithm>
#include <utility>

#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace kubestat::bridge {
namespace {

using metrics_api::Resource;
using metrics_api::WriteItem;

void Newer(const metrics_api::ResourceWindows& windows, Timestamp* newest) {
  for (const auto* series : {&windows.cpu, &windows.memory}) {
    for (const metrics_api::Statistics& s : *series) *newest = std::max(*newest, s.endtime);
  }
}

template <typename Containers>
void NewerInContainers(const Containers& containers, Timestamp* newest) {
  for (const metrics_api::ContainerMetrics& c : containers) Newer(c.windows, newest);
}

}  // namespace

std::string DescribeKey(const ObjectKey& key) {
  if (key.resource == Resource::kNodes) return "node " + key.name;
  return "pod " + key.namespace_name + "/" + key.name;
}

ObjectKey KeyOf(const WriteItem& item) {
  if (item.op == WriteItem::Op::kDelete) {
    return {item.resource, item.resource == Resource::kPods ? item.namespace_name : "", item.name};
  }
  if (item.resource == Resource::kNodes) return {Resource::kNodes, "", item.node.name};
  return {Resource::kPods, item.pod.namespace_name, item.pod.name};
}

Timestamp NewestEndtime(const metrics_api::NodeMetrics& node) {
  Timestamp newest{};
  Newer(node.machine, &newest);
  NewerInContainers(node.system_containers, &newest);
  return newest;
}

Timestamp NewestEndtime(const metrics_api::PodMetrics& pod) {
  Timestamp newest{};
  Newer(pod.pod, &newest);
  NewerInContainers(pod.containers, &newest);
  return newest;
}

PushQueue::PushQueue(prometheus::Registry* registry) {
  if (registry == nullptr) return;
  depth_gauge_ = &prometheus::BuildGauge()
                      .Name("kubestat_bridge_queue_depth")
                      .Help(
                          "Writes waiting to be pushed to the metrics API server (the newest "
                          "per object)")
                      .Register(*registry)
                      .Add({});
  in_flight_gauge_ = &prometheus::BuildGauge()
                          .Name("kubestat_bridge_queue_in_flight")
                          .Help("Writes being pushed to the metrics API server")
                          .Register(*registry)
                          .Add({});
}

uint64_t PushQueue::Put(metrics_api::NodeMetrics node) {
  PushItem item;
  item.newest_endtime = NewestEndtime(node);
  WriteItem write;
  write.resource = Resource::kNodes;
  write.node = std::move(node);
  return Enqueue(std::move(item), write);
}

uint64_t PushQueue::Put(metrics_api::PodMetrics pod) {
  PushItem item;
  item.newest_endtime = NewestEndtime(pod);
  WriteItem write;
  write.resource = Resource::kPods;
  write.pod = std::move(pod);
  return Enqueue(std::move(item), write);
}

uint64_t PushQueue::Delete(ObjectKey key) {
  WriteItem write;
  write.op = WriteItem::Op::kDelete;
  write.resource = key.resource;
  write.namespace_name = std::move(key.namespace_name);
  write.name = std::move(key.name);
  return Enqueue(PushItem{}, write);
}

uint64_t PushQueue::Enqueue(PushItem item, const WriteItem& write) {
  // Rendered outside the lock: it is the costly part.
  item.key = KeyOf(write);
  item.op = write.op;
  if (write.op == WriteItem::Op::kPut) {
    const std::string object = metrics_api::RenderWriteObject(write);
    metrics_api::RenderedPut put = metrics_api::RenderPutItem(object);
    item.object_at = put.object_at;
    item.object_bytes = object.size();
    item.rendered = std::move(put.json);
  } else {
    item.rendered = metrics_api::RenderWriteItem(write);
  }
  item.bytes = item.rendered.size();
  std::lock_guard<std::mutex> lock(mu_);
  item.sequence = ++last_sequence_;
  auto it = pending_.find(item.key);
  if (it != pending_.end()) {
    // The replaced write is settled when this one is: the entry keeps its oldest number
    // and its place.
    it->second.item = std::move(item);
  } else {
    const uint64_t sequence = item.sequence;
    order_.push_back(item.key);
    Pending entry{std::move(item), sequence};
    pending_.emplace(entry.item.key, std::move(entry));
    outstanding_.insert(sequence);
  }
  UpdateGaugesLocked();
  cv_.notify_one();
  return last_sequence_;
}

bool PushQueue::CanTakeLocked() const {
  if (pending_.size() > in_flight_.size()) return true;
  return std::any_of(order_.begin(), order_.end(),
                     [this](const ObjectKey& key) { return !in_flight_.contains(key); });
}

std::vector<PushItem> PushQueue::Take(size_t max_items, size_t max_bytes,
                                      const std::stop_token& stop) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait(lock, stop, [this] { return CanTakeLocked(); })) return {};
  return TakeLocked(max_items, max_bytes);
}

std::vector<PushItem> PushQueue::TryTake(size_t max_items, size_t max_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  return TakeLocked(max_items, max_bytes);
}

std::vector<PushItem> PushQueue::TakeLocked(size_t max_items, size_t max_bytes) {
  std::vector<PushItem> batch;
  size_t bytes = 0;
  for (auto key_it = order_.begin(); key_it != order_.end() && batch.size() < max_items;) {
    if (in_flight_.contains(*key_it)) {
      ++key_it;
      continue;
    }
    auto it = pending_.find(*key_it);
    const size_t item_bytes = it->second.item.bytes;
    if (!batch.empty() && bytes + item_bytes > max_bytes) break;
    bytes += item_bytes;
    in_flight_[*key_it] = InFlight{it->second.item.sequence, it->second.oldest};
    batch.push_back(std::move(it->second.item));
    pending_.erase(it);
    key_it = order_.erase(key_it);
  }
  UpdateGaugesLocked();
  return batch;
}

void PushQueue::ForgetOutstandingLocked(uint64_t oldest) {
  auto it = outstanding_.find(oldest);
  if (it != outstanding_.end()) outstanding_.erase(it);
}

void PushQueue::Complete(const std::vector<PushItem>& items) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const PushItem& item : items) {
    auto it = in_flight_.find(item.key);
    if (it == in_flight_.end() || it->second.sequence != item.sequence) continue;
    ForgetOutstandingLocked(it->second.oldest);
    in_flight_.erase(it);
  }
  UpdateGaugesLocked();
  // A key that was in flight may hold a newer write that can now be taken.
  cv_.notify_all();
}

void PushQueue::Return(std::vector<PushItem> items) {
  std::lock_guard<std::mutex> lock(mu_);
  // Back to the front in their own order: they were due before anything queued since.
  for (auto item = items.rbegin(); item != items.rend(); ++item) {
    auto flight = in_flight_.find(item->key);
    if (flight == in_flight_.end() || flight->second.sequence != item->sequence) continue;
    const uint64_t oldest = flight->second.oldest;
    in_flight_.erase(flight);
    auto newer = pending_.find(item->key);
    if (newer != pending_.end()) {
      // The newer write stands for this one too.
      if (oldest < newer->second.oldest) {
        ForgetOutstandingLocked(newer->second.oldest);
        newer->second.oldest = oldest;
      } else {
        ForgetOutstandingLocked(oldest);
      }
      continue;
    }
    order_.push_front(item->key);
    ObjectKey key = item->key;
    pending_.emplace(std::move(key), Pending{std::move(*item), oldest});
  }
  UpdateGaugesLocked();
  cv_.notify_all();
}

size_t PushQueue::depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

size_t PushQueue::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_.size();
}

uint64_t PushQueue::last_sequence() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_sequence_;
}

bool PushQueue::CompletedThrough(uint64_t sequence) const {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_.empty() || *outstanding_.begin() > sequence;
}

void PushQueue::UpdateGaugesLocked() {
  if (depth_gauge_ == nullptr) return;
  depth_gauge_->Set(static_cast<double>(pending_.size()));
  in_flight_gauge_->Set(static_cast<double>(in_flight_.size()));
}

}  // namespace kubestat::bridge
