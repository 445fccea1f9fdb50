#include "kubestat/scrapers/summary_decoder.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/time.h"
#include "simdjson.h"

namespace kubestat::scrapers {
namespace {

namespace sj = simdjson::ondemand;

static_assert(kSummaryPadding >= simdjson::SIMDJSON_PADDING,
              "kSummaryPadding must cover the padding simdjson reads past the document");

// Above this, a payload is decoded with a parser of its own rather than growing the
// thread's reusable one, so one huge response does not pin its memory for the thread's
// lifetime.
constexpr size_t kMaxReusedParserCapacity = size_t{8} << 20;

// At most this many elements are made room for ahead of reading them (a kubelet runs at
// most a few hundred pods): an array of many empty objects, which are dropped, would
// otherwise reserve far more than the payload's size.
constexpr size_t kMaxReserved = 512;

// Values above 2^63 are rejected: no cpu counter, byte count or nano-core reading gets there
// legitimately, while a uint64 underflow in the kubelet lands just below 2^64.
constexpr uint64_t kMaxValue = uint64_t{1} << 63;
constexpr double kMaxValueAsDouble = 9223372036854775808.0;

// Where a value sits in the payload, for issue messages. Only formatted when an issue is
// recorded, so the hot path never builds strings.
struct Where {
  std::string_view list = {};   // "node", "node.systemContainers" or "pods"
  int index = -1;               // index in `list`, or -1 for the node itself
  int container = -1;           // index in pods[index].containers, or -1
  std::string_view block = {};  // "cpu", "memory", "swap" or ""
};

std::string Describe(const Where& where, std::string_view field) {
  std::string out(where.list);
  if (where.index >= 0) out += StrCat("[", where.index, "]");
  if (where.container >= 0) out += StrCat(".containers[", where.container, "]");
  if (!where.block.empty()) out += StrCat(".", where.block);
  if (!field.empty()) out += StrCat(".", field);
  return out;
}

absl::Status JsonError(simdjson::error_code error, const Where& where) {
  return absl::InvalidArgumentError(StrCat("kubelet summary is not valid JSON (at ",
                                           Describe(where, ""),
                                           "): ", simdjson::error_message(error)));
}

std::string_view JsonTypeName(sj::json_type type) {
  switch (type) {
    case sj::json_type::array:
      return "an array";
    case sj::json_type::object:
      return "an object";
    case sj::json_type::number:
      return "a number";
    case sj::json_type::string:
      return "a string";
    case sj::json_type::boolean:
      return "a boolean";
    case sj::json_type::null:
      return "null";
  }
  return "unknown";
}

// The pods and containers of an earlier scrape, kept for their storage: a pod's strings
// and container list, a container's name. Taking one from here instead of making a new one
// saves most of a decode's allocations (and the frees of the scrape it replaces).
struct Spares {
  std::vector<PodScrape> pods;
  std::vector<ContainerScrape> containers;

  // Moves the pods and containers of *scrape here and leaves *scrape as a new NodeScrape
  // whose lists and node name keep their storage.
  void TakeFrom(NodeScrape* scrape) {
    for (PodScrape& pod : scrape->pods) {
      for (ContainerScrape& container : pod.containers) containers.push_back(std::move(container));
      pod.containers.clear();
      pods.push_back(std::move(pod));
    }
    for (ContainerScrape& container : scrape->system_containers) {
      containers.push_back(std::move(container));
    }
    std::vector<PodScrape> pod_list = std::move(scrape->pods);
    std::vector<ContainerScrape> system_list = std::move(scrape->system_containers);
    std::string node_name = std::move(scrape->node_name);
    *scrape = NodeScrape{};
    scrape->pods = std::move(pod_list);
    scrape->pods.clear();
    scrape->system_containers = std::move(system_list);
    scrape->system_containers.clear();
    scrape->node_name = std::move(node_name);
    scrape->node_name.clear();
  }

  // Frees what is left, keeping the lists' own storage unless it grew large.
  void Clear() {
    pods.clear();
    containers.clear();
    if (pods.capacity() > 2 * kMaxReserved) std::vector<PodScrape>().swap(pods);
    if (containers.capacity() > 4 * kMaxReserved) std::vector<ContainerScrape>().swap(containers);
  }
};

// `used`, reset to a default value but for its strings' (and lists') storage.
PodScrape Emptied(PodScrape used) {
  PodScrape pod;
  pod.name = std::move(used.name);
  pod.name.clear();
  pod.namespace_name = std::move(used.namespace_name);
  pod.namespace_name.clear();
  pod.uid = std::move(used.uid);
  pod.uid.clear();
  pod.containers = std::move(used.containers);
  pod.containers.clear();
  return pod;
}

ContainerScrape Emptied(ContainerScrape used) {
  ContainerScrape container;
  container.name = std::move(used.name);
  container.name.clear();
  return container;
}

// Reads one payload. Methods return a non-OK Status only for malformed JSON (the whole
// payload is then rejected); a bad value is recorded in issues_ and decoding goes on.
class SummaryReader {
 public:
  // `spares` (may be null): where new pods and containers are taken from, and where those
  // dropped go back.
  SummaryReader(DecodeIssues* issues, Spares* spares) : issues_(issues), spares_(spares) {}

  absl::Status ReadDocument(sj::document& doc, NodeScrape* out) {
    const Where top{"summary"};
    sj::json_type type = sj::json_type::null;
    if (auto error = doc.type().get(type)) return JsonError(error, top);
    if (type != sj::json_type::object) {
      return absl::InvalidArgumentError(
          StrCat("kubelet summary: the top level is ", JsonTypeName(type), ", not an object"));
    }
    sj::object root;
    if (auto error = doc.get_object().get(root)) return JsonError(error, top);
    bool saw_node = false;
    for (auto field_result : root) {
      sj::field field;
      if (auto error = std::move(field_result).get(field)) return JsonError(error, top);
      const sj::raw_json_string key = field.key();
      if (key == "node") {
        saw_node = true;
        if (absl::Status status = ReadNode(field.value(), out); !status.ok()) return status;
      } else if (key == "pods") {
        if (absl::Status status = ReadPods(field.value(), out); !status.ok()) return status;
      }
    }
    // Anything after the top-level object (e.g. "{...}{}") makes the payload malformed.
    const char* trailing = nullptr;
    if (doc.current_location().get(trailing) == simdjson::SUCCESS) {
      return absl::InvalidArgumentError(
          "kubelet summary is not valid JSON: content after the top-level object");
    }
    if (!saw_node) return absl::InvalidArgumentError("kubelet summary has no \"node\" object");
    if (out->node_name.empty()) {
      return absl::InvalidArgumentError("kubelet summary has no node.nodeName");
    }
    DropDuplicatePods(out);
    return absl::OkStatus();
  }

 private:
  // The JSON type of `value`, or an error for malformed JSON.
  static absl::Status TypeOf(sj::value& value, const Where& where, sj::json_type* type) {
    if (auto error = value.type().get(*type)) return JsonError(error, where);
    return absl::OkStatus();
  }

  void WrongType(const Where& where, std::string_view field, std::string_view expected,
                 sj::json_type got) {
    issues_->Add(DecodeIssueKind::kWrongType, StrCat(Describe(where, field), ": expected ",
                                                     expected, ", got ", JsonTypeName(got)));
  }

  // A non-negative integer (an integer or a float, rounded). null leaves *out empty.
  absl::Status ReadCount(sj::value value, const Where& where, std::string_view field,
                         std::optional<uint64_t>* out) {
    sj::json_type type = sj::json_type::null;
    if (absl::Status status = TypeOf(value, where, &type); !status.ok()) return status;
    if (type == sj::json_type::null) return absl::OkStatus();
    if (type != sj::json_type::number) {
      WrongType(where, field, "a number", type);
      return absl::OkStatus();
    }
    sj::number number;
    if (auto error = value.get_number().get(number)) {
      // Out of any numeric range (e.g. a 30-digit integer) or not a number after all.
      const std::string_view raw = value.raw_json_token();
      issues_->Add(DecodeIssueKind::kAbsurdValue,
                   StrCat(Describe(where, field), ": unreadable number ", raw.substr(0, 40), " (",
                          simdjson::error_message(error), ")"));
      return absl::OkStatus();
    }
    switch (number.get_number_type()) {
      case sj::number_type::unsigned_integer:
      case sj::number_type::signed_integer:
        if (number.is_int64() && number.get_int64() < 0) {
          Absurd(where, field, std::to_string(number.get_int64()));
        } else if (number.is_uint64() && number.get_uint64() > kMaxValue) {
          Absurd(where, field, std::to_string(number.get_uint64()));
        } else {
          *out =
              number.is_int64() ? static_cast<uint64_t>(number.get_int64()) : number.get_uint64();
        }
        break;
      case sj::number_type::floating_point_number: {
        const double d = number.get_double();
        if (!std::isfinite(d) || d < 0 || d > kMaxValueAsDouble) {
          Absurd(where, field, StrCat(d));
        } else {
          *out = static_cast<uint64_t>(std::nearbyint(d));
        }
        break;
      }
    }
    return absl::OkStatus();
  }

  void Absurd(const Where& where, std::string_view field, std::string_view shown) {
    issues_->Add(DecodeIssueKind::kAbsurdValue, StrCat(Describe(where, field), ": value ", shown,
                                                       " is negative, not finite or above 2^63"));
  }

  // An RFC 3339 time. null leaves *out empty; a bad one is recorded and *ok set to false.
  absl::Status ReadTime(sj::value value, const Where& where, std::string_view field,
                        std::optional<Timestamp>* out, bool* ok = nullptr) {
    sj::json_type type = sj::json_type::null;
    if (absl::Status status = TypeOf(value, where, &type); !status.ok()) return status;
    if (type == sj::json_type::null) return absl::OkStatus();
    if (type != sj::json_type::string) {
      WrongType(where, field, "an RFC 3339 time string", type);
      if (ok != nullptr) *ok = false;
      return absl::OkStatus();
    }
    std::string_view text;
    if (auto error = value.get_string().get(text)) return JsonError(error, where);
    absl::StatusOr<Timestamp> time = ParseRfc3339(text);
    if (!time.ok()) {
      issues_->Add(
          DecodeIssueKind::kBadTimestamp,
          StrCat(Describe(where, field), ": ",
                 std::string_view(time.status().message().data(), time.status().message().size())));
      if (ok != nullptr) *ok = false;
      return absl::OkStatus();
    }
    *out = *time;
    return absl::OkStatus();
  }

  // A string; null leaves *out as it is.
  absl::Status ReadString(sj::value value, const Where& where, std::string_view field,
                          std::string* out) {
    sj::json_type type = sj::json_type::null;
    if (absl::Status status = TypeOf(value, where, &type); !status.ok()) return status;
    if (type == sj::json_type::null) return absl::OkStatus();
    if (type != sj::json_type::string) {
      WrongType(where, field, "a string", type);
      return absl::OkStatus();
    }
    std::string_view text;
    if (auto error = value.get_string().get(text)) return JsonError(error, where);
    out->assign(text);
    return absl::OkStatus();
  }

  // Starts reading an object value. Sets *present to false (and records a wrong type) when
  // the value is null or not an object.
  absl::Status OpenObject(sj::value& value, const Where& where, std::string_view field,
                          sj::object* object, bool* present) {
    *present = false;
    sj::json_type type = sj::json_type::null;
    if (absl::Status status = TypeOf(value, where, &type); !status.ok()) return status;
    if (type == sj::json_type::null) return absl::OkStatus();
    if (type != sj::json_type::object) {
      WrongType(where, field, "an object", type);
      return absl::OkStatus();
    }
    if (auto error = value.get_object().get(*object)) return JsonError(error, where);
    *present = true;
    return absl::OkStatus();
  }

  // A cpu, memory or swap block: {time, <value fields>}. The block is kept only when it has a
  // usable time; its values are each optional.
  template <typename Sample, typename OnField>
  absl::Status ReadSample(sj::value value, Where where, std::string_view block,
                          std::optional<Sample>* out, OnField on_field) {
    where.block = block;
    sj::object object;
    bool present;
    if (absl::Status status = OpenObject(value, where, "", &object, &present); !status.ok()) {
      return status;
    }
    if (!present) return absl::OkStatus();
    Sample sample{};
    std::optional<Timestamp> time;
    bool time_ok = true;
    bool any_value = false;
    for (auto field_result : object) {
      sj::field field;
      if (auto error = std::move(field_result).get(field)) return JsonError(error, where);
      const sj::raw_json_string key = field.key();
      if (key == "time") {
        absl::Status status = ReadTime(field.value(), where, "time", &time, &time_ok);
        if (!status.ok()) return status;
      } else {
        bool matched = false;
        absl::Status status = on_field(key, field.value(), where, &sample, &matched);
        if (!status.ok()) return status;
        any_value |= matched;
      }
    }
    if (!time_ok) return absl::OkStatus();  // recorded by ReadTime
    if (!time.has_value()) {
      if (any_value) {
        issues_->Add(DecodeIssueKind::kMissingField,
                     StrCat(Describe(where, "time"), ": missing; block dropped"));
      }
      return absl::OkStatus();
    }
    sample.time = *time;
    *out = sample;
    return absl::OkStatus();
  }

  absl::Status ReadCpu(sj::value value, const Where& where, std::optional<CpuSample>* out) {
    return ReadSample<CpuSample>(value, where, "cpu", out,
                                 [this](const sj::raw_json_string& key, sj::value v, const Where& w,
                                        CpuSample* s, bool* matched) -> absl::Status {
                                   if (key == "usageCoreNanoSeconds") {
                                     *matched = true;
                                     return ReadCount(v, w, "usageCoreNanoSeconds",
                                                      &s->usage_core_nanoseconds);
                                   }
                                   if (key == "usageNanoCores") {
                                     *matched = true;
                                     return ReadCount(v, w, "usageNanoCores", &s->usage_nano_cores);
                                   }
                                   return absl::OkStatus();
                                 });
  }

  absl::Status ReadMemory(sj::value value, const Where& where, std::optional<MemorySample>* out) {
    return ReadSample<MemorySample>(
        value, where, "memory", out,
        [this](const sj::raw_json_string& key, sj::value v, const Where& w, MemorySample* s,
               bool* matched) -> absl::Status {
          if (key == "workingSetBytes") {
            *matched = true;
            return ReadCount(v, w, "workingSetBytes", &s->working_set_bytes);
          }
          return absl::OkStatus();
        });
  }

  absl::Status ReadSwap(sj::value value, const Where& where, std::optional<SwapSample>* out) {
    return ReadSample<SwapSample>(
        value, where, "swap", out,
        [this](const sj::raw_json_string& key, sj::value v, const Where& w, SwapSample* s,
               bool* matched) -> absl::Status {
          if (key == "swapUsageBytes") {
            *matched = true;
            return ReadCount(v, w, "swapUsageBytes", &s->usage_bytes);
          }
          return absl::OkStatus();
        });
  }

  // A container (of a pod, or a system container). *keep is false when it has no name.
  absl::Status ReadContainer(sj::value value, const Where& where, ContainerScrape* out,
                             bool* keep) {
    *keep = false;
    sj::object object;
    bool present;
    if (absl::Status status = OpenObject(value, where, "", &object, &present); !status.ok()) {
      return status;
    }
    if (!present) return absl::OkStatus();
    for (auto field_result : object) {
      sj::field field;
      if (auto error = std::move(field_result).get(field)) return JsonError(error, where);
      const sj::raw_json_string key = field.key();
      absl::Status status;
      if (key == "name") {
        status = ReadString(field.value(), where, "name", &out->name);
      } else if (key == "startTime") {
        status = ReadTime(field.value(), where, "startTime", &out->start_time);
      } else if (key == "cpu") {
        status = ReadCpu(field.value(), where, &out->cpu);
      } else if (key == "memory") {
        status = ReadMemory(field.value(), where, &out->memory);
      } else if (key == "swap") {
        status = ReadSwap(field.value(), where, &out->swap);
      }
      if (!status.ok()) return status;
    }
    if (out->name.empty()) {
      issues_->Add(DecodeIssueKind::kMissingField,
                   StrCat(Describe(where, "name"), ": missing; container dropped"));
      return absl::OkStatus();
    }
    *keep = true;
    return absl::OkStatus();
  }

  // Room in `out` for every element of `array`, so that reading them grows it once: a pod's
  // containers, one vector each, were most of a scrape's allocations. Counting walks the
  // array's structure only; an array it cannot count is read without the room.
  template <typename T>
  static void ReserveFor(sj::array& array, std::vector<T>* out) {
    size_t count = 0;
    if (array.count_elements().get(count) == simdjson::SUCCESS) {
      out->reserve(out->size() + std::min(count, kMaxReserved));
    }
  }

  // An array of containers, appended to *out (duplicates by name dropped).
  absl::Status ReadContainers(sj::value value, Where where, std::string_view field, bool in_pod,
                              std::vector<ContainerScrape>* out) {
    sj::json_type type = sj::json_type::null;
    if (absl::Status status = TypeOf(value, where, &type); !status.ok()) return status;
    if (type == sj::json_type::null) return absl::OkStatus();
    if (type != sj::json_type::array) {
      WrongType(where, field, "an array", type);
      return absl::OkStatus();
    }
    sj::array array;
    if (auto error = value.get_array().get(array)) return JsonError(error, where);
    ReserveFor(array, out);
    int index = 0;
    for (auto element_result : array) {
      sj::value element;
      if (auto error = std::move(element_result).get(element)) return JsonError(error, where);
      if (in_pod) {
        where.container = index;
      } else {
        where.index = index;
      }
      ++index;
      ContainerScrape container = NewContainer();
      bool keep;
      if (absl::Status status = ReadContainer(element, where, &container, &keep); !status.ok()) {
        return status;
      }
      if (keep && FindContainer(*out, container.name) != nullptr) {
        issues_->Add(DecodeIssueKind::kDuplicate,
                     StrCat(Describe(where, ""), ": container \"", container.name,
                            "\" listed twice; first kept"));
        keep = false;
      }
      if (!keep) {
        if (spares_ != nullptr) spares_->containers.push_back(std::move(container));
        continue;
      }
      out->push_back(std::move(container));
    }
    return absl::OkStatus();
  }

  absl::Status ReadNode(sj::value value, NodeScrape* out) {
    const Where where{"node"};
    sj::json_type type = sj::json_type::null;
    if (absl::Status status = TypeOf(value, where, &type); !status.ok()) return status;
    if (type != sj::json_type::object) {
      return absl::InvalidArgumentError(
          StrCat("kubelet summary: node is ", JsonTypeName(type), ", not an object"));
    }
    sj::object object;
    if (auto error = value.get_object().get(object)) return JsonError(error, where);
    for (auto field_result : object) {
      sj::field field;
      if (auto error = std::move(field_result).get(field)) return JsonError(error, where);
      const sj::raw_json_string key = field.key();
      absl::Status status;
      if (key == "nodeName") {
        status = ReadString(field.value(), where, "nodeName", &out->node_name);
      } else if (key == "startTime") {
        status = ReadTime(field.value(), where, "startTime", &out->start_time);
      } else if (key == "cpu") {
        status = ReadCpu(field.value(), where, &out->cpu);
      } else if (key == "memory") {
        status = ReadMemory(field.value(), where, &out->memory);
      } else if (key == "swap") {
        status = ReadSwap(field.value(), where, &out->swap);
      } else if (key == "systemContainers") {
        status = ReadContainers(field.value(), Where{"node.systemContainers"}, "systemContainers",
                                /*in_pod=*/false, &out->system_containers);
      }
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  absl::Status ReadPodRef(sj::value value, const Where& where, PodScrape* pod) {
    sj::object object;
    bool present;
    if (absl::Status status = OpenObject(value, where, "podRef", &object, &present); !status.ok()) {
      return status;
    }
    if (!present) return absl::OkStatus();
    for (auto field_result : object) {
      sj::field field;
      if (auto error = std::move(field_result).get(field)) return JsonError(error, where);
      const sj::raw_json_string key = field.key();
      absl::Status status;
      if (key == "name") {
        status = ReadString(field.value(), where, "podRef.name", &pod->name);
      } else if (key == "namespace") {
        status = ReadString(field.value(), where, "podRef.namespace", &pod->namespace_name);
      } else if (key == "uid") {
        status = ReadString(field.value(), where, "podRef.uid", &pod->uid);
      }
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  absl::Status ReadPod(sj::value value, const Where& where, PodScrape* pod, bool* keep) {
    *keep = false;
    sj::object object;
    bool present;
    if (absl::Status status = OpenObject(value, where, "", &object, &present); !status.ok()) {
      return status;
    }
    if (!present) return absl::OkStatus();
    for (auto field_result : object) {
      sj::field field;
      if (auto error = std::move(field_result).get(field)) return JsonError(error, where);
      const sj::raw_json_string key = field.key();
      absl::Status status;
      if (key == "podRef") {
        status = ReadPodRef(field.value(), where, pod);
      } else if (key == "startTime") {
        status = ReadTime(field.value(), where, "startTime", &pod->start_time);
      } else if (key == "containers") {
        status =
            ReadContainers(field.value(), where, "containers", /*in_pod=*/true, &pod->containers);
      } else if (key == "cpu") {
        status = ReadCpu(field.value(), where, &pod->cpu);
      } else if (key == "memory") {
        status = ReadMemory(field.value(), where, &pod->memory);
      } else if (key == "swap") {
        status = ReadSwap(field.value(), where, &pod->swap);
      }
      if (!status.ok()) return status;
    }
    if (pod->name.empty() || pod->namespace_name.empty()) {
      issues_->Add(DecodeIssueKind::kMissingField,
                   StrCat(Describe(where, "podRef"), ": missing name or namespace; pod dropped"));
      return absl::OkStatus();
    }
    *keep = true;
    return absl::OkStatus();
  }

  absl::Status ReadPods(sj::value value, NodeScrape* out) {
    Where where{"pods"};
    sj::json_type type = sj::json_type::null;
    if (absl::Status status = TypeOf(value, where, &type); !status.ok()) return status;
    if (type == sj::json_type::null) return absl::OkStatus();
    if (type != sj::json_type::array) {
      WrongType(Where{"summary"}, "pods", "an array", type);
      return absl::OkStatus();
    }
    sj::array array;
    if (auto error = value.get_array().get(array)) return JsonError(error, where);
    ReserveFor(array, &out->pods);
    for (auto element_result : array) {
      sj::value element;
      if (auto error = std::move(element_result).get(element)) return JsonError(error, where);
      ++where.index;
      PodScrape pod = NewPod();
      bool keep;
      if (absl::Status status = ReadPod(element, where, &pod, &keep); !status.ok()) {
        return status;
      }
      if (keep) {
        out->pods.push_back(std::move(pod));
      } else if (spares_ != nullptr) {
        spares_->pods.push_back(std::move(pod));
      }
    }
    return absl::OkStatus();
  }

  // The same namespace/name twice: keep the first. Sorting indices keeps this O(n log n)
  // without hashing strings.
  void DropDuplicatePods(NodeScrape* out) {
    std::vector<PodScrape>& pods = out->pods;
    if (pods.size() < 2) return;
    std::vector<uint32_t> order(pods.size());
    std::iota(order.begin(), order.end(), 0);
    auto key = [&pods](uint32_t i) {
      return std::pair<std::string_view, std::string_view>(pods[i].namespace_name, pods[i].name);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&key](uint32_t a, uint32_t b) { return key(a) < key(b); });
    std::vector<bool> drop(pods.size(), false);
    bool any = false;
    for (size_t i = 1; i < order.size(); ++i) {
      if (key(order[i]) == key(order[i - 1])) {
        drop[order[i]] = true;  // stable sort: order[i] came later in the payload
        any = true;
        issues_->Add(DecodeIssueKind::kDuplicate,
                     StrCat("pods[", order[i], "]: pod ", pods[order[i]].namespace_name, "/",
                            pods[order[i]].name, " listed twice; first kept"));
      }
    }
    if (!any) return;
    size_t kept = 0;
    for (size_t i = 0; i < pods.size(); ++i) {
      if (!drop[i]) {
        if (kept != i) pods[kept] = std::move(pods[i]);
        ++kept;
      }
    }
    pods.resize(kept);
  }

  // A pod or container to read into: a spare one when there is one.
  PodScrape NewPod() {
    if (spares_ == nullptr || spares_->pods.empty()) return PodScrape{};
    PodScrape pod = Emptied(std::move(spares_->pods.back()));
    spares_->pods.pop_back();
    // Its containers come from the spares one by one, as any pod's.
    return pod;
  }
  ContainerScrape NewContainer() {
    if (spares_ == nullptr || spares_->containers.empty()) return ContainerScrape{};
    ContainerScrape container = Emptied(std::move(spares_->containers.back()));
    spares_->containers.pop_back();
    return container;
  }

  DecodeIssues* issues_;
  Spares* spares_;
};

// Decodes into *out, a new NodeScrape or (with `spares`) one whose storage is reused.
absl::Status DecodeWith(sj::parser& parser, const char* data, size_t size, size_t capacity,
                        NodeScrape* out, Spares* spares) {
  sj::document doc;
  if (auto error = parser.iterate(data, size, capacity).get(doc)) {
    return JsonError(error, Where{"summary"});
  }
  out->format = ScrapeFormat::kSummary;
  SummaryReader reader(&out->issues, spares);
  return reader.ReadDocument(doc, out);
}

absl::Status DecodePadded(const char* data, size_t size, size_t capacity, NodeScrape* out,
                          Spares* spares) {
  if (size > kMaxReusedParserCapacity) {
    sj::parser parser;
    return DecodeWith(parser, data, size, capacity, out, spares);
  }
  thread_local sj::parser parser;
  return DecodeWith(parser, data, size, capacity, out, spares);
}

absl::StatusOr<NodeScrape> DecodePadded(const char* data, size_t size, size_t capacity) {
  NodeScrape scrape;
  if (absl::Status status = DecodePadded(data, size, capacity, &scrape, nullptr); !status.ok()) {
    return status;
  }
  return scrape;
}

}  // namespace

absl::StatusOr<NodeScrape> DecodeSummary(std::string_view json) {
  if (json.size() > kMaxReusedParserCapacity) {
    const simdjson::padded_string padded(json);
    return DecodePadded(padded.data(), padded.size(), padded.size() + simdjson::SIMDJSON_PADDING);
  }
  // A per-thread copy buffer: allocating (and page-faulting) a fresh megabyte for every
  // payload costs about as much as parsing it.
  thread_local std::string buffer;
  buffer.reserve(json.size() + kSummaryPadding);
  buffer.assign(json);
  return DecodePadded(buffer.data(), buffer.size(), buffer.capacity());
}

absl::StatusOr<NodeScrape> DecodeSummaryInPlace(std::string* json) {
  NodeScrape scrape;
  if (absl::Status status = DecodeSummaryInPlace(json, &scrape); !status.ok()) return status;
  return scrape;
}

absl::Status DecodeSummaryInPlace(std::string* json, NodeScrape* out) {
  if (json->capacity() - json->size() < kSummaryPadding) {
    json->reserve(json->size() + kSummaryPadding);
  }
  // One set of spares per thread, empty between calls.
  thread_local Spares spares;
  spares.TakeFrom(out);
  absl::Status status = DecodePadded(json->data(), json->size(), json->capacity(), out, &spares);
  spares.Clear();
  return status;
}

}  // namespace kubestat::scrapers
