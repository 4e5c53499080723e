/* The C API for LLMs (include/inferloop/inferloop_llm_c.h), from C, linked to libinferloop.so, on
 * the real stories260k model against its reference (tests/data/llm/stories260k.md: llama.cpp and
 * llama2.c agree): tokens of the prompt, 64 greedy tokens, their text; the callback stopping;
 * seeded sampling reproducible; two threads at once; bad input as errors; il_llm_generate_ex's
 * sampling parameters (neutral defaults, logit_bias, penalties, their errors).
 * Usage: llm_c_api_test MODEL.gguf   (exit 0: every check passed) */
#include <inferloop/inferloop_llm_c.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                       \
      fputc('\n', stderr);                                \
      ++failures;                                         \
    }                                                     \
  } while (0)

static const char* kPrompt = "Once upon a time";
static const int32_t kPromptIds[] = {1, 403, 407, 261, 378};
static const int32_t kGreedy64[] = {
    432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322,
    265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267,
    337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310, 439, 419, 357, 336};

typedef struct collected {
  int32_t ids[256];
  int count;
  int stop_after; /* > 0: the callback stops after this many tokens */
  char text[4096];
} collected;

static int collect(const char* piece, int32_t token, void* user) {
  collected* c = (collected*)user;
  if (c->count < 256) c->ids[c->count] = token;
  ++c->count;
  strncat(c->text, piece, sizeof c->text - strlen(c->text) - 1);
  return c->stop_after > 0 && c->count >= c->stop_after;
}

static il_llm_params greedy(int max_tokens) {
  il_llm_params p;
  il_llm_params_default(&p);
  p.temperature = 0;
  p.max_tokens = max_tokens;
  return p;
}

static int generate(const il_llm* llm, const il_llm_params* p, collected* c) {
  char* error = NULL;
  int rc = il_llm_generate(llm, kPrompt, p, collect, c, &error);
  if (rc != 0) fprintf(stderr, "il_llm_generate: %s\n", error ? error : "(no message)");
  il_free_string(error);
  return rc;
}

/* The error of a generation that must fail, or "" if it did not. */
static void expect_error(const il_llm* llm, const char* prompt, const il_llm_params* p, const char* needle) {
  char* error = NULL;
  collected c = {{0}, 0, 0, ""};
  int rc = il_llm_generate(llm, prompt, p, collect, &c, &error);
  CHECK(rc != 0, "generation should fail with '%s'", needle);
  CHECK(error && strstr(error, needle), "error '%s' lacks '%s'", error ? error : "(null)", needle);
  CHECK(c.count == 0, "%d tokens before the error", c.count);
  il_free_string(error);
}

static void* greedy_thread(void* arg) {
  collected* c = (collected*)calloc(1, sizeof(collected));
  il_llm_params p = greedy(64);
  if (generate((const il_llm*)arg, &p, c) != 0) c->count = -1;
  return c;
}

static void check_tokenize(const il_llm* llm) {
  int32_t ids[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  char* error = NULL;
  int64_t n = il_llm_tokenize(llm, kPrompt, 1, ids, 8, &error);
  CHECK(n == 5, "tokenize gave %lld tokens", (long long)n);
  CHECK(memcmp(ids, kPromptIds, sizeof kPromptIds) == 0, "prompt ids %d %d %d %d %d", ids[0], ids[1], ids[2], ids[3],
        ids[4]);
  int32_t two[3] = {-1, -1, -1};
  n = il_llm_tokenize(llm, kPrompt, 1, two, 2, &error); /* too small: the count, and only 2 written */
  CHECK(n == 5 && two[0] == 1 && two[1] == 403 && two[2] == -1, "n %lld, %d %d %d", (long long)n, two[0], two[1], two[2]);
  CHECK(il_llm_tokenize(llm, kPrompt, 0, NULL, 0, &error) == 4, "without BOS, counting only");
  CHECK(il_llm_tokenize(llm, NULL, 1, ids, 8, &error) == -1 && error && strstr(error, "text is NULL"), "NULL text");
  il_free_string(error);
}

static void check_greedy(const il_llm* llm) {
  collected c = {{0}, 0, 0, ""};
  il_llm_params p = greedy(64);
  CHECK(generate(llm, &p, &c) == 0, "greedy generation");
  CHECK(c.count == 64, "%d tokens", c.count);
  int same = 0;
  while (same < 64 && c.ids[same] == kGreedy64[same]) ++same;
  CHECK(same == 64, "token %d is %d, the reference says %d", same, c.ids[same], kGreedy64[same]);
  const char* expected = ", there was a little girl named Lily. She loved to play outside in the park.";
  CHECK(strncmp(c.text, expected, strlen(expected)) == 0, "text '%s'", c.text);
  printf("greedy: %d tokens as the reference: %s%s\n", same, kPrompt, c.text);

  collected stopped = {{0}, 0, 3, ""};
  CHECK(generate(llm, &p, &stopped) == 0 && stopped.count == 3, "callback stop: %d tokens", stopped.count);
  CHECK(il_llm_generate(llm, kPrompt, &p, NULL, NULL, NULL) == 0, "no callback");
}

static void check_sampled(const il_llm* llm) {
  il_llm_params p;
  il_llm_params_default(&p);
  p.max_tokens = 48;
  p.seed = 7;
  p.stop_at_eos = 0;
  collected a = {{0}, 0, 0, ""}, b = {{0}, 0, 0, ""}, other = {{0}, 0, 0, ""};
  CHECK(generate(llm, &p, &a) == 0 && generate(llm, &p, &b) == 0, "sampled generation");
  CHECK(a.count == 48 && b.count == 48 && memcmp(a.ids, b.ids, sizeof(int32_t) * 48) == 0,
        "the same seed gave different tokens");
  int differs = 0;
  for (uint64_t seed = 8; seed < 11 && !differs; ++seed) {
    other.count = 0;
    other.text[0] = 0;
    p.seed = seed;
    CHECK(generate(llm, &p, &other) == 0, "seed %llu", (unsigned long long)seed);
    differs = memcmp(a.ids, other.ids, sizeof(int32_t) * 48) != 0;
  }
  CHECK(differs, "seeds 8..10 all gave seed 7's tokens");
  for (int i = 0; i < 48; ++i) CHECK(a.ids[i] >= 0 && a.ids[i] < il_llm_vocab_size(llm), "token %d", a.ids[i]);
  p.top_p = 0.5f;
  p.top_k = 0;
  p.temperature = 1.5f;
  CHECK(generate(llm, &p, &other) == 0, "top_p 0.5, temperature 1.5");
}

static int generate_ex(const il_llm* llm, const il_llm_params* p, const il_llm_sampling* s, collected* c, char** error) {
  c->count = 0;
  c->text[0] = 0;
  return il_llm_generate_ex(llm, kPrompt, p, s, collect, c, error);
}

static void expect_sampling_error(const il_llm* llm, const il_llm_sampling* s, const char* needle) {
  il_llm_params p = greedy(16);
  collected c = {{0}, 0, 0, ""};
  char* error = NULL;
  CHECK(generate_ex(llm, &p, s, &c, &error) != 0, "il_llm_generate_ex should fail with '%s'", needle);
  CHECK(error && strstr(error, needle), "error '%s' lacks '%s'", error ? error : "(null)", needle);
  CHECK(c.count == 0, "%d tokens before the error", c.count);
  il_free_string(error);
}

static void check_sampling_ex(const il_llm* llm) {
  il_llm_params p = greedy(64);
  il_llm_sampling s;
  il_llm_sampling_default(&s);
  CHECK(s.struct_size == sizeof(il_llm_sampling) && s.min_p == 0 && s.presence_penalty == 0 &&
            s.frequency_penalty == 0 && s.repetition_penalty == 1 && s.logit_bias_count == 0,
        "defaults");
  collected c = {{0}, 0, 0, ""};
  char* error = NULL;
  /* NULL and the defaults: il_llm_generate's greedy tokens. */
  CHECK(generate_ex(llm, &p, NULL, &c, &error) == 0 && c.count == 64 && memcmp(c.ids, kGreedy64, sizeof kGreedy64) == 0,
        "NULL sampling");
  CHECK(generate_ex(llm, &p, &s, &c, &error) == 0 && c.count == 64 && memcmp(c.ids, kGreedy64, sizeof kGreedy64) == 0,
        "default sampling");
  /* A frequency penalty changes the greedy text (it repeats tokens). */
  s.frequency_penalty = 2;
  CHECK(generate_ex(llm, &p, &s, &c, &error) == 0 && c.count == 64, "frequency_penalty 2");
  CHECK(memcmp(c.ids, kGreedy64, sizeof kGreedy64) != 0, "frequency_penalty 2 left the greedy tokens unchanged");
  printf("frequency_penalty 2: %s%s\n", kPrompt, c.text);
  s.frequency_penalty = 0;
  s.repetition_penalty = 1.5f;
  CHECK(generate_ex(llm, &p, &s, &c, &error) == 0 && c.count == 64, "repetition_penalty 1.5");
  CHECK(memcmp(c.ids, kGreedy64, sizeof kGreedy64) != 0, "repetition_penalty 1.5 left the greedy tokens unchanged");
  /* logit_bias +100 forces a token at temperature 0; -100 bans the greedy first token. */
  il_llm_sampling_default(&s);
  const int32_t tokens[] = {300, 432};
  const float biases[] = {100, -100};
  s.logit_bias_tokens = tokens;
  s.logit_bias_values = biases;
  s.logit_bias_count = 1;
  p = greedy(16);
  CHECK(generate_ex(llm, &p, &s, &c, &error) == 0 && c.count == 16, "logit_bias");
  for (int i = 0; i < 16 && i < c.count; ++i) CHECK(c.ids[i] == 300, "token %d is %d, not the biased 300", i, c.ids[i]);
  s.logit_bias_tokens = tokens + 1;
  s.logit_bias_values = biases + 1;
  CHECK(generate_ex(llm, &p, &s, &c, &error) == 0 && c.count == 16 && c.ids[0] != 432, "banned 432: first %d", c.ids[0]);
  il_free_string(error);

  il_llm_sampling bad;
  il_llm_sampling_default(&bad);
  bad.min_p = 2;
  expect_sampling_error(llm, &bad, "min_p must be in [0, 1]");
  il_llm_sampling_default(&bad);
  bad.presence_penalty = 3;
  expect_sampling_error(llm, &bad, "presence_penalty must be in [-2, 2]");
  il_llm_sampling_default(&bad);
  bad.frequency_penalty = -2.5f;
  expect_sampling_error(llm, &bad, "frequency_penalty must be in [-2, 2]");
  il_llm_sampling_default(&bad);
  bad.repetition_penalty = 0;
  expect_sampling_error(llm, &bad, "repetition_penalty must be > 0");
  il_llm_sampling_default(&bad);
  const int32_t beyond[] = {512};
  const float one[] = {1}, too_big[] = {101};
  bad.logit_bias_tokens = beyond;
  bad.logit_bias_values = one;
  bad.logit_bias_count = 1;
  expect_sampling_error(llm, &bad, "logit_bias token id 512 is not a token id of this model");
  bad.logit_bias_tokens = tokens;
  bad.logit_bias_values = too_big;
  expect_sampling_error(llm, &bad, "logit_bias of token 300 must be in [-100, 100]");
  bad.logit_bias_values = NULL;
  expect_sampling_error(llm, &bad, "logit_bias_tokens or logit_bias_values is NULL");
  il_llm_sampling_default(&bad);
  bad.struct_size = 0;
  expect_sampling_error(llm, &bad, "struct_size");
}

static void check_errors(const il_llm* llm) {
  il_llm_params p = greedy(16);
  p.temperature = -1;
  expect_error(llm, kPrompt, &p, "temperature");
  p = greedy(16);
  p.top_p = 1.5f;
  expect_error(llm, kPrompt, &p, "top_p");
  p = greedy(200);
  expect_error(llm, kPrompt, &p, "exceeds the model's context of 128 tokens");
  p = greedy(16);
  p.add_bos = 0;
  expect_error(llm, "", &p, "the prompt has no tokens");
  expect_error(NULL, kPrompt, &p, "llm is NULL");
  expect_error(llm, NULL, &p, "prompt is NULL");
  char* error = NULL;
  CHECK(il_llm_create("/nonexistent/model.gguf", NULL, &error) == NULL && error && strstr(error, "/nonexistent/model.gguf"),
        "missing file: %s", error ? error : "(null)");
  il_free_string(error);
  error = NULL;
  il_llm_options o;
  il_llm_options_default(&o);
  o.threads = -2;
  CHECK(il_llm_create("/nonexistent/model.gguf", &o, &error) == NULL && error && strstr(error, "threads"), "threads");
  il_free_string(error);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  char* error = NULL;
  il_llm_options o;
  il_llm_options_default(&o);
  o.threads = 2;
  il_llm* llm = il_llm_create(argv[1], &o, &error);
  if (!llm) {
    fprintf(stderr, "il_llm_create: %s\n", error ? error : "(no message)");
    return 1;
  }
  CHECK(il_llm_vocab_size(llm) == 512, "vocab %d", il_llm_vocab_size(llm));
  CHECK(il_llm_context_length(llm) == 128, "context %d", il_llm_context_length(llm));
  check_tokenize(llm);
  check_greedy(llm);
  check_sampled(llm);
  check_errors(llm);
  check_sampling_ex(llm);
  pthread_t t[2];
  for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, greedy_thread, llm);
  for (int i = 0; i < 2; ++i) {
    void* r;
    pthread_join(t[i], &r);
    collected* c = (collected*)r;
    CHECK(c->count == 64 && memcmp(c->ids, kGreedy64, sizeof kGreedy64) == 0, "thread %d: %d tokens", i, c->count);
    free(c);
  }
  il_llm_destroy(llm);
  il_llm_destroy(NULL);
  printf("%s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
