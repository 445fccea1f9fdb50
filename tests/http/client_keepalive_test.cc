// kubestat::http::Client::Do against a scripted plain-HTTP peer on loopback: keep-alive and
// what happens when the peer closes a kept connection, answers in pieces, breaks off a
// body or sends what is not HTTP, and a body read into storage the caller hands in
// (ClientRequest::body_buffer). The peer serves its connections one after another; the
// test decides, for each request, what it gets back. A waiting test gives up after kGuard,
// which only a broken feature reaches.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kubestat/core/clock.h"
#include "kubestat/http/client.h"
#include "kubestat/testing/net.h"

namespace kubestat::http {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr auto kGuard = std::chrono::seconds(20);

// What the peer does with one request.
struct Reply {
  std::vector<std::string> pieces;  // sent one after another, each with its own send(2)
  bool close_after = false;         // close the connection after the pieces
};

// A plain-HTTP peer: accepts connections one at a time, reads each request (head, and a
// Content-Length body) and answers with what `script(connection, request, head)` returns
// (both counted from 0). Reading ends a connection when the client closes it.
class ScriptedPeer {
 public:
  using Script = std::function<Reply(int connection, int request, const std::string& head)>;

  explicit ScriptedPeer(Script script) : script_(std::move(script)) {
    listen_fd_ = testing::ListenOnLoopback(8, &port_);
    EXPECT_GE(listen_fd_, 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedPeer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Waits until `n` connections have been closed by the peer; false when kGuard passes.
  bool WaitForClosed(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kGuard, [&] { return closed_ >= n; });
  }
  int connections() {
    std::lock_guard lock(mu_);
    return connections_;
  }
  std::vector<std::string> heads() {
    std::lock_guard lock(mu_);
    return heads_;
  }

 private:
  void Serve() {
    for (int connection = 0;; ++connection) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      {
        std::lock_guard lock(mu_);
        ++connections_;
      }
      timeval timeout{20, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
      std::string in;
      for (int request = 0;; ++request) {
        std::string head;
        if (!ReadRequest(fd, &in, &head)) break;
        {
          std::lock_guard lock(mu_);
          heads_.push_back(head);
        }
        const Reply reply = script_(connection, request, head);
        for (const std::string& piece : reply.pieces) {
          ::send(fd, piece.data(), piece.size(), MSG_NOSIGNAL);
        }
        if (reply.close_after) break;
      }
      ::close(fd);
      std::lock_guard lock(mu_);
      ++closed_;
      cv_.notify_all();
    }
  }

  // One request from `fd` (what was read past it stays in `in`); false at the end.
  static bool ReadRequest(int fd, std::string* in, std::string* head) {
    char buf[4096];
    size_t end = 0;
    while ((end = in->find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      in->append(buf, static_cast<size_t>(n));
    }
    *head = in->substr(0, end + 4);
    size_t length = 0;
    if (const size_t at = head->find("Content-Length: "); at != std::string::npos) {
      length = std::stoul(head->substr(at + 16));
    }
    while (in->size() < end + 4 + length) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      in->append(buf, static_cast<size_t>(n));
    }
    in->erase(0, end + 4 + length);
    return true;
  }

  Script script_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  int connections_ = 0;
  int closed_ = 0;
  std::vector<std::string> heads_;
};

std::string Ok(std::string_view body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

std::unique_ptr<Client> MakeClient(const std::string& base_url, const Clock& clock) {
  ClientOptions options;
  options.base_url = base_url;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options, clock);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

TEST(ClientKeepAliveTest, RequestsInTurnShareOneConnection) {
  ScriptedPeer peer([](int, int request, const std::string&) {
    return Reply{{Ok("answer " + std::to_string(request))}};
  });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<ClientResponse> r = client->Get("/a");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body, "answer " + std::to_string(i));
  }
  EXPECT_EQ(peer.connections(), 1);
}

TEST(ClientKeepAliveTest, AConnectionThePeerClosedWhileIdleIsNotUsedAgain) {
  ScriptedPeer peer([](int connection, int, const std::string&) {
    return Reply{{Ok("from " + std::to_string(connection))}, /*close_after=*/true};
  });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> first = client->Get("/a");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->body, "from 0");
  ASSERT_TRUE(peer.WaitForClosed(1));
  absl::StatusOr<ClientResponse> second = client->Get("/a");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->body, "from 1");
  EXPECT_EQ(peer.connections(), 2);
}

// The peer takes a second request on a kept connection and closes it unanswered, as a
// server timing out an idle connection does when the request crosses its close.
Reply DropSecondRequest(int connection, int request, const std::string&) {
  if (connection == 0 && request == 1) return Reply{{}, /*close_after=*/true};
  return Reply{{Ok("from " + std::to_string(connection))}};
}

TEST(ClientKeepAliveTest, AnIdempotentRequestTheKeptConnectionLostIsSentOnANewOne) {
  ScriptedPeer peer(DropSecondRequest);
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Get("/a").ok());
  absl::StatusOr<ClientResponse> again = client->Get("/b");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->body, "from 1");
  EXPECT_EQ(peer.connections(), 2);
}

TEST(ClientKeepAliveTest, APostTheKeptConnectionLostIsNotSentTwice) {
  ScriptedPeer peer(DropSecondRequest);
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Get("/a").ok());
  absl::StatusOr<ClientResponse> post = client->Post("/things", "{}");
  ASSERT_FALSE(post.ok());
  EXPECT_EQ(post.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(post.status().message()),
              HasSubstr("POST /things: connecting: the connection closed before the response"));
  EXPECT_EQ(FailureReason(post.status()), "connect");
  EXPECT_EQ(peer.heads().size(), 2u);  // the GET and the one POST
}

TEST(ClientKeepAliveTest, AHeadAndBodyInManySmallPiecesAreReadWhole) {
  const std::string answer = Ok(std::string(5000, 'z'));
  ScriptedPeer peer([&](int, int, const std::string&) {
    Reply reply;
    for (size_t i = 0; i < answer.size(); i += 7) reply.pieces.push_back(answer.substr(i, 7));
    return reply;
  });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> r = client->Get("/a");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, std::string(5000, 'z'));
  EXPECT_EQ(r->content_type, "text/plain");
}

TEST(ClientKeepAliveTest, ABodyCutShortIsUnavailableAndTheConnectionIsNotKept) {
  ScriptedPeer peer([](int connection, int, const std::string&) {
    if (connection == 0) {
      return Reply{{"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + std::string(400, 'x')},
                   /*close_after=*/true};
    }
    return Reply{{Ok("whole")}};
  });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> cut = client->Get("/a");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(cut.status().message()), HasSubstr("GET /a: reading the response body"));
  EXPECT_EQ(FailureReason(cut.status()), "read");
  absl::StatusOr<ClientResponse> next = client->Get("/a");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->body, "whole");
}

TEST(ClientKeepAliveTest, BytesThatAreNotHttpAreUnavailable) {
  ScriptedPeer peer([](int, int, const std::string&) {
    return Reply{{"SSH-2.0-OpenSSH_9.2\r\n\r\n"}, /*close_after=*/true};
  });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> r = client->Get("/a");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("a malformed response"));
  EXPECT_EQ(FailureReason(r.status()), "read");
}

TEST(ClientKeepAliveTest, AHeadOverItsLimitIsRefused) {
  ScriptedPeer peer([](int, int, const std::string&) {
    return Reply{{"HTTP/1.1 200 OK\r\nX-Long: " + std::string(70 * 1024, 'h') +
                  "\r\nContent-Length: 0\r\n\r\n"},
                 /*close_after=*/true};
  });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> r = client->Get("/a");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("a response head longer than"));
  EXPECT_EQ(FailureReason(r.status()), "read");
}

TEST(ClientKeepAliveTest, ThePathPrefixOfTheBaseUrlAndTheHostAreSent) {
  ScriptedPeer peer([](int, int, const std::string&) { return Reply{{Ok("")}}; });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url() + "/k8s/clusters/c-1", clock);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Get("/api/v1/nodes?limit=1", {{"Accept", "application/json"}}).ok());
  ASSERT_EQ(peer.heads().size(), 1u);
  const std::string head = peer.heads()[0];
  EXPECT_THAT(head, StartsWith("GET /k8s/clusters/c-1/api/v1/nodes?limit=1 HTTP/1.1\r\n"));
  EXPECT_THAT(head, HasSubstr("\r\nHost: " + peer.base_url().substr(7) + "\r\n"));
  EXPECT_THAT(head, HasSubstr("\r\nAccept: application/json\r\n"));
}

TEST(ClientKeepAliveTest, RepeatedFieldsAreJoined) {
  ScriptedPeer peer([](int, int, const std::string&) {
    return Reply{{"HTTP/1.1 204 No Content\r\nWarning: one\r\nwarning: two\r\n\r\n"}};
  });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> r = client->Get("/a");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->code, 204);
  EXPECT_EQ(r->Header("warning"), "one, two");
  EXPECT_EQ(r->body, "");
}

// A body of `size` bytes that shows where each byte came from.
std::string Pattern(size_t size) {
  std::string body(size, ' ');
  for (size_t i = 0; i < size; ++i) body[i] = static_cast<char>('a' + i % 26);
  return body;
}

std::string Chunked(std::string_view body, size_t chunk_bytes) {
  std::string out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (size_t i = 0; i < body.size(); i += chunk_bytes) {
    const std::string_view chunk = body.substr(i, chunk_bytes);
    char size[32];
    std::snprintf(size, sizeof(size), "%zx\r\n", chunk.size());
    out.append(size).append(chunk).append("\r\n");
  }
  return out + "0\r\n\r\n";
}

ClientRequest RequestInto(std::string* buffer) {
  ClientRequest request;
  request.path_and_query = "/a";
  request.body_spare_capacity = 64;
  request.body_buffer = buffer;
  return request;
}

TEST(ClientBodyBufferTest, ABodyIsReadIntoTheStorageHandedIn) {
  const std::string body = Pattern(10000);
  ScriptedPeer peer([&](int, int, const std::string&) { return Reply{{Ok(body)}}; });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  std::string buffer(64 * 1024, 's');  // what it holds is not kept
  const char* const storage = buffer.data();
  // One fetch after another, each given the storage the one before returned.
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<ClientResponse> r = client->Do(RequestInto(&buffer));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body, body);
    EXPECT_EQ(r->body.data(), storage) << "fetch " << i;
    EXPECT_TRUE(buffer.empty());
    buffer = std::move(r->body);
  }
}

TEST(ClientBodyBufferTest, AChunkedBodyIsReadIntoTheStorageHandedIn) {
  const std::string body = Pattern(20000);
  ScriptedPeer peer([&](int, int, const std::string&) { return Reply{{Chunked(body, 3000)}}; });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  std::string buffer;
  buffer.reserve(32 * 1024);
  const char* const storage = buffer.data();
  absl::StatusOr<ClientResponse> r = client->Do(RequestInto(&buffer));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, body);
  EXPECT_EQ(r->body.data(), storage);
}

TEST(ClientBodyBufferTest, StorageTooSmallStillGetsTheWholeBodyWithItsSpareCapacity) {
  const std::string body = Pattern(50000);
  ScriptedPeer peer([&](int connection, int, const std::string&) {
    return Reply{{connection == 0 ? Ok(body) : Chunked(body, 7000)}, /*close_after=*/true};
  });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  // Declared length, then chunked.
  for (int i = 0; i < 2; ++i) {
    std::string buffer(100, 's');
    absl::StatusOr<ClientResponse> r = client->Do(RequestInto(&buffer));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body, body) << "response " << i;
    EXPECT_GE(r->body.capacity(), body.size() + 64) << "response " << i;
    EXPECT_TRUE(buffer.empty()) << "response " << i;
    ASSERT_TRUE(peer.WaitForClosed(i + 1));
  }
}

TEST(ClientBodyBufferTest, TheSizeCapHoldsAndTheStorageComesBack) {
  ScriptedPeer peer([](int connection, int, const std::string&) {
    return Reply{
        {connection == 0 ? Ok(std::string(10000, 'x')) : Chunked(std::string(10000, 'x'), 2000)},
        /*close_after=*/true};
  });
  ClientOptions options;
  options.base_url = peer.base_url();
  options.max_response_bytes = 4096;
  FakeClock clock;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options, clock);
  ASSERT_TRUE(client.ok()) << client.status();
  std::string buffer(size_t{1} << 20, 's');  // room for more than the cap
  const char* const storage = buffer.data();
  // Declared over the cap, then growing past it.
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<ClientResponse> r = (*client)->Do(RequestInto(&buffer));
    ASSERT_FALSE(r.ok()) << "response " << i;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("response larger than 4096 bytes"));
    EXPECT_EQ(FailureReason(r.status()), "too_large");
    EXPECT_EQ(buffer.data(), storage) << "response " << i;
    EXPECT_TRUE(buffer.empty()) << "response " << i;
  }
}

TEST(ClientBodyBufferTest, ABodyCutShortGivesTheStorageBack) {
  ScriptedPeer peer([](int, int, const std::string&) {
    return Reply{{"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + std::string(400, 'x')},
                 /*close_after=*/true};
  });
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  std::string buffer(4096, 's');
  const char* const storage = buffer.data();
  absl::StatusOr<ClientResponse> r = client->Do(RequestInto(&buffer));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(FailureReason(r.status()), "read");
  EXPECT_EQ(buffer.data(), storage);
  EXPECT_TRUE(buffer.empty());
}

TEST(ClientBodyBufferTest, ARequestSentAgainOnANewConnectionStillUsesTheStorage) {
  ScriptedPeer peer(DropSecondRequest);
  FakeClock clock;
  std::unique_ptr<Client> client = MakeClient(peer.base_url(), clock);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Get("/a").ok());
  std::string buffer;
  buffer.reserve(4096);
  const char* const storage = buffer.data();
  absl::StatusOr<ClientResponse> again = client->Do(RequestInto(&buffer));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->body, "from 1");
  EXPECT_EQ(again->body.data(), storage);
  EXPECT_EQ(peer.connections(), 2);
}

}  // namespace
}  // namespace kubestat::http
