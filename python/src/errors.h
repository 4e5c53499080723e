// Engine errors as Python exceptions. A Status becomes an exception whose message is the
// engine's (Status::ToString(): "INVALID_ARGUMENT: input 'x' expects dtype float, got double"),
// of a type chosen by the status code; every type subclasses inferloop.InferloopError, itself
// a RuntimeError:
//   kInvalidArgument -> InvalidArgument, kNotFound -> NoSuchFile,
//   kUnimplemented -> NotImplemented, any other code -> Fail
// (the names onnxruntime.capi.onnxruntime_pybind11_state uses).
#pragma once

#include <stdexcept>
#include <string>

#include "inferloop/status.h"

namespace inferloop::py {

// Thrown from binding code; the translator registered by RegisterErrors raises the Python type.
class StatusError : public std::runtime_error {
 public:
  explicit StatusError(Status st) : std::runtime_error(st.ToString()), code_(st.code()) {}
  StatusCode code() const { return code_; }

 private:
  StatusCode code_;
};

// Throws StatusError(st) when st is not OK.
inline void ThrowIfError(const Status& st) {
  if (!st.ok()) throw StatusError(st);
}

template <typename T>
T ValueOrThrow(Result<T> r) {
  if (!r.ok()) throw StatusError(r.status());
  return std::move(r).value();
}

}  // namespace inferloop::py
