// The REST load generator: Boost.Beast HTTP/1.1 on keep-alive connections. Work is split over
// `io_threads` shards, each an io_context run by one thread that owns its connections outright
// (no locks, no strands). The request bytes (headers + body) are built once per sample; a
// connection picks a sample per request from its shard's chooser and writes that buffer.
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "perf/load_generator.h"
#include "perf/perf_math.h"

namespace inferloop::perf {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Shard;

// One keep-alive connection with at most one request in flight. Lives on its shard's thread.
class Conn : public std::enable_shared_from_this<Conn> {
 public:
  explicit Conn(Shard& shard);
  // Sends sample `sample`'s request; latency counts from `t0`. Connects first when not connected.
  void Send(Clock::time_point t0, size_t sample);
  // Sends the next sample the shard's chooser picks.
  void SendNext(Clock::time_point t0);
  void Close() {
    beast::error_code ec;
    sock_.close(ec);
    connected_ = false;
  }

 private:
  void Write();
  void OnRead(beast::error_code ec);
  void Fail(const std::string& kind, const std::string& message);
  void Done();

  Shard& shard_;
  tcp::socket sock_;
  asio::steady_timer retry_;
  beast::flat_buffer buf_;
  std::optional<http::response_parser<http::string_body>> parser_;
  Clock::time_point t0_;
  size_t sample_ = 0;
  bool connected_ = false;
  // This request reuses a kept-alive connection (which the server may have closed meanwhile)
  // and has not been retried yet: a connection error is retried once on a fresh connection.
  bool may_retry_ = false;
};

struct Shard {
  Shard(uint64_t seed, double rate, SampleChooser chooser) : timer(ioc), schedule(rate, seed), chooser(chooser) {}
  asio::io_context ioc{1};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  asio::steady_timer timer;
  PoissonSchedule schedule;
  SampleChooser chooser;
  Clock::time_point next_arrival;
  std::vector<std::shared_ptr<Conn>> conns;
  std::vector<Conn*> idle;
  int max_conns = 0;
  // Shared, read-only while running.
  const std::vector<std::string>* requests = nullptr;  // per sample
  tcp::resolver::results_type endpoints;
  SampleRecorder* recorder = nullptr;
  LoadMode mode = LoadMode::kConcurrency;
  const std::atomic<bool>* stopping = nullptr;

  void ScheduleNext() {
    timer.expires_at(next_arrival);
    timer.async_wait([this](beast::error_code ec) {
      if (ec || stopping->load(std::memory_order_relaxed)) return;
      auto now = Clock::now();
      while (next_arrival <= now) {
        Dispatch(next_arrival);
        next_arrival += std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(schedule.NextGapSeconds()));
      }
      ScheduleNext();
    });
  }
  void Dispatch(Clock::time_point t) {
    if (!idle.empty()) {
      Conn* c = idle.back();
      idle.pop_back();
      c->SendNext(t);
    } else if (static_cast<int>(conns.size()) < max_conns) {
      conns.push_back(std::make_shared<Conn>(*this));
      conns.back()->SendNext(t);
    } else {
      recorder->RecordError("overload", "more than --max-outstanding requests in flight; arrival dropped");
    }
  }
};

Conn::Conn(Shard& shard) : shard_(shard), sock_(shard.ioc), retry_(shard.ioc) {}

void Conn::SendNext(Clock::time_point t0) { Send(t0, shard_.chooser.Next()); }

void Conn::Send(Clock::time_point t0, size_t sample) {
  t0_ = t0;
  sample_ = sample;
  may_retry_ = connected_;
  if (connected_) {
    Write();
    return;
  }
  asio::async_connect(sock_, shard_.endpoints, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
    if (ec) return self->Fail("connect", ec.message());
    self->connected_ = true;
    beast::error_code ignore;
    self->sock_.set_option(tcp::no_delay(true), ignore);
    self->Write();
  });
}

void Conn::Write() {
  asio::async_write(sock_, asio::buffer((*shard_.requests)[sample_]), [self = shared_from_this()](beast::error_code ec, size_t) {
    if (ec) return self->Fail("connection", ec.message());
    self->parser_.emplace();
    self->parser_->body_limit(size_t{1} << 31);
    http::async_read(self->sock_, self->buf_, *self->parser_,
                     [self](beast::error_code ec, size_t) { self->OnRead(ec); });
  });
}

void Conn::OnRead(beast::error_code ec) {
  if (ec) return Fail("connection", ec.message());
  auto& res = parser_->get();
  unsigned code = res.result_int();
  if (!shard_.stopping->load(std::memory_order_relaxed)) {
    if (code == 200) {
      shard_.recorder->RecordSuccess(std::chrono::duration<double, std::micro>(Clock::now() - t0_).count(), sample_);
    } else {
      shard_.recorder->RecordError("http_" + std::to_string(code), res.body().substr(0, 500));
    }
  }
  if (!parser_->keep_alive()) Close();
  Done();
}

void Conn::Fail(const std::string& kind, const std::string& message) {
  Close();
  if (shard_.stopping->load(std::memory_order_relaxed)) return;
  if (kind == "connection" && may_retry_) {  // a stale keep-alive connection: reconnect, same t0
    Send(t0_, sample_);  // not connected now, so this attempt is not retried again
    return;
  }
  shard_.recorder->RecordError(kind, message);
  if (shard_.mode == LoadMode::kConcurrency) {
    // Back off a little so a dead server does not turn into a busy loop.
    retry_.expires_after(std::chrono::milliseconds(10));
    retry_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec && !self->shard_.stopping->load(std::memory_order_relaxed)) self->SendNext(Clock::now());
    });
  } else {
    shard_.idle.push_back(this);
  }
}

void Conn::Done() {
  if (shard_.stopping->load(std::memory_order_relaxed)) return;
  if (shard_.mode == LoadMode::kConcurrency) {
    SendNext(Clock::now());
  } else {
    shard_.idle.push_back(this);
  }
}

class RestLoad final : public LoadGenerator {
 public:
  RestLoad(Endpoint endpoint, std::vector<std::string> requests, int io_threads)
      : endpoint_(std::move(endpoint)), requests_(std::move(requests)), io_threads_(std::max(1, io_threads)) {}
  ~RestLoad() override { Stop(); }

  Status Start(const LoadSpec& spec, SampleRecorder* recorder) override {
    Stop();
    tcp::resolver::results_type endpoints;
    {
      asio::io_context ioc;
      tcp::resolver resolver(ioc);
      beast::error_code ec;
      endpoints = resolver.resolve(endpoint_.host, endpoint_.port, ec);
      if (ec) return Status::Unavailable("cannot resolve " + endpoint_.ToString() + ": " + ec.message());
    }
    stopping_.store(false);
    int shards = io_threads_;
    if (spec.mode == LoadMode::kConcurrency) shards = std::min<int>(shards, static_cast<int>(spec.load));
    else shards = std::min(shards, std::max(1, spec.max_outstanding));
    for (int i = 0; i < shards; ++i) {
      SampleChooser chooser(spec.distribution, requests_.size(), SampleChooserSeed(spec.seed, i),
                            i * requests_.size() / shards);
      auto s = std::make_unique<Shard>(spec.seed + 7919 * i, spec.load / shards, chooser);
      s->requests = &requests_;
      s->endpoints = endpoints;
      s->recorder = recorder;
      s->mode = spec.mode;
      s->stopping = &stopping_;
      s->work.emplace(s->ioc.get_executor());
      if (spec.mode == LoadMode::kConcurrency) {
        int n = static_cast<int>(spec.load) / shards + (i < static_cast<int>(spec.load) % shards ? 1 : 0);
        for (int j = 0; j < n; ++j) s->conns.push_back(std::make_shared<Conn>(*s));
        asio::post(s->ioc, [sh = s.get()] {
          auto now = Clock::now();
          for (auto& c : sh->conns) c->SendNext(now);
        });
      } else {
        s->max_conns = std::max(1, spec.max_outstanding / shards);
        asio::post(s->ioc, [sh = s.get()] {
          sh->next_arrival = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(sh->schedule.NextGapSeconds()));
          sh->ScheduleNext();
        });
      }
      s->thread = std::thread([sh = s.get()] { sh->ioc.run(); });
      shards_.push_back(std::move(s));
    }
    return Status::Ok();
  }

  void Stop() override {
    stopping_.store(true);
    for (auto& s : shards_) {
      asio::post(s->ioc, [sh = s.get()] {
        beast::error_code ec;
        sh->timer.cancel();
        for (auto& c : sh->conns) c->Close();
      });
      s->work.reset();
    }
    for (auto& s : shards_) {
      if (s->thread.joinable()) s->thread.join();
      s->idle.clear();
      s->conns.clear();
    }
    shards_.clear();
  }

 private:
  Endpoint endpoint_;
  std::vector<std::string> requests_;
  int io_threads_;
  std::atomic<bool> stopping_{false};
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace

std::unique_ptr<LoadGenerator> MakeRestLoadGenerator(const Endpoint& endpoint, const std::string& model,
                                                     const std::string& version,
                                                     const std::vector<EncodedRequest>& requests, int io_threads) {
  std::string target = "/v2/models/" + model + (version.empty() ? "" : "/versions/" + version) + "/infer";
  std::vector<std::string> messages;
  for (const auto& request : requests) {
    std::string head = "POST " + target + " HTTP/1.1\r\nHost: " + endpoint.host + ":" + endpoint.port +
                       "\r\nContent-Type: " +
                       (request.rest_has_binary ? "application/octet-stream" : "application/json") + "\r\n";
    if (request.rest_has_binary)
      head += "Inference-Header-Content-Length: " + std::to_string(request.rest_json_length) + "\r\n";
    head += "Content-Length: " + std::to_string(request.rest_body.size()) + "\r\n\r\n";
    messages.push_back(head + request.rest_body);
  }
  return std::make_unique<RestLoad>(endpoint, std::move(messages), io_threads);
}

}  // namespace inferloop::perf
