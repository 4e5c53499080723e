// The C API (include/inferloop/inferloop_c.h) over the C++ Session.
#include "inferloop/inferloop_c.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/c_error.h"
#include "inferloop/session.h"

struct il_session {
  std::unique_ptr<inferloop::Session> session;
};
struct il_tensor {
  inferloop::Tensor tensor;
};

namespace {

using inferloop::SetCError;

il_session* Wrap(inferloop::Result<std::unique_ptr<inferloop::Session>> r, char** error) {
  if (!r.ok()) {
    SetCError(error, r.status().ToString());
    return nullptr;
  }
  return std::make_unique<il_session>(il_session{std::move(r).value()}).release();
}

}  // namespace

extern "C" {

il_session* il_session_create_from_file(const char* path, char** error) {
  if (!path) {
    SetCError(error, "INVALID_ARGUMENT: path is NULL");
    return nullptr;
  }
  return Wrap(inferloop::Session::CreateFromFile(path), error);
}

il_session* il_session_create_from_bytes(const void* data, size_t size, char** error) {
  if (!data && size) {
    SetCError(error, "INVALID_ARGUMENT: data is NULL");
    return nullptr;
  }
  return Wrap(inferloop::Session::CreateFromBytes(data, size), error);
}

void il_session_destroy(il_session* session) { std::unique_ptr<il_session> owned(session); }

size_t il_session_input_count(const il_session* s) { return s ? s->session->inputs().size() : 0; }
size_t il_session_output_count(const il_session* s) { return s ? s->session->outputs().size() : 0; }
const char* il_session_input_name(const il_session* s, size_t i) {
  return s && i < s->session->inputs().size() ? s->session->inputs()[i].name.c_str() : nullptr;
}
const char* il_session_output_name(const il_session* s, size_t i) {
  return s && i < s->session->outputs().size() ? s->session->outputs()[i].name.c_str() : nullptr;
}
il_dtype il_session_input_dtype(const il_session* s, size_t i) {
  return s && i < s->session->inputs().size() ? static_cast<il_dtype>(s->session->inputs()[i].dtype) : 0;
}
int64_t il_session_input_rank(const il_session* s, size_t i) {
  if (!s || i >= s->session->inputs().size() || !s->session->inputs()[i].has_shape) return -1;
  return static_cast<int64_t>(s->session->inputs()[i].shape.size());
}
int64_t il_session_input_dim(const il_session* s, size_t i, size_t d) {
  if (!s || i >= s->session->inputs().size()) return -1;
  const auto& shape = s->session->inputs()[i].shape;
  return d < shape.size() ? shape[d].value : -1;
}

il_tensor* il_tensor_create(il_dtype dtype, const int64_t* shape, size_t rank, const void* data, size_t nbytes,
                            char** error) {
  if (!inferloop::IsKnownDataType(dtype) || dtype == static_cast<il_dtype>(inferloop::DataType::kString)) {
    SetCError(error, "INVALID_ARGUMENT: unsupported dtype " + std::to_string(dtype));
    return nullptr;
  }
  if (rank && !shape) {
    SetCError(error, "INVALID_ARGUMENT: shape is NULL");
    return nullptr;
  }
  if (nbytes && !data) {
    SetCError(error, "INVALID_ARGUMENT: data is NULL");
    return nullptr;
  }
  inferloop::Shape s(shape, shape + rank);
  auto t = inferloop::Tensor::FromBytes(static_cast<inferloop::DataType>(dtype), s, data, nbytes);
  if (!t.ok()) {
    SetCError(error, t.status().ToString());
    return nullptr;
  }
  return std::make_unique<il_tensor>(il_tensor{std::move(t).value()}).release();
}

void il_tensor_destroy(il_tensor* t) { std::unique_ptr<il_tensor> owned(t); }
il_dtype il_tensor_dtype(const il_tensor* t) { return t ? static_cast<il_dtype>(t->tensor.dtype()) : 0; }
size_t il_tensor_rank(const il_tensor* t) { return t ? t->tensor.shape().size() : 0; }
const int64_t* il_tensor_shape(const il_tensor* t) { return t ? t->tensor.shape().data() : nullptr; }
const void* il_tensor_data(const il_tensor* t) { return t ? t->tensor.raw_data() : nullptr; }
size_t il_tensor_nbytes(const il_tensor* t) { return t ? t->tensor.nbytes() : 0; }

int il_session_run(const il_session* s, const char* const* input_names, const il_tensor* const* inputs,
                   size_t input_count, il_tensor** outputs, char** error) {
  if (!s || (input_count && (!input_names || !inputs)) || !outputs) {
    SetCError(error, "INVALID_ARGUMENT: NULL argument");
    return 1;
  }
  std::vector<inferloop::NamedValue> feeds;
  for (size_t i = 0; i < input_count; ++i) {
    if (!input_names[i] || !inputs[i]) {
      SetCError(error, "INVALID_ARGUMENT: input " + std::to_string(i) + " is NULL");
      return 1;
    }
    feeds.emplace_back(input_names[i], inferloop::Value(inputs[i]->tensor));
  }
  auto r = s->session->Run(feeds);
  if (!r.ok()) {
    SetCError(error, r.status().ToString());
    return 1;
  }
  for (size_t k = 0; k < r->size(); ++k) {
    if (!(*r)[k].second.is_tensor()) {
      for (size_t j = 0; j < k; ++j) { il_tensor_destroy(outputs[j]); outputs[j] = nullptr; }
      SetCError(error, "UNIMPLEMENTED: output '" + (*r)[k].first + "' is not a tensor; the C API returns tensors only");
      return 1;
    }
    outputs[k] = std::make_unique<il_tensor>(il_tensor{(*r)[k].second.tensor()}).release();
  }
  return 0;
}

void il_free_string(char* s) { std::free(s); }

}  // extern "C"
