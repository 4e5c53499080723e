// HttpServer: an asynchronous HTTP/1.1 server (Boost.Beast/Asio inside http_server.cc only).
//
// N io threads each run an event loop (an io_context of its own, the first also accepts); each
// connection lives on one of them, assigned round robin, and is one session object (no thread per
// connection), so thousands of idle keep-alive connections cost a socket and a few KiB each (a
// connection keeps its read buffer and a pool for header fields, which makes its requests'
// and answers' headers take no heap allocation once warm). A connection may pipeline requests: they are handed to the handler as they arrive (up to
// HttpServerOptions::max_pipelined at a time) and answered in the order they were sent.
// Answers go out with as few system calls as the socket allows: an answer given on the
// connection's own io thread (a handler that answers before returning) is taken at once, and the
// small answers ready at the front of the connection (up to 64 KiB of body each; pipelined ones
// together) are written with one send from a buffer the connection reuses; only what the socket
// does not take at once is left to an asynchronous write. Larger and streamed answers and TLS
// connections are written asynchronously from their own buffers.
//
// Limits: a request whose header exceeds max_header_bytes gets 431, whose body exceeds
// max_body_bytes 413 (both with a JSON error body), a malformed one 400; the connection is then
// closed. A connection that owes nothing and has not sent a complete request within read_timeout
// (an idle keep-alive connection, a slow client) is closed, and so is one that does not read an
// answer within write_timeout.
//
// Slow headers (slowloris): a connection is "waiting for a header" from its accept until its first
// request header is complete, and a keep-alive connection that owes nothing is too once the server
// sees part of a next header buffered (it looks every header_timeout while the connection is idle,
// so such a header gets between one and two header_timeouts). A connection waiting longer than
// header_timeout is closed (no answer: the request never arrived). At most max_header_waiting
// connections wait at once: accepting one more closes the one that has waited longest, so a
// flood of half-sent headers holds a bounded number of descriptors while new clients still get
// in. Idle keep-alive connections that have sent nothing of a next request are not waiting (only
// read_timeout bounds them). Each such close is reported through on_limit_close.
//
// TLS: with options.tls, every connection is TLS (the handshake must complete within
// header_timeout, like a first request header: a client that stalls in it is closed the same way
// and counts against max_header_waiting); each takes tls->Current() when accepted, so a reload
// applies to new connections only. A failed handshake closes the connection and is reported through
// on_tls_handshake_failure. Without it, the connection's bytes go straight to the socket.
//
// Shutdown: StopAccepting() closes the listening socket, and from then on a connection closes
// after its next answer that leaves no request unanswered on it (`Connection: close`), so keep-alive
// clients reconnect elsewhere; Shutdown(deadline) also stops reading new requests, waits until
// every request already received is answered (or the deadline passes), then closes every
// connection and joins the io threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontends/tls.h"
#include "inferloop/status.h"

namespace inferloop::frontends {

// Header fields in the order received (or to send). Names compare case-insensitively.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// The first field named `name` (case-insensitive), or nullptr.
const std::string* FindHttpHeader(const HttpHeaders& headers, std::string_view name);

struct HttpRequest {
  HttpRequest() = default;
  // With the server's cancellation flag and arrival time (no default flag made and dropped).
  HttpRequest(std::shared_ptr<std::atomic<bool>> cancelled_flag, std::chrono::steady_clock::time_point received_at)
      : cancelled(std::move(cancelled_flag)), received(received_at) {}

  std::string method;  // "GET", "POST", ... as sent
  std::string target;  // the request target as sent: path and query, still URL-encoded
  HttpHeaders headers;
  std::string body;  // de-chunked when sent chunked
  // Set to true by the server when the client goes away before the answer was written.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  // When the request's header had arrived.
  std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();
};

struct HttpResponse {
  int status = 200;
  // When set, a static string sent as the Content-Type header before `headers` (which then must
  // not have one): the common case costs no allocation.
  const char* content_type = nullptr;
  // Content-Type and the like; the server sets Content-Length, Connection and Server itself.
  HttpHeaders headers;
  std::string body;
};

// A response body sent in pieces as they are produced (HTTP/1.1 chunked transfer encoding; for
// an HTTP/1.0 client the body is sent as is and the connection closed after it), e.g. server-sent
// events. Copyable handle; thread-safe. The stream ends at End() or when the last copy is
// destroyed. Pieces are written in order; a client that does not read them within the server's
// write timeout is disconnected.
class HttpStream {
 public:
  struct State;  // defined in http_server.cc
  HttpStream() = default;
  explicit HttpStream(std::shared_ptr<State> state) : state_(std::move(state)) {}
  // Queues `data` (ignored when empty, after End, or once the connection is gone).
  void Write(std::string data) const;
  void End() const;
  // True once the client has gone away (nothing written will arrive).
  bool closed() const;

 private:
  std::shared_ptr<State> state_;
};

// Answers one request. Copyable; call it (or Stream) exactly once, from any thread, at any time
// (the write is posted onto the connection's strand). Later calls are ignored. If every copy is
// destroyed without a call, the client gets 500. If the connection closed meanwhile, the answer
// is dropped.
class HttpResponder {
 public:
  struct State;  // defined in http_server.cc
  explicit HttpResponder(std::shared_ptr<State> state) : state_(std::move(state)) {}
  void operator()(HttpResponse response) const;
  // Answers with `head`'s status and headers (its body is ignored) and a body to be streamed.
  HttpStream Stream(HttpResponse head) const;

 private:
  std::shared_ptr<State> state_;
};

// Called on an io thread for every complete request; must not block (hand long work elsewhere
// and answer through the responder later).
using HttpHandler = std::function<void(HttpRequest request, HttpResponder respond)>;

// Why the server closed a connection on its own (see the header comment).
enum class HttpLimitClose {
  kHeaderTimeout,       // its request header did not arrive within header_timeout
  kHeaderWaitingLimit,  // the oldest of more than max_header_waiting connections waiting for a header
};

// "header_timeout", "header_waiting_limit" (metric label values).
std::string_view HttpLimitCloseName(HttpLimitClose reason);

struct HttpServerOptions {
  std::string host = "0.0.0.0";  // address to bind (IPv4 or IPv6 literal, or "localhost")
  uint16_t port = 8000;          // 0: an ephemeral port (see HttpServer::port())
  int io_threads = 2;
  size_t max_header_bytes = 64 * 1024;
  size_t max_body_bytes = size_t{256} << 20;
  // A connection that owes nothing is closed when no complete request arrived within this time
  // since it was accepted or since its last answer was written.
  std::chrono::milliseconds read_timeout{60'000};
  // A connection whose client has not taken an answer within this time is closed.
  std::chrono::milliseconds write_timeout{60'000};
  // A request header must be complete within this time (since the connection was accepted, or
  // since part of a keep-alive connection's next header was seen).
  std::chrono::milliseconds header_timeout{10'000};
  // Connections waiting for a request header at once; one more closes the longest waiting.
  size_t max_header_waiting = 1024;
  // Called (on an io thread, must not block) for each connection closed by those two limits.
  std::function<void(HttpLimitClose)> on_limit_close;
  // Requests of one connection handed to the handler but not yet answered; beyond it the
  // connection is not read until an answer is written.
  int max_pipelined = 32;
  // TLS on every connection (see the header comment); null: plain HTTP.
  std::shared_ptr<TlsCredentials> tls;
  // Called (on an io thread, must not block) for each TLS handshake that fails (not for a client
  // that closes before sending anything).
  std::function<void()> on_tls_handshake_failure;
  // Value of the Server header ("" for none).
  std::string server_name = "inferloop";
};

class HttpServer {
 public:
  // Binds, listens and starts the io threads. Errors: InvalidArgument for bad options (host that
  // is no address, io_threads < 1, a timeout that is not positive, max_header_waiting 0), Unavailable when the address cannot be bound.
  static Result<std::unique_ptr<HttpServer>> Start(HttpServerOptions options, HttpHandler handler);

  ~HttpServer();  // Shutdown(0) unless already shut down
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the ephemeral one when options.port was 0).
  uint16_t port() const;

  // Closes the listening socket: new connections are refused, existing ones are served, each
  // until an answer leaves it owing nothing: that answer says `Connection: close` and the
  // connection closes after it (a client behind a load balancer then reconnects to another
  // replica rather than sending more requests to one that is going away).
  // Returns once no further connection will be accepted. Idempotent.
  void StopAccepting();

  // StopAccepting(); then stops reading new requests (idle connections are closed at once),
  // waits up to `deadline` for the requests already received to be answered and written, then
  // closes every connection (marking unanswered requests cancelled) and joins the io threads.
  // Returns true when everything was answered in time. Idempotent; call from a non-io thread.
  bool Shutdown(std::chrono::milliseconds deadline);

  // Open connections (for tests and metrics).
  size_t connection_count() const;

  struct Core;  // defined in http_server.cc

 private:
  explicit HttpServer(std::shared_ptr<Core> core);
  std::shared_ptr<Core> core_;
};

}  // namespace inferloop::frontends
