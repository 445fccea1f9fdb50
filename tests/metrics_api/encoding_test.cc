#include "kubestat/metrics_api/encoding.h"

#include <gtest/gtest.h>

namespace kubestat::metrics_api {
namespace {

TEST(EncodingTest, MetricsK8sIoAnswersProtobufToClientsThatPreferIt) {
  EXPECT_EQ(NegotiateEncoding("application/vnd.kubernetes.protobuf, */*", true),
            Encoding::kProtobuf);
  EXPECT_EQ(NegotiateEncoding("application/vnd.kubernetes.protobuf,application/json", true),
            Encoding::kProtobuf);
  EXPECT_EQ(NegotiateEncoding("application/json, application/vnd.kubernetes.protobuf", true),
            Encoding::kJson);
  EXPECT_EQ(NegotiateEncoding("", true), Encoding::kJson);
  EXPECT_EQ(NegotiateEncoding("*/*", true), Encoding::kJson);
  EXPECT_EQ(NegotiateEncoding("application/json", true), Encoding::kJson);
  EXPECT_EQ(NegotiateEncoding("application/vnd.kubernetes.protobuf", true), Encoding::kProtobuf);
}

TEST(EncodingTest, WithoutProtobufJsonOrNothing) {
  EXPECT_EQ(NegotiateEncoding("application/vnd.kubernetes.protobuf, */*", false), Encoding::kJson);
  EXPECT_EQ(NegotiateEncoding("application/vnd.kubernetes.protobuf", false), std::nullopt);
  EXPECT_EQ(NegotiateEncoding("application/yaml", true), std::nullopt);
}

TEST(EncodingTest, HasProtobufOnlyForMetricsK8sIo) {
  EXPECT_TRUE(HasProtobuf(GroupVersion::kV1));
  EXPECT_TRUE(HasProtobuf(GroupVersion::kV1beta1));
  EXPECT_FALSE(HasProtobuf(GroupVersion::kV1alpha1));
}

TEST(EncodingTest, NotAcceptableIsKubeApiserversStatus) {
  const ApiError with = NotAcceptable(true);
  EXPECT_EQ(with.code(), 406);
  EXPECT_EQ(with.ToJson(0),
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"only the following media types are accepted: application/json, )"
            R"(application/vnd.kubernetes.protobuf","reason":"NotAcceptable","code":406})");
  EXPECT_NE(NotAcceptable(false).ToJson(0).find(
                "\"only the following media types are accepted: application/json\""),
            std::string::npos);
}

TEST(EncodingTest, ContentTypes) {
  EXPECT_EQ(ContentType(Encoding::kJson), "application/json");
  EXPECT_EQ(ContentType(Encoding::kProtobuf), "application/vnd.kubernetes.protobuf");
}

}  // namespace
}  // namespace kubestat::metrics_api
