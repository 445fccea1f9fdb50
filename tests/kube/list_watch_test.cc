// kube::ListWatch against a real kubestat::http::Server on loopback standing in for the kube
// API: paged lists, streamed watches the test writes to and ends, resume from the last
// resourceVersion, relists on 410, errors and Stop(). Tests wait for events with PollUntil;
// backoffs are a millisecond, and request deadlines run on a FakeClock that never moves.
#include "kubestat/kube/list_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "http/plain_server_options.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/client.h"
#include "kubestat/http/server.h"
#include "kubestat/kube/watch_event.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "prometheus/registry.h"

namespace kubestat::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::PollUntil;

// How long a test waits for the ListWatch's thread to get somewhere (only a broken feature
// takes that long).
constexpr std::chrono::seconds kReady(20);

std::string Pod(const std::string& name, const std::string& rv) {
  return R"({"kind":"Pod","metadata":{"name":")" + name + R"(","namespace":"shop",)" +
         R"("resourceVersion":")" + rv + R"("},"spec":{"nodeName":"node-1"}})";
}

std::string Expired() {
  return WriteWatchEvent(WatchEventType::kError,
                         R"({"kind":"Status","apiVersion":"v1","metadata":{},)"
                         R"("status":"Failure","message":"too old resource version",)"
                         R"("reason":"Expired","code":410})");
}

// One query parameter of `query` as sent (still percent-encoded); "" when absent.
std::string Param(std::string_view query, std::string_view name) {
  for (size_t start = 0; start <= query.size();) {
    size_t end = std::min(query.find('&', start), query.size());
    std::string_view pair = query.substr(start, end - start);
    if (pair.substr(0, pair.find('=')) == name && pair.find('=') != std::string_view::npos) {
      return std::string(pair.substr(pair.find('=') + 1));
    }
    start = end + 1;
  }
  return "";
}

// The collection /api/v1/pods: lists paged with limit/continue (continue tokens
// "after/<index>", which the client must percent-encode), and watches whose streams the
// test writes to and ends.
class FakePods {
 public:
  http::Response Handle(const http::Request& request) {
    std::lock_guard<std::mutex> lock(mu_);
    if (request.path != "/api/v1/pods") return Answer(404, "NotFound", "no such path");
    if (Param(request.query, "watch") == "true") {
      watch_queries_.emplace_back(request.query);
      if (gone_on_watch_) return Answer(410, "Expired", "too old resource version");
      http::Response response;
      response.stream = [this](std::shared_ptr<http::StreamWriter> writer) {
        writer->Flush();  // the head now: the client is waiting for it
        std::lock_guard<std::mutex> lock(mu_);
        watches_.push_back(std::move(writer));
      };
      return response;
    }
    list_queries_.emplace_back(request.query);
    if (failing_lists_ > 0) {
      --failing_lists_;
      return Answer(500, "InternalError", "etcd is down");
    }
    const std::string from = Param(request.query, "continue");
    size_t start = 0;
    if (!from.empty()) {
      if (from.rfind("after%2F", 0) != 0) return Answer(400, "BadRequest", "bad continue");
      start = std::stoul(from.substr(8));
    }
    const size_t limit = std::stoul(Param(request.query, "limit"));
    const size_t end = std::min(items_.size(), start + limit);
    std::string body =
        R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":")" + list_rv_ + "\"";
    if (end < items_.size()) body += R"(,"continue":"after/)" + std::to_string(end) + "\"";
    body += R"(},"items":[)";
    for (size_t i = start; i < end; ++i) body += (i > start ? ",\n  " : "") + items_[i];
    body += "]}";
    http::Response response;
    response.body = std::move(body);
    return response;
  }

  void SetList(std::vector<std::string> items, std::string rv) {
    std::lock_guard<std::mutex> lock(mu_);
    items_ = std::move(items);
    list_rv_ = std::move(rv);
  }
  void SetGoneOnWatch(bool gone) {
    std::lock_guard<std::mutex> lock(mu_);
    gone_on_watch_ = gone;
  }
  void FailLists(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    failing_lists_ = n;
  }
  std::vector<std::string> list_queries() {
    std::lock_guard<std::mutex> lock(mu_);
    return list_queries_;
  }
  std::vector<std::string> watch_queries() {
    std::lock_guard<std::mutex> lock(mu_);
    return watch_queries_;
  }
  // The resourceVersion each watch asked for, in order.
  std::vector<std::string> watch_versions() {
    std::vector<std::string> versions;
    for (const std::string& query : watch_queries()) {
      versions.push_back(Param(query, "resourceVersion"));
    }
    return versions;
  }
  bool WaitForWatches(size_t n) {
    return PollUntil(
        [&] {
          std::lock_guard<std::mutex> lock(mu_);
          return watches_.size() >= n;
        },
        kReady);
  }
  // Writes `text` to the latest watch.
  bool Send(const std::string& text) { return Latest()->Write(text); }
  // Ends the latest watch (the last chunk).
  void EndWatch() { Latest()->Finish(); }
  std::shared_ptr<http::StreamWriter> Latest() {
    std::lock_guard<std::mutex> lock(mu_);
    return watches_.back();
  }

 private:
  static http::Response Answer(int code, const char* reason, const char* message) {
    http::Response response;
    response.code = code;
    response.body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                    R"("message":")" +
                    std::string(message) + R"(","reason":")" + reason + R"(","code":)" +
                    std::to_string(code) + "}";
    return response;
  }

  std::mutex mu_;
  std::vector<std::string> items_;
  std::string list_rv_;
  bool gone_on_watch_ = false;
  int failing_lists_ = 0;
  std::vector<std::string> list_queries_;
  std::vector<std::string> watch_queries_;
  std::vector<std::shared_ptr<http::StreamWriter>> watches_;
};

// Keeps what it was told as lines ("ADDED web-1", "DELETED web-2", ...) and, like a real
// consumer, a snapshot of names that each complete list replaces, telling deletions apart.
class RecordingHandler final : public ListWatchHandler {
 public:
  void OnListStart() override {
    std::lock_guard<std::mutex> lock(mu_);
    listing_.clear();
    log_.push_back("LIST");
  }
  void OnListItem(std::string_view object_json) override {
    absl::StatusOr<ObjectMeta> meta = ParseObjectMeta(object_json);
    std::lock_guard<std::mutex> lock(mu_);
    items_.emplace_back(object_json);
    listing_.insert(meta.ok() ? meta->name : "?");
  }
  void OnListComplete(std::string_view resource_version) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& name : snapshot_) {
      if (!listing_.contains(name)) log_.push_back("DELETED " + name);
    }
    snapshot_ = listing_;
    log_.push_back("LISTED " + std::string(resource_version));
  }
  absl::Status OnEvent(const WatchEvent& event) override {
    absl::StatusOr<ObjectMeta> meta = ParseObjectMeta(event.object_json);
    std::lock_guard<std::mutex> lock(mu_);
    if (meta->name == "refused") return absl::FailedPreconditionError("refused by the handler");
    log_.push_back(std::string(WatchEventTypeName(event.type)) + " " + meta->name);
    if (event.type == WatchEventType::kDeleted) {
      snapshot_.erase(meta->name);
    } else {
      snapshot_.insert(meta->name);
    }
    return absl::OkStatus();
  }
  void OnWatchStart() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++watches_;
  }
  void OnExpired() override {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back("EXPIRED");
  }
  void OnError(const ListWatchError& error) override {
    std::lock_guard<std::mutex> lock(mu_);
    errors_.push_back(error);
  }

  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  bool Logged(const std::string& line) {
    std::vector<std::string> all = log();
    return std::find(all.begin(), all.end(), line) != all.end();
  }
  std::vector<std::string> items() {
    std::lock_guard<std::mutex> lock(mu_);
    return items_;
  }
  std::vector<ListWatchError> errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }
  int watches() {
    std::lock_guard<std::mutex> lock(mu_);
    return watches_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> log_;
  std::vector<std::string> items_;
  std::set<std::string> listing_;
  std::set<std::string> snapshot_;
  std::vector<ListWatchError> errors_;
  int watches_ = 0;
};

class ListWatchTest : public ::testing::Test {
 protected:
  ListWatchTest()
      : server_(
            http::PlainOptions(), [this](const http::Request& r) { return pods_.Handle(r); },
            registry_, RealClock::Get()) {
    pods_.SetList({Pod("web-1", "11"), Pod("web-2", "12"), Pod("web-3", "13")}, "100");
  }

  void SetUp() override {
    absl::Status started = server_.Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  void TearDown() override {
    list_watch_.reset();  // stops it
    client_.reset();
    server_.Stop();
  }

  ListWatchOptions Options() {
    ListWatchOptions options;
    options.path = "/api/v1/pods";
    options.page_size = 2;
    options.watch_timeout = std::chrono::seconds(7);
    options.retry_backoff = std::chrono::milliseconds(1);
    return options;
  }

  // Starts a ListWatch of the fake pods (or of `base_url`).
  void Start(ListWatchOptions options, const std::string& base_url = "") {
    http::ClientOptions client_options;
    client_options.base_url = base_url.empty() ? server_.BaseUrl() : base_url;
    client_options.timeout = std::chrono::minutes(10);
    absl::StatusOr<std::unique_ptr<http::Client>> client =
        http::Client::Create(client_options, clock_);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    list_watch_ = std::make_unique<ListWatch>(std::move(options), *client_, *client_, handler_);
    list_watch_->Start();
  }

  // Starts and waits for the first watch to be open.
  void StartWatching() {
    Start(Options());
    ASSERT_TRUE(pods_.WaitForWatches(1));
  }

  bool WaitForVersion(const std::string& rv) {
    return PollUntil([&] { return list_watch_->resource_version() == rv; }, kReady);
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  FakePods pods_;
  http::Server server_;
  RecordingHandler handler_;
  std::unique_ptr<http::Client> client_;
  std::unique_ptr<ListWatch> list_watch_;
};

TEST_F(ListWatchTest, ListsEveryPageThenWatchesFromTheListsVersion) {
  StartWatching();
  EXPECT_THAT(pods_.list_queries(), ElementsAre("limit=2", "limit=2&continue=after%2F2"));
  EXPECT_EQ(handler_.items(),
            (std::vector<std::string>{Pod("web-1", "11"), Pod("web-2", "12"), Pod("web-3", "13")}));
  EXPECT_THAT(handler_.log(), ElementsAre("LIST", "LISTED 100"));
  EXPECT_EQ(list_watch_->resource_version(), "100");
  EXPECT_THAT(pods_.watch_queries(),
              ElementsAre("watch=true&allowWatchBookmarks=true&resourceVersion=100"
                          "&timeoutSeconds=7"));
  EXPECT_EQ(handler_.watches(), 1);
}

TEST_F(ListWatchTest, BookmarksAreNotAskedForWhenTurnedOff) {
  ListWatchOptions options = Options();
  options.allow_watch_bookmarks = false;
  Start(options);
  ASSERT_TRUE(pods_.WaitForWatches(1));
  EXPECT_THAT(pods_.watch_queries(),
              ElementsAre("watch=true&resourceVersion=100&timeoutSeconds=7"));
}

TEST_F(ListWatchTest, AFieldSelectorGoesWithEveryListAndWatch) {
  ListWatchOptions options = Options();
  options.field_selector = "metadata.name=web 1";
  Start(options);
  ASSERT_TRUE(pods_.WaitForWatches(1));
  EXPECT_THAT(pods_.list_queries(),
              ElementsAre("limit=2&fieldSelector=metadata.name%3Dweb%201",
                          "limit=2&fieldSelector=metadata.name%3Dweb%201&continue=after%2F2"));
  EXPECT_THAT(pods_.watch_queries(),
              ElementsAre("watch=true&allowWatchBookmarks=true&resourceVersion=100"
                          "&timeoutSeconds=7&fieldSelector=metadata.name%3Dweb%201"));
}

TEST_F(ListWatchTest, EventsArriveInOrderAndMoveTheResumePoint) {
  StartWatching();
  const std::string modified = WriteWatchEvent(WatchEventType::kModified, Pod("web-1", "102"));
  ASSERT_TRUE(pods_.Send(WriteWatchEvent(WatchEventType::kAdded, Pod("web-4", "101")) +
                         modified.substr(0, 20)));
  ASSERT_TRUE(pods_.Send(modified.substr(20) +
                         WriteWatchEvent(WatchEventType::kDeleted, Pod("web-2", "103"))));
  ASSERT_TRUE(WaitForVersion("103"));
  EXPECT_THAT(handler_.log(),
              ElementsAre("LIST", "LISTED 100", "ADDED web-4", "MODIFIED web-1", "DELETED web-2"));
  EXPECT_TRUE(handler_.errors().empty());
}

TEST_F(ListWatchTest, EndedWatchResumesFromTheLastVersionAndBookmarksMoveIt) {
  StartWatching();
  ASSERT_TRUE(pods_.Send(WriteWatchEvent(WatchEventType::kAdded, Pod("web-4", "101"))));
  ASSERT_TRUE(WaitForVersion("101"));
  pods_.EndWatch();
  ASSERT_TRUE(pods_.WaitForWatches(2));
  ASSERT_TRUE(pods_.Send(WriteWatchEvent(
      WatchEventType::kBookmark, R"({"kind":"Pod","metadata":{"resourceVersion":"150"}})")));
  ASSERT_TRUE(WaitForVersion("150"));
  pods_.EndWatch();
  ASSERT_TRUE(pods_.WaitForWatches(3));
  EXPECT_THAT(pods_.watch_versions(), ElementsAre("100", "101", "150"));
  EXPECT_EQ(pods_.list_queries().size(), 2u) << "resumed: the two pages of one list only";
  // The bookmark moved the resume point without reaching the handler.
  EXPECT_THAT(handler_.log(), ElementsAre("LIST", "LISTED 100", "ADDED web-4"));
  EXPECT_EQ(handler_.watches(), 3);
}

TEST_F(ListWatchTest, ExpiredErrorEventRelistsAndTheDeletionMeanwhileIsSeen) {
  StartWatching();
  // While the watch was behind: web-2 was deleted and web-5 added.
  pods_.SetList({Pod("web-1", "11"), Pod("web-3", "13"), Pod("web-5", "190")}, "200");
  ASSERT_TRUE(pods_.Send(Expired()));
  ASSERT_TRUE(pods_.WaitForWatches(2));
  EXPECT_THAT(handler_.log(),
              ElementsAre("LIST", "LISTED 100", "EXPIRED", "LIST", "DELETED web-2", "LISTED 200"));
  EXPECT_THAT(pods_.watch_versions(), ElementsAre("100", "200"));
  EXPECT_EQ(pods_.list_queries().size(), 4u);
  EXPECT_TRUE(handler_.errors().empty());
}

TEST_F(ListWatchTest, GoneAnswerToTheWatchRelists) {
  StartWatching();
  pods_.SetList({Pod("web-1", "11")}, "300");
  pods_.SetGoneOnWatch(true);
  pods_.EndWatch();
  ASSERT_TRUE(PollUntil([&] { return handler_.Logged("LISTED 300"); }, kReady));
  pods_.SetGoneOnWatch(false);
  ASSERT_TRUE(PollUntil([&] { return pods_.watch_versions().back() == "300"; }, kReady));
  EXPECT_TRUE(handler_.Logged("EXPIRED"));
  EXPECT_TRUE(handler_.Logged("DELETED web-2"));
  EXPECT_TRUE(handler_.Logged("DELETED web-3"));
  EXPECT_TRUE(handler_.errors().empty()) << "a 410 is not an error";
}

// A kube-apiserver restarted on an older store knows no version as new as the resume
// point: it says so in an ERROR event (504 Timeout), and the collection is listed again.
TEST_F(ListWatchTest, TooLargeResourceVersionErrorEventRelists) {
  StartWatching();
  pods_.SetList({Pod("web-1", "11"), Pod("web-6", "40")}, "50");
  ASSERT_TRUE(pods_.Send(WriteWatchEvent(
      WatchEventType::kError,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
      R"("message":"Too large resource version: 100, current: 50","reason":"Timeout",)"
      R"("details":{"causes":[{"reason":"ResourceVersionTooLarge",)"
      R"("message":"Too large resource version"}],"retryAfterSeconds":1},"code":504})")));
  ASSERT_TRUE(pods_.WaitForWatches(2));
  EXPECT_THAT(handler_.log(), ElementsAre("LIST", "LISTED 100", "EXPIRED", "LIST", "DELETED web-2",
                                          "DELETED web-3", "LISTED 50"));
  EXPECT_THAT(pods_.watch_versions(), ElementsAre("100", "50"));
  EXPECT_TRUE(handler_.errors().empty()) << "a version the server does not know is no error";
}

TEST_F(ListWatchTest, MalformedEventIsReportedAndTheWatchResumesWhereItWas) {
  StartWatching();
  ASSERT_TRUE(pods_.Send(WriteWatchEvent(WatchEventType::kAdded, Pod("web-4", "101"))));
  ASSERT_TRUE(pods_.Send("{\"type\":\"ADDED\",\"object\":{\"metadata\":\n"));
  ASSERT_TRUE(pods_.WaitForWatches(2));
  std::vector<ListWatchError> errors = handler_.errors();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].stage, ListWatchError::Stage::kEvent);
  EXPECT_EQ(errors[0].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(errors[0].status.message()), HasSubstr("watch event is not JSON"));
  EXPECT_EQ(errors[1].stage, ListWatchError::Stage::kWatch);
  EXPECT_EQ(errors[1].status, errors[0].status);
  EXPECT_EQ(errors[1].http_code, 0);
  EXPECT_THAT(pods_.watch_versions(), ElementsAre("100", "101"));

  // The same for an event the handler refuses and an ERROR other than 410.
  ASSERT_TRUE(pods_.Send(WriteWatchEvent(WatchEventType::kAdded, Pod("refused", "102"))));
  ASSERT_TRUE(pods_.WaitForWatches(3));
  ASSERT_TRUE(pods_.Send(WriteWatchEvent(WatchEventType::kError,
                                         R"({"kind":"Status","code":500,)"
                                         R"("reason":"InternalError","message":"etcd"})")));
  ASSERT_TRUE(pods_.WaitForWatches(4));
  errors = handler_.errors();
  ASSERT_EQ(errors.size(), 6u);
  EXPECT_EQ(errors[2].status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(errors[4].stage, ListWatchError::Stage::kEvent);
  EXPECT_EQ(errors[4].status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(errors[4].status.message(), "watch error: etcd");
  EXPECT_THAT(pods_.watch_versions(), ElementsAre("100", "101", "101", "101"));
  EXPECT_THAT(handler_.log(), ElementsAre("LIST", "LISTED 100", "ADDED web-4"));
}

TEST_F(ListWatchTest, EventOverTheSizeCapFailsTheWatch) {
  ListWatchOptions options = Options();
  options.max_event_bytes = 64;
  Start(options);
  ASSERT_TRUE(pods_.WaitForWatches(1));
  ASSERT_TRUE(pods_.Send(std::string(100, ' ')));  // no line end yet
  ASSERT_TRUE(pods_.WaitForWatches(2));
  std::vector<ListWatchError> errors = handler_.errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].stage, ListWatchError::Stage::kWatch);
  EXPECT_EQ(errors[0].status.code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(ListWatchTest, FailedListIsReportedWithItsCodeAndRetried) {
  pods_.FailLists(1);
  StartWatching();
  std::vector<ListWatchError> errors = handler_.errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].stage, ListWatchError::Stage::kList);
  EXPECT_EQ(errors[0].http_code, 500);
  EXPECT_EQ(errors[0].status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(errors[0].status.message(), "GET /api/v1/pods: HTTP 500: etcd is down");
  EXPECT_EQ(pods_.list_queries().size(), 3u);
  EXPECT_THAT(handler_.log(), ElementsAre("LIST", "LIST", "LISTED 100"));
}

TEST_F(ListWatchTest, UnreachableServerIsAConnectErrorRetriedAndStopEndsTheBackoff) {
  ListWatchOptions options = Options();
  options.retry_backoff = std::chrono::hours(1);
  Start(options, "http://127.0.0.1:" + std::to_string(testing::FreeLoopbackPort()));
  ASSERT_TRUE(PollUntil([&] { return !handler_.errors().empty(); }, kReady));
  std::future<void> stopped = std::async(std::launch::async, [&] { list_watch_->Stop(); });
  ASSERT_EQ(stopped.wait_for(kReady), std::future_status::ready) << "Stop() waited the backoff";
  std::vector<ListWatchError> errors = handler_.errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].stage, ListWatchError::Stage::kList);
  EXPECT_EQ(errors[0].http_code, 0);
  EXPECT_EQ(http::FailureReason(errors[0].status), "connect");
}

TEST_F(ListWatchTest, StopReturnsWhileAWatchIsOpen) {
  StartWatching();
  std::future<void> stopped = std::async(std::launch::async, [&] { list_watch_->Stop(); });
  ASSERT_EQ(stopped.wait_for(kReady), std::future_status::ready) << "Stop() waited the watch";
  // The watch's connection was closed, not left to the server's timeoutSeconds.
  EXPECT_TRUE(PollUntil([&] { return pods_.Latest()->closed(); }, kReady));
  EXPECT_TRUE(handler_.errors().empty()) << "a stop is not an error";
  list_watch_->Start();  // does nothing once stopped
  EXPECT_EQ(pods_.watch_queries().size(), 1u);
  EXPECT_EQ(handler_.watches(), 1);
}

TEST(ListWatchOptionsTest, ValidateNamesTheBadField) {
  ListWatchOptions good;
  good.path = "/api/v1/pods";
  EXPECT_TRUE(good.Validate().ok());
  auto bad = [&](auto change, std::string_view field) {
    ListWatchOptions options = good;
    change(options);
    absl::Status status = options.Validate();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_THAT(std::string(status.message()), HasSubstr(field));
  };
  bad([](ListWatchOptions& o) { o.path = ""; }, "path");
  bad([](ListWatchOptions& o) { o.path = "api/v1/pods"; }, "path");
  bad([](ListWatchOptions& o) { o.path = "/api/v1/pods?watch=1"; }, "path");
  bad([](ListWatchOptions& o) { o.page_size = 0; }, "page size");
  bad([](ListWatchOptions& o) { o.watch_timeout = std::chrono::milliseconds(999); },
      "watch timeout");
  bad([](ListWatchOptions& o) { o.watch_head_timeout = Duration::zero(); }, "head timeout");
  bad([](ListWatchOptions& o) { o.retry_backoff = -std::chrono::seconds(1); }, "backoff");
  bad([](ListWatchOptions& o) { o.max_event_bytes = 0; }, "size cap");
}

}  // namespace
}  // namespace kubestat::kube
