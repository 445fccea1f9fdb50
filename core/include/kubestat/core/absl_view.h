// Debian 12's abseil is built with its own absl::string_view (not an alias of
// std::string_view), so std::string_view arguments to absl string functions, and absl
// results handed to std code, go through these conversions. They copy no characters.
#ifndef KUBESTAT_CORE_ABSL_VIEW_H_
#define KUBESTAT_CORE_ABSL_VIEW_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace kubestat {

inline absl::string_view AbslView(std::string_view s) { return {s.data(), s.size()}; }
inline std::string_view StdView(absl::string_view s) { return {s.data(), s.size()}; }

}  // namespace kubestat

#endif  // KUBESTAT_CORE_ABSL_VIEW_H_
