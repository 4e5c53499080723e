#include "perf/model_client.h"

#include <grpcpp/grpcpp.h>
#include <rapidjson/document.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>

#include "grpc_service.grpc.pb.h"
#include "perf/grpc_channel.h"

namespace inferloop::perf {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

struct HttpReply {
  unsigned status = 0;
  std::string body;
};

// One GET on a fresh connection, everything within `timeout_s`.
Result<HttpReply> HttpGet(const Endpoint& ep, const std::string& target, double timeout_s) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
  stream.expires_after(timeout);
  tcp::resolver resolver(ioc);
  beast::flat_buffer buf;
  http::request<http::empty_body> req(http::verb::get, target, 11);
  req.set(http::field::host, ep.host + ":" + ep.port);
  http::response<http::string_body> res;
  beast::error_code result;
  std::string stage = "resolve";
  resolver.async_resolve(ep.host, ep.port, [&](beast::error_code ec, tcp::resolver::results_type eps) {
    if (ec) { result = ec; return; }
    stage = "connect";
    stream.async_connect(eps, [&](beast::error_code ec, const tcp::endpoint&) {
      if (ec) { result = ec; return; }
      stage = "request";
      http::async_write(stream, req, [&](beast::error_code ec, size_t) {
        if (ec) { result = ec; return; }
        http::async_read(stream, buf, res, [&](beast::error_code ec, size_t) { result = ec; });
      });
    });
  });
  ioc.run_for(timeout + std::chrono::milliseconds(200));
  if (!ioc.stopped()) result = beast::error::timeout;
  if (result)
    return Status::Unavailable("cannot reach the server at " + ep.ToString() + " (" + stage + ": " +
                               result.message() + ")");
  return HttpReply{res.result_int(), res.body()};
}

std::string ServerError(const HttpReply& r) {
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  if (!d.HasParseError() && d.IsObject() && d.HasMember("error") && d["error"].IsString()) return d["error"].GetString();
  if (r.body.empty()) return "HTTP " + std::to_string(r.status) + " with no body";
  return r.body.substr(0, 300);
}

std::string ModelPath(const std::string& name, const std::string& version) {
  return "/v2/models/" + name + (version.empty() ? "" : "/versions/" + version);
}

uint64_t StatNs(const rapidjson::Value& stats, const char* key, const char* field) {
  if (!stats.HasMember(key) || !stats[key].IsObject()) return 0;
  const auto& s = stats[key];
  if (!s.HasMember(field) || !s[field].IsUint64()) return 0;
  return s[field].GetUint64();
}

class RestModelClient final : public ModelClient {
 public:
  RestModelClient(Endpoint ep, double timeout_s) : ep_(std::move(ep)), timeout_s_(timeout_s) {}

  Result<ModelInfo> FetchModel(const std::string& name, const std::string& version) override {
    std::string path = ModelPath(name, version);
    auto meta = HttpGet(ep_, path, timeout_s_);
    if (!meta.ok()) return meta.status();
    if (meta.value().status == 404 || meta.value().status == 400)
      return Status::NotFound("model '" + name + "'" + (version.empty() ? "" : " version " + version) +
                              " is not known to the server at " + ep_.ToString() + ": " + ServerError(meta.value()));
    if (meta.value().status != 200)
      return Status::Unavailable("GET " + path + ": HTTP " + std::to_string(meta.value().status) + ": " +
                                 ServerError(meta.value()));
    rapidjson::Document d;
    d.Parse(meta.value().body.c_str());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("inputs") || !d["inputs"].IsArray())
      return Status::Internal("GET " + path + ": the metadata is not the v2 JSON shape");
    ModelInfo info;
    info.name = name;
    info.version = version;
    for (const auto& in : d["inputs"].GetArray()) {
      if (!in.IsObject() || !in.HasMember("name") || !in.HasMember("datatype") || !in.HasMember("shape"))
        return Status::Internal("GET " + path + ": an input without name/datatype/shape");
      ModelTensorInfo t;
      t.name = in["name"].GetString();
      t.datatype = in["datatype"].GetString();
      for (const auto& dim : in["shape"].GetArray()) t.shape.push_back(dim.GetInt64());
      info.inputs.push_back(std::move(t));
    }
    auto cfg = HttpGet(ep_, path + "/config", timeout_s_);
    if (!cfg.ok()) return cfg.status();
    if (cfg.value().status == 200) {
      rapidjson::Document c;
      c.Parse(cfg.value().body.c_str());
      if (!c.HasParseError() && c.IsObject() && c.HasMember("max_batch_size") && c["max_batch_size"].IsInt64())
        info.max_batch_size = c["max_batch_size"].GetInt64();
    }
    return info;
  }

  Result<ModelStatsSnapshot> FetchStats(const std::string& name, const std::string& version) override {
    std::string path = ModelPath(name, version) + "/stats";
    auto r = HttpGet(ep_, path, timeout_s_);
    if (!r.ok()) return r.status();
    if (r.value().status != 200)
      return Status::Unavailable("GET " + path + ": HTTP " + std::to_string(r.value().status));
    rapidjson::Document d;
    d.Parse(r.value().body.c_str());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("model_stats") || !d["model_stats"].IsArray())
      return Status::Internal("GET " + path + ": not the statistics extension's JSON shape");
    ModelStatsSnapshot s;
    for (const auto& m : d["model_stats"].GetArray()) {
      if (!m.IsObject() || !m.HasMember("inference_stats")) continue;
      const auto& st = m["inference_stats"];
      s.success_count += StatNs(st, "success", "count");
      s.queue_ns += StatNs(st, "queue", "ns");
      s.compute_ns += StatNs(st, "compute_input", "ns") + StatNs(st, "compute_infer", "ns") +
                      StatNs(st, "compute_output", "ns");
    }
    return s;
  }

 private:
  Endpoint ep_;
  double timeout_s_;
};

class GrpcModelClient final : public ModelClient {
 public:
  GrpcModelClient(const Endpoint& ep, double timeout_s)
      : ep_(ep), timeout_s_(timeout_s), stub_(inference::GRPCInferenceService::NewStub(MakeGrpcChannel(ep))) {}

  Result<ModelInfo> FetchModel(const std::string& name, const std::string& version) override {
    inference::ModelMetadataRequest req;
    req.set_name(name);
    req.set_version(version);
    inference::ModelMetadataResponse res;
    auto ctx = Context();
    grpc::Status st = stub_->ModelMetadata(ctx.get(), req, &res);
    if (!st.ok()) return ToStatus(st, name, version);
    ModelInfo info;
    info.name = name;
    info.version = version;
    for (const auto& in : res.inputs()) {
      ModelTensorInfo t;
      t.name = in.name();
      t.datatype = in.datatype();
      t.shape.assign(in.shape().begin(), in.shape().end());
      info.inputs.push_back(std::move(t));
    }
    inference::ModelConfigRequest creq;
    creq.set_name(name);
    creq.set_version(version);
    inference::ModelConfigResponse cres;
    auto cctx = Context();
    if (stub_->ModelConfig(cctx.get(), creq, &cres).ok()) info.max_batch_size = cres.config().max_batch_size();
    return info;
  }

  Result<ModelStatsSnapshot> FetchStats(const std::string& name, const std::string& version) override {
    inference::ModelStatisticsRequest req;
    req.set_name(name);
    req.set_version(version);
    inference::ModelStatisticsResponse res;
    auto ctx = Context();
    grpc::Status st = stub_->ModelStatistics(ctx.get(), req, &res);
    if (!st.ok()) return ToStatus(st, name, version);
    ModelStatsSnapshot s;
    for (const auto& m : res.model_stats()) {
      const auto& is = m.inference_stats();
      s.success_count += is.success().count();
      s.queue_ns += is.queue().ns();
      s.compute_ns += is.compute_input().ns() + is.compute_infer().ns() + is.compute_output().ns();
    }
    return s;
  }

 private:
  std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(static_cast<int64_t>(timeout_s_ * 1000)));
    return ctx;
  }
  Status ToStatus(const grpc::Status& st, const std::string& name, const std::string& version) {
    if (st.error_code() == grpc::StatusCode::NOT_FOUND || st.error_code() == grpc::StatusCode::INVALID_ARGUMENT)
      return Status::NotFound("model '" + name + "'" + (version.empty() ? "" : " version " + version) +
                              " is not known to the server at " + ep_.ToString() + ": " + st.error_message());
    if (st.error_code() == grpc::StatusCode::UNAVAILABLE || st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
      return Status::Unavailable("cannot reach the server at " + ep_.ToString() + " (" + st.error_message() + ")");
    return Status::Unavailable("gRPC error " + std::to_string(static_cast<int>(st.error_code())) + ": " +
                               st.error_message());
  }

  Endpoint ep_;
  double timeout_s_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

}  // namespace

std::unique_ptr<ModelClient> MakeModelClient(const Endpoint& endpoint, double timeout_s) {
  if (endpoint.protocol == Endpoint::Protocol::kGrpc) return std::make_unique<GrpcModelClient>(endpoint, timeout_s);
  return std::make_unique<RestModelClient>(endpoint, timeout_s);
}

}  // namespace inferloop::perf
