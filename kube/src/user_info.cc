#include "kubestat/kube/user_info.h"

#include <algorithm>
#include <string_view>

namespace kubestat::kube {

bool UserInfo::HasGroup(std::string_view group) const {
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

}  // namespace kubestat::kube
