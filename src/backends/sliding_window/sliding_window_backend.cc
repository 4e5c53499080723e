#include "backends/sliding_window/sliding_window_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <future>
#include <limits>

#include "backends/processing/processing_params.h"
#include "backends/processing/processing_version.h"
#include "base/status_macros.h"
#include "imaging/sliding_window.h"

namespace inferloop::backends {
namespace {

struct SlidingWindowOptions {
  std::string input, output;
  std::string model;
  int64_t model_version = 0;
  std::string model_input, model_output;
  imaging::Size3 roi{};
  int channel = -1;
  double overlap = 0.25;
  imaging::BlendMode blend = imaging::BlendMode::kConstant;
  double sigma_scale = 0.125;
  int window_batch = 4;
  size_t calls_in_flight = 2;
  double offset = 40, divisor = 100, clip = 5;
};

using AnswerFuture = std::future<Result<serve::InferResponse>>;

// Sends a window request to the model's serving version (serve::InferOnServingVersion: looked up
// again when it is draining); the answer comes through the future. A model that cannot be found
// (or kept being replaced) is Unavailable, naming it.
Result<AnswerFuture> SendToModel(serve::ModelResolver& models, const SlidingWindowOptions& o, serve::InferRequest&& request) {
  auto answer = std::make_shared<std::promise<Result<serve::InferResponse>>>();
  AnswerFuture future = answer->get_future();
  Status sent = serve::InferOnServingVersion(
      models, o.model, o.model_version, std::move(request), serve::RequestContext{},
      [answer](Result<serve::InferResponse> r) { answer->set_value(std::move(r)); });
  if (!sent.ok()) return Status::Unavailable("model '" + o.model + "' is not available: " + sent.message());
  return future;
}

struct WindowCall {
  size_t first = 0, count = 0;
  AnswerFuture answer;
};

class SlidingWindowProcessor final : public Processor {
 public:
  SlidingWindowProcessor(SlidingWindowOptions o, serve::ModelResolver* models) : o_(std::move(o)), models_(models) {}
  std::vector<std::string> Dependencies() const override { return {o_.model}; }

  Result<std::vector<serve::InferOutput>> Process(const serve::InferRequest& request) override {
    const Tensor* in = nullptr;
    for (const auto& i : request.inputs)
      if (i.name == o_.input) in = &i.tensor;
    if (in == nullptr) return Status::InvalidArgument("input '" + o_.input + "' is missing");
    if (in->dtype() != DataType::kFloat || in->rank() != 4 || in->dim(0) != 1 || in->size() == 0)
      return Status::InvalidArgument("input '" + o_.input + "' must be FP32 [1, Z, Y, X] with Z, Y, X >= 1");
    const imaging::Size3 size{static_cast<int>(in->dim(1)), static_cast<int>(in->dim(2)), static_cast<int>(in->dim(3))};
    const std::vector<float> volume = Normalised(*in);
    IL_ASSIGN_OR_RETURN(imaging::SlidingWindowPlan plan, imaging::PlanSlidingWindows(size, o_.roi, o_.overlap));
    IL_ASSIGN_OR_RETURN(imaging::SlidingWindowBlender blender,
                        imaging::SlidingWindowBlender::Create(plan, 1, o_.blend, o_.sigma_scale));
    const size_t windows = plan.origins.size();
    const size_t calls = (windows + o_.window_batch - 1) / o_.window_batch;
    std::deque<WindowCall> in_flight;
    for (size_t next = 0; next < windows || !in_flight.empty();) {
      while (next < windows && in_flight.size() < o_.calls_in_flight) {
        const size_t count = std::min<size_t>(o_.window_batch, windows - next);
        IL_ASSIGN_OR_RETURN(serve::InferRequest call, WindowRequest(volume, plan, next, count));
        auto sent = SendToModel(*models_, o_, std::move(call));
        if (!sent.ok()) return WindowError(plan, next, count, calls, sent.status());
        in_flight.push_back({next, count, std::move(sent).value()});
        next += count;
      }
      WindowCall call = std::move(in_flight.front());
      in_flight.pop_front();
      Result<serve::InferResponse> answer = call.answer.get();
      if (!answer.ok()) return WindowError(plan, call.first, call.count, calls, answer.status());
      if (Status st = Accumulate(*answer, call.first, call.count, blender); !st.ok())
        return WindowError(plan, call.first, call.count, calls, st);
    }
    IL_ASSIGN_OR_RETURN(std::vector<float> blended, blender.Finish());
    Tensor out = Tensor::FromVector<float>(DataType::kFloat, in->shape(), blended);
    serve::InferParameters cost{{"windows", static_cast<int64_t>(windows)}, {"model_calls", static_cast<int64_t>(calls)}};
    std::vector<serve::InferOutput> outs;
    outs.push_back({o_.output, std::move(out), std::move(cost)});
    return outs;
  }

 private:
  std::vector<float> Normalised(const Tensor& in) const {
    std::vector<float> v(in.data<float>(), in.data<float>() + in.size());
    const double lo = o_.clip > 0 ? -o_.clip : -std::numeric_limits<double>::infinity();
    const double hi = o_.clip > 0 ? o_.clip : std::numeric_limits<double>::infinity();
    for (float& x : v) x = static_cast<float>(std::clamp((x - o_.offset) / o_.divisor, lo, hi));
    return v;
  }

  // Windows [first, first + count) as one model request [count, 1, rz, ry, rx].
  Result<serve::InferRequest> WindowRequest(const std::vector<float>& volume, const imaging::SlidingWindowPlan& plan,
                                            size_t first, size_t count) const {
    const size_t per = static_cast<size_t>(o_.roi[0]) * o_.roi[1] * o_.roi[2];
    IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(DataType::kFloat, {static_cast<int64_t>(count), 1, o_.roi[0],
                                                                     o_.roi[1], o_.roi[2]}));
    for (size_t k = 0; k < count; ++k) {
      IL_ASSIGN_OR_RETURN(std::vector<float> w, imaging::ExtractWindow(volume, 1, plan, first + k));
      std::memcpy(t.data<float>() + k * per, w.data(), per * sizeof(float));
    }
    serve::InferRequest r;
    r.model_name = o_.model;
    r.inputs.push_back({o_.model_input, std::move(t), {}});
    r.outputs.push_back({o_.model_output, {}, {}});
    return r;
  }

  // The model's answer for windows [first, first + count) into the blender.
  Status Accumulate(const serve::InferResponse& answer, size_t first, size_t count,
                    imaging::SlidingWindowBlender& blender) const {
    const Tensor* t = nullptr;
    for (const auto& o : answer.outputs)
      if (o.name == o_.model_output) t = &o.tensor;
    if (t == nullptr) return Status::Internal("the answer has no output '" + o_.model_output + "'");
    const Shape roi{o_.roi[0], o_.roi[1], o_.roi[2]};
    const Shape& s = t->shape();
    const bool shaped = (s.size() == 5 && std::equal(s.begin() + 2, s.end(), roi.begin())) ||
                        (s.size() == 4 && std::equal(s.begin() + 1, s.end(), roi.begin()));
    if (t->dtype() != DataType::kFloat || !shaped || s[0] != static_cast<int64_t>(count))
      return Status::Internal("output '" + o_.model_output + "' is " + ShapeToString(s) + ", expected FP32 [" +
                              std::to_string(count) + ", C, " + std::to_string(o_.roi[0]) + ", " +
                              std::to_string(o_.roi[1]) + ", " + std::to_string(o_.roi[2]) + "]");
    const int64_t channels = s.size() == 5 ? s[1] : 1;
    const int64_t channel = o_.channel < 0 ? channels + o_.channel : o_.channel;
    if (channel < 0 || channel >= channels)
      return Status::Internal("parameter 'channel' is " + std::to_string(o_.channel) + " but output '" +
                              o_.model_output + "' has " + std::to_string(channels) + " channels");
    const size_t per = static_cast<size_t>(o_.roi[0]) * o_.roi[1] * o_.roi[2];
    for (size_t k = 0; k < count; ++k) {
      const float* p = t->data<float>() + (k * channels + channel) * per;
      IL_RETURN_IF_ERROR(blender.Accumulate(first + k, std::vector<float>(p, p + per)));
    }
    return Status::Ok();
  }

  Status WindowError(const imaging::SlidingWindowPlan& plan, size_t first, size_t count, size_t calls,
                     const Status& st) const {
    const imaging::Size3& at = plan.origins[first];
    return Status(st.code(), "windows " + std::to_string(first) + ".." + std::to_string(first + count - 1) + " of " +
                                 std::to_string(plan.origins.size()) + " (call " +
                                 std::to_string(first / o_.window_batch + 1) + " of " + std::to_string(calls) +
                                 ", first at z,y,x " + std::to_string(at[0]) + "," + std::to_string(at[1]) + "," +
                                 std::to_string(at[2]) + "): model '" + o_.model + "': " + st.message());
  }

  const SlidingWindowOptions o_;
  serve::ModelResolver* const models_;
};

Result<int64_t> ParamCount(const serve::ModelConfig& c, const std::string& key, double fallback, double min) {
  IL_ASSIGN_OR_RETURN(double v, ParamNumber(c, key, fallback));
  if (v != std::floor(v) || v < min || v > 1e9)
    return Status::InvalidArgument("parameter '" + key + "' must be an integer >= " + std::to_string(int64_t(min)));
  return static_cast<int64_t>(v);
}

Status ReadNumbers(const serve::ModelConfig& c, SlidingWindowOptions& o) {
  IL_ASSIGN_OR_RETURN(o.overlap, ParamNumber(c, "overlap", 0.25));
  if (o.overlap < 0 || o.overlap >= 1) return Status::InvalidArgument("parameter 'overlap' must be in [0, 1)");
  IL_ASSIGN_OR_RETURN(std::string blend, ParamChoice(c, "blend", {"constant", "gaussian"}, "constant"));
  o.blend = blend == "gaussian" ? imaging::BlendMode::kGaussian : imaging::BlendMode::kConstant;
  IL_ASSIGN_OR_RETURN(o.sigma_scale, ParamNumber(c, "sigma_scale", 0.125));
  if (o.sigma_scale <= 0) return Status::InvalidArgument("parameter 'sigma_scale' must be positive");
  IL_ASSIGN_OR_RETURN(int64_t batch, ParamCount(c, "window_batch", 4, 1));
  o.window_batch = static_cast<int>(batch);
  IL_ASSIGN_OR_RETURN(int64_t flight, ParamCount(c, "max_calls_in_flight", 2, 1));
  o.calls_in_flight = static_cast<size_t>(flight);
  IL_ASSIGN_OR_RETURN(int64_t version, ParamCount(c, "model_version", 0, 0));
  o.model_version = version;
  IL_ASSIGN_OR_RETURN(double channel, ParamNumber(c, "channel", -1));
  if (channel != std::floor(channel) || std::abs(channel) > 1e6)
    return Status::InvalidArgument("parameter 'channel' must be an integer (negative: from the last)");
  o.channel = static_cast<int>(channel);
  IL_ASSIGN_OR_RETURN(o.offset, ParamNumber(c, "offset", 40));
  IL_ASSIGN_OR_RETURN(o.divisor, ParamNumber(c, "divisor", 100));
  if (o.divisor == 0) return Status::InvalidArgument("parameter 'divisor' must not be 0");
  IL_ASSIGN_OR_RETURN(o.clip, ParamNumber(c, "clip", 5));
  if (o.clip < 0) return Status::InvalidArgument("parameter 'clip' must be >= 0 (0: no clipping)");
  if (c.parameters().count("roi_size")) {
    IL_ASSIGN_OR_RETURN(std::vector<double> roi, ParamNumbers(c, "roi_size", {}));
    bool fine = roi.size() == 3;
    for (size_t i = 0; fine && i < 3; ++i) fine = roi[i] >= 1 && roi[i] <= 4096 && roi[i] == std::floor(roi[i]);
    if (!fine) return Status::InvalidArgument("parameter 'roi_size' must be three positive integers \"z,y,x\"");
    o.roi = {static_cast<int>(roi[0]), static_cast<int>(roi[1]), static_cast<int>(roi[2])};
  }
  return Status::Ok();
}

// Completes the options from the model's config: tensor names, roi, the batch cap.
Status ReadModel(const serve::ModelConfig& m, SlidingWindowOptions& o) {
  const std::string what = "model '" + o.model + "'";
  if (o.model_input.empty()) {
    if (m.input_size() != 1) return Status::InvalidArgument(what + " has several inputs: set parameter 'model_input'");
    o.model_input = m.input(0).name();
  }
  if (o.model_output.empty()) {
    if (m.output_size() != 1) return Status::InvalidArgument(what + " has several outputs: set parameter 'model_output'");
    o.model_output = m.output(0).name();
  }
  const serve::configpb::ModelInput* in = nullptr;
  for (const auto& i : m.input())
    if (i.name() == o.model_input) in = &i;
  if (in == nullptr) return Status::InvalidArgument(what + " has no input '" + o.model_input + "'");
  std::vector<int64_t> dims(in->dims().begin(), in->dims().end());
  if (m.max_batch_size() > 0) dims.insert(dims.begin(), -1);
  if (dims.size() != 5 || (dims[1] != 1 && dims[1] != -1))
    return Status::InvalidArgument(what + " input '" + o.model_input +
                                   "' must be [n, 1, z, y, x] (one channel, with its batch dimension)");
  if (m.max_batch_size() > 0) o.window_batch = std::min<int>(o.window_batch, m.max_batch_size());
  if (dims[0] > 0) o.window_batch = static_cast<int>(std::min<int64_t>(o.window_batch, dims[0]));
  for (int a = 0; a < 3; ++a) {
    const int64_t d = dims[2 + a];
    if (o.roi[a] == 0 && d <= 0)
      return Status::InvalidArgument(what + " input '" + o.model_input + "' has a variable size: set parameter 'roi_size'");
    if (o.roi[a] == 0) o.roi[a] = static_cast<int>(d);
    if (d > 0 && d != o.roi[a])
      return Status::InvalidArgument("parameter 'roi_size' does not match " + what + " input '" + o.model_input +
                                     "' dims");
  }
  return Status::Ok();
}

bool IsVolumeTensor(const google::protobuf::RepeatedField<int64_t>& dims) {
  return dims.size() == 4 && dims[0] == 1 && dims[1] == -1 && dims[2] == -1 && dims[3] == -1;
}

class SlidingWindowBackend final : public serve::ModelBackend {
 public:
  std::string kind() const override { return "sliding_window"; }
  std::string default_model_filename() const override { return ""; }
  bool Serves(const serve::ModelConfig& c, const std::vector<std::string>&) const override {
    return c.platform().empty() && c.backend() == "sliding_window";
  }
  std::vector<std::string> Dependencies(const serve::ModelConfig& c) const override {
    const std::string model = ParamString(c, "model");
    return model.empty() ? std::vector<std::string>{} : std::vector<std::string>{model};
  }
  Result<std::shared_ptr<serve::ModelVersion>> Load(const serve::VersionLoadRequest& r) override {
    const serve::ModelConfig& c = r.partial_config;
    if (c.max_batch_size() != 0)
      return Status::InvalidArgument("sliding_window is not batched (one request is one volume): max_batch_size must be 0");
    if (c.input_size() != 1 || c.input(0).data_type() != serve::configpb::TYPE_FP32 || !IsVolumeTensor(c.input(0).dims()))
      return Status::InvalidArgument("sliding_window takes one input of TYPE_FP32 dims [1, -1, -1, -1] (the volume)");
    if (c.output_size() != 1 || c.output(0).data_type() != serve::configpb::TYPE_FP32 ||
        !IsVolumeTensor(c.output(0).dims()))
      return Status::InvalidArgument("sliding_window has one output of TYPE_FP32 dims [1, -1, -1, -1] (the probability)");
    SlidingWindowOptions o;
    o.input = c.input(0).name();
    o.output = c.output(0).name();
    o.model = ParamString(c, "model");
    if (o.model.empty()) return Status::InvalidArgument("parameter 'model' (the segmentation model's name) is required");
    if (r.models == nullptr) return Status::FailedPrecondition("sliding_window needs the server's models");
    o.model_input = ParamString(c, "model_input");
    o.model_output = ParamString(c, "model_output");
    IL_RETURN_IF_ERROR(ReadNumbers(c, o));
    auto model = r.models->Find(o.model, o.model_version);
    const bool named = o.roi[0] > 0 && !o.model_input.empty() && !o.model_output.empty();
    if (model.ok()) {
      IL_RETURN_IF_ERROR(ReadModel(model.value()->config(), o));
    } else if (!named) {
      return Status::InvalidArgument("parameter 'model': " + model.status().message() +
                                     " (roi_size, model_input and model_output come from it when not given)");
    }
    auto p = std::make_shared<SlidingWindowProcessor>(std::move(o), r.models);
    IL_ASSIGN_OR_RETURN(std::shared_ptr<ProcessingModelVersion> v,
                        ProcessingModelVersion::Create(r, c, std::move(p), "sliding_window"));
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeSlidingWindowBackend() { return std::make_shared<SlidingWindowBackend>(); }

}  // namespace inferloop::backends
