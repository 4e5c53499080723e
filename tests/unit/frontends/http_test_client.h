// A tiny blocking HTTP/1.1 client over POSIX sockets for the HttpServer / RestHandler tests:
// raw bytes out, responses parsed just enough (status, headers, Content-Length body).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inferloop::frontends::testing {

// Every blocking read or write gives up after this long (a hang fails the test, never blocks it).
inline constexpr int kIoTimeoutSeconds = 10;

struct ClientResponse {
  int status = -1;  // -1: no response (connection closed or timed out)
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::vector<std::string> chunks;  // the pieces of a chunked body, as framed by the server

  const std::string* Header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (n.size() == name.size() && strncasecmp(n.data(), name.data(), n.size()) == 0) return &v;
    }
    return nullptr;
  }
  std::string HeaderOr(std::string_view name, std::string fallback = "") const {
    const std::string* v = Header(name);
    return v ? *v : fallback;
  }
};

inline std::string MakeHttpRequest(std::string_view method, std::string_view target, std::string_view body = "",
                                   const std::vector<std::pair<std::string, std::string>>& headers = {},
                                   bool content_length = true) {
  std::string out = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: localhost\r\n";
  for (const auto& [n, v] : headers) out += n + ": " + v + "\r\n";
  if (content_length && (!body.empty() || method == "POST")) out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "\r\n";
  out += body;
  return out;
}

class TestConnection {
 public:
  explicit TestConnection(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    timeval tv{kIoTimeoutSeconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Close();
  }
  ~TestConnection() { Close(); }
  TestConnection(const TestConnection&) = delete;
  TestConnection& operator=(const TestConnection&) = delete;
  TestConnection(TestConnection&& o) noexcept : fd_(std::exchange(o.fd_, -1)), buffer_(std::move(o.buffer_)) {}

  bool connected() const { return fd_ >= 0; }

  bool Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads one response (an interim 1xx one too). head_request: the answer to a HEAD request (no body
  // whatever its Content-Length says).
  ClientResponse Read(bool head_request = false) {
    ClientResponse r;
    size_t header_end;
    while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return r;
    }
    std::string head = buffer_.substr(0, header_end);
    buffer_.erase(0, header_end + 4);
    size_t line_end = head.find("\r\n");
    std::string status_line = head.substr(0, line_end);
    // "HTTP/1.1 200 OK"
    size_t sp1 = status_line.find(' ');
    if (sp1 == std::string::npos) return r;
    size_t sp2 = status_line.find(' ', sp1 + 1);
    r.status = std::atoi(status_line.substr(sp1 + 1, sp2 - sp1 - 1).c_str());
    if (sp2 != std::string::npos) r.reason = status_line.substr(sp2 + 1);
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t end = head.find("\r\n", pos);
      if (end == std::string::npos) end = head.size();
      std::string line = head.substr(pos, end - pos);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t v = line.find_first_not_of(' ', colon + 1);
        r.headers.emplace_back(line.substr(0, colon), v == std::string::npos ? "" : line.substr(v));
      }
      pos = end + 2;
    }
    if ((r.status >= 100 && r.status < 200) || head_request) return r;
    if (const std::string* te = r.Header("Transfer-Encoding"); te != nullptr && *te == "chunked") {
      for (;;) {
        size_t eol;
        while ((eol = buffer_.find("\r\n")) == std::string::npos) {
          if (!Fill()) {
            r.status = -1;
            return r;
          }
        }
        const size_t n = std::strtoull(buffer_.substr(0, eol).c_str(), nullptr, 16);
        while (buffer_.size() < eol + 2 + n + 2) {
          if (!Fill()) {
            r.status = -1;
            return r;
          }
        }
        if (n == 0) {
          buffer_.erase(0, eol + 4);
          return r;
        }
        r.chunks.push_back(buffer_.substr(eol + 2, n));
        r.body += r.chunks.back();
        buffer_.erase(0, eol + 2 + n + 2);
      }
    }
    size_t length = 0;
    if (const std::string* cl = r.Header("Content-Length")) length = std::strtoull(cl->c_str(), nullptr, 10);
    while (buffer_.size() < length) {
      if (!Fill()) {
        r.status = -1;
        return r;
      }
    }
    r.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return r;
  }

  // Sends a request and reads its response.
  ClientResponse Roundtrip(std::string_view request) {
    if (!Send(request)) return {};
    return Read();
  }

  // True when the server closes the connection (EOF or reset) within the I/O timeout; bytes
  // that arrive meanwhile are discarded.
  bool WaitClosed() {
    char buf[4096];
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(kIoTimeoutSeconds);
    while (std::chrono::steady_clock::now() < until) {
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
    }
    return false;
  }

  // Every byte the server sends until it closes the connection (or the I/O timeout passes), as
  // received: after whatever Read() left buffered.
  std::string ReadUntilClosed() {
    while (Fill()) {
    }
    return std::exchange(buffer_, std::string());
  }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }

 private:
  bool Fill() {
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string buffer_;
};

// One request on a fresh connection.
inline ClientResponse HttpRoundtrip(uint16_t port, std::string_view method, std::string_view target,
                                    std::string_view body = "",
                                    const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  TestConnection c(port);
  return c.Roundtrip(MakeHttpRequest(method, target, body, headers));
}

// Polls `done` until it holds or `timeout` passes (for events on other threads).
template <typename F>
bool WaitFor(F done, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    ::usleep(2000);
  }
  return true;
}

}  // namespace inferloop::frontends::testing
