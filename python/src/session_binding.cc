// inferloop._inferloop.Session: the engine session behind inferloop.InferenceSession
// (python/inferloop/__init__.py holds the ONNX Runtime-shaped API around it).
//
// Runs release the GIL, so Python threads sharing one session run in parallel (Session::Run is
// thread-safe). close() drops the engine session; a run in flight keeps it alive until it ends,
// and later calls raise Fail("session is closed").
//
// Profiling (SessionOptions.enable_profiling): each profiled run records its node timings into its
// own vector (RunOptions::profile), then adds them to the session's RunProfile under a mutex, with
// the calling thread's native id as the trace's tid; end_profiling writes the Chrome trace
// (ONNX Runtime's profile format, tools/run_profile.h) and stops profiling.
#include <nanobind/stl/string.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bindings.h"
#include "errors.h"
#include "inferloop/session.h"
#include "numpy_convert.h"
#include "tools/run_profile.h"

namespace inferloop::py {
namespace {

// ONNX Runtime's type string: "tensor(float)", "seq(tensor(int64))", "optional(tensor(float))".
std::string OrtTypeString(const ValueInfo& vi) {
  std::string elem = DataTypeName(vi.dtype);
  if (vi.dtype == DataType::kFloat) elem = "float";
  if (vi.dtype == DataType::kDouble) elem = "double";
  const std::string tensor = "tensor(" + elem + ")";
  switch (vi.kind) {
    case ValueInfo::Kind::kTensor: return tensor;
    case ValueInfo::Kind::kSequence: return "seq(" + tensor + ")";
    case ValueInfo::Kind::kOptional: return "optional(" + tensor + ")";
    case ValueInfo::Kind::kMap: return "map";
    default: return "unknown";
  }
}

// (name, type, shape) with ONNX Runtime's shape: ints for fixed dims, str for symbolic ones,
// None for unknown ones; [] when the rank is unknown or the value is not a tensor.
nb::tuple DescribeValue(const ValueInfo& vi) {
  nb::list shape;
  if (vi.has_shape && (vi.kind == ValueInfo::Kind::kTensor || vi.kind == ValueInfo::Kind::kOptional))
    for (const Dim& d : vi.shape) {
      if (d.value >= 0) shape.append(d.value);
      else if (!d.symbol.empty()) shape.append(d.symbol);
      else shape.append(nb::none());
    }
  return nb::make_tuple(vi.name, OrtTypeString(vi), shape);
}

class PySession {
 public:
  PySession(nb::handle model, int intra_op_threads, int optimization_level, bool enable_memory_arena,
            const std::string& precision, const std::string& external_data_dir, bool enable_profiling)
      : profiling_(enable_profiling) {
    SessionOptions opts;
    opts.intra_op_threads = intra_op_threads;
    opts.optimization_level = optimization_level;
    opts.enable_memory_arena = enable_memory_arena;
    opts.external_data_dir = external_data_dir;
    if (!precision.empty()) opts.precision = ValueOrThrow(ParsePrecision(precision));
    Result<std::unique_ptr<Session>> created = Status::Internal("not created");
    if (PyUnicode_Check(model.ptr())) {
      const std::string path = nb::cast<std::string>(model);
      nb::gil_scoped_release nogil;
      created = Session::CreateFromFile(path, opts);
    } else if (PyBytes_Check(model.ptr())) {
      const char* data = PyBytes_AS_STRING(model.ptr());  // immutable; `model` is referenced by the caller
      const size_t size = static_cast<size_t>(PyBytes_GET_SIZE(model.ptr()));
      nb::gil_scoped_release nogil;
      created = Session::CreateFromBytes(data, size, opts);
    } else {
      throw nb::type_error("model must be a path (str) or the model's bytes");
    }
    session_ = ValueOrThrow(std::move(created));
  }

  nb::list Describe(bool inputs) const {
    const std::shared_ptr<const Session> s = Live();
    nb::list out;
    for (const ValueInfo& vi : inputs ? s->inputs() : s->outputs()) out.append(DescribeValue(vi));
    return out;
  }

  nb::list Run(nb::handle output_names, nb::handle feeds) {
    const std::shared_ptr<const Session> s = Live();
    RunOptions ro;
    if (!output_names.is_none()) {
      if (PyUnicode_Check(output_names.ptr())) throw nb::type_error("output_names must be a list of str, not a str");
      for (nb::handle n : output_names) {
        if (!PyUnicode_Check(n.ptr())) throw nb::type_error("output_names must be a list of str");
        ro.output_names.push_back(nb::cast<std::string>(n));
      }
    }
    nb::object feed_dict = nb::borrow(feeds);
    if (!PyDict_Check(feeds.ptr())) {
      feed_dict = nb::steal(PyDict_New());
      if (PyDict_Merge(feed_dict.ptr(), feeds.ptr(), 1) != 0) throw nb::python_error();
    }
    FeedHold hold;  // declared before `inputs`: destroyed after them, with the GIL held
    std::vector<NamedValue> inputs;
    const Py_ssize_t n = PyDict_Size(feed_dict.ptr());
    inputs.reserve(static_cast<size_t>(n));
    hold.Reserve(static_cast<size_t>(n));
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(feed_dict.ptr(), &pos, &key, &value)) {
      if (!PyUnicode_Check(key)) throw nb::type_error("input_feed's keys must be input names (str)");
      std::string name = nb::cast<std::string>(nb::handle(key));
      const ValueInfo* declared = nullptr;
      for (const ValueInfo& vi : s->inputs())
        if (vi.name == name) declared = &vi;
      Value v = FeedToValue(value, name, declared, token_, hold, counts_);
      inputs.emplace_back(std::move(name), std::move(v));
    }
    std::vector<NodeTiming> timings;  // this run's own: runs on other threads record into theirs
    const int thread = static_cast<int>(PyThread_get_thread_native_id());
    if (profiling_.load()) ro.profile = &timings;
    Result<std::vector<NamedValue>> r = Status::Internal("not run");
    {
      nb::gil_scoped_release nogil;
      r = s->Run(inputs, ro);
      if (ro.profile && r.ok()) {
        std::lock_guard<std::mutex> lock(profile_mu_);
        if (profiling_.load()) profile_.AddRun(timings, thread);
      }
    }
    std::vector<NamedValue> outputs = ValueOrThrow(std::move(r));
    nb::list result;
    for (NamedValue& nv : outputs) result.append(ValueToPython(std::move(nv.second), hold, counts_));
    return result;
  }

  // Writes the runs profiled so far to `path` as a Chrome trace and stops profiling; false (and
  // nothing written) when profiling is off (never enabled, or already ended).
  bool EndProfiling(const std::string& path) {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(profile_mu_);
    if (!profiling_.load()) return false;
    ThrowIfError(profile_.WriteChromeTrace(path));
    profiling_.store(false);
    profile_ = RunProfile();
    return true;
  }
  bool profiling() const { return profiling_.load(); }

  void Close() { session_.reset(); }
  bool closed() const { return session_ == nullptr; }
  int intra_op_threads() const { return Live()->intra_op_threads(); }
  std::string precision() const { return PrecisionName(Live()->precision()); }
  nb::dict create_timings() const {
    const SessionCreateTimings& t = Live()->create_timings();
    nb::dict d;
    d["load_ms"] = t.load_ms;
    d["optimize_ms"] = t.optimize_ms;
    d["plan_ms"] = t.plan_ms;
    d["total_ms"] = t.total_ms;
    return d;
  }
  nb::dict copy_counts() const {
    nb::dict d;
    d["inputs_viewed"] = counts_.inputs_viewed.load();
    d["inputs_copied"] = counts_.inputs_copied.load();
    d["outputs_wrapped"] = counts_.outputs_wrapped.load();
    d["outputs_copied"] = counts_.outputs_copied.load();
    return d;
  }

 private:
  // The engine session, or Fail when closed. The copy keeps it alive through a run that
  // releases the GIL even if another thread closes it meanwhile.
  std::shared_ptr<const Session> Live() const {
    if (!session_) throw StatusError(Status::FailedPrecondition("the session is closed"));
    return session_;
  }

  std::shared_ptr<const Session> session_;
  // Keep-alive of the feeds' views: the arrays themselves are held by the run's FeedHold.
  std::shared_ptr<void> token_{static_cast<void*>(nullptr), [](void*) {}};
  CopyCounts counts_;
  std::atomic<bool> profiling_;
  std::mutex profile_mu_;  // guards profile_
  RunProfile profile_;
};

}  // namespace

void RegisterSession(nb::module_& m) {
  nb::class_<PySession>(m, "Session", "An engine session (inferloop.InferenceSession wraps it).")
      .def(nb::init<nb::handle, int, int, bool, const std::string&, const std::string&, bool>(), nb::arg("model"),
           nb::arg("intra_op_threads") = 0, nb::arg("optimization_level") = 2, nb::arg("enable_memory_arena") = true,
           nb::arg("precision") = "", nb::arg("external_data_dir") = "", nb::arg("enable_profiling") = false)
      .def("inputs", [](const PySession& s) { return s.Describe(true); }, "[(name, type, shape)] of the inputs to feed")
      .def("outputs", [](const PySession& s) { return s.Describe(false); }, "[(name, type, shape)] of the outputs")
      .def("run", &PySession::Run, nb::arg("output_names").none(), nb::arg("input_feed"),
           "Runs the model (GIL released); returns the outputs as a list")
      .def("end_profiling", &PySession::EndProfiling, nb::arg("path"),
           "Writes the profiled runs to path (Chrome trace, ONNX Runtime's format) and stops profiling; "
           "False when profiling is off")
      .def_prop_ro("profiling", &PySession::profiling)
      .def("close", &PySession::Close, "Frees the engine session; later calls raise Fail")
      .def_prop_ro("closed", &PySession::closed)
      .def_prop_ro("intra_op_threads", &PySession::intra_op_threads)
      .def_prop_ro("precision", &PySession::precision)
      .def("create_timings", &PySession::create_timings, "Session creation time by phase (ms)")
      .def("copy_counts", &PySession::copy_counts,
           "Feeds viewed / copied and outputs wrapped / copied so far (numpy without copies: docs)");
}

}  // namespace inferloop::py
