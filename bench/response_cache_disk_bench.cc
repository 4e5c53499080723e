// The response cache's disk tier, one entry at a time (src/serve/response_cache_disk.h): the
// median time to write an entry (encode + temp file + rename, on the tier's writer thread,
// measured from Enqueue to Flush) and to read it back (read + checksum + decode), for a 4 KB and
// a 600 KB entry. Reads find the file in the page cache (it was just written), as a hot disk tier
// does. Prints JSON; the figures are recorded in response_cache_disk.h's comment.
//
//   cmake --build build --target bench_response_cache_disk && build/bench_response_cache_disk [--dir D] [--runs 200]
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "serve/event_log.h"
#include "serve/response_cache_disk.h"

namespace {

using inferloop::DataType;
using inferloop::Tensor;
using namespace inferloop::serve;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Figures {
  double write_us, read_us;
  size_t file_bytes;
};

Figures Measure(ResponseCacheDisk& disk, int64_t floats, int runs, uint64_t key_base) {
  std::vector<float> values(static_cast<size_t>(floats));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  auto entry = std::make_shared<CachedResponse>();
  entry->outputs.push_back(InferOutput{"y", Tensor::FromVector<float>(DataType::kFloat, {floats}, values), {}});
  entry->bytes = CachedResponseBytes(entry->outputs);
  std::vector<double> writes, reads;
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < runs; ++i) {
    const ResponseCacheKey key{key_base, static_cast<uint64_t>(i)};
    const auto t0 = Clock::now();
    disk.Enqueue(key, entry);
    disk.Flush();
    const auto t1 = Clock::now();
    auto back = disk.Read(key);
    const auto t2 = Clock::now();
    if (!back || back->size() != 1) {
      std::fprintf(stderr, "entry %d did not read back\n", i);
      std::exit(1);
    }
    writes.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    reads.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  return Figures{Median(writes), Median(reads), EncodeCachedResponse({}, entry->outputs).size()};
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int runs = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::max(1, std::atoi(argv[i + 1]));
  }
  const bool own_dir = dir.empty();
  if (own_dir) {
    char tmpl[] = "/tmp/il_rc_bench_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return 1;
    dir = tmpl;
  }
  EventLog log(stderr);
  auto disk = ResponseCacheDisk::Create(ResponseCacheDisk::Options{dir, int64_t{4} << 30, &log});
  if (!disk.ok()) {
    std::fprintf(stderr, "%s\n", disk.status().ToString().c_str());
    return 1;
  }
  const Figures small = Measure(**disk, 1024, runs, 1);       // 4 KB of floats
  const Figures large = Measure(**disk, 153600, runs, 2);     // 600 KB of floats
  disk->reset();
  if (own_dir) std::filesystem::remove_all(dir);
  std::printf(
      "{\"runs\": %d, \"dir\": \"%s\",\n"
      " \"4KB\": {\"file_bytes\": %zu, \"write_us_median\": %.1f, \"read_us_median\": %.1f},\n"
      " \"600KB\": {\"file_bytes\": %zu, \"write_us_median\": %.1f, \"read_us_median\": %.1f}}\n",
      runs, dir.c_str(), small.file_bytes, small.write_us, small.read_us, large.file_bytes, large.write_us,
      large.read_us);
  return 0;
}
