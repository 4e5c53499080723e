// The response cache's disk tier against RocksDB, side by side in one run (the "why files"
// figures of src/serve/response_cache_disk.h): the same entries (the disk tier's own encoding of
// a 4 KB and a 600 KB output) written and read back through
//   files:   the disk tier (ResponseCacheDisk: writer thread, temp file + rename; read + check),
//   rocksdb: RocksDB as its users run it (Debian's librocksdb 7.8: default Options with
//            create_if_missing, default WriteOptions/ReadOptions: WAL on, no fsync, as the files
//            are not fsynced either), Put and Get + the same decode and check;
//   rocksdb-blob: the same with BlobDB (enable_blob_files), RocksDB's setting for large values.
// Medians of --runs per entry size; prints a table. Built only where RocksDB is installed
// (scripts/install_deps.sh installs librocksdb-dev):
//   cmake --build build --target bench_response_cache_rocksdb && build/bench_response_cache_rocksdb --runs 300
#include <stdlib.h>

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/event_log.h"
#include "serve/response_cache_disk.h"

namespace {

using inferloop::DataType;
using inferloop::Tensor;
using namespace inferloop::serve;
using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }

std::shared_ptr<CachedResponse> MakeEntry(int64_t floats) {
  std::vector<float> values(static_cast<size_t>(floats));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  auto entry = std::make_shared<CachedResponse>();
  entry->outputs.push_back(InferOutput{"y", Tensor::FromVector<float>(DataType::kFloat, {floats}, values), {}});
  entry->bytes = CachedResponseBytes(entry->outputs);
  return entry;
}

struct Figures {
  double write_us = 0, read_us = 0;
};

// Writes and reads `runs` distinct keys through `put` and `get` (get returns false on a miss or
// a failed check).
Figures Measure(int runs, uint64_t key_base, const std::function<void(const ResponseCacheKey&)>& put,
                const std::function<bool(const ResponseCacheKey&)>& get) {
  std::vector<double> writes, reads;
  for (int i = 0; i < runs; ++i) {
    const ResponseCacheKey key{key_base, static_cast<uint64_t>(i)};
    const auto t0 = Clock::now();
    put(key);
    const auto t1 = Clock::now();
    if (!get(key)) {
      std::fprintf(stderr, "entry %d did not read back\n", i);
      std::exit(1);
    }
    writes.push_back(Us(t0, t1));
    reads.push_back(Us(t1, Clock::now()));
  }
  return Figures{Median(writes), Median(reads)};
}

Figures MeasureFiles(const std::string& dir, const std::shared_ptr<CachedResponse>& entry, int runs, uint64_t base) {
  EventLog log(stderr);
  auto disk = ResponseCacheDisk::Create(ResponseCacheDisk::Options{dir, int64_t{8} << 30, &log});
  if (!disk.ok()) {
    std::fprintf(stderr, "%s\n", disk.status().ToString().c_str());
    std::exit(1);
  }
  ResponseCacheDisk& d = **disk;
  return Measure(
      runs, base,
      [&](const ResponseCacheKey& k) {
        d.Enqueue(k, entry);
        d.Flush();
      },
      [&](const ResponseCacheKey& k) {
        auto back = d.Read(k);
        return back && back->size() == 1;
      });
}

Figures MeasureRocksDb(const std::string& dir, bool blob_files, const std::shared_ptr<CachedResponse>& entry, int runs,
                       uint64_t base) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.enable_blob_files = blob_files;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status st = rocksdb::DB::Open(options, dir, &raw);
  if (!st.ok()) {
    std::fprintf(stderr, "rocksdb: %s\n", st.ToString().c_str());
    std::exit(1);
  }
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string value;
  return Measure(
      runs, base,
      [&](const ResponseCacheKey& k) {
        // The same bytes the file holds (header with key and checksum + payload): encoding is
        // part of both writes.
        const std::vector<uint8_t> bytes = EncodeCachedResponse(k, entry->outputs);
        const std::string key = ToHex(k);
        rocksdb::Status s = db->Put(rocksdb::WriteOptions(), key,
                                    rocksdb::Slice(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
        if (!s.ok()) std::exit(1);
      },
      [&](const ResponseCacheKey& k) {
        if (!db->Get(rocksdb::ReadOptions(), ToHex(k), &value).ok()) return false;
        auto back = DecodeCachedResponse(
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(value.data()), value.size()), k);
        return back.ok() && back->size() == 1;
      });
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 300;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::max(1, std::atoi(argv[i + 1]));
  char tmpl[] = "/tmp/il_rc_vs_rocksdb_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string root = tmpl;
  std::printf("runs %d per size, directory %s (medians, microseconds)\n", runs, root.c_str());
  std::printf("%-8s %-13s %10s %10s\n", "entry", "store", "write_us", "read_us");
  const struct {
    const char* name;
    int64_t floats;
  } sizes[] = {{"4KB", 1024}, {"600KB", 153600}};
  uint64_t base = 1;
  for (const auto& size : sizes) {
    const auto entry = MakeEntry(size.floats);
    const Figures files = MeasureFiles(root + "/files", entry, runs, base++);
    const Figures rdb = MeasureRocksDb(root + "/rocksdb", false, entry, runs, base++);
    const Figures blob = MeasureRocksDb(root + "/rocksdb_blob", true, entry, runs, base++);
    std::printf("%-8s %-13s %10.1f %10.1f\n", size.name, "files", files.write_us, files.read_us);
    std::printf("%-8s %-13s %10.1f %10.1f\n", size.name, "rocksdb", rdb.write_us, rdb.read_us);
    std::printf("%-8s %-13s %10.1f %10.1f\n", size.name, "rocksdb-blob", blob.write_us, blob.read_us);
  }
  std::filesystem::remove_all(root);
  return 0;
}
