// HttpServer over real loopback sockets: keep-alive, pipelining, late answers, limits, idle
// timeout, cancellation on client close, many idle connections, graceful shutdown.
#include "frontends/http_server.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "http_test_client.h"

namespace inferloop::frontends {
namespace {

using testing::HttpRoundtrip;
using testing::MakeHttpRequest;
using testing::TestConnection;
using testing::WaitFor;

// Answers "<method> <target> <body>" with 200 at once.
void EchoHandler(HttpRequest request, HttpResponder respond) {
  HttpResponse r;
  r.headers.emplace_back("Content-Type", "text/plain");
  r.body = request.method + " " + request.target + " " + request.body;
  respond(std::move(r));
}

// Keeps every request and its responder, for answering later from the test thread.
class HeldRequests {
 public:
  HttpHandler Handler() {
    return [this](HttpRequest request, HttpResponder respond) {
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back({std::move(request), std::move(respond)});
      cv_.notify_all();
    };
  }
  // Waits until `n` requests are held (10 s at most).
  bool WaitCount(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return held_.size() >= n; });
  }
  std::pair<HttpRequest, HttpResponder> Take(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return {held_.at(i).first, held_.at(i).second};
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<HttpRequest, HttpResponder>> held_;
};

HttpResponse Text(std::string body, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

std::unique_ptr<HttpServer> StartServer(HttpHandler handler, HttpServerOptions options = {}) {
  options.host = "127.0.0.1";
  options.port = 0;
  auto server = HttpServer::Start(std::move(options), std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

TEST(HttpServer, BindsAnEphemeralPortAndAnswers) {
  auto server = StartServer(EchoHandler);
  ASSERT_TRUE(server);
  EXPECT_NE(server->port(), 0);
  auto r = HttpRoundtrip(server->port(), "GET", "/a/b?x=1");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET /a/b?x=1 ");
  EXPECT_EQ(r.HeaderOr("Content-Type"), "text/plain");
  EXPECT_EQ(r.HeaderOr("Server"), "inferloop");
}

TEST(HttpServer, BadOptionsAreErrors) {
  HttpServerOptions options;
  options.io_threads = 0;
  EXPECT_EQ(HttpServer::Start(options, EchoHandler).status().code(), StatusCode::kInvalidArgument);
  options = {};
  options.host = "not a host name!";
  options.port = 0;
  EXPECT_FALSE(HttpServer::Start(options, EchoHandler).ok());
  EXPECT_EQ(HttpServer::Start({}, nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST(HttpServer, PortInUseIsUnavailable) {
  auto first = StartServer(EchoHandler);
  ASSERT_TRUE(first);
  HttpServerOptions options;
  options.host = "127.0.0.1";
  options.port = first->port();
  auto second = HttpServer::Start(options, EchoHandler);
  // SO_REUSEADDR does not let two listeners share a port on Linux.
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
}

TEST(HttpServer, KeepAliveServesSeveralRequestsOnOneConnection) {
  auto server = StartServer(EchoHandler);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 5; ++i) {
    auto r = c.Roundtrip(MakeHttpRequest("POST", "/n/" + std::to_string(i), "body" + std::to_string(i)));
    ASSERT_EQ(r.status, 200) << i;
    EXPECT_EQ(r.body, "POST /n/" + std::to_string(i) + " body" + std::to_string(i));
    EXPECT_EQ(r.Header("Connection"), nullptr);  // HTTP/1.1 keeps the connection by default
  }
  EXPECT_EQ(server->connection_count(), 1u);
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrderEvenWhenAnsweredOutOfOrder) {
  HeldRequests held;
  auto server = StartServer(held.Handler());
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  std::string batch;
  for (int i = 0; i < 4; ++i) batch += MakeHttpRequest("GET", "/p/" + std::to_string(i));
  ASSERT_TRUE(c.Send(batch));
  ASSERT_TRUE(held.WaitCount(4));
  // Answer from another thread, last first.
  std::thread answerer([&] {
    for (int i = 3; i >= 0; --i) {
      auto [req, respond] = held.Take(i);
      respond(Text("answer to " + req.target));
    }
  });
  for (int i = 0; i < 4; ++i) {
    auto r = c.Read();
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "answer to /p/" + std::to_string(i));
  }
  answerer.join();
}

// Answers every request at once (inline, on the connection's thread) except those whose target
// ends in "/slow": those are held for the test to answer later from its own thread.
class InlineExceptSlow {
 public:
  HttpHandler Handler() {
    return [this](HttpRequest request, HttpResponder respond) {
      if (request.target.size() >= 5 && request.target.compare(request.target.size() - 5, 5, "/slow") == 0) {
        held_.Handler()(std::move(request), std::move(respond));
        return;
      }
      respond(Text("answer to " + request.target));
    };
  }
  HeldRequests& held() { return held_; }

 private:
  HeldRequests held_;
};

TEST(HttpServer, ManyPipelinedRequestsWithASlowOneAmongThemAreAllAnsweredInOrder) {
  InlineExceptSlow handler;
  HttpServerOptions options;
  options.max_pipelined = 64;
  auto server = StartServer(handler.Handler(), options);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  constexpr int kRequests = 40;
  constexpr int kSlow = 7;
  std::string batch;
  for (int i = 0; i < kRequests; ++i) {
    batch += MakeHttpRequest("POST", "/m/" + std::to_string(i) + (i == kSlow ? "/slow" : ""), "x");
  }
  ASSERT_TRUE(c.Send(batch));
  ASSERT_TRUE(handler.held().WaitCount(1));
  // Everything before the slow one is answered; nothing after it may overtake it.
  for (int i = 0; i < kSlow; ++i) EXPECT_EQ(c.Read().body, "answer to /m/" + std::to_string(i));
  std::thread answerer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto [req, respond] = handler.held().Take(0);
    respond(Text("late answer to " + req.target));
  });
  EXPECT_EQ(c.Read().body, "late answer to /m/7/slow");
  for (int i = kSlow + 1; i < kRequests; ++i) {
    auto r = c.Read();
    ASSERT_EQ(r.status, 200) << i;
    EXPECT_EQ(r.body, "answer to /m/" + std::to_string(i));
    EXPECT_EQ(r.Header("Connection"), nullptr) << i;
  }
  answerer.join();
  // The connection stays usable.
  EXPECT_EQ(c.Roundtrip(MakeHttpRequest("GET", "/after")).body, "answer to /after");
}

TEST(HttpServer, AClientThatPipelinesThenHalfClosesGetsEveryAnswerThenTheClose) {
  InlineExceptSlow handler;
  auto server = StartServer(handler.Handler());
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  std::string batch;
  for (int i = 0; i < 5; ++i) batch += MakeHttpRequest("GET", "/h/" + std::to_string(i) + (i == 2 ? "/slow" : ""));
  ASSERT_TRUE(c.Send(batch));
  ASSERT_EQ(::shutdown(c.fd(), SHUT_WR), 0);  // the client sends nothing more
  ASSERT_TRUE(handler.held().WaitCount(1));
  {
    auto [req, respond] = handler.held().Take(0);
    respond(Text("late answer to " + req.target));
  }
  for (int i = 0; i < 5; ++i) {
    auto r = c.Read();
    ASSERT_EQ(r.status, 200) << i;
    EXPECT_EQ(r.body, (i == 2 ? "late answer to /h/2/slow" : "answer to /h/" + std::to_string(i)));
  }
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServer, PipelinedRequestsBeyondTheLimitWaitForAnswers) {
  HeldRequests held;
  HttpServerOptions options;
  options.max_pipelined = 2;
  auto server = StartServer(held.Handler(), options);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  std::string batch;
  for (int i = 0; i < 5; ++i) batch += MakeHttpRequest("GET", "/q/" + std::to_string(i));
  ASSERT_TRUE(c.Send(batch));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(held.WaitCount(i + 1)) << i;
    auto [req, respond] = held.Take(i);
    EXPECT_EQ(req.target, "/q/" + std::to_string(i));
    respond(Text(std::to_string(i)));
  }
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c.Read().body, std::to_string(i));
}

TEST(HttpServer, HeadAnswerHasNoBody) {
  auto server = StartServer(EchoHandler);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  ASSERT_TRUE(c.Send("HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n" + MakeHttpRequest("GET", "/after")));
  auto head = c.Read(/*head=*/true);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.HeaderOr("Content-Length"), "8");  // "HEAD /h " as for GET
  // The next answer follows right after the header: no body bytes in between.
  EXPECT_EQ(c.Read().body, "GET /after ");
}

TEST(HttpServer, AnswerGivenLaterFromAnotherThread) {
  HeldRequests held;
  auto server = StartServer(held.Handler());
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  ASSERT_TRUE(c.Send(MakeHttpRequest("POST", "/later", "abc")));
  ASSERT_TRUE(held.WaitCount(1));
  std::thread([&] {
    auto [req, respond] = held.Take(0);
    HttpResponse r = Text(req.body + "!", 201);
    r.headers.emplace_back("X-Extra", "1");
    respond(std::move(r));
    respond(Text("a second answer is ignored"));
  }).join();
  auto r = c.Read();
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "abc!");
  EXPECT_EQ(r.HeaderOr("X-Extra"), "1");
  // The connection stays usable.
  ASSERT_TRUE(c.Send(MakeHttpRequest("GET", "/next")));
  ASSERT_TRUE(held.WaitCount(2));
  held.Take(1).second(Text("next"));
  EXPECT_EQ(c.Read().body, "next");
}

TEST(HttpServer, StreamedAnswerIsChunkedAndKeepsTheConnection) {
  HeldRequests held;
  auto server = StartServer(held.Handler());
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  ASSERT_TRUE(c.Send(MakeHttpRequest("POST", "/stream", "x")));
  ASSERT_TRUE(held.WaitCount(1));
  std::thread([&] {
    HttpResponse head;
    head.status = 200;
    head.headers.emplace_back("Content-Type", "text/event-stream");
    HttpStream stream = held.Take(0).second.Stream(std::move(head));
    held.Take(0).second(Text("ignored: already answered by the stream"));
    stream.Write("data: one\n\n");
    stream.Write("");  // empty pieces are not sent (an empty chunk would end the body)
    stream.Write("data: two\n\n");
    EXPECT_FALSE(stream.closed());
    stream.End();
    stream.Write("after the end: dropped");
  }).join();
  auto r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.HeaderOr("Content-Type"), "text/event-stream");
  EXPECT_EQ(r.body, "data: one\n\ndata: two\n\n");
  EXPECT_EQ(r.chunks.size(), 2u);
  // The connection stays usable after the stream's end.
  ASSERT_TRUE(c.Send(MakeHttpRequest("GET", "/next")));
  ASSERT_TRUE(held.WaitCount(2));
  held.Take(1).second(Text("next"));
  EXPECT_EQ(c.Read().body, "next");
}

// The OpenAI handler's order: the stream is opened on the io thread inside the handler, and the
// generation thread writes its first pieces (and may end) before the handler returns. asio keeps
// a post made from the io thread in that thread's private queue until the handler returns, so the
// pieces posted from the other thread reach the connection before the stream's start: they were
// dropped (streamed LLM answers lost their first tokens under load).
TEST(HttpServer, PiecesWrittenFromAnotherThreadBeforeTheHandlerReturnsAreKept) {
  auto server = StartServer([](HttpRequest, HttpResponder respond) {
    HttpResponse head;
    head.status = 200;
    head.headers.emplace_back("Content-Type", "text/event-stream");
    HttpStream stream = respond.Stream(std::move(head));
    std::thread([stream] {
      stream.Write("data: one\n\n");
      stream.Write("data: two\n\n");
      stream.End();
    }).join();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the other thread's posts queue first
  });
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send(MakeHttpRequest("POST", "/stream", "x")));
    auto r = c.Read();
    EXPECT_EQ(r.status, 200) << i;
    EXPECT_EQ(r.body, "data: one\n\ndata: two\n\n") << i;
    EXPECT_EQ(r.chunks.size(), 2u) << i;
  }
}

TEST(HttpServer, StreamEndsWhenItsLastHandleGoesAndSeesTheClientLeave) {
  HeldRequests held;
  auto server = StartServer(held.Handler());
  ASSERT_TRUE(server);
  {
    TestConnection c(server->port());
    ASSERT_TRUE(c.Send(MakeHttpRequest("POST", "/stream", "x")));
    ASSERT_TRUE(held.WaitCount(1));
    {
      HttpStream s = held.Take(0).second.Stream(Text(""));
      s.Write("piece");
    }  // destroyed without End: the body is ended
    auto r = c.Read();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "piece");
    ASSERT_TRUE(c.Send(MakeHttpRequest("POST", "/stream2", "x")));
    ASSERT_TRUE(held.WaitCount(2));
  }  // the client leaves while the second stream is open
  HttpStream s2 = held.Take(1).second.Stream(Text(""));
  EXPECT_TRUE(WaitFor([&] { return s2.closed(); }));
  s2.Write("nobody reads this");  // harmless
  s2.End();
  EXPECT_TRUE(WaitFor([&] { return server->connection_count() == 0; }));
}

TEST(HttpServer, OversizedBodyGets413AndTheConnectionCloses) {
  HttpServerOptions options;
  options.max_body_bytes = 1000;
  auto server = StartServer(EchoHandler, options);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  // Only the header: the server must answer without waiting for the body.
  ASSERT_TRUE(c.Send("POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n"));
  auto r = c.Read();
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.HeaderOr("Content-Type"), "application/json");
  EXPECT_NE(r.body.find("\"error\""), std::string::npos);
  EXPECT_NE(r.body.find("1000"), std::string::npos);
  EXPECT_EQ(r.HeaderOr("Connection"), "close");
  EXPECT_TRUE(c.WaitClosed());
  // A body within the limit is fine.
  EXPECT_EQ(HttpRoundtrip(server->port(), "POST", "/ok", std::string(1000, 'x')).status, 200);
}

TEST(HttpServer, OversizedChunkedBodyGets413) {
  HttpServerOptions options;
  options.max_body_bytes = 100;
  auto server = StartServer(EchoHandler, options);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  std::string chunk(80, 'a');
  ASSERT_TRUE(c.Send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n50\r\n" + chunk + "\r\n50\r\n" +
                     chunk + "\r\n0\r\n\r\n"));
  EXPECT_EQ(c.Read().status, 413);
}

TEST(HttpServer, ChunkedBodyIsDechunked) {
  auto server = StartServer(EchoHandler);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  auto r = c.Roundtrip("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /c abcde");
}

TEST(HttpServer, OversizedHeaderGets431) {
  HttpServerOptions options;
  options.max_header_bytes = 1024;
  auto server = StartServer(EchoHandler, options);
  ASSERT_TRUE(server);
  auto r = HttpRoundtrip(server->port(), "GET", "/h", "", {{"X-Big", std::string(4000, 'y')}});
  EXPECT_EQ(r.status, 431);
  EXPECT_NE(r.body.find("\"error\""), std::string::npos);
}

TEST(HttpServer, MalformedRequestGets400) {
  auto server = StartServer(EchoHandler);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  auto r = c.Roundtrip("THIS IS NOT HTTP\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("malformed HTTP request"), std::string::npos);
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServer, ConnectionCloseRequestIsAnsweredThenClosed) {
  auto server = StartServer(EchoHandler);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  auto r = c.Roundtrip(MakeHttpRequest("GET", "/x", "", {{"Connection", "close"}}));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.HeaderOr("Connection"), "close");
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServer, Http10WithoutKeepAliveIsClosed) {
  auto server = StartServer(EchoHandler);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  auto r = c.Roundtrip("GET /old HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET /old ");
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServer, ExpectContinueGetsAnInterimResponse) {
  auto server = StartServer(EchoHandler);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  ASSERT_TRUE(c.Send("POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  EXPECT_EQ(c.Read().status, 100);
  ASSERT_TRUE(c.Send("hello"));
  auto r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /e hello");
}

TEST(HttpServer, DroppedResponderGives500AndThrowingHandlerGives500) {
  auto server = StartServer([](HttpRequest request, HttpResponder respond) {
    if (request.target == "/throw") throw std::runtime_error("boom");
    // "/drop": the responder goes out of scope unanswered.
  });
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  auto r = c.Roundtrip(MakeHttpRequest("GET", "/drop"));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("without answering"), std::string::npos);
  r = c.Roundtrip(MakeHttpRequest("GET", "/throw"));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("boom"), std::string::npos);
}

TEST(HttpServer, ClientStatusCodesAndReasons) {
  auto server = StartServer([](HttpRequest request, HttpResponder respond) {
    respond(Text("", std::atoi(request.target.substr(1).c_str())));
  });
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  auto r = c.Roundtrip(MakeHttpRequest("GET", "/499"));
  EXPECT_EQ(r.status, 499);
  EXPECT_EQ(r.reason, "Client Closed Request");
  EXPECT_EQ(c.Roundtrip(MakeHttpRequest("GET", "/503")).status, 503);
  // Out of range: the server answers 500 instead.
  EXPECT_EQ(c.Roundtrip(MakeHttpRequest("GET", "/42")).status, 500);
}

// The bytes on the wire, read raw until the server closes: a status line, "Name: value" fields,
// a blank line and exactly Content-Length bytes of body (the server writes small answers itself,
// not through Beast's serializer), for HTTP/1.1 and 1.0 and a reason of its own.
TEST(HttpServer, AnswerBytesAreStatusLineFieldsBlankLineAndBody) {
  auto server = StartServer([](HttpRequest request, HttpResponder respond) {
    HttpResponse r = Text("body of " + request.target, request.target == "/499" ? 499 : 200);
    r.headers.emplace_back("X-Test", "a: b");
    respond(std::move(r));
  });
  ASSERT_TRUE(server);
  struct Case {
    std::string request, status_line, body;
  };
  const Case cases[] = {
      {"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", "HTTP/1.1 200 OK", "body of /x"},
      {"GET /old HTTP/1.0\r\n\r\n", "HTTP/1.0 200 OK", "body of /old"},
      {"GET /499 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", "HTTP/1.1 499 Client Closed Request",
       "body of /499"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.request);
    TestConnection conn(server->port());
    ASSERT_TRUE(conn.Send(c.request));
    std::string raw = conn.ReadUntilClosed();
    const size_t head_end = raw.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos) << raw;
    EXPECT_EQ(raw.substr(head_end + 4), c.body);  // nothing after the body
    std::string head = raw.substr(0, head_end + 2);
    ASSERT_EQ(head.substr(0, c.status_line.size() + 2), c.status_line + "\r\n") << raw;
    head.erase(0, c.status_line.size() + 2);
    bool saw_length = false, saw_test = false;
    for (size_t pos = 0; pos < head.size();) {
      const size_t eol = head.find("\r\n", pos);
      ASSERT_NE(eol, std::string::npos);
      const std::string line = head.substr(pos, eol - pos);
      const size_t colon = line.find(": ");
      ASSERT_NE(colon, std::string::npos) << line;
      ASSERT_GT(colon, 0u) << line;
      saw_length = saw_length || line == "Content-Length: " + std::to_string(c.body.size());
      saw_test = saw_test || line == "X-Test: a: b";
      pos = eol + 2;
    }
    EXPECT_TRUE(saw_length) << raw;
    EXPECT_TRUE(saw_test) << raw;
  }
}

TEST(HttpServer, ClientClosingWhileARequestIsInFlightSetsCancelled) {
  HeldRequests held;
  auto server = StartServer(held.Handler());
  ASSERT_TRUE(server);
  {
    TestConnection c(server->port());
    ASSERT_TRUE(c.Send(MakeHttpRequest("POST", "/slow", "x")));
    ASSERT_TRUE(held.WaitCount(1));
    EXPECT_FALSE(held.Take(0).first.cancelled->load());
  }  // closes
  auto cancelled = held.Take(0).first.cancelled;
  EXPECT_TRUE(WaitFor([&] { return cancelled->load(); }));
  // Answering a request whose connection is gone is harmless.
  held.Take(0).second(Text("too late"));
  EXPECT_TRUE(WaitFor([&] { return server->connection_count() == 0; }));
}

TEST(HttpServer, IdleConnectionIsClosedAfterTheReadTimeout) {
  HttpServerOptions options;
  options.read_timeout = std::chrono::milliseconds(200);
  auto server = StartServer(EchoHandler, options);
  ASSERT_TRUE(server);
  TestConnection idle(server->port());
  EXPECT_TRUE(idle.WaitClosed());
  // A slow client that sent half a request is closed too.
  TestConnection slow(server->port());
  ASSERT_TRUE(slow.Send("GET /slow HTTP/1.1\r\nHo"));
  EXPECT_TRUE(slow.WaitClosed());
  EXPECT_TRUE(WaitFor([&] { return server->connection_count() == 0; }));
}

TEST(HttpServer, ClientThatDoesNotReadItsAnswerIsClosedAfterTheWriteTimeout) {
  HttpServerOptions options;
  options.write_timeout = std::chrono::milliseconds(200);
  auto server = StartServer([](HttpRequest, HttpResponder respond) { respond(Text(std::string(64 << 20, 'z'))); },
                            options);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  ASSERT_TRUE(c.Send(MakeHttpRequest("GET", "/huge")));
  // 64 MiB do not fit into the socket buffers of a client that reads nothing.
  EXPECT_TRUE(WaitFor([&] { return server->connection_count() == 0; }));
}

TEST(HttpServer, ThousandIdleConnectionsDoNotStopOtherClients) {
  auto server = StartServer(EchoHandler);
  ASSERT_TRUE(server);
  std::vector<TestConnection> idle;
  idle.reserve(1000);
  for (int i = 0; i < 1000; ++i) {
    idle.emplace_back(server->port());
    ASSERT_TRUE(idle.back().connected()) << i;
  }
  EXPECT_TRUE(WaitFor([&] { return server->connection_count() == 1000; }));
  for (int i = 0; i < 3; ++i) {
    auto r = HttpRoundtrip(server->port(), "GET", "/busy/" + std::to_string(i));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "GET /busy/" + std::to_string(i) + " ");
  }
  // An idle connection still works too.
  EXPECT_EQ(idle[500].Roundtrip(MakeHttpRequest("GET", "/idle")).body, "GET /idle ");
}

TEST(HttpServer, GracefulShutdownAnswersTheInFlightRequestThenCloses) {
  HeldRequests held;
  auto server = StartServer(held.Handler());
  ASSERT_TRUE(server);
  uint16_t port = server->port();
  TestConnection busy(port);
  TestConnection idle(port);
  ASSERT_TRUE(busy.Send(MakeHttpRequest("POST", "/work", "w")));
  ASSERT_TRUE(held.WaitCount(1));
  ASSERT_TRUE(WaitFor([&] { return server->connection_count() == 2; }));

  bool all_answered = false;
  std::thread stopper([&] { all_answered = server->Shutdown(std::chrono::seconds(30)); });
  // The idle connection is closed at once; the listener goes away.
  EXPECT_TRUE(idle.WaitClosed());
  EXPECT_TRUE(WaitFor([&] { return !TestConnection(port).connected(); }));
  // The in-flight request is still answered.
  held.Take(0).second(Text("done"));
  auto r = busy.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "done");
  // (With "Connection: close" when the drain reached this connection before the answer.)
  EXPECT_TRUE(busy.WaitClosed());
  stopper.join();
  EXPECT_TRUE(all_answered);
  EXPECT_TRUE(server->Shutdown(std::chrono::seconds(1)));  // idempotent
}

TEST(HttpServer, ShutdownPastItsDeadlineClosesAndCancels) {
  HeldRequests held;
  auto server = StartServer(held.Handler());
  ASSERT_TRUE(server);
  TestConnection busy(server->port());
  ASSERT_TRUE(busy.Send(MakeHttpRequest("POST", "/stuck", "s")));
  ASSERT_TRUE(held.WaitCount(1));
  EXPECT_FALSE(server->Shutdown(std::chrono::milliseconds(50)));
  EXPECT_TRUE(held.Take(0).first.cancelled->load());
  EXPECT_TRUE(busy.WaitClosed());
  // The responder outlives the server safely.
  held.Take(0).second(Text("after shutdown"));
  server.reset();
  held.Take(0).second(Text("after destruction"));
}

TEST(HttpServer, StopAcceptingServesExistingConnectionsThenClosesThem) {
  auto server = StartServer(EchoHandler);
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  auto first = c.Roundtrip(MakeHttpRequest("GET", "/1"));
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.HeaderOr("Connection"), "");  // keep-alive
  server->StopAccepting();
  EXPECT_FALSE(TestConnection(server->port()).connected());
  // The next answer still comes, says the connection closes, and it does: the client
  // reconnects (behind a load balancer, to another replica) instead of staying.
  auto second = c.Roundtrip(MakeHttpRequest("GET", "/2"));
  EXPECT_EQ(second.body, "GET /2 ");
  EXPECT_EQ(second.HeaderOr("Connection"), "close");
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServer, StopAcceptingAnswersEveryPipelinedRequestBeforeClosing) {
  HeldRequests held;
  auto server = StartServer(held.Handler());
  ASSERT_TRUE(server);
  TestConnection c(server->port());
  ASSERT_TRUE(c.Send(MakeHttpRequest("GET", "/a") + MakeHttpRequest("GET", "/b")));
  ASSERT_TRUE(held.WaitCount(2));
  server->StopAccepting();
  held.Take(0).second(Text("a"));
  held.Take(1).second(Text("b"));
  auto a = c.Read();
  auto b = c.Read();
  EXPECT_EQ(a.body, "a");
  EXPECT_EQ(a.HeaderOr("Connection"), "");  // another answer is owed on this connection
  EXPECT_EQ(b.body, "b");
  EXPECT_EQ(b.HeaderOr("Connection"), "close");
  EXPECT_TRUE(c.WaitClosed());
}

}  // namespace
}  // namespace inferloop::frontends
