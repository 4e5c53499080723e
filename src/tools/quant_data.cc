#include "tools/quant_data.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "base/file_bytes.h"
#include "base/npy.h"
#include "base/status_macros.h"
#include "graph/tensor_file.h"

namespace inferloop {

namespace fs = std::filesystem;

uint64_t Fnv1a64(const void* data, size_t n, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

Result<std::string> FileHash(const std::string& path) {
  IL_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(Fnv1a64(bytes.data(), bytes.size())));
  return std::string(buf);
}

namespace {

Result<std::vector<int64_t>> ReadLabels(const fs::path& p) {
  auto t = ReadNpyFile(p.string());
  if (!t.ok()) return t.status().WithContext(p.string());
  const Tensor& l = *t;
  const bool vector = l.rank() == 1 || (l.rank() == 2 && l.dim(1) == 1);
  if (!vector || (l.dtype() != DataType::kInt64 && l.dtype() != DataType::kInt32))
    return Status::InvalidArgument(p.string() + ": labels must be an int64 (or int32) vector, one label per sample; got " +
                                   DataTypeName(l.dtype()) + ShapeToString(l.shape()));
  std::vector<int64_t> out(static_cast<size_t>(l.size()));
  for (int64_t i = 0; i < l.size(); ++i)
    out[i] = l.dtype() == DataType::kInt64 ? l.data<int64_t>()[i] : l.data<int32_t>()[i];
  return out;
}

// Rows [begin, end) of `t` along dimension 0 (a copy).
Result<Tensor> SliceRows(const Tensor& t, int64_t begin, int64_t end) {
  if (t.dtype() == DataType::kString) return Status::InvalidArgument("string inputs cannot be split into batches");
  Shape s = t.shape();
  const size_t row_bytes = s[0] > 0 ? t.nbytes() / static_cast<size_t>(s[0]) : 0;
  s[0] = end - begin;
  return Tensor::FromBytes(t.dtype(), s, static_cast<const char*>(t.raw_data()) + row_bytes * begin,
                           row_bytes * static_cast<size_t>(end - begin));
}

}  // namespace

Result<QuantDataSet> LoadQuantData(const std::string& dir, const std::vector<ValueInfo>& inputs, int max_chunk) {
  QuantDataSet ds;
  ds.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::InvalidArgument("data '" + dir + "' is not a folder (expected <input>.npy/.pb files or folders of them)");
  const bool labels_is_input =
      std::any_of(inputs.begin(), inputs.end(), [](const ValueInfo& v) { return v.name == "labels"; });
  const fs::path labels_path = fs::path(dir) / "labels.npy";
  const bool has_labels = !labels_is_input && fs::is_regular_file(labels_path, ec);
  bool other_top_files = false;
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && IsTensorFile(e.path().string()) && !(has_labels && e.path() == labels_path)) other_top_files = true;
    if (e.is_directory()) subdirs.push_back(e.path());
  }
  std::vector<Sample> samples;
  if (other_top_files || subdirs.empty()) {
    IL_ASSIGN_OR_RETURN(samples, LoadSamples(dir));
  } else {
    std::sort(subdirs.begin(), subdirs.end());
    for (const auto& d : subdirs) {
      auto s = LoadSamples(d.string());
      if (!s.ok()) continue;  // a folder without tensor files is not a sample
      for (auto& x : *s) samples.push_back(std::move(x));
    }
  }
  if (has_labels) {
    IL_ASSIGN_OR_RETURN(ds.labels, ReadLabels(labels_path));
    for (auto& s : samples)
      s.erase(std::remove_if(s.begin(), s.end(), [](const NamedValue& nv) { return nv.first == "labels"; }), s.end());
  }
  samples.erase(std::remove_if(samples.begin(), samples.end(), [](const Sample& s) { return s.empty(); }), samples.end());
  if (samples.empty()) return Status::InvalidArgument("data '" + dir + "' holds no .npy or .pb input files");

  uint64_t h = Fnv1a64("", 0);
  for (size_t si = 0; si < samples.size(); ++si) {
    const Sample& s = samples[si];
    // Every model input must be there (by file name).
    for (const ValueInfo& vi : inputs) {
      if (std::none_of(s.begin(), s.end(), [&](const NamedValue& nv) { return nv.first == vi.name; })) {
        std::string have;
        for (const auto& nv : s) have += (have.empty() ? "" : ", ") + nv.first;
        return Status::InvalidArgument("data '" + dir + "': sample " + std::to_string(si) + " has no file for input " +
                                       vi.ToString() + " (files are named <input>.npy / <input>.pb; it has: " + have + ")");
      }
    }
    // How many rows, and in chunks of how many.
    int64_t rows = -1, chunk = 0;
    for (const ValueInfo& vi : inputs) {
      auto it = std::find_if(s.begin(), s.end(), [&](const NamedValue& nv) { return nv.first == vi.name; });
      if (!it->second.is_tensor() || it->second.tensor().rank() == 0 || !vi.has_shape || vi.shape.empty()) continue;
      const Tensor& t = it->second.tensor();
      int64_t c = 0;
      if (vi.shape[0].value < 0) c = max_chunk;
      else if (vi.shape[0].value > 0 && t.dim(0) >= vi.shape[0].value && t.dim(0) % vi.shape[0].value == 0) c = vi.shape[0].value;
      else continue;
      if (rows >= 0 && rows != t.dim(0))
        return Status::InvalidArgument("data '" + dir + "': inputs of sample " + std::to_string(si) +
                                       " have different batch sizes (" + std::to_string(rows) + " and " +
                                       std::to_string(t.dim(0)) + ")");
      rows = t.dim(0);
      chunk = chunk == 0 ? c : std::min(chunk, c);
    }
    for (const auto& [name, v] : s) {
      h = Fnv1a64(name.data(), name.size(), h);
      if (!v.is_tensor() || v.tensor().dtype() == DataType::kString) continue;
      const Tensor& t = v.tensor();
      for (int64_t d : t.shape()) h = Fnv1a64(&d, sizeof(d), h);
      h = Fnv1a64(t.raw_data(), t.nbytes(), h);
    }
    if (rows < 0 || rows <= chunk) {
      ds.rows += rows < 0 ? 1 : rows;
      ds.chunks.push_back(s);
      continue;
    }
    for (int64_t b = 0; b < rows; b += chunk) {
      const int64_t e = std::min(rows, b + chunk);
      Sample part;
      for (const auto& entry : s) {
        const std::string& name = entry.first;  // (a plain reference: clang 14 cannot capture bindings)
        const Value& v = entry.second;
        const bool batched = std::any_of(inputs.begin(), inputs.end(), [&](const ValueInfo& vi) {
          return vi.name == name && vi.has_shape && !vi.shape.empty() && v.is_tensor() && v.tensor().rank() > 0 &&
                 v.tensor().dim(0) == rows;
        });
        if (!batched) {
          part.emplace_back(name, v);
          continue;
        }
        IL_ASSIGN_OR_RETURN(Tensor t, SliceRows(v.tensor(), b, e));
        part.emplace_back(name, Value(std::move(t)));
      }
      ds.chunks.push_back(std::move(part));
    }
    ds.rows += rows;
  }
  ds.fingerprint = h;
  if (!ds.labels.empty() && static_cast<int64_t>(ds.labels.size()) != ds.rows)
    return Status::InvalidArgument("data '" + dir + "': labels.npy has " + std::to_string(ds.labels.size()) +
                                   " labels for " + std::to_string(ds.rows) + " samples");
  return ds;
}

Result<Sample> FirstRow(const Sample& s, const std::vector<ValueInfo>& inputs) {
  Sample out;
  for (const auto& entry : s) {
    const std::string& name = entry.first;
    const Value& v = entry.second;
    const bool symbolic = std::any_of(inputs.begin(), inputs.end(), [&](const ValueInfo& vi) {
      return vi.name == name && vi.has_shape && !vi.shape.empty() && vi.shape[0].value < 0;
    });
    if (!symbolic || !v.is_tensor() || v.tensor().rank() == 0 || v.tensor().dim(0) <= 1) {
      out.emplace_back(name, v);
      continue;
    }
    IL_ASSIGN_OR_RETURN(Tensor t, SliceRows(v.tensor(), 0, 1));
    out.emplace_back(name, Value(std::move(t)));
  }
  return out;
}

}  // namespace inferloop
