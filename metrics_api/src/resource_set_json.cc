#include "resource_set_json.h"

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "json_fields.h"
#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/absl_view.h"

namespace kubestat::metrics_api {

uint64_t ResourceSet::MemoryBytes() const {
  uint64_t total = 0;
  for (const NumaMemory& block : memory) {
    if (block.memory_type == "memory") total += block.size_bytes;
  }
  return total;
}

std::map<std::string, int64_t> ResourceSet::DeviceCounts() const {
  std::map<std::string, int64_t> counts;
  for (const DeviceSet& set : devices) {
    counts[set.resource_name] += static_cast<int64_t>(set.device_ids.size());
  }
  return counts;
}

namespace internal {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

void WriteInts(JsonWriter& w, std::string_view key, const std::vector<int64_t>& values) {
  if (values.empty()) return;
  w.PlainKey(key).BeginArray();
  for (int64_t v : values) w.Int(v);
  w.EndArray();
}

absl::StatusOr<uint64_t> ReadSize(object o, const std::string& path) {
  element e;
  if (o["size"].get(e) != simdjson::SUCCESS) return uint64_t{0};
  std::string_view text;
  if (e.get(text) != simdjson::SUCCESS) return FieldError(path, "must be a quantity string");
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) return FieldError(path, StdView(q.status().message()));
  if (q->Sign() < 0) return FieldError(path, "must not be negative");
  absl::StatusOr<int64_t> bytes = q->Value();
  if (!bytes.ok()) return FieldError(path, StdView(bytes.status().message()));
  return static_cast<uint64_t>(*bytes);
}

}  // namespace

void WriteResourceSet(JsonWriter& w, const ResourceSet& set) {
  w.BeginObject();
  WriteInts(w, "cpuIds", set.cpu_ids);
  if (!set.memory.empty()) {
    w.PlainKey("memory").BeginArray();
    for (const NumaMemory& block : set.memory) {
      w.BeginObject();
      w.Key("memoryType").String(block.memory_type);
      const uint64_t size =
          std::min<uint64_t>(block.size_bytes, std::numeric_limits<int64_t>::max());
      w.PlainKey("size").PlainString(FormatMemoryBytes(static_cast<int64_t>(size)));
      WriteInts(w, "numaNodes", block.numa_nodes);
      w.EndObject();
    }
    w.EndArray();
  }
  if (!set.devices.empty()) {
    w.PlainKey("devices").BeginArray();
    for (const DeviceSet& devices : set.devices) {
      w.BeginObject();
      w.Key("resourceName").String(devices.resource_name);
      w.PlainKey("deviceIds").BeginArray();
      for (const std::string& id : devices.device_ids) w.String(id);
      w.EndArray();
      WriteInts(w, "numaNodes", devices.numa_nodes);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

absl::StatusOr<ResourceSet> ReadResourceSet(element e, const std::string& path) {
  absl::StatusOr<object> o = AsObject(e, path);
  if (!o.ok()) return o.status();
  ResourceSet set;
  absl::StatusOr<std::vector<int64_t>> cpus = OptionalInts(*o, "cpuIds", path + ".cpuIds");
  if (!cpus.ok()) return cpus.status();
  set.cpu_ids = *std::move(cpus);

  absl::StatusOr<std::optional<array>> memory = OptionalArray(*o, "memory", path + ".memory");
  if (!memory.ok()) return memory.status();
  size_t i = 0;
  if (*memory) {
    for (element item : **memory) {
      const std::string at = absl::StrCat(path, ".memory[", i++, "]");
      absl::StatusOr<object> block = AsObject(item, at);
      if (!block.ok()) return block.status();
      NumaMemory m;
      absl::StatusOr<std::string> type = OptionalString(*block, "memoryType", at + ".memoryType");
      if (!type.ok()) return type.status();
      m.memory_type = *std::move(type);
      absl::StatusOr<uint64_t> size = ReadSize(*block, at + ".size");
      if (!size.ok()) return size.status();
      m.size_bytes = *size;
      absl::StatusOr<std::vector<int64_t>> numa =
          OptionalInts(*block, "numaNodes", at + ".numaNodes");
      if (!numa.ok()) return numa.status();
      m.numa_nodes = *std::move(numa);
      set.memory.push_back(std::move(m));
    }
  }

  absl::StatusOr<std::optional<array>> devices = OptionalArray(*o, "devices", path + ".devices");
  if (!devices.ok()) return devices.status();
  i = 0;
  if (*devices) {
    for (element item : **devices) {
      const std::string at = absl::StrCat(path, ".devices[", i++, "]");
      absl::StatusOr<object> group = AsObject(item, at);
      if (!group.ok()) return group.status();
      DeviceSet d;
      absl::StatusOr<std::string> name =
          OptionalString(*group, "resourceName", at + ".resourceName");
      if (!name.ok()) return name.status();
      d.resource_name = *std::move(name);
      absl::StatusOr<std::vector<std::string>> ids =
          OptionalStrings(*group, "deviceIds", at + ".deviceIds");
      if (!ids.ok()) return ids.status();
      d.device_ids = *std::move(ids);
      absl::StatusOr<std::vector<int64_t>> numa =
          OptionalInts(*group, "numaNodes", at + ".numaNodes");
      if (!numa.ok()) return numa.status();
      d.numa_nodes = *std::move(numa);
      set.devices.push_back(std::move(d));
    }
  }
  return set;
}

}  // namespace internal
}  // namespace kubestat::metrics_api
