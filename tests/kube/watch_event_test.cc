// kube watch events: parsing lines as kube-apiserver streams them (the object kept byte for
// byte), writing them, the Status of ERROR events, and object metadata.
#include "kubestat/kube/watch_event.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "kubestat/core/time.h"

namespace kubestat::kube {
namespace {

using ::testing::HasSubstr;

constexpr WatchEventType kAllTypes[] = {WatchEventType::kAdded, WatchEventType::kModified,
                                        WatchEventType::kDeleted, WatchEventType::kBookmark,
                                        WatchEventType::kError};

TEST(WatchEventTest, TypeNamesAreKubernetesOwnAndReadBackExactly) {
  EXPECT_EQ(WatchEventTypeName(WatchEventType::kAdded), "ADDED");
  EXPECT_EQ(WatchEventTypeName(WatchEventType::kModified), "MODIFIED");
  EXPECT_EQ(WatchEventTypeName(WatchEventType::kDeleted), "DELETED");
  EXPECT_EQ(WatchEventTypeName(WatchEventType::kBookmark), "BOOKMARK");
  EXPECT_EQ(WatchEventTypeName(WatchEventType::kError), "ERROR");
  for (WatchEventType type : kAllTypes) {
    EXPECT_EQ(WatchEventTypeFromName(WatchEventTypeName(type)), type);
  }
  EXPECT_EQ(WatchEventTypeFromName("added"), std::nullopt);
  EXPECT_EQ(WatchEventTypeFromName(""), std::nullopt);
}

TEST(WatchEventTest, ObjectIsKeptByteForByteWithoutTheWhitespaceAfterIt) {
  const std::string object =
      R"({"kind":"Pod", "metadata": {"name":"web-1","resourceVersion":"7"} ,"n":1.50,)"
      R"("s":"a\"}b"})";
  absl::StatusOr<WatchEvent> event =
      ParseWatchEvent(R"({"type":"MODIFIED",  "object":  )" + object + "  \t}\r\n");
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->type, WatchEventType::kModified);
  EXPECT_EQ(event->object_json, object);
}

TEST(WatchEventTest, ObjectBeforeTypeAndUnknownMembersAreAccepted) {
  absl::StatusOr<WatchEvent> event =
      ParseWatchEvent(R"({"object":{"metadata":{}},"extra":[1,{"object":2}],"type":"DELETED"})");
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->type, WatchEventType::kDeleted);
  EXPECT_EQ(event->object_json, R"({"metadata":{}})");
}

TEST(WatchEventTest, WrittenLinesAreKubeApiserverFormAndParseBack) {
  EXPECT_EQ(WriteWatchEvent(WatchEventType::kAdded, R"({"kind":"Node"})"),
            "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\"}}\n");
  for (WatchEventType type : kAllTypes) {
    const std::string object = R"({"metadata":{"name":"x","resourceVersion":"12"}})";
    absl::StatusOr<WatchEvent> event = ParseWatchEvent(WriteWatchEvent(type, object));
    ASSERT_TRUE(event.ok()) << event.status();
    EXPECT_EQ(*event, (WatchEvent{type, object}));
  }
}

TEST(WatchEventTest, MalformedLinesAreInvalidArgumentSayingWhatIsWrong) {
  const std::map<std::string, std::string> cases = {
      {"not json", "watch event is not JSON"},
      {R"({"type":"ADDED","object":{"a":}})", "watch event is not JSON"},
      {R"({"type":"ADDED","object":{"a":1})", "watch event is not JSON"},
      {"", "watch event is not JSON"},
      {R"(["ADDED",{}])", "watch event is not a JSON object"},
      {R"({"object":{}})", "watch event without type"},
      {R"({"type":null,"object":{}})", "watch event without type"},
      {R"({"type":7,"object":{}})", "watch event type is not a string"},
      {R"({"type":"FOO","object":{}})", "unknown watch event type \"FOO\""},
      {R"({"type":"ADDED"})", "watch event without object"},
      {R"({"type":"ADDED","object":"pod"})", "watch event without object"},
      {R"({"type":"ADDED","object":null})", "watch event without object"},
  };
  for (const auto& [line, message] : cases) {
    absl::StatusOr<WatchEvent> event = ParseWatchEvent(line);
    ASSERT_FALSE(event.ok()) << line;
    EXPECT_EQ(event.status().code(), absl::StatusCode::kInvalidArgument) << line;
    EXPECT_THAT(std::string(event.status().message()), HasSubstr(message)) << line;
  }
}

TEST(WatchEventTest, ExpiredStatusOfAnErrorEventIsRecognised) {
  absl::StatusOr<WatchEvent> event = ParseWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},)"
      R"("status":"Failure","message":"too old resource version: 5 < 80",)"
      R"("reason":"Expired","code":410}})");
  ASSERT_TRUE(event.ok()) << event.status();
  absl::StatusOr<ApiError> status = ParseStatusObject(event->object_json);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->code(), 410);
  EXPECT_EQ(status->reason(), StatusReason::kExpired);
  EXPECT_EQ(status->message(), "too old resource version: 5 < 80");
  EXPECT_TRUE(IsResourceExpired(*status));
}

TEST(WatchEventTest, StatusWithoutCodeTakesItsReasonsCode) {
  absl::StatusOr<ApiError> gone = ParseStatusObject(R"({"reason":"Gone","message":"m"})");
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_EQ(gone->code(), 410);
  EXPECT_TRUE(IsResourceExpired(*gone));

  absl::StatusOr<ApiError> plain = ParseStatusObject(R"({"kind":"Status"})");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->code(), 500);
  EXPECT_EQ(plain->reason(), StatusReason::kUnknown);
  EXPECT_FALSE(IsResourceExpired(*plain));

  absl::StatusOr<ApiError> internal =
      ParseStatusObject(R"({"code":500,"reason":"InternalError","message":"etcd"})");
  ASSERT_TRUE(internal.ok()) << internal.status();
  EXPECT_EQ(*internal, ApiError(500, StatusReason::kInternalError, "etcd"));
  EXPECT_FALSE(IsResourceExpired(*internal));
}

TEST(WatchEventTest, TooLargeResourceVersionIsRecognizedByCodeOrReasonAndMessage) {
  absl::StatusOr<ApiError> too_large =
      ParseStatusObject(R"({"kind":"Status","code":504,"reason":"Timeout",)"
                        R"("message":"Too large resource version: 100, current: 50"})");
  ASSERT_TRUE(too_large.ok()) << too_large.status();
  EXPECT_TRUE(IsResourceVersionTooLarge(*too_large));
  EXPECT_FALSE(IsResourceExpired(*too_large));
  EXPECT_FALSE(IsResourceVersionTooLarge(ApiError(504, StatusReason::kTimeout, "etcd is slow")));
  EXPECT_FALSE(IsResourceVersionTooLarge(
      ApiError(500, StatusReason::kInternalError, "Too large resource version: 1")));
}

TEST(WatchEventTest, MalformedStatusIsInvalidArgument) {
  for (const char* json :
       {"", "[]", R"({"kind":"Pod","code":410})", R"({"code":"410"})", R"({"code":4.5})",
        R"({"code":-1})", R"({"reason":3})", R"({"message":{}})"}) {
    absl::StatusOr<ApiError> status = ParseStatusObject(json);
    ASSERT_FALSE(status.ok()) << json;
    EXPECT_EQ(status.status().code(), absl::StatusCode::kInvalidArgument) << json;
  }
}

TEST(WatchEventTest, ObjectMetaReadsIdentityVersionLabelsAndCreation) {
  absl::StatusOr<ObjectMeta> meta =
      ParseObjectMeta(R"({"kind":"Pod","metadata":{"name":"web-1","namespace":"shop","uid":"u-1",)"
                      R"("resourceVersion":"42","creationTimestamp":"2026-11-21T09:00:00Z",)"
                      R"("labels":{"app":"web","tier":"front"}},"spec":{}})");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->name, "web-1");
  EXPECT_EQ(meta->namespace_name, "shop");
  EXPECT_EQ(meta->uid, "u-1");
  EXPECT_EQ(meta->resource_version, "42");
  EXPECT_EQ(meta->creation_timestamp, *ParseRfc3339("2026-11-21T09:00:00Z"));
  EXPECT_EQ(meta->labels.size(), 2u);
  EXPECT_EQ(meta->labels.at("tier"), "front");
}

TEST(WatchEventTest, BookmarkObjectGivesOnlyItsResourceVersion) {
  absl::StatusOr<ObjectMeta> meta = ParseObjectMeta(
      R"({"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12746",)"
      R"("creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}}})");
  ASSERT_TRUE(meta.ok()) << meta.status();
  ObjectMeta expected;
  expected.resource_version = "12746";
  EXPECT_EQ(*meta, expected);

  absl::StatusOr<ObjectMeta> none = ParseObjectMeta("{}");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, ObjectMeta());
}

TEST(WatchEventTest, MalformedMetadataIsInvalidArgument) {
  for (const char* json :
       {"", "[]", R"({"metadata":[]})", R"({"metadata":{"name":1}})",
        R"({"metadata":{"resourceVersion":7}})", R"({"metadata":{"labels":{"a":1}}})",
        R"({"metadata":{"creationTimestamp":"yesterday"}})"}) {
    absl::StatusOr<ObjectMeta> meta = ParseObjectMeta(json);
    ASSERT_FALSE(meta.ok()) << json;
    EXPECT_EQ(meta.status().code(), absl::StatusCode::kInvalidArgument) << json;
  }
}

}  // namespace
}  // namespace kubestat::kube
