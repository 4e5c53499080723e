// numpy arrays <-> engine values, without copies where the memory layout allows.
//
// In: a C-contiguous, element-aligned numpy array of a dtype the engine has becomes a
// Tensor::View over the array's own buffer (held through the buffer protocol until the run's
// FeedHold is destroyed); anything else (a strided or unaligned array, a list, a scalar) is
// copied into an engine tensor first. Strings (numpy 'U'/'S'/object arrays) are always copied.
// Out: a tensor whose buffer nothing else shares becomes a numpy array over that buffer, owned
// through a capsule that holds the tensor; a tensor that shares its buffer (a constant, another
// output, an input) is copied first, so every returned array is the caller's own, writable.
#pragma once

#include <nanobind/nanobind.h>

#include <atomic>
#include <memory>
#include <vector>

#include "inferloop/session.h"

namespace inferloop::py {

namespace nb = nanobind;

// How many feeds and outputs were viewed or copied (a session's running totals).
struct CopyCounts {
  std::atomic<long> inputs_viewed{0}, inputs_copied{0}, outputs_wrapped{0}, outputs_copied{0};
};

// What keeps the feeds' memory valid during a run. Must be destroyed with the GIL held.
class FeedHold {
 public:
  FeedHold() = default;
  FeedHold(const FeedHold&) = delete;
  FeedHold& operator=(const FeedHold&) = delete;
  ~FeedHold();
  void Reserve(size_t n) { views_.reserve(n); }
  // Takes over a buffer the caller got with PyObject_GetBuffer.
  void Keep(const Py_buffer& view) { views_.push_back(view); }
  void Keep(nb::object o) { objects_.push_back(std::move(o)); }
  // True when [p, p + n) overlaps a buffer held here (an output aliasing a feed).
  bool Overlaps(const void* p, size_t n) const;

 private:
  std::vector<Py_buffer> views_;
  std::vector<nb::object> objects_;
};

// Converts the feed `name`. `declared` is the model's input of that name (nullptr for an unknown
// name: the engine then reports it). `token` is the keep-alive shared by every view (the views' real
// owner is `hold`). Raises InvalidArgument for what cannot be an engine value.
Value FeedToValue(nb::handle obj, const std::string& name, const ValueInfo* declared, const std::shared_ptr<void>& token,
                  FeedHold& hold, CopyCounts& counts);

// Converts one output: a numpy array, a list of arrays (a sequence), or None (an absent optional).
nb::object ValueToPython(Value v, const FeedHold& hold, CopyCounts& counts);

// numpy's name of the dtype for an engine type ("float32", "int64", ...), or nullptr if numpy has none.
const char* NumpyDtypeName(DataType t);

}  // namespace inferloop::py
