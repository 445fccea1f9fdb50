// Conversion of the generated podresources v1 messages into the plain structs of
// kubestat/podresources/client.h. Every field is carried over; nothing can fail.
#ifndef KUBESTAT_PODRESOURCES_CONVERT_H_
#define KUBESTAT_PODRESOURCES_CONVERT_H_

#include <vector>

#include "kubestat/podresources/client.h"
#include "podresources/v1/api.pb.h"

namespace kubestat::podresources {

std::vector<PodResources> FromProto(const v1::ListPodResourcesResponse& response);
AllocatableResources FromProto(const v1::AllocatableResourcesResponse& response);
PodResources FromProto(const v1::PodResources& pod);

}  // namespace kubestat::podresources

#endif  // KUBESTAT_PODRESOURCES_CONVERT_H_
