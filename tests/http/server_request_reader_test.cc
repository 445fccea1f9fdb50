#include "kubestat/http/server_request_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace kubestat::http {
namespace {

using State = RequestReader::State;

RequestReaderLimits SmallLimits() {
  RequestReaderLimits limits;
  limits.max_target_bytes = 64;
  limits.max_header_bytes = 512;
  limits.max_header_count = 5;
  limits.max_body_bytes = 100;
  return limits;
}

// Feeds `bytes` in pieces of `step` bytes, as a socket might deliver them, keeping what the
// reader did not consume. Returns the final state.
State Feed(RequestReader& reader, const std::string& bytes, size_t step, std::string* rest) {
  std::string pending;
  State state = State::kNeedMore;
  for (size_t at = 0; at < bytes.size() && state == State::kNeedMore; at += step) {
    pending += bytes.substr(at, step);
    size_t consumed = 0;
    state = reader.Parse(pending, &consumed);
    pending.erase(0, consumed);
  }
  if (rest != nullptr) *rest = pending;
  return state;
}

State FeedAll(RequestReader& reader, const std::string& bytes) {
  size_t consumed = 0;
  return reader.Parse(bytes, &consumed);
}

TEST(RequestReaderTest, ParsesARequestDeliveredOneByteAtATime) {
  const std::string request =
      "POST /apis/x?watch=1 HTTP/1.1\r\nHost: a\r\nX-Group: one\r\nx-group: two\r\n"
      "Content-Length: 5\r\n\r\nhello";
  for (size_t step : {size_t{1}, size_t{3}, request.size()}) {
    RequestReader reader(SmallLimits());
    ASSERT_EQ(Feed(reader, request, step, nullptr), State::kComplete) << "step " << step;
    EXPECT_EQ(reader.method(), "POST");
    EXPECT_EQ(reader.target(), "/apis/x?watch=1");
    EXPECT_EQ(reader.version(), 11);
    EXPECT_EQ(reader.body(), "hello");
    ASSERT_EQ(reader.headers().size(), 4u);
    EXPECT_EQ(reader.headers()[2].first, "x-group");
    EXPECT_EQ(reader.headers()[2].second, "two");
    EXPECT_TRUE(reader.keep_alive());
  }
}

TEST(RequestReaderTest, LeavesAPipelinedRequestForTheNextParse) {
  RequestReader reader(SmallLimits());
  const std::string two = "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n";
  size_t consumed = 0;
  ASSERT_EQ(reader.Parse(two, &consumed), State::kComplete);
  EXPECT_EQ(reader.target(), "/a");
  const std::string rest = two.substr(consumed);
  reader.Reset();
  ASSERT_EQ(reader.Parse(rest, &consumed), State::kComplete);
  EXPECT_EQ(reader.target(), "/b");
  EXPECT_EQ(consumed, rest.size());
}

TEST(RequestReaderTest, ChunkedBodyIsAssembled) {
  RequestReader reader(SmallLimits());
  ASSERT_EQ(Feed(reader,
                 "PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
                 7, nullptr),
            State::kComplete);
  EXPECT_EQ(reader.body(), "abcde");
}

TEST(RequestReaderTest, ChunkedBodyIsAssembledHoweverItIsSplit) {
  const std::string request =
      "PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n";
  for (size_t step = 1; step <= request.size(); ++step) {
    RequestReader reader(SmallLimits());
    std::string rest;
    ASSERT_EQ(Feed(reader, request, step, &rest), State::kComplete) << "step " << step;
    EXPECT_EQ(reader.body(), "abcde") << "step " << step;
    EXPECT_EQ(rest, "") << "step " << step;
  }
}

// Offered again without new bytes, a stalled reader waits instead of handing Beast the
// same bytes (its chunk parser asserts on a last chunk whose size line ends in a bare LF).
TEST(RequestReaderTest, BareLineFeedInTheLastChunkWaitsThenIsMalformed) {
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  RequestReader reader(SmallLimits());
  std::string pending = head + "0\n\r\n";
  size_t consumed = 0;
  ASSERT_EQ(reader.Parse(pending, &consumed), State::kNeedMore);
  pending.erase(0, consumed);
  for (int again = 0; again < 3; ++again) {
    ASSERT_EQ(reader.Parse(pending, &consumed), State::kNeedMore);
    EXPECT_EQ(consumed, 0u);
  }
  pending += "\r\n";
  ASSERT_EQ(reader.Parse(pending, &consumed), State::kRejected);
  EXPECT_EQ(reader.rejection().reason, RejectionReason::kMalformed);
  EXPECT_EQ(reader.rejection().error.code(), 400);
  EXPECT_EQ(reader.Eof(), State::kRejected);
}

// A body that is only a last chunk and its trailer, arriving a byte at a time: offered
// "0\r\n" and then one byte more, Beast (back in the last chunk's header) would assert that
// it has at least 5 bytes; the reader waits for them.
TEST(RequestReaderTest, ALastChunkWithATrailerArrivingByteByByteCompletes) {
  const std::string request =
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{2}, size_t{3}}) {
    RequestReader reader(SmallLimits());
    std::string rest;
    ASSERT_EQ(Feed(reader, request, step, &rest), State::kComplete) << "step " << step;
    EXPECT_EQ(reader.body(), "") << "step " << step;
    EXPECT_EQ(rest, "") << "step " << step;
  }
}

TEST(RequestReaderTest, ContentLengthOverLimitIsRejectedFromTheHeadAlone) {
  RequestReader reader(SmallLimits());
  ASSERT_EQ(FeedAll(reader, "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n"),
            State::kRejected);
  EXPECT_EQ(reader.rejection().reason, RejectionReason::kBodyTooLarge);
  EXPECT_EQ(reader.rejection().error.code(), 413);
}

TEST(RequestReaderTest, ChunksOverLimitAreRejected) {
  RequestReader reader(SmallLimits());
  ASSERT_EQ(FeedAll(reader,
                    "PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "50\r\n" +
                        std::string(80, 'x') + "\r\n50\r\n"),
            State::kRejected);
  EXPECT_EQ(reader.rejection().reason, RejectionReason::kBodyTooLarge);
}

TEST(RequestReaderTest, BadContentLengthsAreMalformed) {
  for (const char* length : {"-5", "18446744073709551615", "9223372036854775808", "12a", ""}) {
    RequestReader reader(SmallLimits());
    ASSERT_EQ(FeedAll(reader, std::string("PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: ") +
                                  length + "\r\n\r\n"),
              State::kRejected)
        << length;
    EXPECT_EQ(reader.rejection().reason, RejectionReason::kMalformed) << length;
    EXPECT_EQ(reader.rejection().error.code(), 400);
  }
}

TEST(RequestReaderTest, ConflictingFramingIsMalformed) {
  RequestReader reader(SmallLimits());
  ASSERT_EQ(FeedAll(reader,
                    "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"),
            State::kRejected);
  EXPECT_EQ(reader.rejection().reason, RejectionReason::kMalformed);
  RequestReader both(SmallLimits());
  ASSERT_EQ(FeedAll(both,
                    "PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                    "Content-Length: 3\r\n\r\n"),
            State::kRejected);
  EXPECT_EQ(both.rejection().reason, RejectionReason::kMalformed);
}

TEST(RequestReaderTest, OtherTransferEncodingIsNotImplemented) {
  RequestReader reader(SmallLimits());
  ASSERT_EQ(FeedAll(reader, "PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"),
            State::kRejected);
  EXPECT_EQ(reader.rejection().error.code(), 501);
}

TEST(RequestReaderTest, BareLineFeedIsMalformed) {
  for (const char* bytes : {"GET / HTTP/1.1\nHost: a\n\n", "GET / HTTP/1.1\r\nHost: a\n\r\n"}) {
    RequestReader reader(SmallLimits());
    ASSERT_EQ(FeedAll(reader, bytes), State::kRejected) << bytes;
    EXPECT_EQ(reader.rejection().reason, RejectionReason::kMalformed);
  }
}

TEST(RequestReaderTest, OtherVersionsAre505AndBrokenVersionsAre400) {
  for (const char* version : {"HTTP/9.9", "HTTP/2.0", "HTTP/0.9", "HTTP/10.0"}) {
    RequestReader reader(SmallLimits());
    ASSERT_EQ(FeedAll(reader, std::string("GET / ") + version + "\r\nHost: a\r\n\r\n"),
              State::kRejected);
    EXPECT_EQ(reader.rejection().reason, RejectionReason::kVersionNotSupported) << version;
    EXPECT_EQ(reader.rejection().error.code(), 505);
  }
  RequestReader broken(SmallLimits());
  ASSERT_EQ(FeedAll(broken, "GET / HTTX/1.1\r\nHost: a\r\n\r\n"), State::kRejected);
  EXPECT_EQ(broken.rejection().reason, RejectionReason::kMalformed);
}

TEST(RequestReaderTest, Http10NeedsNoHostAndClosesByDefault) {
  RequestReader reader(SmallLimits());
  ASSERT_EQ(FeedAll(reader, "GET / HTTP/1.0\r\n\r\n"), State::kComplete);
  EXPECT_EQ(reader.version(), 10);
  EXPECT_FALSE(reader.keep_alive());
  RequestReader no_host(SmallLimits());
  ASSERT_EQ(FeedAll(no_host, "GET / HTTP/1.1\r\n\r\n"), State::kRejected);
  EXPECT_EQ(no_host.rejection().reason, RejectionReason::kMalformed);
}

TEST(RequestReaderTest, TraceConnectAndUnlistedMethodsAre405OnTheRequestLine) {
  RequestReaderLimits limits = SmallLimits();
  limits.allowed_methods.push_back("TRACE");  // listing it does not allow it
  for (const char* method : {"TRACE", "CONNECT", "FOO", "get"}) {
    RequestReader reader(limits);
    // No end of head yet: the method alone decides.
    ASSERT_EQ(FeedAll(reader, std::string(method) + " / HTTP/1.1\r\n"), State::kRejected) << method;
    EXPECT_EQ(reader.rejection().reason, RejectionReason::kMethodNotAllowed);
    EXPECT_EQ(reader.rejection().error.code(), 405);
  }
}

TEST(RequestReaderTest, LongTargetAndLongRequestLineAre414) {
  RequestReader target(SmallLimits());
  ASSERT_EQ(FeedAll(target, "GET /" + std::string(64, 'a') + " HTTP/1.1\r\n"), State::kRejected);
  EXPECT_EQ(target.rejection().reason, RejectionReason::kUriTooLong);
  EXPECT_EQ(target.rejection().error.code(), 414);
  RequestReader line(SmallLimits());
  EXPECT_EQ(Feed(line, "GET /" + std::string(2000, 'a'), 100, nullptr), State::kRejected);
  EXPECT_EQ(line.rejection().reason, RejectionReason::kUriTooLong);
}

TEST(RequestReaderTest, LargeOrManyHeadersAre431) {
  RequestReader large(SmallLimits());
  // One field line that never ends, arriving in pieces: refused once the head passes 512.
  EXPECT_EQ(Feed(large, "GET / HTTP/1.1\r\nX-Big: " + std::string(4000, 'a'), 50, nullptr),
            State::kRejected);
  EXPECT_EQ(large.rejection().reason, RejectionReason::kHeaderTooLarge);
  EXPECT_EQ(large.rejection().error.code(), 431);

  // Many small fields, each consumed as it arrives, still add up.
  std::string many = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 4; ++i)
    many += "X-" + std::to_string(i) + ": " + std::string(130, 'b') + "\r\n";
  many += "\r\n";
  RequestReader summed(SmallLimits());
  EXPECT_EQ(Feed(summed, many, 20, nullptr), State::kRejected);
  EXPECT_EQ(summed.rejection().reason, RejectionReason::kHeaderTooLarge);

  std::string count = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 5; ++i) count += "X-" + std::to_string(i) + ": v\r\n";
  RequestReader counted(SmallLimits());
  EXPECT_EQ(FeedAll(counted, count + "\r\n"), State::kRejected);
  EXPECT_EQ(counted.rejection().reason, RejectionReason::kTooManyHeaders);
}

TEST(RequestReaderTest, GarbageIsMalformedAndEofMidRequestIsMalformed) {
  RequestReader garbage(SmallLimits());
  EXPECT_EQ(FeedAll(garbage, std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)),
            State::kRejected);
  EXPECT_EQ(garbage.rejection().reason, RejectionReason::kMalformed);

  RequestReader cut(SmallLimits());
  EXPECT_EQ(FeedAll(cut, "GET / HTTP/1.1\r\nHo"), State::kNeedMore);
  EXPECT_EQ(cut.Eof(), State::kRejected);
  RequestReader idle(SmallLimits());
  EXPECT_EQ(idle.Eof(), State::kNeedMore);
}

TEST(RequestReaderTest, NonOriginTargetsAreMalformedExceptAsteriskForOptions) {
  RequestReader absolute(SmallLimits());
  EXPECT_EQ(FeedAll(absolute, "GET http://x/ HTTP/1.1\r\nHost: a\r\n\r\n"), State::kRejected);
  RequestReader asterisk(SmallLimits());
  EXPECT_EQ(FeedAll(asterisk, "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"), State::kComplete);
}

TEST(RequestReaderTest, ExpectContinueIsReportedAfterTheHead) {
  RequestReader reader(SmallLimits());
  EXPECT_EQ(
      FeedAll(reader,
              "PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"),
      State::kNeedMore);
  EXPECT_TRUE(reader.head_complete());
  EXPECT_TRUE(reader.expects_continue());
}

}  // namespace
}  // namespace kubestat::http
