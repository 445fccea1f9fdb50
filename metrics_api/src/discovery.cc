#include "kubestat/metrics_api/discovery.h"

#include <span>
#include <string_view>

#include "kubestat/core/json_writer.h"

namespace kubestat::metrics_api {
namespace {

void WriteGroupVersion(JsonWriter& w, GroupVersion gv) {
  w.BeginObject();
  w.Key("groupVersion").String(ApiVersion(gv));
  w.Key("version").String(VersionName(gv));
  w.EndObject();
}

void WriteGroup(JsonWriter& w, GroupVersion gv, bool with_type) {
  w.BeginObject();
  if (with_type) {
    w.Key("kind").String("APIGroup");
    w.Key("apiVersion").String("v1");
  }
  w.Key("name").String(GroupName(gv));
  const std::span<const GroupVersion> versions = GroupVersions(gv);
  w.Key("versions").BeginArray();
  for (GroupVersion version : versions) WriteGroupVersion(w, version);
  w.EndArray();
  w.Key("preferredVersion");
  WriteGroupVersion(w, versions.front());
  w.EndObject();
}

void WriteResource(JsonWriter& w, std::string_view name, std::string_view kind, bool namespaced,
                   std::span<const std::string_view> verbs) {
  w.BeginObject();
  w.Key("name").String(name);
  w.Key("singularName").String("");
  w.Key("namespaced").Bool(namespaced);
  w.Key("kind").String(kind);
  w.Key("verbs").BeginArray();
  for (std::string_view verb : verbs) w.String(verb);
  w.EndArray();
  w.EndObject();
}

}  // namespace

std::string RenderApiResourceList(GroupVersion gv, int indent,
                                  std::span<const std::string_view> verbs, bool recommendations) {
  JsonWriter w(indent);
  w.BeginObject();
  w.Key("kind").String("APIResourceList");
  w.Key("apiVersion").String("v1");
  w.Key("groupVersion").String(ApiVersion(gv));
  w.Key("resources").BeginArray();
  WriteResource(w, ResourceName(Resource::kNodes), KindName(Resource::kNodes),
                /*namespaced=*/false, verbs);
  WriteResource(w, ResourceName(Resource::kPods), KindName(Resource::kPods), /*namespaced=*/true,
                verbs);
  if (recommendations) {
    WriteResource(w, "recommendations", "Recommendation", /*namespaced=*/true, kReadVerbs);
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

std::string RenderApiGroup(GroupVersion gv, int indent) {
  JsonWriter w(indent);
  WriteGroup(w, gv, /*with_type=*/true);
  return w.Take();
}

std::string RenderApiGroupList(int indent) {
  JsonWriter w(indent);
  w.BeginObject();
  w.Key("kind").String("APIGroupList");
  w.Key("apiVersion").String("v1");
  w.Key("groups").BeginArray();
  WriteGroup(w, GroupVersion::kV1, /*with_type=*/false);
  WriteGroup(w, GroupVersion::kV1alpha1, /*with_type=*/false);
  w.EndArray();
  w.EndObject();
  return w.Take();
}

std::string RenderApiVersions(int indent) {
  JsonWriter w(indent);
  w.BeginObject();
  w.Key("kind").String("APIVersions");
  w.Key("versions").BeginArray().EndArray();
  w.Key("serverAddressByClientCIDRs").BeginArray().EndArray();
  w.EndObject();
  return w.Take();
}

}  // namespace kubestat::metrics_api
