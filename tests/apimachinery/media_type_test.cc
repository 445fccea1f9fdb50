#include "kubestat/apimachinery/media_type.h"

#include <gtest/gtest.h>

#include <optional>
#include <string_view>

namespace kubestat {
namespace {

constexpr std::string_view kJsonAndProtobuf[] = {kMediaTypeJson, kMediaTypeProtobuf};
constexpr std::string_view kJsonOnly[] = {kMediaTypeJson};

// The type chosen for `accept` among JSON and protobuf (JSON preferred), or "406".
std::string_view Chosen(std::string_view accept,
                        std::span<const std::string_view> offered = kJsonAndProtobuf) {
  std::optional<size_t> i = NegotiateMediaType(accept, offered);
  return i ? offered[*i] : "406";
}

TEST(MediaTypeTest, ClientGoProtobufFirstChoosesProtobuf) {
  // What kubectl top and the HPA send (client-go with ContentType protobuf).
  EXPECT_EQ(Chosen("application/vnd.kubernetes.protobuf, */*"), kMediaTypeProtobuf);
  EXPECT_EQ(Chosen("application/vnd.kubernetes.protobuf,application/json"), kMediaTypeProtobuf);
  EXPECT_EQ(Chosen("application/vnd.kubernetes.protobuf, application/json"), kMediaTypeProtobuf);
}

TEST(MediaTypeTest, EqualRangesFollowTheClientsOrderThenTheServers) {
  EXPECT_EQ(Chosen("application/json, application/vnd.kubernetes.protobuf"), kMediaTypeJson);
  EXPECT_EQ(Chosen("*/*"), kMediaTypeJson);
  EXPECT_EQ(Chosen("application/*"), kMediaTypeJson);
  EXPECT_EQ(Chosen("*"), kMediaTypeJson);
}

TEST(MediaTypeTest, AbsentOrEmptyAcceptIsAnything) {
  EXPECT_EQ(Chosen(""), kMediaTypeJson);
  EXPECT_EQ(Chosen("  "), kMediaTypeJson);
}

TEST(MediaTypeTest, WeightsDecide) {
  EXPECT_EQ(Chosen("application/json;q=0.5, application/vnd.kubernetes.protobuf"),
            kMediaTypeProtobuf);
  EXPECT_EQ(Chosen("application/json, application/vnd.kubernetes.protobuf;q=0.9"), kMediaTypeJson);
  EXPECT_EQ(Chosen("application/vnd.kubernetes.protobuf;q=0.2, application/json;q=0.3"),
            kMediaTypeJson);
  EXPECT_EQ(Chosen("application/vnd.kubernetes.protobuf; q=1.0, */*; q=0.5"), kMediaTypeProtobuf);
  // A higher weight on the wildcard beats a specific range of lower weight.
  EXPECT_EQ(Chosen("application/vnd.kubernetes.protobuf;q=0.1, */*;q=0.8"), kMediaTypeJson);
  // ".5" is read as "0.5" (as Go's ParseFloat reads it; Java sends "*; q=.2").
  EXPECT_EQ(Chosen("application/json;q=.2, application/vnd.kubernetes.protobuf;q=.3"),
            kMediaTypeProtobuf);
}

TEST(MediaTypeTest, TheMostSpecificRangeSetsATypesWeight) {
  // JSON is excluded by its own range even though */* admits everything.
  EXPECT_EQ(Chosen("application/json;q=0, */*"), kMediaTypeProtobuf);
  EXPECT_EQ(Chosen("*/*;q=0.1, application/vnd.kubernetes.protobuf;q=0"), kMediaTypeJson);
  EXPECT_EQ(Chosen("application/*;q=0, application/json"), kMediaTypeJson);
}

TEST(MediaTypeTest, JsonOnlyAcceptStaysJson) {
  EXPECT_EQ(Chosen("application/json"), kMediaTypeJson);
  EXPECT_EQ(Chosen("application/json;charset=utf-8"), kMediaTypeJson);
  EXPECT_EQ(Chosen("Application/JSON"), kMediaTypeJson);
  EXPECT_EQ(Chosen("application/json, */*"), kMediaTypeJson);
}

TEST(MediaTypeTest, ConversionRangesArePassedOver) {
  // kubectl get asks for a Table first; kubestat answers the plain object.
  EXPECT_EQ(Chosen("application/json;as=Table;v=v1;g=meta.k8s.io,"
                   "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"),
            kMediaTypeJson);
  EXPECT_EQ(Chosen("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,"
                   "application/json"),
            kMediaTypeJson);
  EXPECT_EQ(Chosen("application/json;as=Table;v=v1;g=meta.k8s.io"), "406");
}

TEST(MediaTypeTest, UnsatisfiableAcceptChoosesNothing) {
  EXPECT_EQ(Chosen("application/yaml"), "406");
  EXPECT_EQ(Chosen("text/plain, text/html"), "406");
  EXPECT_EQ(Chosen("application/vnd.kubernetes.protobuf", kJsonOnly), "406");
  EXPECT_EQ(Chosen("application/json;q=0"), "406");
  EXPECT_EQ(Chosen("*/*;q=0"), "406");
  // Malformed weights and ranges admit nothing.
  EXPECT_EQ(Chosen("application/json;q=high"), "406");
  EXPECT_EQ(Chosen("application/json;q=1.5"), "406");
  EXPECT_EQ(Chosen("json"), "406");
  EXPECT_EQ(Chosen("*/json"), "406");
  EXPECT_EQ(Chosen("application/"), "406");
  EXPECT_EQ(Chosen(",,"), "406");
}

TEST(MediaTypeTest, JsonOnlyServerAnswersJsonToProtobufClients) {
  EXPECT_EQ(Chosen("application/vnd.kubernetes.protobuf, */*", kJsonOnly), kMediaTypeJson);
  EXPECT_EQ(Chosen("application/vnd.kubernetes.protobuf,application/json", kJsonOnly),
            kMediaTypeJson);
}

}  // namespace
}  // namespace kubestat
