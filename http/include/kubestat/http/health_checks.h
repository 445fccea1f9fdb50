// HealthChecks: the named checks behind a server's /livez and /readyz, answered as
// kube-apiserver answers them (k8s.io/apiserver's healthz package).
//
// Each endpoint has its own list of checks; a check returns std::nullopt when it passes and
// the reason when it fails. An endpoint passes when all of its checks pass:
//   GET /readyz           200 "ok"
//   GET /readyz?verbose   200 "[+]ping ok\n[+]store-writes ok\nreadyz check passed\n"
// and fails otherwise (503 for readyz, 500 for livez), listing every check; the reason of a
// failed check is given only with ?verbose (the plain answer withholds it, as
// kube-apiserver does, since health paths need no credentials):
//   GET /readyz           503 "[+]ping ok\n[-]kube-api failed: reason withheld\nreadyz check
//   failed" GET /readyz?verbose   503 "[+]ping ok\n[-]kube-api failed: <reason>\nreadyz check
//   failed"
// `?exclude=<name>` (repeatable) leaves a check out, as kube-apiserver's does.
// A condition (AddCondition) is listed like a check but never fails its endpoint: it says
// how the server is degraded while it still serves (with ?verbose only):
//   GET /readyz?verbose   200 "[+]ping ok\n[+]store-durability ok: writes kept in memory ...\n..."
//
// Meanings (Kubernetes'): readyz fails while the server should get no traffic (it cannot
// answer truthfully, or has nothing fresh to answer with); livez fails only where a restart
// would help (the process is stuck), never for a peer that is away.
//
// Every evaluation (each answer, and Observe()) notices the checks that changed: a check
// that starts failing is logged (WARNING "readyz check kube-api failed: <reason>") and
// counted in kubestat_health_check_failures_total{endpoint,check}; one that passes again is
// logged (INFO "readyz check kube-api passes again, after 12.5s"). The gauge
// kubestat_health_check_failing{endpoint,check} is 1 while a check fails (as of the last
// evaluation).
//
// Ownership: borrows the clock and (AttachMetrics) the registry, which must outlive it.
// Thread-safety: Add and AttachMetrics before the server answers; Answer and Observe from any
// thread, concurrently. A check is called with no lock of HealthChecks held, possibly from
// several threads at once.
#ifndef KUBESTAT_HTTP_HEALTH_CHECKS_H_
#define KUBESTAT_HTTP_HEALTH_CHECKS_H_

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/core/clock.h"

namespace prometheus {
class Registry;
template <typename T>
class Family;
class Counter;
class Gauge;
}  // namespace prometheus

namespace kubestat::http {

enum class HealthEndpoint { kLivez, kReadyz };

// "livez", "readyz".
std::string_view HealthEndpointName(HealthEndpoint endpoint);

// std::nullopt: passes; otherwise why it fails (one line, no secret).
using HealthCheckFn = std::function<std::optional<std::string>(Timestamp now)>;

struct HealthCheckResult {
  std::string name;
  std::optional<std::string> failure;
  std::optional<std::string> note;  // a condition's: how the server is degraded
};

struct HealthAnswer {
  int code = 200;
  std::string body;
};

class HealthChecks {
 public:
  explicit HealthChecks(const Clock& clock);
  HealthChecks(const HealthChecks&) = delete;
  HealthChecks& operator=(const HealthChecks&) = delete;

  // Appends a check to `endpoint`'s list (names are unique per endpoint: asserted).
  void Add(HealthEndpoint endpoint, std::string name, HealthCheckFn check);
  // Appends a condition: `check` returns std::nullopt when all is well, else a note (one
  // line, no secret) shown with ?verbose; the endpoint passes either way.
  void AddCondition(HealthEndpoint endpoint, std::string name, HealthCheckFn check);
  // Counts into `registry` from now on (the families are made here).
  void AttachMetrics(prometheus::Registry& registry);

  // The answer to GET /<endpoint>?<query> (query: the raw string without '?').
  HealthAnswer Answer(HealthEndpoint endpoint, std::string_view query) const;
  // Evaluates every check of both endpoints (logging and counting changes), for a caller
  // that wants changes noticed without a probe (e.g. after each scrape round).
  void Observe() const;
  // Every check of `endpoint`, evaluated now (changes logged and counted).
  std::vector<HealthCheckResult> Evaluate(HealthEndpoint endpoint) const;

 private:
  struct Entry {
    std::string name;
    HealthCheckFn check;
    bool condition = false;
  };
  void Notice(HealthEndpoint endpoint, const HealthCheckResult& result, Timestamp now) const;

  const Clock& clock_;
  std::vector<Entry> livez_;
  std::vector<Entry> readyz_;
  prometheus::Family<prometheus::Counter>* failures_ = nullptr;
  prometheus::Family<prometheus::Gauge>* failing_ = nullptr;
  mutable std::mutex mu_;  // guards failing_since_
  // "<endpoint>/<check>" -> when it was first seen failing, for checks failing now.
  mutable std::map<std::string, Timestamp, std::less<>> failing_since_;
};

}  // namespace kubestat::http

#endif  // KUBESTAT_HTTP_HEALTH_CHECKS_H_
