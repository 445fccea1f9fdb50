// A blocking loopback TCP client for the HTTP server's tests: raw bytes out, responses read
// back whole (head and Content-Length body), head by head, or to the end of the connection.
// Every receive gives up after kRawClientDeadline, so a test waits for an event, never for
// time to pass.
#ifndef KUBESTAT_TESTS_HTTP_RAW_CLIENT_H_
#define KUBESTAT_TESTS_HTTP_RAW_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <map>
#include <string>
#include <utility>

namespace kubestat::testing {

inline constexpr std::chrono::seconds kRawClientDeadline(20);

struct RawResponse {
  int code = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  bool complete = false;
};

class RawClient {
 public:
  // Connects to 127.0.0.1:port; `receive_buffer` > 0 sets SO_RCVBUF (a small one makes a
  // reader that falls behind); `source` (a 127.0.0.0/8 address) is the address it connects
  // from, so that one test can be several peers.
  explicit RawClient(int port, int receive_buffer = 0, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{static_cast<time_t>(kRawClientDeadline.count()), 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    if (receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    if (source != nullptr) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &from.sin_addr);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawClient() { Close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool Send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads until a response head is complete; returns it with its blank line ("" on EOF or
  // the deadline).
  std::string ReadHead() {
    size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return "";
    }
    std::string head = pending_.substr(0, end + 4);
    pending_.erase(0, end + 4);
    return head;
  }

  // Reads one response: the head, then Content-Length bytes of body (none after
  // ExpectHeadOnly()).
  RawResponse Read() {
    RawResponse response;
    const std::string head = ReadHead();
    if (head.empty()) return response;
    size_t line_end = head.find("\r\n");
    const std::string status = head.substr(0, line_end);
    if (status.size() < 12) return response;
    response.code = std::stoi(status.substr(9, 3));
    while (line_end != std::string::npos && line_end + 2 < head.size()) {
      const size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      const std::string line =
          head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      response.headers[Lower(line.substr(0, colon))] = line.substr(colon + 2);
    }
    size_t length = 0;
    if (auto it = response.headers.find("content-length"); it != response.headers.end()) {
      length = std::stoul(it->second);
    }
    if (!head_only_) {
      while (pending_.size() < length) {
        if (!Fill()) return response;
      }
      response.body = pending_.substr(0, length);
      pending_.erase(0, length);
    }
    response.complete = true;
    head_only_ = false;
    return response;
  }

  // For a HEAD request: the next Read() takes no body.
  void ExpectHeadOnly() { head_only_ = true; }

  // Reads until the server closes; returns what was not read yet. `clean` tells whether it
  // ended with EOF (not a reset or the deadline).
  std::string ReadToEnd(bool* clean) {
    while (Fill()) {
    }
    *clean = eof_;
    return std::exchange(pending_, {});
  }

  // True when the server closes the connection (EOF or reset) within the deadline, with no
  // further bytes before it.
  bool WaitClosed() {
    while (true) {
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) return pending_.empty();
      if (n < 0) return errno == ECONNRESET;  // EAGAIN: the deadline passed
      pending_.append(buf, static_cast<size_t>(n));
    }
  }

  const std::string& pending() const { return pending_; }

 private:
  static std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  bool Fill() {
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n == 0) eof_ = true;
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool head_only_ = false;
  bool eof_ = false;
  std::string pending_;
};

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTS_HTTP_RAW_CLIENT_H_
