// numpy arrays <-> engine values (numpy_convert.h).
#include "numpy_convert.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <bit>
#include <cstdint>
#include <string>

#include "errors.h"

namespace inferloop::py {
namespace {

static_assert(std::endian::native == std::endian::little, "buffer formats are read as little-endian");

// numpy.ndarray, imported on first use and kept for the life of the process.
PyObject* NdarrayType() {
  static PyObject* type = nb::object(nb::module_::import_("numpy").attr("ndarray")).release().ptr();
  return type;
}

nb::object Numpy(const char* name) { return nb::module_::import_("numpy").attr(name); }

// The engine type of a buffer's elements (a PEP 3118 format as numpy writes it), or kUndefined
// for anything else (strings, objects, complex numbers, other byte orders).
DataType FormatToType(const char* fmt, Py_ssize_t itemsize) {
  if (!fmt) fmt = "B";
  if (*fmt == '@' || *fmt == '=' || *fmt == '<') ++fmt;
  if (fmt[0] == '\0' || fmt[1] != '\0') return DataType::kUndefined;
  const char c = fmt[0];
  if (c == '?') return itemsize == 1 ? DataType::kBool : DataType::kUndefined;
  if (c == 'e') return DataType::kFloat16;
  if (c == 'f') return DataType::kFloat;
  if (c == 'd') return DataType::kDouble;
  const bool is_signed = c == 'b' || c == 'h' || c == 'i' || c == 'l' || c == 'q';
  const bool is_unsigned = c == 'B' || c == 'H' || c == 'I' || c == 'L' || c == 'Q';
  if (!is_signed && !is_unsigned) return DataType::kUndefined;
  switch (itemsize) {
    case 1: return is_signed ? DataType::kInt8 : DataType::kUInt8;
    case 2: return is_signed ? DataType::kInt16 : DataType::kUInt16;
    case 4: return is_signed ? DataType::kInt32 : DataType::kUInt32;
    case 8: return is_signed ? DataType::kInt64 : DataType::kUInt64;
    default: return DataType::kUndefined;
  }
}

// str(obj) as UTF-8.
std::string Str(nb::handle obj) {
  nb::object s = nb::steal(PyObject_Str(obj.ptr()));
  if (!s.is_valid()) throw nb::python_error();
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(s.ptr(), &n);
  if (!p) throw nb::python_error();
  return std::string(p, static_cast<size_t>(n));
}

std::string Describe(nb::handle obj) { return Str(obj.type().attr("__name__")); }

[[noreturn]] void Invalid(const std::string& message) { throw StatusError(Status::InvalidArgument(message)); }

// A numpy array of str / bytes / objects as a STRING tensor (always a copy).
Tensor StringTensor(nb::handle array, const std::string& name) {
  Shape shape;
  for (nb::handle d : nb::tuple(array.attr("shape"))) shape.push_back(nb::cast<int64_t>(d));
  std::vector<std::string> values;
  for (nb::handle item : nb::list(array.attr("ravel")().attr("tolist")())) {
    if (PyUnicode_Check(item.ptr())) {
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(item.ptr(), &n);
      if (!s) throw nb::python_error();
      values.emplace_back(s, static_cast<size_t>(n));
    } else if (PyBytes_Check(item.ptr())) {
      values.emplace_back(PyBytes_AS_STRING(item.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(item.ptr())));
    } else {
      Invalid("input '" + name + "': a string tensor's elements must be str or bytes, got " + Describe(item));
    }
  }
  return Tensor::FromStrings(std::move(shape), std::move(values));
}

// A numpy array (or subclass) as a tensor: a view when it is C-contiguous and aligned, else a copy.
// `converted`: the array is already a copy made here (counted as such by the caller).
Tensor ArrayToTensor(nb::handle array, const std::string& name, const std::shared_ptr<void>& token, FeedHold& hold,
                     CopyCounts& counts, bool converted) {
  Py_buffer view;
  if (PyObject_GetBuffer(array.ptr(), &view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();  // numpy exports no buffer for some dtypes (e.g. datetime); strings are read below
    view.obj = nullptr;
  }
  const DataType dtype = view.obj ? FormatToType(view.format, view.itemsize) : DataType::kUndefined;
  if (dtype == DataType::kUndefined) {
    if (view.obj) PyBuffer_Release(&view);
    const std::string kind = Str(array.attr("dtype").attr("kind"));
    if (kind == "U" || kind == "S" || kind == "O") {
      if (!converted) ++counts.inputs_copied;
      return StringTensor(array, name);
    }
    Invalid("input '" + name + "': numpy dtype " + Str(array.attr("dtype")) +
            " has no ONNX tensor type here (use bool, (u)int8..64, float16, float32, float64 or str)");
  }
  Shape shape(view.shape, view.shape + view.ndim);
  const bool aligned = reinterpret_cast<uintptr_t>(view.buf) % static_cast<uintptr_t>(view.itemsize) == 0;
  if (aligned && PyBuffer_IsContiguous(&view, 'C')) {
    Tensor t = Tensor::View(dtype, std::move(shape), view.buf, token);
    hold.Keep(view);
    if (!converted) ++counts.inputs_viewed;
    return t;
  }
  // numpy's own strided copy (much faster than PyBuffer_ToContiguous's element-wise one), into a
  // new, aligned array.
  PyBuffer_Release(&view);
  if (converted) Invalid("input '" + name + "': numpy.array gave a non-contiguous array");
  nb::object copy = Numpy("array")(array, nb::arg("order") = "C");
  hold.Keep(copy);
  ++counts.inputs_copied;
  return ArrayToTensor(copy, name, token, hold, counts, true);
}

Tensor FeedToTensor(nb::handle obj, const ValueInfo* declared, const std::string& name,
                    const std::shared_ptr<void>& token, FeedHold& hold, CopyCounts& counts) {
  if (PyObject_IsInstance(obj.ptr(), NdarrayType()) == 1) return ArrayToTensor(obj, name, token, hold, counts, false);
  // A list, a scalar, anything numpy.array takes: converted to the declared dtype (as ORT does).
  nb::object array;
  const char* dtype = declared ? NumpyDtypeName(declared->dtype) : nullptr;
  try {
    if (declared && declared->dtype == DataType::kString) array = Numpy("array")(obj, "object", nb::arg("order") = "C");
    else if (dtype) array = Numpy("array")(obj, dtype, nb::arg("order") = "C");
    else array = Numpy("array")(obj, nb::arg("order") = "C");
  } catch (nb::python_error& e) {
    Invalid("input '" + name + "': a " + Describe(obj) + " is not an array (" + e.what() + ")");
  }
  hold.Keep(array);
  ++counts.inputs_copied;
  return ArrayToTensor(array, name, token, hold, counts, true);
}

// The dlpack type numpy reads for an engine type; false when numpy has none.
bool NumpyDlpackType(DataType t, nb::dlpack::dtype& out) {
  using nb::dlpack::dtype_code;
  auto set = [&](dtype_code code, int bits) {
    out = {static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
    return true;
  };
  switch (t) {
    case DataType::kBool: return set(dtype_code::Bool, 8);
    case DataType::kInt8: case DataType::kInt4: case DataType::kInt2: return set(dtype_code::Int, 8);
    case DataType::kUInt8: case DataType::kUInt4: case DataType::kUInt2: return set(dtype_code::UInt, 8);
    case DataType::kInt16: return set(dtype_code::Int, 16);
    case DataType::kUInt16: return set(dtype_code::UInt, 16);
    case DataType::kInt32: return set(dtype_code::Int, 32);
    case DataType::kUInt32: return set(dtype_code::UInt, 32);
    case DataType::kInt64: return set(dtype_code::Int, 64);
    case DataType::kUInt64: return set(dtype_code::UInt, 64);
    case DataType::kFloat16: return set(dtype_code::Float, 16);
    case DataType::kFloat: return set(dtype_code::Float, 32);
    case DataType::kDouble: return set(dtype_code::Float, 64);
    default: return false;
  }
}

nb::object TensorToNumpy(Tensor t, const FeedHold& hold, CopyCounts& counts) {
  nb::list shape_list;
  if (t.dtype() == DataType::kString) {
    for (int64_t d : t.shape()) shape_list.append(d);
    nb::list items;
    for (int64_t i = 0; i < t.size(); ++i) {
      const std::string& s = t.strings()[i];
      PyObject* u = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
      if (!u) throw nb::python_error();
      items.append(nb::steal(u));
    }
    ++counts.outputs_copied;
    return Numpy("array")(items, "object").attr("reshape")(nb::tuple(shape_list));
  }
  nb::dlpack::dtype dt;
  if (!NumpyDlpackType(t.dtype(), dt))
    throw StatusError(Status::Unimplemented(std::string("an output of type ") + DataTypeName(t.dtype()) +
                                            ": numpy has no such dtype"));
  if (t.size() == 0 || t.raw_data() == nullptr) {
    for (int64_t d : t.shape()) shape_list.append(d);
    ++counts.outputs_copied;
    return Numpy("empty")(nb::tuple(shape_list), NumpyDtypeName(t.dtype()));
  }
  if (t.buffer_use_count() == 1 && !hold.Overlaps(t.raw_data(), t.nbytes())) {
    ++counts.outputs_wrapped;
  } else {  // shared with the session (a constant), another output or a feed: the caller gets a copy
    t = t.Clone();
    ++counts.outputs_copied;
  }
  size_t shape[Shape::kInlineRank];
  std::vector<size_t> big_shape;
  size_t* dims = shape;
  if (t.shape().size() > Shape::kInlineRank) {
    big_shape.resize(t.shape().size());
    dims = big_shape.data();
  }
  for (size_t i = 0; i < t.shape().size(); ++i) dims[i] = static_cast<size_t>(t.shape()[i]);
  auto* owned = new Tensor(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  return nb::ndarray<nb::numpy>(owned->raw_data(), owned->shape().size(), dims, owner, nullptr, dt).cast();
}

}  // namespace

FeedHold::~FeedHold() {
  for (Py_buffer& v : views_) PyBuffer_Release(&v);
}

bool FeedHold::Overlaps(const void* p, size_t n) const {
  const auto* a = static_cast<const char*>(p);
  for (const Py_buffer& v : views_) {
    const auto* b = static_cast<const char*>(v.buf);
    if (a < b + v.len && b < a + n) return true;
  }
  return false;
}

const char* NumpyDtypeName(DataType t) {
  switch (t) {
    case DataType::kBool: return "bool";
    case DataType::kInt8: return "int8";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt16: return "int16";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt32: return "int32";
    case DataType::kUInt32: return "uint32";
    case DataType::kInt64: return "int64";
    case DataType::kUInt64: return "uint64";
    case DataType::kFloat16: return "float16";
    case DataType::kFloat: return "float32";
    case DataType::kDouble: return "float64";
    case DataType::kInt4: case DataType::kInt2: return "int8";
    case DataType::kUInt4: case DataType::kUInt2: return "uint8";
    default: return nullptr;
  }
}

Value FeedToValue(nb::handle obj, const std::string& name, const ValueInfo* declared, const std::shared_ptr<void>& token,
                  FeedHold& hold, CopyCounts& counts) {
  if (obj.is_none()) return Value::None();  // an absent optional (the engine checks that it may be)
  // A sequence input, or an optional one given a list of arrays (ValueInfo does not say whether
  // an optional holds a tensor or a sequence; a tensor is never written as a list of arrays).
  const bool is_list = PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr());
  bool list_of_arrays = is_list && declared && declared->kind == ValueInfo::Kind::kOptional;
  if (list_of_arrays)
    for (nb::handle item : obj) list_of_arrays = list_of_arrays && PyObject_IsInstance(item.ptr(), NdarrayType()) == 1;
  if (declared && (declared->kind == ValueInfo::Kind::kSequence || list_of_arrays)) {
    if (!is_list)
      Invalid("input '" + name + "' is a sequence: pass a list of arrays, got " + Describe(obj));
    std::vector<Tensor> elems;
    for (nb::handle item : obj) elems.push_back(FeedToTensor(item, declared, name, token, hold, counts));
    return Value::MakeSequence(std::move(elems), declared->dtype);
  }
  return Value(FeedToTensor(obj, declared, name, token, hold, counts));
}

nb::object ValueToPython(Value v, const FeedHold& hold, CopyCounts& counts) {
  if (v.is_none()) return nb::none();
  if (v.is_sequence()) {
    nb::list items;
    for (const Tensor& t : v.sequence()) items.append(TensorToNumpy(t, hold, counts));
    return items;
  }
  return TensorToNumpy(std::move(v.tensor()), hold, counts);
}

}  // namespace inferloop::py
