// Streamed responses of kubestat::http::Server (server.h, Response::stream) over real
// loopback sockets: chunk order and framing, a client going away, Stop() with a stream
// open, and a client that stops reading. Tests wait for events with a deadline.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/plain_server_options.h"
#include "http/raw_client.h"
#include "kubestat/http/server.h"
#include "prometheus/registry.h"

namespace kubestat::http {
namespace {

constexpr std::chrono::seconds kDeadline = testing::kRawClientDeadline;

using Client = testing::RawClient;

// Decodes a chunked body; false when the framing is wrong or the last chunk is missing.
bool Dechunk(std::string_view in, std::vector<std::string>* chunks) {
  while (true) {
    const size_t line = in.find("\r\n");
    if (line == std::string_view::npos) return false;
    const size_t size = std::stoul(std::string(in.substr(0, line)), nullptr, 16);
    in.remove_prefix(line + 2);
    if (size == 0) return in == "\r\n";
    if (in.size() < size + 2 || in.substr(size, 2) != "\r\n") return false;
    chunks->emplace_back(in.substr(0, size));
    in.remove_prefix(size + 2);
  }
}

// A server whose "/stream" answer is streamed: the test gets each writer through
// NextWriter().
class StreamTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options) {
    server_ = std::make_unique<Server>(
        std::move(options),
        [this](const Request& request) {
          Response response;
          response.route = "/stream";
          response.content_type = "text/plain";
          if (request.path != "/stream") {
            response.body = "plain";
            return response;
          }
          response.headers.emplace_back("X-Stream", "yes");
          response.stream = [this](std::shared_ptr<StreamWriter> writer) {
            std::lock_guard<std::mutex> lock(mu_);
            writers_.push_back(std::move(writer));
            cv_.notify_all();
          };
          return response;
        },
        registry_, RealClock::Get());
    ASSERT_TRUE(server_->Start().ok());
  }

  std::shared_ptr<StreamWriter> NextWriter() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, kDeadline, [this] { return taken_ < writers_.size(); })) {
      return nullptr;
    }
    return writers_[taken_++];
  }

  // A promise kept when `writer` closes.
  static std::future<void> WhenClosed(StreamWriter& writer) {
    auto closed = std::make_shared<std::promise<void>>();
    std::future<void> future = closed->get_future();
    writer.OnClose([closed] { closed->set_value(); });
    return future;
  }

  prometheus::Registry registry_;
  std::unique_ptr<Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<StreamWriter>> writers_;
  size_t taken_ = 0;
};

TEST_F(StreamTest, ChunksArriveInOrderAsAChunkedBody) {
  StartServer(PlainOptions());
  Client client(server_->port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::shared_ptr<StreamWriter> writer = NextWriter();
  ASSERT_NE(writer, nullptr);
  // The producer writes from its own thread while the first chunks are already going out.
  std::thread producer([writer] {
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(writer->Write(std::to_string(i) + std::string(i * 37, 'a' + i % 26) + "\n"));
    }
    writer->Finish();
  });
  const std::string head = client.ReadHead();
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("Connection: close\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("X-Stream: yes\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
  bool clean = false;
  const std::string body = client.ReadToEnd(&clean);
  producer.join();
  EXPECT_TRUE(clean);
  std::vector<std::string> chunks;
  ASSERT_TRUE(Dechunk(body, &chunks)) << body.substr(0, 200);
  std::string joined;
  for (const std::string& chunk : chunks) joined += chunk;
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    expected += std::to_string(i) + std::string(i * 37, 'a' + i % 26) + "\n";
  }
  EXPECT_EQ(joined, expected);
  EXPECT_TRUE(writer->closed());
  EXPECT_FALSE(writer->Write("late"));
}

TEST_F(StreamTest, TheHeadWaitsForTheFirstWriteAndHeadRequestsGetNoBody) {
  StartServer(PlainOptions());
  Client client(server_->port());
  ASSERT_TRUE(client.Send("HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::shared_ptr<StreamWriter> writer = NextWriter();
  ASSERT_NE(writer, nullptr);
  EXPECT_TRUE(writer->Write("dropped"));
  writer->Finish();
  EXPECT_NE(client.ReadHead().find("200 OK"), std::string::npos);
  bool clean = false;
  EXPECT_EQ(client.ReadToEnd(&clean), "");
  EXPECT_TRUE(clean);
}

TEST_F(StreamTest, AClientThatGoesAwayEndsTheStream) {
  StartServer(PlainOptions());
  Client client(server_->port());
  ASSERT_TRUE(client.Send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::shared_ptr<StreamWriter> writer = NextWriter();
  ASSERT_NE(writer, nullptr);
  std::future<void> closed = WhenClosed(*writer);
  ASSERT_TRUE(writer->Write("first\n"));
  ASSERT_FALSE(client.ReadHead().empty());
  client.Close();
  // The producer has nothing more to send: the server notices the close by itself.
  ASSERT_EQ(closed.wait_for(kDeadline), std::future_status::ready);
  EXPECT_TRUE(writer->closed());
  EXPECT_FALSE(writer->Write("after\n"));
  // The connection no longer counts against the cap.
  Client next(server_->port());
  ASSERT_TRUE(next.Send("GET /other HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(next.ReadHead().find("200 OK"), std::string::npos);
}

TEST_F(StreamTest, StopWithAnOpenStreamReturnsPromptlyAndClosesIt) {
  ServerOptions options = PlainOptions();
  options.limits.max_connections = 2;
  StartServer(options);
  Client client(server_->port());
  ASSERT_TRUE(client.Send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::shared_ptr<StreamWriter> writer = NextWriter();
  ASSERT_NE(writer, nullptr);
  std::future<void> closed = WhenClosed(*writer);
  ASSERT_TRUE(writer->Flush());
  ASSERT_NE(client.ReadHead().find("200 OK"), std::string::npos);
  const auto start = std::chrono::steady_clock::now();
  server_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(closed.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  // The producer may keep its writer after the server is gone.
  server_.reset();
  EXPECT_FALSE(writer->Write("after stop\n"));
  writer->Finish();
  bool clean = false;
  client.ReadToEnd(&clean);
}

TEST_F(StreamTest, AReaderThatStopsReadingIsDroppedAfterTheWriteTimeout) {
  ServerOptions options = PlainOptions();
  options.limits.write_timeout = std::chrono::milliseconds(200);
  StartServer(options);
  Client client(server_->port(), /*receive_buffer=*/4096);
  ASSERT_TRUE(client.Send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::shared_ptr<StreamWriter> writer = NextWriter();
  ASSERT_NE(writer, nullptr);
  std::future<void> closed = WhenClosed(*writer);
  // The client reads nothing; the producer keeps up to 1 MiB queued until the stream ends.
  const std::string chunk(64 * 1024, 'z');
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (closed.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready &&
         std::chrono::steady_clock::now() < deadline) {
    if (writer->queued_bytes() < (size_t{1} << 20)) writer->Write(chunk);
  }
  EXPECT_TRUE(writer->closed());
  EXPECT_FALSE(writer->Write(chunk));
}

}  // namespace
}  // namespace kubestat::http
