#include "kubestat/aggregator/scrape_dump.h"

#include <optional>

#include "kubestat/core/json_writer.h"
#include "kubestat/core/time.h"

namespace kubestat::aggregator {
namespace {

using scrapers::ContainerScrape;
using scrapers::CpuSample;
using scrapers::MemorySample;
using scrapers::NodeScrape;
using scrapers::ScrapeTarget;

void WriteCpu(JsonWriter& w, const std::optional<CpuSample>& cpu) {
  if (!cpu) return;
  w.Key("cpu").BeginObject().Member("time", FormatRfc3339Nano(cpu->time));
  if (cpu->usage_core_nanoseconds) w.Key("usageCoreNanoSeconds").Uint(*cpu->usage_core_nanoseconds);
  if (cpu->usage_nano_cores) w.Key("usageNanoCores").Uint(*cpu->usage_nano_cores);
  w.EndObject();
}

void WriteMemory(JsonWriter& w, const std::optional<MemorySample>& memory) {
  if (!memory) return;
  w.Key("memory").BeginObject().Member("time", FormatRfc3339Nano(memory->time));
  if (memory->working_set_bytes) w.Key("workingSetBytes").Uint(*memory->working_set_bytes);
  w.EndObject();
}

void WriteContainer(JsonWriter& w, const ContainerScrape& c) {
  w.BeginObject().Member("name", c.name);
  if (c.start_time) w.Member("startTime", FormatRfc3339Nano(*c.start_time));
  WriteCpu(w, c.cpu);
  WriteMemory(w, c.memory);
  w.EndObject();
}

}  // namespace

std::string ScrapeDumpLine(const ScrapeTarget& target, const NodeScrape& s, Timestamp received) {
  JsonWriter w;
  w.BeginObject().Member("node", s.node_name).Member("target", target.HostPort());
  w.Member("received", FormatRfc3339Nano(received));
  w.Member("format", s.format == scrapers::ScrapeFormat::kSummary ? "summary" : "resource");
  if (s.start_time) w.Member("startTime", FormatRfc3339Nano(*s.start_time));
  WriteCpu(w, s.cpu);
  WriteMemory(w, s.memory);
  w.Key("systemContainers").BeginArray();
  for (const ContainerScrape& c : s.system_containers) WriteContainer(w, c);
  w.EndArray();
  w.Key("pods").BeginArray();
  for (const scrapers::PodScrape& pod : s.pods) {
    w.BeginObject().Member("namespace", pod.namespace_name).Member("name", pod.name);
    if (!pod.uid.empty()) w.Member("uid", pod.uid);
    if (pod.start_time) w.Member("startTime", FormatRfc3339Nano(*pod.start_time));
    WriteCpu(w, pod.cpu);
    WriteMemory(w, pod.memory);
    w.Key("containers").BeginArray();
    for (const ContainerScrape& c : pod.containers) WriteContainer(w, c);
    w.EndArray().EndObject();
  }
  w.EndArray();
  w.Key("decodeIssues").Uint(s.issues.Total());
  w.EndObject();
  return w.Take();
}

}  // namespace kubestat::aggregator
