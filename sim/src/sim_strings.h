// Bridges std::string_view and absl::string_view (distinct types in this abseil build).
#ifndef KUBESTAT_SIM_SRC_SIM_STRINGS_H_
#define KUBESTAT_SIM_SRC_SIM_STRINGS_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace kubestat::sim {

inline absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view Sv(absl::string_view s) { return std::string_view(s.data(), s.size()); }

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_SIM_STRINGS_H_
