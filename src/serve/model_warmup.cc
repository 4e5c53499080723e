#include "serve/model_warmup.h"

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace inferloop::serve {

namespace {

using Clock = std::chrono::steady_clock;

// Values for one warmup input: zeros, random values, or a file's raw bytes.
Result<Tensor> WarmupTensor(const std::string& model_dir, const std::string& input_name,
                            const configpb::ModelWarmup::Input& in, DataType dtype, Shape shape, uint32_t seed) {
  if (dtype == DataType::kUndefined || dtype == DataType::kString) {
    if (dtype == DataType::kString) {
      int64_t n = ShapeElementCount(shape);
      if (n < 0) return Status::InvalidArgument("warmup input '" + input_name + "': bad shape");
      return Tensor::FromStrings(shape, std::vector<std::string>(static_cast<size_t>(n)));
    }
    return Status::InvalidArgument("warmup input '" + input_name + "': no data type");
  }
  auto t = Tensor::Create(dtype, shape);
  if (!t.ok()) return t.status();
  Tensor tensor = std::move(t).value();
  if (in.input_data_type_case() == configpb::ModelWarmup::Input::kRandomData) {
    std::mt19937 rng(seed);
    auto* bytes = static_cast<unsigned char*>(tensor.raw_data());
    if (dtype == DataType::kFloat) {
      std::uniform_real_distribution<float> dist(-1.f, 1.f);
      for (int64_t i = 0; i < tensor.size(); ++i) tensor.data<float>()[i] = dist(rng);
    } else if (dtype == DataType::kBool) {
      for (size_t i = 0; i < tensor.nbytes(); ++i) bytes[i] = rng() & 1;
    } else if (dtype == DataType::kInt64 || dtype == DataType::kInt32) {
      // Small non-negative integers: valid as indices for the embedding tables models take.
      for (int64_t i = 0; i < tensor.size(); ++i) {
        if (dtype == DataType::kInt64) tensor.data<int64_t>()[i] = rng() % 2;
        else tensor.data<int32_t>()[i] = rng() % 2;
      }
    } else {
      for (size_t i = 0; i < tensor.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(rng() & 0x3f);
    }
  } else if (in.input_data_type_case() == configpb::ModelWarmup::Input::kInputDataFile) {
    const std::string& file = in.input_data_file();
    if (file.empty() || file.find("..") != std::string::npos || file[0] == '/')
      return Status::InvalidArgument("warmup input '" + input_name + "': input_data_file must be a file name inside " +
                                     model_dir + "/warmup/");
    const std::string path = model_dir + "/warmup/" + file;
    std::ifstream f(path, std::ios::binary);
    if (!f) return Status::NotFound("warmup input '" + input_name + "': cannot read " + path);
    std::ostringstream ss;
    ss << f.rdbuf();
    const std::string data = ss.str();
    if (data.size() != tensor.nbytes())
      return Status::InvalidArgument("warmup input '" + input_name + "': " + path + " has " +
                                     std::to_string(data.size()) + " bytes, the input needs " +
                                     std::to_string(tensor.nbytes()));
    std::memcpy(tensor.raw_data(), data.data(), data.size());
  }
  return tensor;
}

// No warmup configured: one zero sample per batch bucket (batch 1 without batching) when every
// input's size is known (none otherwise), so the first request does not pay for planning and
// tuning.
std::vector<configpb::ModelWarmup> DefaultWarmupSamples(const ModelConfig& config, const std::vector<int64_t>& buckets) {
  std::vector<configpb::ModelWarmup> samples;
  bool known = true;
  for (const auto& in : config.input())
    for (int64_t d : (in.has_reshape() ? in.dims() : in.dims())) known &= d >= 0;
  if (!known) return samples;
  // Every batch size requests will run at (the buckets), so none is planned on a request.
  std::vector<uint32_t> sizes = {1};
  if (config.max_batch_size() > 0) {
    sizes.clear();
    for (int64_t b : buckets) sizes.push_back(static_cast<uint32_t>(b));
  }
  for (uint32_t b : sizes) {
    configpb::ModelWarmup w;
    w.set_name("zeros_b" + std::to_string(b));
    w.set_batch_size(b);
    for (const auto& in : config.input()) {
      configpb::ModelWarmup::Input wi;
      wi.set_data_type(in.data_type());
      *wi.mutable_dims() = in.dims();
      wi.set_zero_data(true);
      (*w.mutable_inputs())[in.name()] = wi;
    }
    samples.push_back(std::move(w));
  }
  return samples;
}

// The inputs of sample `w`; `seed` numbers the random inputs across samples.
Result<std::vector<NamedValue>> WarmupInputs(const configpb::ModelWarmup& w, const ModelConfig& config,
                                             const std::string& model_dir, uint32_t& seed) {
  const bool batching = config.max_batch_size() > 0;
  std::vector<NamedValue> inputs;
  for (const auto& [name, in] : w.inputs()) {
    Shape shape;
    if (batching) shape.push_back(w.batch_size());
    for (int64_t d : in.dims()) shape.push_back(d);
    // Feed the model's shape when the config reshapes the input.
    for (const auto& ci : config.input()) {
      if (ci.name() == name && ci.has_reshape()) {
        Shape r;
        if (batching) r.push_back(w.batch_size());
        for (int64_t d : ci.reshape().shape()) r.push_back(d);
        shape = r;
      }
    }
    auto t = WarmupTensor(model_dir, name, in, FromConfigDataType(in.data_type()), shape, seed++);
    if (!t.ok()) return t.status();
    inputs.emplace_back(name, std::move(t).value());
  }
  return inputs;
}

}  // namespace

Result<std::optional<std::chrono::nanoseconds>> RunModelWarmup(const Session& session, const ModelConfig& config,
                                                               const std::string& model_dir,
                                                               const std::vector<int64_t>& buckets,
                                                               const std::vector<std::string>& output_names) {
  std::vector<configpb::ModelWarmup> samples(config.model_warmup().begin(), config.model_warmup().end());
  if (samples.empty()) samples = DefaultWarmupSamples(config, buckets);
  std::optional<std::chrono::nanoseconds> first_run;
  uint32_t seed = 1;
  for (const auto& w : samples) {
    auto inputs = WarmupInputs(w, config, model_dir, seed);
    if (!inputs.ok()) return inputs.status();
    const uint32_t count = std::max<uint32_t>(1, w.count());
    for (uint32_t i = 0; i < count; ++i) {
      const auto t0 = Clock::now();
      auto r = session.Run(*inputs, RunOptions{output_names});
      if (!r.ok()) return Status(r.status().code(), "sample '" + w.name() + "': " + r.status().message());
      // The first sample's last run seeds the execution-time average (the first run plans).
      if (!first_run && i + 1 == count) first_run = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0);
    }
  }
  return first_run;
}

}  // namespace inferloop::serve
