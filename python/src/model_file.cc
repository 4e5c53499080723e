// Model files beyond a session: the metadata InferenceSession.get_modelmeta() returns, and the
// optimized model SessionOptions.optimized_model_filepath asks for.
//
// The session's own model is not reachable through the public API, so both read the model
// again: the metadata from a scan of the ModelProto's top-level fields (the graph is skipped by
// length, never parsed), the optimized model by loading, optimizing (optimizer/optimizer.h, at
// the session's level) and writing it (graph/onnx_writer.h) as `inferloop optimize` does.
#include <nanobind/stl/string.h>

#include <cstdint>
#include <string>

#include "base/file_bytes.h"
#include "bindings.h"
#include "errors.h"
#include "graph/onnx_loader.h"
#include "graph/onnx_writer.h"
#include "optimizer/optimizer.h"

namespace inferloop::py {
namespace {

// Calls f(field, varint, bytes, size) for each field of one protobuf message (varint for wire
// type 0, bytes/size for length-delimited fields; fixed-width fields are skipped). False when the
// bytes are not a well-formed message.
template <typename F>
bool ForEachField(const uint8_t* p, const uint8_t* end, F&& f) {
  auto varint = [&](uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
      const uint8_t b = *p++;
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  while (p < end) {
    uint64_t key = 0, v = 0;
    if (!varint(key)) return false;
    const int field = static_cast<int>(key >> 3);
    switch (key & 7) {
      case 0:
        if (!varint(v)) return false;
        f(field, v, nullptr, 0);
        break;
      case 1:
        if (end - p < 8) return false;
        p += 8;
        break;
      case 5:
        if (end - p < 4) return false;
        p += 4;
        break;
      case 2:
        if (!varint(v) || v > static_cast<uint64_t>(end - p)) return false;
        f(field, 0, p, static_cast<size_t>(v));
        p += v;
        break;
      default:
        return false;
    }
  }
  return true;
}

std::string Str(const uint8_t* p, size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }

// ModelProto fields: producer_name 2, producer_version 3, domain 4, model_version 5, doc_string 6,
// graph 7 (GraphProto: name 2, doc_string 10), metadata_props 14 (key 1, value 2).
nb::dict ScanMetadata(const std::string& bytes) {
  std::string producer_name, producer_version, domain, description, graph_name, graph_description;
  int64_t version = 0;
  std::vector<std::pair<std::string, std::string>> props;
  const auto* begin = reinterpret_cast<const uint8_t*>(bytes.data());
  bool ok = ForEachField(begin, begin + bytes.size(), [&](int field, uint64_t v, const uint8_t* p, size_t n) {
    if (!p && field == 5) version = static_cast<int64_t>(v);
    if (!p) return;
    if (field == 2) producer_name = Str(p, n);
    if (field == 3) producer_version = Str(p, n);
    if (field == 4) domain = Str(p, n);
    if (field == 6) description = Str(p, n);
    if (field == 7)
      ForEachField(p, p + n, [&](int gf, uint64_t, const uint8_t* gp, size_t gn) {
        if (gp && gf == 2) graph_name = Str(gp, gn);
        if (gp && gf == 10) graph_description = Str(gp, gn);
      });
    if (field == 14) {
      std::string key, value;
      ForEachField(p, p + n, [&](int kf, uint64_t, const uint8_t* kp, size_t kn) {
        if (kp && kf == 1) key = Str(kp, kn);
        if (kp && kf == 2) value = Str(kp, kn);
      });
      props.emplace_back(std::move(key), std::move(value));
    }
  });
  if (!ok) throw StatusError(Status::InvalidArgument("not an ONNX model: the bytes are not a well-formed ModelProto"));
  nb::dict d, custom;
  for (const auto& [k, v] : props) custom[nb::str(k.c_str(), k.size())] = nb::str(v.c_str(), v.size());
  d["producer_name"] = producer_name;
  d["producer_version"] = producer_version;
  d["domain"] = domain;
  d["description"] = description;
  d["graph_name"] = graph_name;
  d["graph_description"] = graph_description;
  d["version"] = version;
  d["custom_metadata_map"] = custom;
  return d;
}

// The model's bytes: a path's file contents, or a bytes object's own.
std::string ModelBytes(nb::handle model) {
  if (PyBytes_Check(model.ptr()))
    return std::string(PyBytes_AS_STRING(model.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(model.ptr())));
  if (!PyUnicode_Check(model.ptr())) throw nb::type_error("model must be a path (str) or the model's bytes");
  const std::string path = nb::cast<std::string>(model);
  nb::gil_scoped_release nogil;
  return ValueOrThrow(ReadFileBytes(path));
}

nb::dict ModelMetadata(nb::handle model) { return ScanMetadata(ModelBytes(model)); }

void SaveOptimizedModel(nb::handle model, int level, const std::string& out_path, const std::string& external_data_dir) {
  Result<Model> loaded = Status::Internal("not loaded");
  if (PyUnicode_Check(model.ptr())) {
    const std::string path = nb::cast<std::string>(model);
    nb::gil_scoped_release nogil;
    loaded = LoadModelFromFile(path);
  } else {
    const std::string bytes = ModelBytes(model);
    nb::gil_scoped_release nogil;
    loaded = LoadModelFromBytes(bytes.data(), bytes.size(), external_data_dir);
  }
  Model m = ValueOrThrow(std::move(loaded));
  nb::gil_scoped_release nogil;
  if (level > 0) {
    OptimizeOptions opts;
    opts.level = level;
    ThrowIfError(OptimizeModel(m, opts).status());
  }
  ThrowIfError(SaveModelToFile(m, out_path));
}

}  // namespace

void RegisterModelFile(nb::module_& m) {
  m.def("model_metadata", &ModelMetadata, nb::arg("model"),
        "The ModelProto's metadata (producer, domain, doc strings, version, metadata_props) as a dict");
  m.def("save_optimized_model", &SaveOptimizedModel, nb::arg("model"), nb::arg("level"), nb::arg("out_path"),
        nb::arg("external_data_dir") = "",
        "Loads the model, runs the graph optimizer at `level` (0 = none) and writes it as ONNX to out_path");
}

}  // namespace inferloop::py
