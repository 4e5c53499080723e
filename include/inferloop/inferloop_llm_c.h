/* inferloop C API for LLMs: load a GGUF llama-family model (llama, mistral, qwen2), tokenize
 * text, and generate with a streaming callback, from C or any language with a C FFI.
 * In libinferloop (link inferloop::inferloop, or pkg-config inferloop), beside inferloop_c.h.
 *
 * Ownership and errors as in inferloop_c.h: an il_llm from il_llm_create is freed with
 * il_llm_destroy; error messages returned through `char** error` are malloc'ed strings freed
 * with il_free_string; functions that fail return NULL or a negative / non-zero value and set
 * *error (when error is not NULL).
 * Thread safety: an il_llm is read-only once created; il_llm_tokenize and il_llm_generate may
 * be called from many threads at once on one il_llm (each generation has its own KV cache). */
#ifndef INFERLOOP_LLM_C_H_
#define INFERLOOP_LLM_C_H_

#include <stddef.h>
#include <stdint.h>

#include "inferloop/inferloop_c.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct il_llm il_llm;

/* Options of il_llm_create; NULL means the defaults (il_llm_options_default). */
typedef struct il_llm_options {
  int32_t threads; /* threads generation uses; 0 (default): the CPUs this process may use */
} il_llm_options;

/* Parameters of one generation; NULL means the defaults (il_llm_params_default). */
typedef struct il_llm_params {
  int32_t max_tokens; /* tokens to generate, not counting the prompt (default 128) */
  float temperature;  /* 0: greedy (the most likely token); default 0.8 */
  int32_t top_k;      /* keep the K most likely tokens; 0: all (default 40) */
  float top_p;        /* keep the most likely tokens up to this probability mass, in (0, 1] (default 0.95) */
  uint64_t seed;      /* random seed: the same seed and parameters give the same tokens (default 0) */
  int32_t add_bos;    /* non-zero (default): the BOS token before the prompt, when the vocab has one */
  int32_t stop_at_eos; /* non-zero (default): stop at an end-of-generation token (not passed on) */
} il_llm_params;

/* More sampling parameters, for il_llm_generate_ex (a struct of its own: il_llm_params has no
 * size field, so fields added to it would break programs built against an older header).
 * Applied to a copy of the logits before choosing, in this order: logit_bias, then
 * repetition_penalty over the prompt and the generated tokens, then presence and frequency
 * penalties over the generated tokens; min_p filters like top_p. The defaults change nothing. */
typedef struct il_llm_sampling {
  size_t struct_size;          /* sizeof(il_llm_sampling), set by il_llm_sampling_default: later
                                  versions add fields after the last one and read them only when
                                  struct_size covers them */
  float min_p;                 /* keep tokens with probability >= min_p * the top token's, in [0, 1]; 0: off */
  float presence_penalty;      /* in [-2, 2] (OpenAI's): logit -= penalty for a token generated so far */
  float frequency_penalty;     /* in [-2, 2] (OpenAI's): logit -= penalty * times the token was generated */
  float repetition_penalty;    /* > 0; 1: off (llama.cpp's): positive logits / penalty, negative ones * penalty */
  const int32_t* logit_bias_tokens; /* logit_bias_count token ids (may be NULL when the count is 0) */
  const float* logit_bias_values;   /* their biases, each in [-100, 100], added to the logits */
  size_t logit_bias_count;          /* read during il_llm_generate_ex only */
} il_llm_sampling;

void il_llm_options_default(il_llm_options* options);
void il_llm_params_default(il_llm_params* params);
void il_llm_sampling_default(il_llm_sampling* sampling);

/* Loads a GGUF model file. NULL on error (unreadable file, unsupported architecture...). */
il_llm* il_llm_create(const char* path, const il_llm_options* options, char** error);
void il_llm_destroy(il_llm* llm);

int32_t il_llm_vocab_size(const il_llm* llm);
/* The model's context in tokens: the prompt plus max_tokens must fit in it. */
int32_t il_llm_context_length(const il_llm* llm);

/* Tokenizes UTF-8 `text` (with the BOS token first when add_bos is non-zero), writing up to
 * `capacity` token ids to `tokens` (which may be NULL when capacity is 0). Returns the number of
 * tokens the text has, which may be more than capacity (then call again with a larger buffer,
 * as with snprintf), or -1 on error. */
int64_t il_llm_tokenize(const il_llm* llm, const char* text, int32_t add_bos, int32_t* tokens, size_t capacity,
                        char** error);

/* Called with each generated token: `piece` is its text (NUL-terminated UTF-8 bytes, valid
 * during the call; a character of several bytes may be split over two tokens, so concatenate
 * the pieces to get the text) and `token` its id. Return 0 to go on, non-zero to stop. */
typedef int (*il_llm_token_callback)(const char* piece, int32_t token, void* user);

/* Generates after `prompt` (UTF-8 text, tokenized as il_llm_tokenize does with params->add_bos),
 * calling on_token (may be NULL) with each token, in order, as it is produced. Stops after
 * max_tokens, at an end-of-generation token (stop_at_eos), or when on_token returns non-zero.
 * Returns 0 on success (however it stopped), non-zero on error (bad parameters, an empty
 * prompt, prompt plus max_tokens beyond the context), with *error set. */
int il_llm_generate(const il_llm* llm, const char* prompt, const il_llm_params* params, il_llm_token_callback on_token,
                    void* user, char** error);

/* il_llm_generate with the parameters of il_llm_sampling too (NULL: its defaults, the same as
 * il_llm_generate). A value out of range, a logit_bias token that is not a token id of the
 * model, or a struct_size below the first version's is an error naming it (non-zero, *error set). */
int il_llm_generate_ex(const il_llm* llm, const char* prompt, const il_llm_params* params,
                       const il_llm_sampling* sampling, il_llm_token_callback on_token, void* user, char** error);

#ifdef __cplusplus
}
#endif

#endif /* INFERLOOP_LLM_C_H_ */
