/* Reads a little-endian float32 .npy file (numpy's format, version 1 or 2, C order): enough for
 * the example's input and expected output. Valid C and C++. */
#ifndef INFERLOOP_EXAMPLE_NPY_F32_H_
#define INFERLOOP_EXAMPLE_NPY_F32_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct npy_f32 {
  float* data; /* malloc'ed; free(data) */
  int64_t shape[8];
  size_t rank;
  size_t count; /* elements */
} npy_f32;

/* Returns 0 on success; on failure prints why on stderr and returns 1. */
static int npy_f32_read(const char* path, npy_f32* out) {
  memset(out, 0, sizeof *out);
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", path);
    return 1;
  }
  unsigned char pre[12];
  int ok = fread(pre, 1, 10, f) == 10 && memcmp(pre, "\x93NUMPY", 6) == 0;
  size_t header_len = 0;
  if (ok && pre[6] == 1) {
    header_len = pre[8] | (size_t)pre[9] << 8;
  } else if (ok && fread(pre + 10, 1, 2, f) == 2) {
    header_len = pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
  }
  char* header = ok ? (char*)calloc(header_len + 1, 1) : NULL;
  ok = header && fread(header, 1, header_len, f) == header_len && strstr(header, "'descr': '<f4'") &&
       strstr(header, "'fortran_order': False");
  const char* s = ok ? strstr(header, "'shape': (") : NULL;
  if (s) {
    s += strlen("'shape': (");
    out->count = 1;
    while (*s && *s != ')' && out->rank < 8) {
      char* end;
      long long d = strtoll(s, &end, 10);
      if (end == s) break;
      out->shape[out->rank++] = d;
      out->count *= (size_t)d;
      s = end;
      while (*s == ',' || *s == ' ') ++s;
    }
  }
  ok = s && *s == ')';
  out->data = ok ? (float*)malloc(out->count * sizeof(float) + 1) : NULL;
  ok = out->data && fread(out->data, sizeof(float), out->count, f) == out->count;
  free(header);
  fclose(f);
  if (!ok) {
    fprintf(stderr, "%s: not a little-endian float32 C-order .npy file\n", path);
    free(out->data);
    out->data = NULL;
    return 1;
  }
  return 0;
}

/* The largest |a[i] - b[i]|. */
static double npy_f32_max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = a[i] > b[i] ? (double)a[i] - b[i] : (double)b[i] - a[i];
    if (d > m || d != d) m = d != d ? 1e300 : d; /* NaN counts as a large difference */
  }
  return m;
}

#endif /* INFERLOOP_EXAMPLE_NPY_F32_H_ */
