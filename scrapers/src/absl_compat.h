// Internal: Debian 12's abseil is built with its own absl::string_view (not an alias of
// std::string_view), so std::string_view arguments to absl string functions go through
// this conversion.
#ifndef KUBESTAT_SCRAPERS_SRC_ABSL_COMPAT_H_
#define KUBESTAT_SCRAPERS_SRC_ABSL_COMPAT_H_

#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

namespace kubestat::scrapers::internal {

inline absl::string_view AbslView(std::string_view s) { return {s.data(), s.size()}; }
inline std::string_view StdView(absl::string_view s) { return {s.data(), s.size()}; }

}  // namespace kubestat::scrapers::internal

#endif  // KUBESTAT_SCRAPERS_SRC_ABSL_COMPAT_H_
