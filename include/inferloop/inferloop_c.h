/* inferloop C API: load an ONNX model and run it from C or any language with a C FFI.
 *
 * Ownership: every il_*_create / il_session_run result is owned by the caller and freed with
 * the matching il_*_destroy. Error messages returned through `char** error` are malloc'ed
 * strings freed with il_free_string. Functions that fail return NULL or a non-zero code and
 * set *error (when error is not NULL).
 * Thread safety: il_session_run may be called from many threads at once on one session.
 * Strings tensors are not supported through this API (numeric and bool only). */
#ifndef INFERLOOP_C_H_
#define INFERLOOP_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types: the values of ONNX TensorProto.DataType (1 = float32, 7 = int64, ...). */
typedef int32_t il_dtype;
enum {
  IL_FLOAT = 1, IL_UINT8 = 2, IL_INT8 = 3, IL_UINT16 = 4, IL_INT16 = 5, IL_INT32 = 6, IL_INT64 = 7,
  IL_BOOL = 9, IL_FLOAT16 = 10, IL_DOUBLE = 11, IL_UINT32 = 12, IL_UINT64 = 13, IL_BFLOAT16 = 16
};

typedef struct il_session il_session;
typedef struct il_tensor il_tensor;

/* Sessions */
il_session* il_session_create_from_file(const char* path, char** error);
il_session* il_session_create_from_bytes(const void* data, size_t size, char** error);
void il_session_destroy(il_session* session);

size_t il_session_input_count(const il_session* session);
size_t il_session_output_count(const il_session* session);
/* Name of input/output i (valid while the session lives); NULL if i is out of range. */
const char* il_session_input_name(const il_session* session, size_t i);
const char* il_session_output_name(const il_session* session, size_t i);
il_dtype il_session_input_dtype(const il_session* session, size_t i);
/* Declared rank of input i, or -1 when unknown. */
int64_t il_session_input_rank(const il_session* session, size_t i);
/* Declared size of dimension d of input i; -1 when symbolic or unknown. */
int64_t il_session_input_dim(const il_session* session, size_t i, size_t d);

/* Tensors: the data is copied in; nbytes must match the shape and dtype. */
il_tensor* il_tensor_create(il_dtype dtype, const int64_t* shape, size_t rank, const void* data, size_t nbytes,
                            char** error);
void il_tensor_destroy(il_tensor* tensor);
il_dtype il_tensor_dtype(const il_tensor* tensor);
size_t il_tensor_rank(const il_tensor* tensor);
const int64_t* il_tensor_shape(const il_tensor* tensor);
const void* il_tensor_data(const il_tensor* tensor);
size_t il_tensor_nbytes(const il_tensor* tensor);

/* Runs the model. outputs must have room for il_session_output_count() pointers; on success
 * each is set to a new tensor (caller destroys). Returns 0 on success. */
int il_session_run(const il_session* session, const char* const* input_names, const il_tensor* const* inputs,
                   size_t input_count, il_tensor** outputs, char** error);

void il_free_string(char* s);

#ifdef __cplusplus
}
#endif

#endif /* INFERLOOP_C_H_ */
