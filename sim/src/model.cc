#include "kubestat/sim/model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "absl/strings/str_cat.h"
#include "sim_hash.h"

namespace kubestat::sim {
namespace {

// Sample times are whole seconds since cluster_start; closed forms are evaluated in long
// double (64-bit mantissa) so that differences of large antiderivatives stay far below a
// nanosecond of cpu time.
using Real = long double;
constexpr Real kTwoPi = 6.283185307179586476925286766559L;
constexpr int64_t kDay = 86400;
constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// Hash tags: each random choice uses its own tag so that choices stay independent.
enum Tag : uint64_t {
  kTagApp = 1,
  kTagWorkload,
  kTagCpu,
  kTagMemory,
  kTagRestart,
  kTagGeneration,
  kTagUid,
  kTagNode,
  kTagSystem,
  kTagLimit,
};

struct App {
  const char* ns;
  const char* name;
  const char* tier;
  const char* containers[2];
  bool daemonset;
};

// Slots 0 and 1 of every node hold the DaemonSets; the others draw a Deployment.
constexpr App kDaemonSets[] = {
    {"kube-system", "kube-proxy", "system", {"kube-proxy", "conntrack-exporter"}, true},
    {"monitoring", "node-exporter", "system", {"node-exporter", "kube-rbac-proxy"}, true},
};
constexpr App kDeployments[] = {
    {"shop", "web", "frontend", {"web", "envoy"}, false},
    {"shop", "cart", "backend", {"cart", "envoy"}, false},
    {"shop", "catalog", "backend", {"catalog", "envoy"}, false},
    {"payments", "payments-api", "backend", {"api", "envoy"}, false},
    {"payments", "ledger", "data", {"ledger", "envoy"}, false},
    {"search", "query", "backend", {"query", "envoy"}, false},
    {"search", "indexer", "data", {"indexer", "envoy"}, false},
    {"analytics", "etl", "batch", {"etl", "fluent-bit"}, false},
    {"analytics", "spark-worker", "batch", {"spark-worker", "fluent-bit"}, false},
    {"kube-system", "coredns", "system", {"coredns", "config-reloader"}, false},
    {"monitoring", "prometheus", "system", {"prometheus", "config-reloader"}, false},
};
constexpr int kDeploymentCount = sizeof(kDeployments) / sizeof(kDeployments[0]);

// Kubernetes' rand.String alphabet (no vowels, no look-alikes).
constexpr char kNameAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
constexpr int64_t kAlphabetSize = 27;

// "tenant-0042", numbered as the nodes are ("node-%04d").
std::string TenantNamespace(int index) {
  char name[32];
  std::snprintf(name, sizeof(name), "tenant-%04d", index);
  return name;
}

std::string RandomName(uint64_t h, int length) {
  std::string s(length, 'x');
  for (int i = 0; i < length; ++i) {
    s[i] = kNameAlphabet[h % kAlphabetSize];
    h /= kAlphabetSize;
  }
  return s;
}

std::string FormatUid(uint64_t a, uint64_t b) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

// A cpu rate r(t) in cores with its antiderivative F(t) (t in seconds since cluster_start).
struct CpuCurve {
  Workload workload = Workload::kSteady;
  Real base = 0;       // cores
  Real amplitude = 0;  // wobble (steady, leaky), diurnal swing, or burst height (spiky)
  Real period = 1;     // seconds
  Real phase = 0;      // seconds
  int64_t burst_period = 1;
  int64_t burst_length = 0;
  int64_t burst_phase = 0;

  Real Rate(int64_t t) const {
    switch (workload) {
      case Workload::kDiurnal:
        return base + amplitude * (1 - std::cos(kTwoPi * (t - phase) / period)) / 2;
      case Workload::kSpiky:
        return base + (((t + burst_phase) % burst_period) < burst_length ? amplitude : 0);
      case Workload::kSteady:
      case Workload::kLeaky:
        break;
    }
    return base + amplitude * std::sin(kTwoPi * (t + phase) / period);
  }

  Real Integral(int64_t t) const {
    switch (workload) {
      case Workload::kDiurnal:
        return base * t +
               amplitude / 2 * (t - period / kTwoPi * std::sin(kTwoPi * (t - phase) / period));
      case Workload::kSpiky: {
        const int64_t u = t + burst_phase;
        const int64_t bursts =
            u / burst_period * burst_length + std::min<int64_t>(u % burst_period, burst_length);
        const int64_t before = burst_phase / burst_period * burst_length +
                               std::min<int64_t>(burst_phase % burst_period, burst_length);
        return base * t + amplitude * static_cast<Real>(bursts - before);
      }
      case Workload::kSteady:
      case Workload::kLeaky:
        break;
    }
    return base * t - amplitude * period / kTwoPi * std::cos(kTwoPi * (t + phase) / period);
  }
};

CpuCurve SteadyCurve(uint64_t h, Real lo, Real hi) {
  CpuCurve c;
  c.workload = Workload::kSteady;
  c.base = lo * std::pow(hi / lo, static_cast<Real>(Unit(Mix(h, 1))));
  c.amplitude = c.base * (0.03L + 0.07L * Unit(Mix(h, 2)));
  c.period = 60 + std::floor(540 * Unit(Mix(h, 3)));
  c.phase = std::floor(c.period * Unit(Mix(h, 4)));
  return c;
}

struct ContainerParams {
  Workload workload;
  CpuCurve cpu;
  int64_t memory_base;   // bytes
  int64_t memory_swing;  // bytes: diurnal swing, spiky burst extra, leaky growth per run
  bool restarts;
  int64_t restart_period;  // seconds
  int64_t restart_phase;   // seconds
  int64_t cpu_request_millis;
  int64_t cpu_limit_millis;
  int64_t memory_request_bytes;
  int64_t memory_limit_bytes;
};

struct SlotParams {
  const App* app;
};

}  // namespace

std::string_view WorkloadName(Workload w) {
  switch (w) {
    case Workload::kSteady:
      return "steady";
    case Workload::kDiurnal:
      return "diurnal";
    case Workload::kSpiky:
      return "spiky";
    case Workload::kLeaky:
      return "leaky";
  }
  return "unknown";
}

absl::Status ClusterModelOptions::Validate() const {
  if (nodes < 1 || nodes > 60000) {
    return absl::InvalidArgumentError(absl::StrCat("nodes must be in [1, 60000], got ", nodes));
  }
  if (pods_per_node < 1 || pods_per_node > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("pods_per_node must be in [1, 1000], got ", pods_per_node));
  }
  if (containers_per_pod < 1 || containers_per_pod > 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("containers_per_pod must be in [1, 8], got ", containers_per_pod));
  }
  const double weights[] = {steady_weight, diurnal_weight, spiky_weight, leaky_weight};
  double total = 0;
  for (double w : weights) {
    if (!(w >= 0) || std::isinf(w)) {
      return absl::InvalidArgumentError("workload weights must be finite and >= 0");
    }
    total += w;
  }
  if (total <= 0) return absl::InvalidArgumentError("workload weights must not all be zero");
  if (mean_pod_lifetime < Duration::zero() ||
      (mean_pod_lifetime > Duration::zero() && mean_pod_lifetime < std::chrono::minutes(10))) {
    return absl::InvalidArgumentError("mean_pod_lifetime must be 0 or at least 10m");
  }
  if (tenant_namespaces < 0 || tenant_namespaces > 1000000) {
    return absl::InvalidArgumentError("tenant_namespaces must be in [0, 1000000]");
  }
  if (!(restart_fraction >= 0 && restart_fraction <= 1)) {
    return absl::InvalidArgumentError("restart_fraction must be in [0, 1]");
  }
  return absl::OkStatus();
}

namespace {

struct Internals {
  static const App& AppOf(const ClusterModelOptions& o, int node, int slot) {
    if (slot < 2) return kDaemonSets[slot];
    return kDeployments[Mix(o.seed, kTagApp, node, slot) % kDeploymentCount];
  }

  static ContainerParams Params(const ClusterModelOptions& o, int node, int slot, int c) {
    ContainerParams p{};
    const uint64_t h = Mix(o.seed, kTagWorkload, node, slot, c);
    const double total = o.steady_weight + o.diurnal_weight + o.spiky_weight + o.leaky_weight;
    double x = Unit(h) * total;
    if (x < o.steady_weight) {
      p.workload = Workload::kSteady;
    } else if ((x -= o.steady_weight) < o.diurnal_weight) {
      p.workload = Workload::kDiurnal;
    } else if ((x -= o.diurnal_weight) < o.spiky_weight) {
      p.workload = Workload::kSpiky;
    } else {
      p.workload = Workload::kLeaky;
    }
    // Sidecars (every container but the first) are small.
    const Real scale = c == 0 ? 1.0L : 0.25L;
    const uint64_t hc = Mix(o.seed, kTagCpu, node, slot, c);
    const uint64_t hm = Mix(o.seed, kTagMemory, node, slot, c);
    switch (p.workload) {
      case Workload::kSteady:
        p.cpu = SteadyCurve(hc, 0.02L * scale, 0.3L * scale);
        break;
      case Workload::kLeaky:
        p.cpu = SteadyCurve(hc, 0.01L * scale, 0.08L * scale);
        p.cpu.workload = Workload::kLeaky;
        break;
      case Workload::kDiurnal:
        p.cpu.workload = Workload::kDiurnal;
        p.cpu.base = (0.02L + 0.1L * Unit(Mix(hc, 1))) * scale;
        p.cpu.amplitude = p.cpu.base * (1 + 3 * Unit(Mix(hc, 2)));
        p.cpu.period = kDay;
        // Peak between 10:00 and 20:00 UTC.
        p.cpu.phase = std::floor(kDay * (0.1L + 0.25L * Unit(Mix(hc, 3))));
        break;
      case Workload::kSpiky:
        p.cpu.workload = Workload::kSpiky;
        p.cpu.base = (0.005L + 0.03L * Unit(Mix(hc, 1))) * scale;
        p.cpu.amplitude = (0.3L + 1.2L * Unit(Mix(hc, 2))) * scale;
        p.cpu.burst_period = 60 + static_cast<int64_t>(Mix(hc, 3) % 541);
        p.cpu.burst_length =
            std::max<int64_t>(1, p.cpu.burst_period * (10 + Mix(hc, 4) % 21) / 100);
        p.cpu.burst_phase = static_cast<int64_t>(Mix(hc, 5) % p.cpu.burst_period);
        break;
    }
    const Real lo = 24.0L * kMiB * scale, hi = 600.0L * kMiB * scale;
    p.memory_base = static_cast<int64_t>(lo * std::pow(hi / lo, static_cast<Real>(Unit(hm))));
    p.memory_base -= p.memory_base % 4096;
    const uint64_t hr = Mix(o.seed, kTagRestart, node, slot, c);
    if (p.workload == Workload::kLeaky) {
      p.restarts = true;
      p.restart_period = 3600 + static_cast<int64_t>(Mix(hr, 1) % (2 * 3600 + 1));
      p.memory_swing = p.memory_base * (40 + static_cast<int64_t>(Mix(hm, 1) % 50)) / 100;
    } else {
      p.restarts = Unit(Mix(hr, 2)) < o.restart_fraction;
      p.restart_period = 1800 + static_cast<int64_t>(Mix(hr, 1) % (5 * 3600 + 1800 + 1));
      p.memory_swing = p.memory_base * (5 + static_cast<int64_t>(Mix(hm, 1) % 30)) / 100;
    }
    p.restart_phase = static_cast<int64_t>(Mix(hr, 3) % p.restart_period);

    Real typical = p.cpu.base;
    if (p.workload == Workload::kDiurnal) typical += p.cpu.amplitude / 2;
    p.cpu_request_millis =
        std::max<int64_t>(10, (static_cast<int64_t>(typical * 1000) / 10 + 1) * 10);
    const uint64_t hl = Mix(o.seed, kTagLimit, node, slot, c);
    p.cpu_limit_millis = (hl & 1) ? p.cpu_request_millis * 4 : 0;
    p.memory_request_bytes = (p.memory_base / kMiB + 1) * kMiB;
    p.memory_limit_bytes =
        (p.workload == Workload::kLeaky || (hl & 2)) ? p.memory_request_bytes * 2 : 0;
    if (o.node_topology && IsPinned(AppOf(o, node, slot))) MakeGuaranteed(p, c);
    return p;
  }

  // ---- Node topology (ClusterModelOptions::node_topology) ----

  // The data tier runs Guaranteed, pinned by the static CPU and memory managers.
  static bool IsPinned(const App& app) { return std::string_view(app.tier) == "data"; }

  // Limits equal to requests (cpu and memory), high enough for the container's peak; the
  // first container gets whole cpus, so the static CPU manager gives it exclusive ones.
  static void MakeGuaranteed(ContainerParams& p, int c) {
    // Every curve peaks at base + amplitude.
    const Real peak = p.cpu.base + p.cpu.amplitude;
    const int64_t peak_millis = static_cast<int64_t>(std::ceil(peak * 1000));
    p.cpu_request_millis = c == 0 ? std::max<int64_t>(1, (peak_millis + 999) / 1000) * 1000
                                  : std::max(p.cpu_request_millis, (peak_millis + 9) / 10 * 10);
    p.cpu_limit_millis = p.cpu_request_millis;
    p.memory_request_bytes = std::max(p.memory_limit_bytes, p.memory_request_bytes * 2);
    p.memory_limit_bytes = p.memory_request_bytes;
  }

  // GPUs the containers of (node, slot) ask for: the first container of a batch-tier pod asks
  // for one while fewer than kNodeGpus batch slots come before it on the node.
  static int64_t Gpus(const ClusterModelOptions& o, int node, int slot, int c) {
    if (!o.node_topology || c != 0 || std::string_view(AppOf(o, node, slot).tier) != "batch") {
      return 0;
    }
    int64_t before = 0;
    for (int s = 0; s < slot && before < kNodeGpus; ++s) {
      if (std::string_view(AppOf(o, node, s).tier) == "batch") ++before;
    }
    return before < kNodeGpus ? 1 : 0;
  }

  // Memory working set at t (seconds since cluster_start) of a run started at `run_start`.
  static int64_t WorkingSet(const ContainerParams& p, int64_t t, int64_t run_start) {
    Real ws = static_cast<Real>(p.memory_base);
    switch (p.workload) {
      case Workload::kSteady:
        ws += p.memory_swing / 10.0L * std::sin(kTwoPi * (t + p.cpu.phase) / (p.cpu.period * 7));
        break;
      case Workload::kDiurnal:
        ws += p.memory_swing * (1 - std::cos(kTwoPi * (t - p.cpu.phase) / p.cpu.period)) / 2;
        break;
      case Workload::kSpiky:
        if (((t + p.cpu.burst_phase) % p.cpu.burst_period) < p.cpu.burst_length) {
          ws += p.memory_swing;
        }
        break;
      case Workload::kLeaky:
        ws += static_cast<Real>(p.memory_swing) * static_cast<Real>(t - run_start) /
              static_cast<Real>(p.restart_period);
        break;
    }
    const int64_t v = static_cast<int64_t>(ws);
    return v - v % 4096;
  }
};

int64_t Seconds(Timestamp t, Timestamp origin) {
  return std::chrono::duration_cast<std::chrono::seconds>(t - origin).count();
}

uint64_t CpuNanos(Real core_seconds) {
  return core_seconds <= 0 ? 0 : static_cast<uint64_t>(std::llround(core_seconds * 1e9L));
}

void FillMemoryDerived(ResourceUsage& u, int64_t ws, int64_t cache, int64_t limit) {
  u.working_set_bytes = static_cast<uint64_t>(ws);
  u.usage_bytes = static_cast<uint64_t>(ws + cache);
  u.rss_bytes = static_cast<uint64_t>(ws - ws / 8);
  u.rss_bytes -= u.rss_bytes % 4096;
  u.page_faults = u.usage_core_nano_seconds / 1000000 + static_cast<uint64_t>(ws / (64 * 4096));
  u.major_page_faults = u.page_faults / 100000;
  if (limit > 0) u.available_bytes = static_cast<uint64_t>(std::max<int64_t>(0, limit - ws));
}

void Accumulate(ResourceUsage& sum, const ResourceUsage& u) {
  sum.usage_nano_cores += u.usage_nano_cores;
  sum.usage_core_nano_seconds += u.usage_core_nano_seconds;
  sum.working_set_bytes += u.working_set_bytes;
  sum.usage_bytes += u.usage_bytes;
  sum.rss_bytes += u.rss_bytes;
  sum.page_faults += u.page_faults;
  sum.major_page_faults += u.major_page_faults;
}

}  // namespace

struct ClusterModel::Deletions {
  mutable std::shared_mutex mu;
  // False until the first deletion: until then readers take no lock.
  std::atomic<bool> any{false};
  // Global slot (node * pods_per_node + slot) -> seconds since cluster_start, ascending.
  std::map<int64_t, std::vector<int64_t>> by_slot;
};

// At most this many containers' parameters are kept (about 200 bytes each); a larger
// cluster computes them when asked.
constexpr size_t kMaxKeptParams = size_t{1} << 20;

struct ClusterModel::ParamsTable {
  explicit ParamsTable(const ClusterModelOptions& o) {
    const size_t count = static_cast<size_t>(o.nodes) * static_cast<size_t>(o.pods_per_node) *
                         static_cast<size_t>(o.containers_per_pod);
    if (count > kMaxKeptParams) return;
    kept.reserve(count);
    for (int n = 0; n < o.nodes; ++n) {
      for (int slot = 0; slot < o.pods_per_node; ++slot) {
        for (int c = 0; c < o.containers_per_pod; ++c) {
          kept.push_back(Internals::Params(o, n, slot, c));
        }
      }
    }
  }

  // `o`: the options the table was made with.
  ContainerParams Get(const ClusterModelOptions& o, int node, int slot, int c) const {
    if (kept.empty()) return Internals::Params(o, node, slot, c);
    return kept[(static_cast<size_t>(node) * static_cast<size_t>(o.pods_per_node) +
                 static_cast<size_t>(slot)) *
                    static_cast<size_t>(o.containers_per_pod) +
                static_cast<size_t>(c)];
  }

  std::vector<ContainerParams> kept;  // by (node, slot, container); empty: not kept
};

ClusterModel::ClusterModel(const ClusterModelOptions& options)
    : options_(options),
      deletions_(std::make_unique<Deletions>()),
      params_(std::make_unique<ParamsTable>(options)) {}
ClusterModel::ClusterModel(ClusterModel&&) noexcept = default;
ClusterModel& ClusterModel::operator=(ClusterModel&&) noexcept = default;
ClusterModel::~ClusterModel() = default;

absl::StatusOr<ClusterModel> ClusterModel::Create(const ClusterModelOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  ClusterModel model(options);
  model.nodes_.reserve(options.nodes);
  static constexpr const char* kZones[] = {"zone-a", "zone-b", "zone-c"};
  for (int n = 0; n < options.nodes; ++n) {
    NodeInfo node;
    node.index = n;
    char name[32];
    std::snprintf(name, sizeof(name), "node-%04d", n);
    node.name = name;
    const uint64_t h = Mix(options.seed, kTagNode, n);
    node.uid = FormatUid(Mix(h, 1), Mix(h, 2));
    node.start_time = options.cluster_start + std::chrono::seconds(Mix(h, 3) % 600);
    // Enough cpu for the pods' requests with room to spare, as a power of two >= 8.
    int64_t requested_millis = 0;
    int64_t requested_memory = 0;
    for (int slot = 0; slot < options.pods_per_node; ++slot) {
      for (int c = 0; c < options.containers_per_pod; ++c) {
        const ContainerParams p = model.params_->Get(options, n, slot, c);
        requested_millis += p.cpu_request_millis;
        requested_memory += p.memory_request_bytes;
      }
    }
    int64_t cores = 8 << (Mix(h, 4) % 2);
    while (cores * 1000 < requested_millis * 3 / 2 + 1000) cores *= 2;
    int64_t memory = cores * 4 * kGiB;
    while (memory < requested_memory * 2 + 2 * kGiB) memory *= 2;
    node.cpu_capacity_millis = cores * 1000;
    node.memory_capacity_bytes = memory;
    node.cpu_allocatable_millis = node.cpu_capacity_millis - 100;
    node.memory_allocatable_bytes = node.memory_capacity_bytes - 1 * kGiB;
    if (options.node_topology) node.gpus = kNodeGpus;
    node.labels = {
        {"kubernetes.io/arch", "amd64"},
        {"kubernetes.io/hostname", node.name},
        {"kubernetes.io/os", "linux"},
        {"node.kubernetes.io/instance-type", absl::StrCat("sim.", cores, "xlarge")},
        {"topology.kubernetes.io/zone", kZones[Mix(h, 5) % 3]},
    };
    model.nodes_.push_back(std::move(node));
  }
  return model;
}

int ClusterModel::NodeIndex(std::string_view name) const {
  // Names are "node-%04d"; parse rather than search.
  if (name.size() < 6 || name.substr(0, 5) != "node-") return -1;
  int v = 0;
  for (char ch : name.substr(5)) {
    if (ch < '0' || ch > '9' || v > 1000000) return -1;
    v = v * 10 + (ch - '0');
  }
  if (v >= options_.nodes || nodes_[v].name != name) return -1;
  return v;
}

Timestamp ClusterModel::Quantize(Timestamp t) const {
  if (t < options_.cluster_start) t = options_.cluster_start;
  return std::chrono::floor<std::chrono::seconds>(t);
}

namespace {

// Start of generation g (g >= 1) in seconds since cluster_start.
int64_t BoundarySeconds(const ClusterModelOptions& o, int node, int slot, int64_t g) {
  const int64_t e = std::chrono::duration_cast<std::chrono::seconds>(o.mean_pod_lifetime).count();
  const int64_t offset =
      e / 10 +
      static_cast<int64_t>(Unit(Mix(o.seed, kTagGeneration, node, slot, g)) * (e * 8 / 10));
  return g * e + offset;
}

// The generation of (node, slot) at s (seconds since cluster_start) from churn alone.
int64_t ChurnGeneration(const ClusterModelOptions& o, int node, int slot, int64_t s) {
  const int64_t e = std::chrono::duration_cast<std::chrono::seconds>(o.mean_pod_lifetime).count();
  if (e <= 0) return 0;
  int64_t g = s / e;
  if (g >= 1 && s < BoundarySeconds(o, node, slot, g)) --g;
  return g;
}

}  // namespace

std::vector<int64_t> ClusterModel::DeletionsOf(int node, int slot) const {
  if (!deletions_->any.load(std::memory_order_acquire)) return {};
  std::shared_lock lock(deletions_->mu);
  const auto it =
      deletions_->by_slot.find(static_cast<int64_t>(node) * options_.pods_per_node + slot);
  return it == deletions_->by_slot.end() ? std::vector<int64_t>() : it->second;
}

int64_t ClusterModel::Generation(int node, int slot, Timestamp t) const {
  const int64_t s = Seconds(Quantize(t), options_.cluster_start);
  const std::vector<int64_t> deleted = DeletionsOf(node, slot);
  return ChurnGeneration(options_, node, slot, s) +
         (std::upper_bound(deleted.begin(), deleted.end(), s) - deleted.begin());
}

Timestamp ClusterModel::GenerationStart(int node, int slot, int64_t generation) const {
  if (generation <= 0) return nodes_[node].start_time;
  const std::vector<int64_t> deleted = DeletionsOf(node, slot);
  // From the j-th deletion to the next one the generation is j plus the churn generation,
  // so `generation` begins in the first such interval in which churn reaches
  // generation - j: at the interval's start, or at that churn boundary.
  const bool churn = options_.mean_pod_lifetime > Duration::zero();
  for (size_t j = 0; j <= deleted.size(); ++j) {
    const int64_t k = generation - static_cast<int64_t>(j);
    const int64_t from =
        j == 0 ? Seconds(nodes_[node].start_time, options_.cluster_start) : deleted[j - 1];
    if (k > 0 && !churn) continue;
    const int64_t begins = k <= 0 ? from : std::max(from, BoundarySeconds(options_, node, slot, k));
    if (j == deleted.size() || begins < deleted[j]) {
      return options_.cluster_start + std::chrono::seconds(begins);
    }
  }
  return Timestamp::max();
}

PodInfo ClusterModel::PodOfGeneration(int node, int slot, int64_t generation) const {
  const ClusterModelOptions& o = options_;
  const App& app = Internals::AppOf(o, node, slot);
  PodInfo pod;
  pod.node = node;
  pod.slot = slot;
  pod.generation = generation;
  pod.namespace_name = app.ns;
  if (o.tenant_namespaces > 0 && slot >= 2) {
    const int64_t index = static_cast<int64_t>(node) * (o.pods_per_node - 2) + (slot - 2);
    pod.namespace_name = TenantNamespace(static_cast<int>(index % o.tenant_namespaces));
  }
  pod.app = app.name;
  pod.start_time = GenerationStart(node, slot, generation);

  // The 5-character suffix is a bijection of (global slot, generation mod 128) onto
  // 27^5 values, so no two pods alive at once share a name.
  const int64_t slots = static_cast<int64_t>(o.nodes) * o.pods_per_node;
  int length = 5;
  int64_t space = 14348907;  // 27^5
  while (slots * 128 > space) {
    space *= kAlphabetSize;
    ++length;
  }
  const int64_t v =
      (static_cast<int64_t>(node) * o.pods_per_node + slot) * 128 + (generation & 127);
  // Multiplying by a number coprime with 3 permutes Z/3^k; the offset depends on the seed.
  const uint64_t scrambled =
      (static_cast<unsigned __int128>(v) * 7340033 + o.seed % static_cast<uint64_t>(space)) %
      static_cast<uint64_t>(space);
  const std::string suffix = RandomName(scrambled, length);
  const std::string template_hash = RandomName(Mix(o.seed, kTagApp, HashString(app.name)), 10);
  if (app.daemonset) {
    pod.name = absl::StrCat(app.name, "-", suffix);
    pod.labels = {{"app", app.name},
                  {"controller-revision-hash", template_hash.substr(0, 8)},
                  {"pod-template-generation", "1"},
                  {"tier", app.tier}};
  } else {
    pod.name = absl::StrCat(app.name, "-", template_hash, "-", suffix);
    pod.labels = {{"app", app.name}, {"pod-template-hash", template_hash}, {"tier", app.tier}};
  }
  const uint64_t hu = Mix(o.seed, kTagUid, node, slot, generation);
  pod.uid = FormatUid(Mix(hu, 1), Mix(hu, 2));
  pod.containers.reserve(o.containers_per_pod);
  for (int c = 0; c < o.containers_per_pod; ++c) {
    const ContainerParams p = params_->Get(options_, node, slot, c);
    ContainerSpec spec;
    spec.name = c < 2 ? std::string(app.containers[c]) : absl::StrCat("sidecar-", c);
    spec.workload = p.workload;
    spec.cpu_request_millis = p.cpu_request_millis;
    spec.cpu_limit_millis = p.cpu_limit_millis;
    spec.memory_request_bytes = p.memory_request_bytes;
    spec.memory_limit_bytes = p.memory_limit_bytes;
    spec.gpus = Internals::Gpus(o, node, slot, c);
    pod.containers.push_back(std::move(spec));
  }
  return pod;
}

bool IsGuaranteed(const PodInfo& pod) {
  for (const ContainerSpec& c : pod.containers) {
    if (c.cpu_request_millis <= 0 || c.cpu_limit_millis != c.cpu_request_millis ||
        c.memory_request_bytes <= 0 || c.memory_limit_bytes != c.memory_request_bytes) {
      return false;
    }
  }
  return !pod.containers.empty();
}

PodInfo ClusterModel::Pod(int node, int slot, Timestamp t) const {
  return PodOfGeneration(node, slot, Generation(node, slot, t));
}

namespace {

struct Run {
  int64_t start;  // seconds since cluster_start
  int restarts;
};

// The run of a container at s (seconds), given its generation began at gen_start.
Run RunAt(const ContainerParams& p, int64_t s, int64_t gen_start) {
  if (!p.restarts) return {gen_start, 0};
  auto count_upto = [&](int64_t x) -> int64_t {
    return x < p.restart_phase ? 0 : (x - p.restart_phase) / p.restart_period + 1;
  };
  const int64_t restarts = count_upto(s) - count_upto(gen_start);
  if (restarts <= 0) return {gen_start, 0};
  const int64_t last = p.restart_phase + (count_upto(s) - 1) * p.restart_period;
  return {last, static_cast<int>(std::min<int64_t>(restarts, 1 << 30))};
}

}  // namespace

Timestamp ClusterModel::ContainerStart(int node, int slot, int container, Timestamp t) const {
  t = std::max(Quantize(t), nodes_[node].start_time);
  const int64_t s = Seconds(t, options_.cluster_start);
  const int64_t gen_start =
      Seconds(GenerationStart(node, slot, Generation(node, slot, t)), options_.cluster_start);
  const Run run = RunAt(params_->Get(options_, node, slot, container), s, gen_start);
  return options_.cluster_start + std::chrono::seconds(run.start);
}

int ClusterModel::RestartCount(int node, int slot, int container, Timestamp t) const {
  t = std::max(Quantize(t), nodes_[node].start_time);
  const int64_t s = Seconds(t, options_.cluster_start);
  const int64_t gen_start =
      Seconds(GenerationStart(node, slot, Generation(node, slot, t)), options_.cluster_start);
  return RunAt(params_->Get(options_, node, slot, container), s, gen_start).restarts;
}

namespace {

struct ContainerEval {
  ResourceUsage usage;
  int restarts = 0;
  Real node_integral = 0;  // core-seconds since the node started
};

ContainerEval EvalContainer(const ClusterModelOptions& o, const ContainerParams& p, int64_t s,
                            int64_t gen_start, int64_t node_start) {
  ContainerEval e;
  const Run run = RunAt(p, s, gen_start);
  e.restarts = run.restarts;
  const Real f_now = p.cpu.Integral(s);
  ResourceUsage& u = e.usage;
  u.time = o.cluster_start + std::chrono::seconds(s);
  u.start_time = o.cluster_start + std::chrono::seconds(run.start);
  u.usage_nano_cores = CpuNanos(p.cpu.Rate(s));
  u.usage_core_nano_seconds = CpuNanos(f_now - p.cpu.Integral(run.start));
  const int64_t ws = Internals::WorkingSet(p, s, run.start);
  FillMemoryDerived(u, ws, ws / 16 + 2 * kMiB, p.memory_limit_bytes);
  e.node_integral = f_now - p.cpu.Integral(node_start);
  return e;
}

// Own workload of system container `which` (kKubelet, kRuntime, kPods overhead), or the
// kernel's share when which == 3.
struct SystemParams {
  CpuCurve cpu;
  int64_t memory;
};

SystemParams SystemOf(const ClusterModelOptions& o, int node, int which) {
  static constexpr Real kLo[] = {0.02L, 0.008L, 0.001L, 0.02L};
  static constexpr Real kHi[] = {0.06L, 0.03L, 0.004L, 0.06L};
  static constexpr int64_t kMemLo[] = {50 * kMiB, 30 * kMiB, 4 * kMiB, 300 * kMiB};
  const uint64_t h = Mix(o.seed, kTagSystem, node, which);
  SystemParams p;
  p.cpu = SteadyCurve(h, kLo[which], kHi[which]);
  p.memory = kMemLo[which] + static_cast<int64_t>(Mix(h, 9) % (kMemLo[which] + 1));
  p.memory -= p.memory % 4096;
  return p;
}

ResourceUsage EvalSystem(const SystemParams& p, int64_t s, int64_t node_start, Timestamp time,
                         Timestamp start) {
  ResourceUsage u;
  u.time = time;
  u.start_time = start;
  u.usage_nano_cores = CpuNanos(p.cpu.Rate(s));
  u.usage_core_nano_seconds = CpuNanos(p.cpu.Integral(s) - p.cpu.Integral(node_start));
  const int64_t ws =
      p.memory +
      (static_cast<int64_t>(p.memory / 20 * std::sin(kTwoPi * s / 900.0L)) & ~int64_t{4095});
  FillMemoryDerived(u, ws, ws / 4, 0);
  return u;
}

}  // namespace

ResourceUsage ClusterModel::ContainerUsage(int node, int slot, int container, Timestamp t) const {
  t = std::max(Quantize(t), nodes_[node].start_time);
  const int64_t s = Seconds(t, options_.cluster_start);
  const int64_t gen_start =
      Seconds(GenerationStart(node, slot, Generation(node, slot, t)), options_.cluster_start);
  const int64_t node_start = Seconds(nodes_[node].start_time, options_.cluster_start);
  return EvalContainer(options_, params_->Get(options_, node, slot, container), s, gen_start,
                       node_start)
      .usage;
}

ResourceUsage ClusterModel::PodUsage(int node, int slot, Timestamp t) const {
  t = std::max(Quantize(t), nodes_[node].start_time);
  ResourceUsage sum;
  sum.time = t;
  sum.start_time = GenerationStart(node, slot, Generation(node, slot, t));
  for (int c = 0; c < options_.containers_per_pod; ++c) {
    Accumulate(sum, ContainerUsage(node, slot, c, t));
  }
  return sum;
}

ResourceUsage ClusterModel::SystemContainerUsage(int node, SystemContainer which,
                                                 Timestamp t) const {
  const NodeSnapshot snap = Snapshot(node, t);
  return snap.system_containers[static_cast<int>(which)];
}

ResourceUsage ClusterModel::NodeUsage(int node, Timestamp t) const {
  return Snapshot(node, t).usage;
}

NodeSnapshot ClusterModel::Snapshot(int node, Timestamp t) const {
  const NodeInfo& info = nodes_[node];
  t = std::max(Quantize(t), info.start_time);
  const int64_t s = Seconds(t, options_.cluster_start);
  const int64_t node_start = Seconds(info.start_time, options_.cluster_start);

  NodeSnapshot snap;
  snap.node = &info;
  snap.time = t;
  snap.pods.reserve(options_.pods_per_node);
  // The "pods" cgroup: every pod that ever ran on the node, plus its own overhead.
  ResourceUsage pods_total;
  Real pods_integral = 0;
  for (int slot = 0; slot < options_.pods_per_node; ++slot) {
    const int64_t generation = Generation(node, slot, t);
    PodSnapshot pod;
    pod.pod = PodOfGeneration(node, slot, generation);
    const int64_t gen_start = Seconds(pod.pod.start_time, options_.cluster_start);
    pod.usage.time = t;
    pod.usage.start_time = pod.pod.start_time;
    pod.containers.reserve(options_.containers_per_pod);
    for (int c = 0; c < options_.containers_per_pod; ++c) {
      const ContainerEval e =
          EvalContainer(options_, params_->Get(options_, node, slot, c), s, gen_start, node_start);
      Accumulate(pod.usage, e.usage);
      pods_integral += e.node_integral;
      pod.containers.push_back({c, e.restarts, e.usage});
    }
    Accumulate(pods_total, pod.usage);
    snap.pods.push_back(std::move(pod));
  }

  const SystemParams overhead = SystemOf(options_, node, 2);
  ResourceUsage& pods_cg = snap.system_containers[2];
  pods_cg = EvalSystem(overhead, s, node_start, t, info.start_time);
  pods_cg.usage_nano_cores += pods_total.usage_nano_cores;
  pods_cg.usage_core_nano_seconds += CpuNanos(pods_integral);
  const int64_t pods_ws =
      static_cast<int64_t>(pods_cg.working_set_bytes + pods_total.working_set_bytes);
  FillMemoryDerived(
      pods_cg, pods_ws,
      static_cast<int64_t>(pods_total.usage_bytes - pods_total.working_set_bytes) + pods_ws / 8,
      info.memory_allocatable_bytes);

  ResourceUsage& node_usage = snap.usage;
  node_usage = pods_cg;
  node_usage.start_time = info.start_time;
  node_usage.available_bytes.reset();
  for (int which = 0; which < 2; ++which) {
    snap.system_containers[which] =
        EvalSystem(SystemOf(options_, node, which), s, node_start, t, info.start_time);
    Accumulate(node_usage, snap.system_containers[which]);
  }
  const ResourceUsage kernel =
      EvalSystem(SystemOf(options_, node, 3), s, node_start, t, info.start_time);
  node_usage.usage_nano_cores += kernel.usage_nano_cores;
  node_usage.usage_core_nano_seconds += kernel.usage_core_nano_seconds;
  const int64_t node_ws =
      static_cast<int64_t>(node_usage.working_set_bytes + kernel.working_set_bytes);
  FillMemoryDerived(node_usage, node_ws, node_ws / 3, info.memory_capacity_bytes);
  return snap;
}

PodInfo ClusterModel::DeletePod(int node, int slot, Timestamp t) {
  int64_t s = Seconds(std::max(Quantize(t), nodes_[node].start_time), options_.cluster_start);
  {
    std::unique_lock lock(deletions_->mu);
    std::vector<int64_t>& deleted =
        deletions_->by_slot[static_cast<int64_t>(node) * options_.pods_per_node + slot];
    if (!deleted.empty()) s = std::max(s, deleted.back());
    deleted.push_back(s);
    deletions_->any.store(true, std::memory_order_release);
  }
  return Pod(node, slot, options_.cluster_start + std::chrono::seconds(s));
}

}  // namespace kubestat::sim
