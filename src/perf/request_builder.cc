#include "perf/request_builder.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>

#include "base/npy.h"
#include "perf/input_set.h"
#include "frontends/v2_datatype.h"
#include "frontends/v2_grpc_codec.h"
#include "frontends/v2_json_codec.h"

namespace inferloop::perf {
namespace {

std::string JoinDims(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

void FillRandom(Tensor* t, std::mt19937_64& gen) {
  std::uniform_int_distribution<int> small(0, 99);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int64_t n = t->size();
  switch (t->dtype()) {
    case DataType::kFloat: for (int64_t i = 0; i < n; ++i) t->data<float>()[i] = static_cast<float>(unit(gen)); break;
    case DataType::kDouble: for (int64_t i = 0; i < n; ++i) t->data<double>()[i] = unit(gen); break;
    case DataType::kInt8: for (int64_t i = 0; i < n; ++i) t->data<int8_t>()[i] = static_cast<int8_t>(small(gen)); break;
    case DataType::kUInt8: for (int64_t i = 0; i < n; ++i) t->data<uint8_t>()[i] = static_cast<uint8_t>(small(gen)); break;
    case DataType::kInt16: for (int64_t i = 0; i < n; ++i) t->data<int16_t>()[i] = static_cast<int16_t>(small(gen)); break;
    case DataType::kUInt16: for (int64_t i = 0; i < n; ++i) t->data<uint16_t>()[i] = static_cast<uint16_t>(small(gen)); break;
    case DataType::kInt32: for (int64_t i = 0; i < n; ++i) t->data<int32_t>()[i] = small(gen); break;
    case DataType::kUInt32: for (int64_t i = 0; i < n; ++i) t->data<uint32_t>()[i] = small(gen); break;
    case DataType::kInt64: for (int64_t i = 0; i < n; ++i) t->data<int64_t>()[i] = small(gen); break;
    case DataType::kUInt64: for (int64_t i = 0; i < n; ++i) t->data<uint64_t>()[i] = small(gen); break;
    case DataType::kBool: for (int64_t i = 0; i < n; ++i) t->data<uint8_t>()[i] = small(gen) & 1; break;
    case DataType::kFloat16: for (int64_t i = 0; i < n; ++i) t->data<uint16_t>()[i] = 0x3800; break;   // 0.5
    case DataType::kBFloat16: for (int64_t i = 0; i < n; ++i) t->data<uint16_t>()[i] = 0x3F00; break;  // 0.5
    default: break;
  }
}

}  // namespace

Status ParseShapeOption(const std::string& text, std::map<std::string, std::vector<int64_t>>* shapes) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Status::InvalidArgument("--shape '" + text + "': expected NAME:D1,D2,...");
  std::vector<int64_t> dims;
  std::stringstream ss(text.substr(colon + 1));
  std::string d;
  while (std::getline(ss, d, ',')) {
    char* end = nullptr;
    long long v = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end != '\0' || v < 0)
      return Status::InvalidArgument("--shape '" + text + "': '" + d + "' is not a dimension (a whole number >= 0)");
    dims.push_back(v);
  }
  if (dims.empty()) return Status::InvalidArgument("--shape '" + text + "': no dimensions");
  (*shapes)[text.substr(0, colon)] = std::move(dims);
  return Status::Ok();
}

namespace {

// The dims of `in` without the batch dim, with --shape applied; -1 where still variable.
Result<std::vector<int64_t>> SampleDims(const ModelTensorInfo& in, const InputOptions& options, bool batching) {
  std::vector<int64_t> sample(in.shape.begin() + (batching && !in.shape.empty() ? 1 : 0), in.shape.end());
  auto it = options.shapes.find(in.name);
  if (it == options.shapes.end()) return sample;
  if (it->second.size() != sample.size())
    return Status::InvalidArgument("--shape " + in.name + ": " + std::to_string(it->second.size()) +
                                   " dims given, the input has " + std::to_string(sample.size()) + " " +
                                   JoinDims(sample) + (batching ? " (without the batch dim)" : ""));
  for (size_t i = 0; i < sample.size(); ++i)
    if (sample[i] >= 0 && sample[i] != it->second[i])
      return Status::InvalidArgument("--shape " + in.name + ": dim " + std::to_string(i) + " is fixed at " +
                                     std::to_string(sample[i]) + " " + JoinDims(sample));
  return it->second;
}

// `got` fits `want` when the ranks agree and every dim of `want` is -1 (variable) or equal.
bool DimsFit(const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (want[i] >= 0 && got[i] != want[i]) return false;
  return true;
}

// DIR/<input>.npy as the input's tensor: its full shape (batch dim included), or for batching
// models one sample repeated to the batch. Variable dims (-1 in `sample`) take the file's dims.
Result<Tensor> TensorFromNpy(const std::string& dir, const ModelTensorInfo& in, DataType dtype,
                             const std::vector<int64_t>& sample, int batch_size, bool batching) {
  std::string path = (std::filesystem::path(dir) / (in.name + ".npy")).string();
  if (!std::filesystem::exists(path))
    return Status::InvalidArgument("--input-data: no " + path + " for input '" + in.name + "'");
  auto npy = ReadNpyFile(path);
  if (!npy.ok()) return npy.status().WithContext(path);
  Tensor v = std::move(npy).value();
  if (v.dtype() != dtype)
    return Status::InvalidArgument(path + ": dtype " + DataTypeName(v.dtype()) + ", input '" + in.name + "' is " +
                                   in.datatype);
  std::vector<int64_t> full = sample;
  if (batching) full.insert(full.begin(), batch_size);
  std::vector<int64_t> vs(v.shape().begin(), v.shape().end());
  if (DimsFit(vs, full)) return v;
  if (!batching || !DimsFit(vs, sample))
    return Status::InvalidArgument(path + ": shape " + JoinDims(vs) + ", expected " + JoinDims(full) +
                                   (batching ? " or " + JoinDims(sample) : "") +
                                   (std::count(full.begin(), full.end(), -1) ? " (-1: any size)" : ""));
  std::vector<int64_t> tiled = vs;  // one sample: repeated batch_size times
  tiled.insert(tiled.begin(), batch_size);
  auto r = Tensor::Create(v.dtype(), Shape(tiled));
  if (!r.ok()) return r.status();
  Tensor t = std::move(r).value();
  for (int b = 0; b < batch_size; ++b) {
    if (v.dtype() == DataType::kString) {
      for (int64_t i = 0; i < v.size(); ++i) t.strings()[b * v.size() + i] = v.strings()[i];
    } else {
      std::memcpy(static_cast<char*>(t.raw_data()) + b * v.nbytes(), v.raw_data(), v.nbytes());
    }
  }
  return t;
}

// A generated tensor: zeros, or random values from `gen`.
Result<Tensor> GeneratedTensor(DataType dtype, const std::vector<int64_t>& full, bool zero, std::mt19937_64& gen) {
  if (dtype == DataType::kString) {
    int64_t n = 1;
    for (int64_t d : full) n *= d;
    std::vector<std::string> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = zero ? "" : "s" + std::to_string(i % 97);
    return Tensor::FromStrings(Shape(full), std::move(values));
  }
  auto r = Tensor::Create(dtype, Shape(full));
  if (!r.ok()) return r.status();
  Tensor t = std::move(r).value();
  if (!zero) FillRandom(&t, gen);
  return t;
}

Status CheckInputOptions(const ModelInfo& model, const InputOptions& options) {
  for (const auto& [name, dims] : options.shapes) {
    bool found = false;
    for (const auto& in : model.inputs) found |= in.name == name;
    if (!found) {
      std::string names;
      for (const auto& in : model.inputs) names += (names.empty() ? "" : ", ") + in.name;
      return Status::InvalidArgument("--shape: '" + name + "' is not an input of model '" + model.name +
                                     "' (inputs: " + names + ")");
    }
  }
  if (options.batch_size < 1) return Status::InvalidArgument("--batch-size must be >= 1");
  bool batching = model.max_batch_size > 0;
  if (!batching && options.batch_size > 1)
    return Status::InvalidArgument("--batch-size " + std::to_string(options.batch_size) + ": model '" + model.name +
                                   "' does not batch (max_batch_size 0)");
  if (batching && options.batch_size > model.max_batch_size)
    return Status::InvalidArgument("--batch-size " + std::to_string(options.batch_size) + " is above model '" +
                                   model.name + "' max_batch_size " + std::to_string(model.max_batch_size));
  bool from_dir = options.data != "random" && options.data != "zero";
  if (from_dir && !std::filesystem::is_directory(options.data))
    return Status::InvalidArgument("--input-data '" + options.data + "': expected random, zero or a directory");
  return Status::Ok();
}

}  // namespace

Result<frontends::InferRequest> BuildInferRequest(const ModelInfo& model, const InputOptions& options) {
  Status checked = CheckInputOptions(model, options);
  if (!checked.ok()) return checked;
  const bool batching = model.max_batch_size > 0;
  const bool from_dir = options.data != "random" && options.data != "zero";
  std::mt19937_64 gen(options.seed);
  frontends::InferRequest req;
  req.model_name = model.name;
  req.model_version = model.version;
  if (options.priority) req.parameters["priority"] = *options.priority;
  if (options.binary) req.parameters[frontends::kBinaryDataOutputParam] = true;
  for (const auto& in : model.inputs) {
    auto dtype = frontends::DataTypeFromV2Name(in.datatype);
    if (!dtype.ok()) return dtype.status().WithContext("input '" + in.name + "'");
    auto sample = SampleDims(in, options, batching);
    if (!sample.ok()) return sample.status();
    if (!from_dir)
      for (int64_t d : sample.value())
        if (d < 0)
          return Status::InvalidArgument("input '" + in.name + "' has variable dims " + JoinDims(sample.value()) +
                                         ": give them with --shape " + in.name + ":D1,D2,...");
    std::vector<int64_t> full = sample.value();
    if (batching) full.insert(full.begin(), options.batch_size);
    auto t = from_dir ? TensorFromNpy(options.data, in, dtype.value(), sample.value(), options.batch_size, batching)
                      : GeneratedTensor(dtype.value(), full, options.data == "zero", gen);
    if (!t.ok()) return from_dir ? t.status() : t.status().WithContext("input '" + in.name + "'");
    req.inputs.push_back(frontends::InferInput{in.name, std::move(t).value(), {}});
  }
  return req;
}

Result<InputSet> BuildInputSet(const ModelInfo& model, const InputOptions& options) {
  InputSet set;
  std::vector<std::string> folders;
  if (options.data != "random" && options.data != "zero" && std::filesystem::is_directory(options.data)) {
    auto listed = ListSampleFolders(options.data);
    if (!listed.ok()) return listed.status();
    folders = std::move(listed).value();
  }
  if (folders.empty()) {  // random, zero, or the flat DIR/<input>.npy: one sample
    auto r = BuildInferRequest(model, options);
    if (!r.ok()) return r.status();
    set.sample_names.push_back(options.data);
    set.requests.push_back(std::move(r).value());
    return set;
  }
  for (const auto& folder : folders) {
    InputOptions one = options;
    one.data = (std::filesystem::path(options.data) / folder).string();
    auto r = BuildInferRequest(model, one);
    if (!r.ok()) return Status::InvalidArgument("sample '" + folder + "': " + r.status().message());
    set.sample_names.push_back(folder);
    set.requests.push_back(std::move(r).value());
  }
  return set;
}

Result<EncodedRequest> EncodeRequest(const frontends::InferRequest& request, bool binary) {
  EncodedRequest out;
  auto body = frontends::EncodeJsonInferRequest(request, binary);
  if (!body.ok()) return body.status();
  out.rest_body = std::move(body.value().body);
  out.rest_json_length = body.value().json_length;
  out.rest_has_binary = body.value().has_binary;
  inference::ModelInferRequest msg;
  Status st = frontends::EncodeGrpcInferRequest(request, /*raw=*/true, &msg);
  if (!st.ok()) return st;
  msg.set_model_name(request.model_name);
  msg.set_model_version(request.model_version);
  out.grpc_message = msg.SerializeAsString();
  return out;
}

}  // namespace inferloop::perf
