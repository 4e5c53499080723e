// Times the KServe v2 REST request decoder (frontends/v2_json_codec.h DecodeJsonInferRequest) on
// the bodies bench/serve_bench.py sends, with its fast path (simdjson, v2_json_fast_decode.h) and
// with the full rapidjson decoder alone (JsonDecodeOptions::fast_path = false): medians of
// alternating rounds, one thread. Both must give the same request (checked before timing).
//   build/bench_v2_json_decode [rounds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "frontends/v2_json_codec.h"

using namespace inferloop::frontends;

namespace {

const char* kSimple =
    R"({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]}, )"
    R"({"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}]})";
const char* kDlrm =
    R"({"inputs": [{"name": "dense", "datatype": "FP32", "shape": [1, 13], "data": [0.6888, 0.5159, -0.1589, -0.4822, 0.0225, -0.1901, )"
    R"(0.5676, -0.3934, -0.0468, 0.1668, 0.8162, 0.0094, -0.4363]}, {"name": "sparse", "datatype": "INT64", "shape": [1, 8], )"
    R"("data": [99064, 6214, 81050, 8208, 69804, 9861, 59124, 1203]}]})";

std::string Image() {  // a 3 x 64 x 64 FP32 image as a client's json.dumps writes it
  std::string s = R"({"id": "img-1", "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3, 64, 64], "data": [)";
  unsigned v = 1;
  for (int i = 0; i < 3 * 64 * 64; ++i) {
    v = v * 1103515245u + 12345u;
    s += (i ? ", " : "") + std::to_string(static_cast<double>(v >> 8) / 16777216.0 - 0.5);
  }
  return s + "]}]}";
}

double MicrosPerDecode(const std::string& body, bool fast, int iters) {
  JsonDecodeOptions o;
  o.fast_path = fast;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    auto r = DecodeJsonInferRequest(body, 0, o);
    if (!r.ok()) std::abort();
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
}

bool SameRequest(const std::string& body) {
  JsonDecodeOptions fast, full;
  full.fast_path = false;
  auto a = DecodeJsonInferRequest(body, 0, fast), b = DecodeJsonInferRequest(body, 0, full);
  if (!a.ok() || !b.ok() || a->id != b->id || a->inputs.size() != b->inputs.size()) return false;
  for (size_t i = 0; i < a->inputs.size(); ++i) {
    const auto &x = a->inputs[i].tensor, &y = b->inputs[i].tensor;
    if (a->inputs[i].name != b->inputs[i].name || x.dtype() != y.dtype() || x.shape() != y.shape() ||
        x.nbytes() != y.nbytes() || std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) != 0) {
      return false;
    }
  }
  return true;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::string image = Image();
  struct Case {
    const char* name;
    std::string body;
    int iters;
  };
  const Case cases[] = {{"simple (serve_bench REST)", kSimple, 20000}, {"dlrm (serve_bench batching)", kDlrm, 20000},
                        {"image 3x64x64 FP32", image, 20}};
  std::printf("| body | bytes | full decoder us | fast path us | full / fast |\n|---|---:|---:|---:|---:|\n");
  for (const Case& c : cases) {
    if (!SameRequest(c.body)) {
      std::fprintf(stderr, "%s: the fast path and the full decoder disagree\n", c.name);
      return 1;
    }
    std::vector<double> full, fast;
    for (int r = 0; r < rounds; ++r) {
      full.push_back(MicrosPerDecode(c.body, false, c.iters));
      fast.push_back(MicrosPerDecode(c.body, true, c.iters));
    }
    std::printf("| %s | %zu | %.2f | %.2f | %.2fx |\n", c.name, c.body.size(), Median(full), Median(fast),
                Median(full) / Median(fast));
  }
  // The response side of simple's round trip, for scale: its two INT32 [1,16] outputs encoded.
  {
    auto req = DecodeJsonInferRequest(kSimple, 0);
    InferResponse response;
    response.model_name = "simple";
    response.model_version = "1";
    for (const auto& in : req->inputs) response.outputs.push_back({in.name, in.tensor, {}});
    std::vector<double> enc;
    for (int r = 0; r < rounds; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 20000; ++i) {
        if (!EncodeJsonInferResponse(response, *req).ok()) std::abort();
      }
      enc.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 20000);
    }
    std::printf("\nencoding simple's response (2 x INT32 [1,16]): %.2f us\n", Median(enc));
  }
  return 0;
}
