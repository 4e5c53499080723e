/* The C APIs from an installed inferloop: runs an ONNX model on a .npy input and checks the output
 * against a .npy of expected values (within 1e-4), as cpp_consumer does through the C++ API;
 * given a GGUF model too, streams 16 greedy tokens after "Once upon a time" through the LLM API.
 * Usage: c_consumer MODEL.onnx INPUT.npy EXPECTED.npy [MODEL.gguf]   (exit 0: all as expected) */
#include <inferloop/inferloop_c.h>
#include <inferloop/inferloop_llm_c.h>
#include <inferloop/version.h>

#include <stdio.h>
#include <stdlib.h>

#include "npy_f32.h"

static int fail(char* error) {
  fprintf(stderr, "error: %s\n", error ? error : "(no message)");
  il_free_string(error);
  return 1;
}

static int run_onnx(const char* model, const char* input_path, const char* expected_path) {
  char* error = NULL;
  il_session* s = il_session_create_from_file(model, &error);
  if (!s) return fail(error);
  npy_f32 input, expected;
  if (npy_f32_read(input_path, &input) || npy_f32_read(expected_path, &expected)) return 1;
  il_tensor* x = il_tensor_create(IL_FLOAT, input.shape, input.rank, input.data, input.count * sizeof(float), &error);
  free(input.data);
  if (!x) return fail(error);
  const char* names[1] = {il_session_input_name(s, 0)};
  const il_tensor* inputs[1] = {x};
  il_tensor* outputs[8] = {NULL};
  if (il_session_output_count(s) > 8 || il_session_run(s, names, inputs, 1, outputs, &error) != 0) return fail(error);
  const il_tensor* y = outputs[0];
  int ok = il_tensor_dtype(y) == IL_FLOAT && il_tensor_nbytes(y) == expected.count * sizeof(float);
  double diff = ok ? npy_f32_max_abs_diff((const float*)il_tensor_data(y), expected.data, expected.count) : 1e300;
  printf("output %s: %zu float32 values, max |difference| from expected %.3g\n", il_session_output_name(s, 0),
         il_tensor_nbytes(y) / sizeof(float), diff);
  for (size_t i = 0; i < il_session_output_count(s); ++i) il_tensor_destroy(outputs[i]);
  il_tensor_destroy(x);
  il_session_destroy(s);
  free(expected.data);
  return diff <= 1e-4 ? 0 : 1;
}

static int print_piece(const char* piece, int32_t token, void* user) {
  ++*(int*)user;
  fputs(piece, stdout);
  return 0;
}

static int run_llm(const char* path) {
  char* error = NULL;
  il_llm* llm = il_llm_create(path, NULL, &error);
  if (!llm) return fail(error);
  il_llm_params p;
  il_llm_params_default(&p);
  p.temperature = 0; /* greedy */
  p.max_tokens = 16;
  p.stop_at_eos = 0; /* exactly max_tokens */
  int count = 0;
  fputs("Once upon a time", stdout);
  if (il_llm_generate(llm, "Once upon a time", &p, print_piece, &count, &error) != 0) return fail(error);
  printf("\n%d tokens\n", count);
  il_llm_destroy(llm);
  return count == 16 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: %s MODEL.onnx INPUT.npy EXPECTED.npy [MODEL.gguf]\n", argv[0]);
    return 2;
  }
  printf("inferloop %s, C API\n", INFERLOOP_VERSION_STRING);
  int rc = run_onnx(argv[1], argv[2], argv[3]);
  if (rc == 0 && argc == 5) rc = run_llm(argv[4]);
  return rc;
}
