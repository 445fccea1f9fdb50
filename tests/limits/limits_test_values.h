// Amounts written as Kubernetes quantities, for the limits tests.
#ifndef KUBESTAT_TESTS_LIMITS_LIMITS_TEST_VALUES_H_
#define KUBESTAT_TESTS_LIMITS_LIMITS_TEST_VALUES_H_

#include <string>
#include <string_view>
#include <vector>

#include "kubestat/limits/limit_range.h"

namespace kubestat::limits::testing_values {

// Amounts of cpu and memory; "" is absent.
inline Amounts Amt(std::string_view cpu, std::string_view memory) {
  Amounts a;
  if (!cpu.empty()) a.cpu = *ParseAmount(Resource::kCpu, cpu);
  if (!memory.empty()) a.memory = *ParseAmount(Resource::kMemory, memory);
  return a;
}

// Ratios of cpu and memory (thousandths); "" is absent.
inline Amounts Ratios(std::string_view cpu, std::string_view memory) {
  Amounts a;
  if (!cpu.empty()) a.cpu = *ParseRatio(cpu);
  if (!memory.empty()) a.memory = *ParseRatio(memory);
  return a;
}

inline std::vector<std::string> Messages(const std::vector<Violation>& violations) {
  std::vector<std::string> out;
  for (const Violation& v : violations) out.push_back(v.message);
  return out;
}

}  // namespace kubestat::limits::testing_values

#endif  // KUBESTAT_TESTS_LIMITS_LIMITS_TEST_VALUES_H_
