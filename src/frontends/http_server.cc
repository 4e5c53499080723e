#include "frontends/http_server.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <cstdio>
#include <memory_resource>
#include <vector>
#include <condition_variable>
#include <deque>
#include <future>
#include <list>
#include <mutex>
#include <optional>
#include <strings.h>
#include <thread>
#include <unordered_map>

#include "frontends/http_status.h"
#include "frontends/v2_json_codec.h"
#include "serve/inference_service.h"

namespace inferloop::frontends {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;

const std::string* FindHttpHeader(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (n.size() == name.size() && strncasecmp(n.data(), name.data(), n.size()) == 0) return &v;
  }
  return nullptr;
}

std::string_view HttpLimitCloseName(HttpLimitClose reason) {
  switch (reason) {
    case HttpLimitClose::kHeaderTimeout:
      return "header_timeout";
    case HttpLimitClose::kHeaderWaitingLimit:
      return "header_waiting_limit";
  }
  return "unknown";
}

namespace http_internal {
class Session;
}  // namespace http_internal
using http_internal::Session;

namespace {

// Time a closing connection keeps draining what the client still sends after our last answer,
// so that the client reads that answer instead of a reset.
constexpr std::chrono::seconds kLingerTime{2};
// Pause before accepting again after an accept error (out of file descriptors, ...).
constexpr std::chrono::milliseconds kAcceptRetryDelay{100};
// Answers with bodies up to this size are copied into the connection's out buffer and written
// with the answers ready next to them in one send; larger ones go out from their own buffers.
constexpr size_t kGatherBodyBytes = 64 * 1024;
// At most this many answers in one send.
constexpr size_t kMaxGathered = 64;

// "HTTP/1.0 " or "HTTP/1.1 " (version 10 or else), the 3-digit status, the reason and CRLF: the
// status line of the answers this server writes itself (gathered and streamed).
void AppendStatusLine(std::string& out, unsigned version, unsigned status, std::string_view reason) {
  out += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  const char code[4] = {static_cast<char>('0' + status / 100 % 10), static_cast<char>('0' + status / 10 % 10),
                        static_cast<char>('0' + status % 10), ' '};
  out.append(code, sizeof code);
  out += reason;
  out += "\r\n";
}

HttpResponse ErrorResponse(int status, std::string_view message) {
  HttpResponse r;
  r.status = status;
  r.headers.emplace_back("Content-Type", "application/json");
  if (HttpStatusWantsRetryAfter(status)) r.headers.emplace_back("Retry-After", std::to_string(serve::RetryAfterSeconds()));
  r.body = JsonErrorBody(Status(StatusCode::kInvalidArgument, std::string(message)));
  return r;
}

// A connection's byte stream: the TCP socket itself, or TLS over it. An AsyncReadStream and
// AsyncWriteStream for Beast and Asio; the plain path costs one pointer test per operation.
class ConnStream {
 public:
  using executor_type = tcp::socket::executor_type;
  using TlsStream = beast::ssl_stream<tcp::socket>;

  explicit ConnStream(tcp::socket socket) : plain_(std::move(socket)) {}
  // TLS over `socket` with `context` (kept alive as long as the connection).
  ConnStream(tcp::socket socket, std::shared_ptr<TlsContext> context)
      : plain_(socket.get_executor()),
        context_(std::move(context)),
        tls_(std::make_unique<TlsStream>(std::move(socket), AsioSslContext(*context_))) {}

  executor_type get_executor() { return plain_.get_executor(); }
  bool tls() const { return tls_ != nullptr; }
  // The TCP socket underneath (for shutdown, close and draining raw bytes).
  tcp::socket& socket() { return tls_ ? tls_->next_layer() : plain_; }

  template <typename MutableBuffers, typename Handler>
  void async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    if (tls_) return tls_->async_read_some(buffers, std::forward<Handler>(handler));
    plain_.async_read_some(buffers, std::forward<Handler>(handler));
  }
  template <typename ConstBuffers, typename Handler>
  void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    if (tls_) return tls_->async_write_some(buffers, std::forward<Handler>(handler));
    plain_.async_write_some(buffers, std::forward<Handler>(handler));
  }
  // The server side of the TLS handshake (only when tls()).
  template <typename Handler>
  void async_handshake(Handler&& handler) {
    tls_->async_handshake(asio::ssl::stream_base::server, std::forward<Handler>(handler));
  }

 private:
  tcp::socket plain_;  // the socket, or (TLS) an empty one holding the executor
  std::shared_ptr<TlsContext> context_;
  std::unique_ptr<TlsStream> tls_;
};

}  // namespace

struct HttpServer::Core {
  HttpServerOptions options;
  HttpHandler handler;
  std::weak_ptr<Core> self;

  // Open sessions, for draining. Declared before io so that it outlives the sessions that
  // io's pending handlers still hold when io is destroyed.
  mutable std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;
  // Sessions waiting for a request header, longest waiting first (see Session::EnterWaiting).
  std::list<Session*> waiting;
  bool draining = false;

  // One event loop per io thread (io: the first thread's, which also accepts): a connection
  // lives on one of them (round robin), so its handlers run on one thread in order without a
  // strand, and its requests wake no other io thread. more_io is declared before io so that it
  // outlives io: an accept pending on io at destruction holds its new socket, which belongs to
  // one of more_io's loops (UBSan: a member call on a destroyed service otherwise).
  std::vector<std::unique_ptr<asio::io_context>> more_io;  // threads 2..N
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> more_work;
  size_t next_io = 0;  // on accept_strand
  asio::strand<asio::io_context::executor_type> accept_strand{io.get_executor()};
  tcp::acceptor acceptor{accept_strand};
  asio::steady_timer accept_retry{accept_strand};
  bool accepting = false;  // on accept_strand
  uint16_t port = 0;
  std::vector<std::thread> threads;

  std::mutex shutdown_mu;
  bool stopped_accepting = false;  // under shutdown_mu
  // Set by StopAccepting: a connection closes after the answer that leaves it owing nothing, so a
  // keep-alive client reconnects (to another replica behind a load balancer) instead of staying.
  std::atomic<bool> closing_connections{false};
  std::optional<bool> shutdown_result;

  void DoAccept();
  void Unregister(Session* s);  // defined after Session
  // With mu held: lists `s` as waiting for a header. Over max_header_waiting, unlists the longest
  // waiting session and returns it (the caller closes it on its thread; null when none or gone).
  std::shared_ptr<Session> EnterWaitingLocked(Session* s);
  void LeaveWaiting(Session* s);
};

struct HttpResponder::State {
  std::shared_ptr<HttpServer::Core> core;  // keeps the io_context alive while a post may come
  std::weak_ptr<Session> session;
  uint64_t seq = 0;
  std::atomic<bool> done{false};
  std::shared_ptr<std::atomic<bool>> cancelled;

  void Deliver(HttpResponse response);
  HttpStream StartStream(HttpResponse head);
  ~State() {
    if (!done.load()) Deliver(ErrorResponse(500, "the request handler dropped the request without answering"));
  }
};

namespace http_internal {

// Header fields (of a request being parsed, of an answer) from the connection's own pool
// (Session::fields_pool_): after the first requests, a request's and its answer's fields take no
// heap allocation. Used on the connection's thread only, as the pool is not thread-safe.
using FieldsAllocator = std::pmr::polymorphic_allocator<char>;
using Fields = http::basic_fields<FieldsAllocator>;
using Request = http::request<http::string_body, Fields>;
using Response = http::response<http::string_body, Fields>;
using RequestParser = http::request_parser<http::string_body, FieldsAllocator>;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpServer::Core& core, ConnStream stream)
      : core_(core), stream_(std::move(stream)), timer_(stream_.get_executor()), header_since_(Clock::now()) {}
  ~Session() {
    for (auto& slot : slots_) slot.cancelled->store(true);
    core_.Unregister(this);
  }

  tcp::socket::executor_type executor() { return stream_.get_executor(); }

  // True on the thread running this connection's handlers (its event loop's): an answer
  // given there is taken at once instead of being posted (no scheduler round trip, no wake-up).
  bool RunningHere() {
    auto executor = stream_.get_executor();
    const auto* loop = executor.target<asio::io_context::executor_type>();
    return loop != nullptr && loop->running_in_this_thread();
  }

  // Starts reading (after the TLS handshake, when TLS); the session was listed as waiting for its
  // first header when accepted, so header_timeout bounds the handshake too.
  void Start() {
    if (closed_) return;
    ArmIdleTimer();
    EnsureTimer(header_since_ + core_.options.header_timeout);
    if (!stream_.tls()) return DoRead();
    stream_.async_handshake([self = shared_from_this()](beast::error_code ec) {
      if (self->closed_) return;  // timed out, evicted or shut down meanwhile
      if (!ec) {
        self->DoRead();
        return self->MaybeClose();  // draining began during the handshake
      }
      if (ec != asio::error::eof && self->core_.options.on_tls_handshake_failure) {
        self->core_.options.on_tls_handshake_failure();
      }
      if (ec.category() == asio::error::get_ssl_category() && ERR_GET_REASON(ec.value()) == SSL_R_HTTP_REQUEST) {
        return self->AnswerPlainHttp();
      }
      self->Close();
    });
  }

  // A plain HTTP request on the TLS port: a plaintext 400 saying so, then close (as nginx does).
  void AnswerPlainHttp() {
    static const std::string kAnswer = [] {
      const std::string body = "{\"error\":\"this port speaks TLS only: use https://\"}";
      return "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    }();
    writing_ = true;
    StartWriteTimer();
    asio::async_write(stream_.socket(), asio::buffer(kAnswer), [self = shared_from_this()](beast::error_code, size_t) {
      self->writing_ = false;
      if (!self->closed_) self->Linger();
    });
  }

  // Closes the connection for `reason` unless it has stopped waiting for a header meanwhile.
  void CloseForLimit(HttpLimitClose reason) {
    if (closed_ || !header_waiting_) return;
    if (core_.options.on_limit_close) core_.options.on_limit_close(reason);
    Close();
  }

  // Guarded by core_.mu: the session's place in core_.waiting, when listed.
  std::list<Session*>::iterator waiting_it;
  bool waiting_listed = false;

  // Stops reading requests; closes once the requests already received are answered.
  void BeginDrain() {
    if (closed_) return;
    draining_ = true;
    read_closed_ = true;
    MaybeClose();
  }

  // Closes now; unanswered requests are marked cancelled.
  void Close() {
    if (closed_) return;
    closed_ = true;
    read_closed_ = true;
    StopWaiting();
    for (auto& slot : slots_) slot.cancelled->store(true);
    beast::error_code ec;
    timer_.cancel();
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  // The start, pieces and end of a streamed answer for request `seq`.
  void OnStreamStart(uint64_t seq, HttpResponse head) {
    Slot* slot = FindSlot(seq);
    if (slot == nullptr || slot->response || slot->streaming) return;
    slot->streaming = true;
    int status = head.status;
    if (status < 100 || status > 999) status = 500;
    std::string h;
    const beast::string_view reason = http::obsolete_reason(static_cast<http::status>(status));
    AppendStatusLine(h, slot->version, static_cast<unsigned>(status), std::string_view(reason.data(), reason.size()));
    if (!core_.options.server_name.empty()) h += "Server: " + core_.options.server_name + "\r\n";
    if (head.content_type != nullptr) h += std::string("Content-Type: ") + head.content_type + "\r\n";
    for (auto& [name, value] : head.headers) h += name + ": " + value + "\r\n";
    if (slot->version == 10) {
      slot->close_after = true;  // the end of the body is the end of the connection
      h += "Connection: close\r\n\r\n";
    } else {
      h += "Transfer-Encoding: chunked\r\n\r\n";
    }
    h += slot->stream_pending;  // pieces (and the end) that arrived before the start
    slot->stream_pending = std::move(h);
    DoWrite();
  }

  // Pieces and the end may arrive before the start: a stream opened by a handler on this io
  // thread posts its start to the thread's private queue, which asio runs only after the handler
  // returns, while pieces posted from another thread (the generation thread) meanwhile reach the
  // shared queue first. They are framed and kept until the start (only a slot answered without a
  // stream drops them).
  void OnStreamData(uint64_t seq, std::string data) {
    Slot* slot = FindSlot(seq);
    if (slot == nullptr || slot->response || slot->stream_ended || data.empty()) return;
    if (slot->version == 10) {
      slot->stream_pending += data;
    } else {
      char len[20];
      std::snprintf(len, sizeof(len), "%zx\r\n", data.size());
      slot->stream_pending += len;
      slot->stream_pending += data;
      slot->stream_pending += "\r\n";
    }
    if (slot->streaming) DoWrite();
  }

  void OnStreamEnd(uint64_t seq) {
    Slot* slot = FindSlot(seq);
    if (slot == nullptr || slot->response || slot->stream_ended) return;
    slot->stream_ended = true;
    if (slot->version != 10) slot->stream_pending += "0\r\n\r\n";
    if (slot->streaming) DoWrite();
  }

  // An answer for request `seq` (posted here by its responder).
  void OnAnswer(uint64_t seq, HttpResponse answer) {
    if (closed_ || slots_.empty() || seq < slots_.front().seq || seq - slots_.front().seq >= slots_.size()) return;
    Slot& slot = slots_[seq - slots_.front().seq];
    if (slot.response) return;
    SetResponse(slot, std::move(answer));
    DoWrite();
  }

 private:
  struct Slot {
    uint64_t seq = 0;
    unsigned version = 11;
    bool keep_alive = true;
    bool head = false;
    bool close_after = false;  // an error that leaves the stream unusable
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
    std::optional<Response> response;
    // A streamed answer: bytes (header, framed pieces) queued and not yet handed to a write.
    bool streaming = false;
    bool stream_ended = false;
    std::string stream_pending;
    std::string stream_writing;
  };

  Slot* FindSlot(uint64_t seq) {
    if (closed_ || slots_.empty() || seq < slots_.front().seq || seq - slots_.front().seq >= slots_.size()) return nullptr;
    return &slots_[seq - slots_.front().seq];
  }

  void WriteStream(Slot& slot) {
    if (slot.stream_pending.empty()) {
      if (slot.stream_ended) FinishSlot();  // everything written
      return;
    }
    close_after_write_ = slot.close_after || !slot.keep_alive || LastAnswer();
    slot.stream_writing.swap(slot.stream_pending);
    slot.stream_pending.clear();
    writing_ = true;
    StartWriteTimer();
    asio::async_write(stream_, asio::buffer(slot.stream_writing), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (self->closed_) return;
      if (ec) return self->Close();
      self->slots_.front().stream_writing.clear();
      self->DoWrite();
    });
  }

  // The front slot's answer is completely written.
  void FinishSlot() {
    slots_.pop_front();
    if (close_after_write_) return Linger();
    if (slots_.empty()) ArmIdleTimer();
    DoWrite();
    DoRead();
    MaybeClose();
  }

  void SetResponse(Slot& slot, HttpResponse answer) {
    auto& res = slot.response.emplace(std::piecewise_construct, std::make_tuple(), std::make_tuple(FieldsAllocator(&fields_pool_)));
    res.version(slot.version);
    int status = answer.status;
    if (status < 100 || status > 999) {
      answer = ErrorResponse(500, "the request handler gave an invalid HTTP status");
      status = 500;
    }
    res.result(static_cast<unsigned>(status));
    if (status == 499) res.reason("Client Closed Request");
    if (!core_.options.server_name.empty()) res.set(http::field::server, core_.options.server_name);
    if (answer.content_type != nullptr) res.insert(http::field::content_type, answer.content_type);
    for (auto& [name, value] : answer.headers) res.insert(name, value);
    res.body() = std::move(answer.body);
    res.prepare_payload();
    if (slot.head) res.body().clear();  // a HEAD answer has the headers of a GET one and no body
  }

  // A slot whose answer the server gives itself (limits, malformed requests, draining).
  void PushError(unsigned version, int status, std::string_view message) {
    Slot& slot = slots_.emplace_back();
    slot.seq = next_seq_++;
    slot.version = version;
    slot.close_after = true;
    read_closed_ = true;
    SetResponse(slot, ErrorResponse(status, message));
    DoWrite();
  }

  bool Idle() const { return slots_.empty() && !writing_; }

  // The front slot's answer is the connection's last: nothing more will be read, or the server
  // is closing connections (StopAccepting), and no other request is waiting for its answer.
  bool LastAnswer() const {
    return (read_closed_ || core_.closing_connections.load(std::memory_order_relaxed)) && slots_.size() == 1;
  }

  // One timer per connection, re-armed lazily: arming only records when the current phase
  // started and makes sure a wait is pending that fires no later than the phase's deadline.
  // When it fires, OnTimer works out the deadline from the connection's state. So a request
  // costs no timer cancellation or new wait in the common case (both timeouts are long).
  void ArmIdleTimer() {
    if (closed_) return;
    idle_since_ = Clock::now();
    EnsureTimer(idle_since_ + core_.options.read_timeout);
  }

  // Bounds the write about to start by write_timeout.
  void StartWriteTimer() {
    write_started_ = Clock::now();
    EnsureTimer(write_started_ + core_.options.write_timeout);
  }

  // Makes sure the timer fires at `due` or earlier.
  void EnsureTimer(Clock::time_point due) {
    if (closed_ || (timer_pending_ && timer_due_ <= due)) return;
    SetTimer(due);
  }

  void SetTimer(Clock::time_point due) {
    timer_due_ = due;
    timer_pending_ = true;
    const uint64_t gen = ++timer_gen_;
    timer_.expires_at(due);  // cancels a pending wait: its handler sees an old generation
    timer_.async_wait([self = shared_from_this(), gen](beast::error_code ec) {
      if (gen != self->timer_gen_) return;  // superseded
      self->timer_pending_ = false;
      self->OnTimer(ec);
    });
  }

  void OnTimer(beast::error_code ec) {
    if (ec || closed_) return;
    const Clock::time_point now = Clock::now();
    if (lingering_) return Close();
    Clock::time_point due;
    if (Idle()) {
      due = idle_since_ + core_.options.read_timeout;  // idle keep-alive or a client too slow to send
      if (!header_waiting_ && PartialHeaderBuffered()) StartWaiting(now);
      if (header_waiting_) {
        const Clock::time_point header_due = header_since_ + core_.options.header_timeout;
        if (now >= header_due) return CloseForLimit(HttpLimitClose::kHeaderTimeout);
        due = std::min(due, header_due);
      } else {
        due = std::min(due, now + core_.options.header_timeout);  // look for a next header then
      }
    } else if (writing_) {
      due = write_started_ + core_.options.write_timeout;  // the client does not take its answer
    } else {
      // An answer is being computed: nothing to time out; look again later.
      return SetTimer(now + core_.options.read_timeout);
    }
    if (now >= due) return Close();
    SetTimer(due);
  }

  // Part of a request header has arrived and waits for the rest (Beast's parser consumes nothing
  // of a header until it is complete, so buffered bytes during a header read are that part).
  bool PartialHeaderBuffered() const {
    return reading_ && !lingering_ && !read_closed_ && buffer_.size() > 0 && parser_ && !parser_->is_header_done();
  }

  // A keep-alive connection's next header has started arriving.
  void StartWaiting(Clock::time_point now) {
    header_waiting_ = true;
    header_since_ = now;
    std::shared_ptr<Session> evicted;
    {
      std::lock_guard<std::mutex> lock(core_.mu);
      evicted = core_.EnterWaitingLocked(this);
    }
    if (evicted) PostLimitClose(std::move(evicted));
  }

  void StopWaiting() {
    if (!header_waiting_) return;  // the common case: one flag test per request
    header_waiting_ = false;
    core_.LeaveWaiting(this);
  }

 public:
  static void PostLimitClose(std::shared_ptr<Session> s) {
    auto executor = s->executor();
    asio::post(executor, [s = std::move(s)] { s->CloseForLimit(HttpLimitClose::kHeaderWaitingLimit); });
  }

 private:
  void DoRead() {
    if (read_closed_ || reading_ || closed_ ||
        slots_.size() >= static_cast<size_t>(std::max(1, core_.options.max_pipelined))) {
      return;
    }
    parser_.emplace(std::piecewise_construct, std::make_tuple(), std::make_tuple(FieldsAllocator(&fields_pool_)));
    parser_->header_limit(static_cast<uint32_t>(std::min<size_t>(core_.options.max_header_bytes, UINT32_MAX)));
    parser_->body_limit(static_cast<uint64_t>(core_.options.max_body_bytes));
    reading_ = true;
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (closed_) return;
    if (lingering_) return Discard();
    if (ec) return OnReadError(ec);
    StopWaiting();
    header_time_ = Clock::now();
    auto& req = parser_->get();
    // Expect: 100-continue: tell the client to send its body, unless answers are still owed
    // (a 100 then would land in the middle of the answers; the client sends after its timeout).
    auto expect = req[http::field::expect];
    if (beast::iequals(expect, "100-continue") && Idle() && !parser_->is_done()) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      writing_ = true;
      StartWriteTimer();
      asio::async_write(stream_, asio::buffer(kContinue), [self = shared_from_this()](beast::error_code ec, size_t) {
        self->writing_ = false;
        if (self->closed_) return;
        if (ec) return self->Close();
        if (self->slots_.empty()) self->ArmIdleTimer();
        self->ReadBody();
      });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    // A small request's body usually arrived with its header: parse what is buffered here
    // rather than through another asynchronous read (one scheduler round trip less).
    while (!parser_->is_done() && buffer_.size() > 0) {
      beast::error_code ec;
      const size_t n = parser_->put(buffer_.data(), ec);
      buffer_.consume(n);
      if (ec == http::error::need_more) break;
      if (ec) return OnBody(ec);
      if (n == 0) break;
    }
    if (parser_->is_done()) return OnBody({});
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    reading_ = false;
    if (closed_) return;
    if (lingering_) return Discard();
    if (ec) return OnReadError(ec);
    Request req = parser_->release();
    parser_.reset();
    // An idle connection keeps no large read buffer.
    if (buffer_.size() == 0 && buffer_.capacity() > 16 * 1024) buffer_.shrink_to_fit();
    if (draining_) {
      PushError(req.version(), 503, "the server is shutting down");
      return;
    }
    Slot& slot = slots_.emplace_back();
    slot.seq = next_seq_++;
    slot.version = req.version();
    slot.keep_alive = req.keep_alive();
    slot.head = req.method() == http::verb::head;
    if (!slot.keep_alive) read_closed_ = true;

    HttpRequest request(slot.cancelled, header_time_);
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    request.headers.reserve(static_cast<size_t>(std::distance(req.begin(), req.end())));
    for (const auto& field : req) request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    request.body = std::move(req.body());

    auto state = std::make_shared<HttpResponder::State>();
    state->core = core_.self.lock();
    state->session = weak_from_this();
    state->seq = slot.seq;
    state->cancelled = slot.cancelled;
    try {
      core_.handler(std::move(request), HttpResponder(state));
    } catch (const std::exception& e) {
      state->Deliver(ErrorResponse(500, std::string("request handler failed: ") + e.what()));
    } catch (...) {
      state->Deliver(ErrorResponse(500, "request handler failed"));
    }
    DoRead();
  }

  void OnReadError(beast::error_code ec) {
    reading_ = false;
    unsigned version = parser_ ? parser_->get().version() : 11;
    if (version != 10) version = 11;
    if (ec == http::error::body_limit) {
      return PushError(version, 413, "request body is larger than the server's limit of " +
                                         std::to_string(core_.options.max_body_bytes) + " bytes");
    }
    if (ec == http::error::header_limit) {
      return PushError(version, 431, "request header is larger than the server's limit of " +
                                         std::to_string(core_.options.max_header_bytes) + " bytes");
    }
    if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return PushError(version, 400, "malformed HTTP request: " + ec.message());
    }
    // The client closed (or reset) its side, or we cancelled the read: it will not read our
    // answers, so requests still being computed are not worth finishing.
    read_closed_ = true;
    if (ec != asio::error::operation_aborted) {
      for (auto& slot : slots_) slot.cancelled->store(true);
    }
    MaybeClose();
  }

  void DoWrite() {
    if (writing_ || closed_ || slots_.empty()) return;
    Slot& slot = slots_.front();
    if (slot.streaming) return WriteStream(slot);
    if (!slot.response) return;
    if (!stream_.tls() && slot.response->body().size() <= kGatherBodyBytes) return WriteGathered();
    close_after_write_ = slot.close_after || !slot.keep_alive || LastAnswer();
    slot.response->keep_alive(!close_after_write_);
    writing_ = true;
    StartWriteTimer();
    http::async_write(stream_, *slot.response,
                      [self = shared_from_this()](beast::error_code ec, size_t) { self->OnWrite(ec); });
  }

  void OnWrite(beast::error_code ec) {
    writing_ = false;
    if (closed_) return;
    if (ec) return Close();
    FinishSlot();
  }

  // Writes the answers ready at the front (small, plain TCP), in order, with one send: their
  // bytes go into the connection's reused out_ buffer. What the socket takes at once needs no
  // asynchronous write (no completion handler, no scheduler round trip); the rest, if any, is
  // written asynchronously. Pipelined answers ready together leave in one segment.
  void WriteGathered() {
    out_.clear();
    size_t count = 0;
    for (size_t i = 0; i < slots_.size() && count < kMaxGathered; ++i) {
      Slot& slot = slots_[i];
      if (slot.streaming || !slot.response || slot.response->body().size() > kGatherBodyBytes) break;
      const bool last = (read_closed_ || core_.closing_connections.load(std::memory_order_relaxed)) && i + 1 == slots_.size();
      close_after_write_ = slot.close_after || !slot.keep_alive || last;
      slot.response->keep_alive(!close_after_write_);
      if (!AppendSerialized(*slot.response)) {
        if (count == 0) return Close();  // cannot happen with string bodies
        close_after_write_ = false;
        break;
      }
      ++count;
      if (close_after_write_) break;
    }
    beast::error_code ec;
    size_t sent = 0;
    if (!nonblocking_set_) {
      stream_.socket().non_blocking(true, ec);
      nonblocking_set_ = !ec;
    }
    if (nonblocking_set_) sent = stream_.socket().write_some(asio::buffer(out_), ec);
    if (ec && ec != asio::error::would_block && ec != asio::error::try_again) return Close();
    if (sent == out_.size()) return FinishGathered(count);
    writing_ = true;
    StartWriteTimer();
    asio::async_write(stream_, asio::buffer(out_.data() + sent, out_.size() - sent),
                      [self = shared_from_this(), count](beast::error_code ec, size_t) {
                        self->writing_ = false;
                        if (self->closed_) return;
                        if (ec) return self->Close();
                        self->FinishGathered(count);
                      });
  }

  // Appends `res` as sent on the wire: the same bytes as Beast's serializer (http::write). A
  // response that is not chunked goes out as Beast lays it out (status line, each field as
  // "name: value", a blank line, the body) written here directly: Beast's serializer took about
  // 0.8 us of simple's 31 us of server CPU per request (bench/serve_stage_profile.py).
  bool AppendSerialized(Response& res) {
    const unsigned version = res.version();
    const unsigned code = res.result_int();
    if (!res.chunked() && (version == 10 || version == 11) && code >= 100 && code <= 999) {
      const beast::string_view reason = res.reason();
      AppendStatusLine(out_, version, code, std::string_view(reason.data(), reason.size()));
      for (const auto& field : res) {
        const beast::string_view name = field.name_string(), value = field.value();
        out_.append(name.data(), name.size());
        out_ += ": ";
        out_.append(value.data(), value.size());
        out_ += "\r\n";
      }
      out_ += "\r\n";
      out_ += res.body();
      return true;
    }
    http::response_serializer<http::string_body, Fields> sr(res);
    beast::error_code ec;
    while (!sr.is_done()) {
      sr.next(ec, [&](beast::error_code&, const auto& buffers) {
        size_t n = 0;
        for (const auto b : beast::buffers_range_ref(buffers)) {
          out_.append(static_cast<const char*>(b.data()), b.size());
          n += b.size();
        }
        sr.consume(n);
      });
      if (ec) return false;
    }
    return true;
  }

  // The first `count` slots' answers are completely written.
  void FinishGathered(size_t count) {
    for (size_t i = 0; i < count; ++i) slots_.pop_front();
    // An idle connection keeps no large write buffer (as for the read buffer).
    if (out_.capacity() > 16 * 1024) std::string().swap(out_);
    if (close_after_write_) return Linger();
    if (slots_.empty()) ArmIdleTimer();
    DoWrite();
    DoRead();
    MaybeClose();
  }

  void MaybeClose() {
    if (closed_ || lingering_ || !read_closed_ || !Idle()) return;
    Close();
  }

  // After the last answer: stop sending, read and drop whatever the client still sends until it
  // closes or kLingerTime passes, then close.
  void Linger() {
    lingering_ = true;
    read_closed_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    SetTimer(Clock::now() + kLingerTime);
    if (!reading_) Discard();
  }

  void Discard() {
    reading_ = true;
    scratch_.resize(4096);
    // Raw bytes off the socket (TLS records included): they are dropped anyway.
    stream_.socket().async_read_some(asio::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->reading_ = false;
      if (self->closed_) return;
      if (ec) return self->Close();
      self->Discard();
    });
  }

  HttpServer::Core& core_;
  // Declared before everything holding header fields (parser_, slots_), so destroyed after them.
  // Small chunks: an idle connection keeps what its pools hold (a few KiB after a request).
  std::pmr::unsynchronized_pool_resource fields_pool_{std::pmr::pool_options{4, 512}};
  ConnStream stream_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  std::deque<Slot> slots_;  // requests handed out and not yet written, in arrival order
  uint64_t next_seq_ = 0;
  Clock::time_point header_time_;
  std::vector<char> scratch_;  // for Discard
  std::string out_;            // the bytes of the answers being written by WriteGathered
  bool nonblocking_set_ = false;
  Clock::time_point write_started_;
  Clock::time_point idle_since_;
  Clock::time_point timer_due_;
  Clock::time_point header_since_;  // when the wait for the current header began
  bool header_waiting_ = true;      // waiting for a header (listed in core_.waiting from the accept)
  uint64_t timer_gen_ = 0;
  bool timer_pending_ = false;
  bool reading_ = false;
  bool writing_ = false;
  bool read_closed_ = false;  // no further request will be read
  bool draining_ = false;
  bool lingering_ = false;
  bool close_after_write_ = false;
  bool closed_ = false;
};

}  // namespace http_internal

void HttpServer::Core::Unregister(Session* s) {
  std::lock_guard<std::mutex> lock(mu);
  if (s->waiting_listed) waiting.erase(s->waiting_it);
  s->waiting_listed = false;
  sessions.erase(s);
  if (sessions.empty()) cv.notify_all();
}

std::shared_ptr<Session> HttpServer::Core::EnterWaitingLocked(Session* s) {
  std::shared_ptr<Session> evicted;
  if (waiting.size() >= options.max_header_waiting) {
    Session* oldest = waiting.front();
    waiting.pop_front();
    oldest->waiting_listed = false;
    if (auto it = sessions.find(oldest); it != sessions.end()) evicted = it->second.lock();
  }
  if (!s->waiting_listed) {
    s->waiting_it = waiting.insert(waiting.end(), s);
    s->waiting_listed = true;
  }
  return evicted;
}

void HttpServer::Core::LeaveWaiting(Session* s) {
  std::lock_guard<std::mutex> lock(mu);
  if (s->waiting_listed) waiting.erase(s->waiting_it);
  s->waiting_listed = false;
}

void HttpResponder::State::Deliver(HttpResponse response) {
  if (done.exchange(true)) return;
  std::shared_ptr<Session> s = session.lock();
  if (!s) return;  // the connection is gone
  if (s->RunningHere()) return s->OnAnswer(seq, std::move(response));  // answered inline
  auto executor = s->executor();
  asio::post(executor, [s = std::move(s), n = seq, response = std::move(response)]() mutable {
    s->OnAnswer(n, std::move(response));
  });
}

void HttpResponder::operator()(HttpResponse response) const {
  if (state_) state_->Deliver(std::move(response));
}

struct HttpStream::State {
  std::shared_ptr<HttpServer::Core> core;
  std::weak_ptr<Session> session;
  uint64_t seq = 0;
  std::shared_ptr<std::atomic<bool>> cancelled;
  std::atomic<bool> ended{false};

  template <typename F>
  void Post(F&& f) {
    std::shared_ptr<Session> s = session.lock();
    if (!s) return;
    auto executor = s->executor();
    asio::post(executor, [s = std::move(s), f = std::forward<F>(f)]() mutable { f(*s); });
  }
  void End() {
    if (ended.exchange(true)) return;
    Post([n = seq](Session& s) { s.OnStreamEnd(n); });
  }
  ~State() { End(); }
};

HttpStream HttpResponder::State::StartStream(HttpResponse head) {
  auto st = std::make_shared<HttpStream::State>();
  st->core = core;
  st->session = session;
  st->seq = seq;
  st->cancelled = cancelled;
  if (done.exchange(true)) {
    st->ended = true;  // already answered: the stream goes nowhere
    return HttpStream(st);
  }
  st->Post([n = seq, head = std::move(head)](Session& s) mutable { s.OnStreamStart(n, std::move(head)); });
  return HttpStream(st);
}

HttpStream HttpResponder::Stream(HttpResponse head) const {
  if (!state_) return HttpStream();
  return state_->StartStream(std::move(head));
}

void HttpStream::Write(std::string data) const {
  if (!state_ || data.empty() || state_->ended.load()) return;
  state_->Post([n = state_->seq, data = std::move(data)](Session& s) mutable { s.OnStreamData(n, std::move(data)); });
}

void HttpStream::End() const {
  if (state_) state_->End();
}

bool HttpStream::closed() const {
  if (!state_) return true;
  if (state_->cancelled && state_->cancelled->load()) return true;
  return state_->session.expired();
}

void HttpServer::Core::DoAccept() {
  if (!accepting) return;
  const size_t k = next_io++ % (more_io.size() + 1);
  asio::io_context& loop = k == 0 ? io : *more_io[k - 1];
  acceptor.async_accept(loop.get_executor(), [this](beast::error_code ec, tcp::socket socket) {
    if (!accepting) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of descriptors or a transient network error: try again shortly instead of spinning.
      accept_retry.expires_after(kAcceptRetryDelay);
      accept_retry.async_wait([this](beast::error_code ec) {
        if (!ec) DoAccept();
      });
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    std::shared_ptr<Session> session;
    std::shared_ptr<Session> evicted;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!draining) {
        session = options.tls ? std::make_shared<Session>(*this, ConnStream(std::move(socket), options.tls->Current()))
                              : std::make_shared<Session>(*this, ConnStream(std::move(socket)));
        sessions.emplace(session.get(), session);
        evicted = EnterWaitingLocked(session.get());
      }
    }
    if (evicted) Session::PostLimitClose(std::move(evicted));
    if (session) {
      asio::dispatch(session->executor(), [session] { session->Start(); });
    }
    DoAccept();
  });
}

HttpServer::HttpServer(std::shared_ptr<Core> core) : core_(std::move(core)) {}

HttpServer::~HttpServer() { Shutdown(std::chrono::milliseconds(0)); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options, HttpHandler handler) {
  if (options.io_threads < 1) return Status::InvalidArgument("http server: io_threads must be at least 1");
  if (!handler) return Status::InvalidArgument("http server: no request handler");
  if (options.max_pipelined < 1) return Status::InvalidArgument("http server: max_pipelined must be at least 1");
  if (options.read_timeout.count() <= 0 || options.write_timeout.count() <= 0 || options.header_timeout.count() <= 0) {
    return Status::InvalidArgument("http server: read_timeout, write_timeout and header_timeout must be positive");
  }
  if (options.max_header_waiting < 1) {
    return Status::InvalidArgument("http server: max_header_waiting must be at least 1");
  }
  auto core = std::make_shared<Core>();
  core->self = core;
  core->options = std::move(options);
  core->handler = std::move(handler);
  const HttpServerOptions& opt = core->options;
  std::string where = opt.host + ":" + std::to_string(opt.port);

  beast::error_code ec;
  tcp::resolver resolver(core->io);
  auto endpoints = resolver.resolve(opt.host, std::to_string(opt.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return Status::InvalidArgument("http server: cannot resolve host '" + opt.host + "': " + ec.message());
  }
  tcp::endpoint endpoint = endpoints.begin()->endpoint();
  core->acceptor.open(endpoint.protocol(), ec);
  if (!ec) core->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) core->acceptor.bind(endpoint, ec);
  if (!ec) core->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::Unavailable("http server: cannot listen on " + where + ": " + ec.message());
  core->port = core->acceptor.local_endpoint(ec).port();
  if (ec) return Status::Unavailable("http server: cannot read the bound port: " + ec.message());

  core->accepting = true;
  for (int i = 1; i < opt.io_threads; ++i) {
    core->more_io.push_back(std::make_unique<asio::io_context>(1));
    core->more_work.emplace_back(core->more_io.back()->get_executor());
  }
  asio::dispatch(core->accept_strand, [c = core.get()] { c->DoAccept(); });
  for (int i = 0; i < opt.io_threads; ++i) {
    asio::io_context* loop = i == 0 ? &core->io : core->more_io[static_cast<size_t>(i - 1)].get();
    core->threads.emplace_back([loop] {
      for (;;) {
        try {
          loop->run();
          return;
        } catch (...) {
          // A handler threw past its session (a bug): keep serving the other connections.
        }
      }
    });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(core)));
}

uint16_t HttpServer::port() const { return core_->port; }

size_t HttpServer::connection_count() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->sessions.size();
}

void HttpServer::StopAccepting() {
  std::lock_guard<std::mutex> lock(core_->shutdown_mu);
  if (core_->stopped_accepting) return;
  core_->stopped_accepting = true;
  core_->closing_connections.store(true);
  if (core_->threads.empty()) return;
  std::promise<void> closed;
  asio::post(core_->accept_strand, [c = core_.get(), &closed] {
    c->accepting = false;
    beast::error_code ignored;
    c->acceptor.close(ignored);
    c->accept_retry.cancel();
    closed.set_value();
  });
  closed.get_future().wait();
}

bool HttpServer::Shutdown(std::chrono::milliseconds deadline) {
  StopAccepting();
  Core& c = *core_;
  std::lock_guard<std::mutex> shutdown_lock(c.shutdown_mu);
  if (c.shutdown_result) return *c.shutdown_result;

  auto for_each_session = [&c](void (Session::*fn)()) {
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      for (auto& [raw, weak] : c.sessions) {
        if (auto s = weak.lock()) live.push_back(std::move(s));
      }
    }
    for (auto& s : live) {
      auto executor = s->executor();
      asio::post(executor, [s = std::move(s), fn] { ((*s).*fn)(); });
    }
  };
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.draining = true;
  }
  for_each_session(&Session::BeginDrain);
  bool answered = false;
  {
    std::unique_lock<std::mutex> lock(c.mu);
    answered = c.cv.wait_for(lock, deadline, [&c] { return c.sessions.empty(); });
  }
  if (!answered) {
    for_each_session(&Session::Close);
    std::unique_lock<std::mutex> lock(c.mu);
    // Closed sessions go away as their aborted operations complete; a moment at most.
    c.cv.wait_for(lock, std::chrono::seconds(5), [&c] { return c.sessions.empty(); });
  }
  c.work.reset();
  c.io.stop();
  for (auto& w : c.more_work) w.reset();
  for (auto& loop : c.more_io) loop->stop();
  for (auto& t : c.threads) {
    if (t.joinable()) t.join();
  }
  c.shutdown_result = answered;
  return answered;
}

}  // namespace inferloop::frontends
