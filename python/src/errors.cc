// Python exception types for engine errors (errors.h).
#include "errors.h"

#include "bindings.h"

namespace inferloop::py {
namespace {

// The exception types, created once when the module is imported. They live as long as the
// interpreter (the module keeps a reference too), so the translator may use them freely.
struct ErrorTypes {
  PyObject* base = nullptr;
  PyObject* invalid_argument = nullptr;
  PyObject* no_such_file = nullptr;
  PyObject* not_implemented = nullptr;
  PyObject* fail = nullptr;

  PyObject* ForCode(StatusCode code) const {
    switch (code) {
      case StatusCode::kInvalidArgument: return invalid_argument;
      case StatusCode::kNotFound: return no_such_file;
      case StatusCode::kUnimplemented: return not_implemented;
      default: return fail;
    }
  }
};

PyObject* NewType(nb::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string qualified = std::string("inferloop.") + name;
  PyObject* t = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!t) throw nb::python_error();
  m.attr(name) = nb::borrow(t);
  return t;
}

}  // namespace

void RegisterErrors(nb::module_& m) {
  static ErrorTypes types;  // set once per process (the module cannot be imported twice)
  types.base = NewType(m, "InferloopError", PyExc_RuntimeError, "An error the inferloop engine reported.");
  types.invalid_argument = NewType(m, "InvalidArgument", types.base, "Bad input: a model, a feed, an output name, an option.");
  types.no_such_file = NewType(m, "NoSuchFile", types.base, "A file (model, external data) that does not exist.");
  types.not_implemented = NewType(m, "NotImplemented", types.base, "Valid ONNX that inferloop does not support.");
  types.fail = NewType(m, "Fail", types.base, "Any other engine error.");
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* payload) {
        try {
          std::rethrow_exception(p);
        } catch (const StatusError& e) {
          PyErr_SetString(static_cast<ErrorTypes*>(payload)->ForCode(e.code()), e.what());
        }
      },
      &types);
}

}  // namespace inferloop::py
