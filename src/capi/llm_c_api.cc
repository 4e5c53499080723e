// The C API for LLMs (include/inferloop/inferloop_llm_c.h) over llm::LlamaModel and
// llm::Generate, as `inferloop generate` runs them.
#include "inferloop/inferloop_llm_c.h"

#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "base/c_error.h"
#include "llm/generation.h"
#include "llm/llama_model.h"

struct il_llm {
  std::unique_ptr<inferloop::llm::LlamaModel> model;
  il_llm_options options;
};

namespace {

using inferloop::SetCError;
using inferloop::Status;

// Runs fn, turning an exception (out of memory...) into an INTERNAL error: none crosses the C ABI.
template <typename R, typename Fn>
R NoThrow(char** error, R on_error, const Fn& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    SetCError(error, Status::Internal(e.what()));
  } catch (...) {
    SetCError(error, Status::Internal("unknown exception"));
  }
  return on_error;
}

// The first il_llm_sampling's size: structs at least this big are read; later fields only when
// struct_size covers them.
constexpr size_t kSamplingV1Size = offsetof(il_llm_sampling, logit_bias_count) + sizeof(size_t);

// Copies the il_llm_sampling fields into SamplingParams (validation: llm::Generate).
Status ReadSampling(const il_llm_sampling& s, inferloop::llm::SamplingParams* p) {
  if (s.struct_size < kSamplingV1Size)
    return Status::InvalidArgument("il_llm_sampling.struct_size is " + std::to_string(s.struct_size) +
                                   ": set it with il_llm_sampling_default (sizeof(il_llm_sampling))");
  if (s.logit_bias_count > 0 && (!s.logit_bias_tokens || !s.logit_bias_values))
    return Status::InvalidArgument("il_llm_sampling.logit_bias_count is " + std::to_string(s.logit_bias_count) +
                                   " but logit_bias_tokens or logit_bias_values is NULL");
  p->min_p = s.min_p;
  p->presence_penalty = s.presence_penalty;
  p->frequency_penalty = s.frequency_penalty;
  p->repetition_penalty = s.repetition_penalty;
  p->logit_bias.clear();
  for (size_t i = 0; i < s.logit_bias_count; ++i) p->logit_bias.emplace_back(s.logit_bias_tokens[i], s.logit_bias_values[i]);
  return Status::Ok();
}

}  // namespace

extern "C" {

void il_llm_options_default(il_llm_options* o) {
  if (o) *o = il_llm_options{0};
}

void il_llm_params_default(il_llm_params* p) {
  if (!p) return;
  const inferloop::llm::GenerationOptions g;
  *p = il_llm_params{g.max_tokens, g.sampling.temperature, g.sampling.top_k, g.sampling.top_p, g.sampling.seed, 1,
                     g.stop_at_eog ? 1 : 0};
}

void il_llm_sampling_default(il_llm_sampling* s) {
  if (!s) return;
  const inferloop::llm::SamplingParams d;
  *s = il_llm_sampling{sizeof(il_llm_sampling), d.min_p, d.presence_penalty, d.frequency_penalty, d.repetition_penalty,
                       nullptr, nullptr, 0};
}

il_llm* il_llm_create(const char* path, const il_llm_options* options, char** error) {
  if (!path) {
    SetCError(error, Status::InvalidArgument("path is NULL"));
    return nullptr;
  }
  il_llm_options o;
  il_llm_options_default(&o);
  if (options) o = *options;
  if (o.threads < 0) {
    SetCError(error, Status::InvalidArgument("threads must be >= 0 (0: the CPUs this process may use)"));
    return nullptr;
  }
  return NoThrow(error, static_cast<il_llm*>(nullptr), [&]() -> il_llm* {
    auto model = inferloop::llm::LlamaModel::Load(path);
    if (!model.ok()) {
      SetCError(error, model.status());
      return nullptr;
    }
    return new il_llm{std::move(model).value(), o};
  });
}

void il_llm_destroy(il_llm* llm) { delete llm; }

int32_t il_llm_vocab_size(const il_llm* llm) { return llm ? llm->model->tokenizer().vocab_size() : 0; }
int32_t il_llm_context_length(const il_llm* llm) {
  return llm ? static_cast<int32_t>(llm->model->hparams().n_ctx_train) : 0;
}

int64_t il_llm_tokenize(const il_llm* llm, const char* text, int32_t add_bos, int32_t* tokens, size_t capacity,
                        char** error) {
  if (!llm || !text || (!tokens && capacity)) {
    SetCError(error, Status::InvalidArgument(!llm ? "llm is NULL" : !text ? "text is NULL" : "tokens is NULL"));
    return -1;
  }
  return NoThrow(error, int64_t{-1}, [&]() -> int64_t {
    const std::vector<int32_t> ids = llm->model->tokenizer().Encode(text, add_bos != 0);
    for (size_t i = 0; i < ids.size() && i < capacity; ++i) tokens[i] = ids[i];
    return static_cast<int64_t>(ids.size());
  });
}

int il_llm_generate(const il_llm* llm, const char* prompt, const il_llm_params* params, il_llm_token_callback on_token,
                    void* user, char** error) {
  return il_llm_generate_ex(llm, prompt, params, nullptr, on_token, user, error);
}

int il_llm_generate_ex(const il_llm* llm, const char* prompt, const il_llm_params* params,
                       const il_llm_sampling* sampling, il_llm_token_callback on_token, void* user, char** error) {
  if (!llm || !prompt) {
    SetCError(error, Status::InvalidArgument(!llm ? "llm is NULL" : "prompt is NULL"));
    return 1;
  }
  il_llm_params p;
  il_llm_params_default(&p);
  if (params) p = *params;
  return NoThrow(error, 1, [&]() -> int {
    const inferloop::llm::Tokenizer& tok = llm->model->tokenizer();
    inferloop::llm::GenerationOptions o;
    o.max_tokens = p.max_tokens;
    o.sampling.temperature = p.temperature;
    o.sampling.top_k = p.top_k;
    o.sampling.top_p = p.top_p;
    o.sampling.seed = p.seed;
    if (sampling) {
      if (Status st = ReadSampling(*sampling, &o.sampling); !st.ok()) {
        SetCError(error, st);
        return 1;
      }
    }
    o.stop_at_eog = p.stop_at_eos != 0;
    o.threads = llm->options.threads;
    auto st = inferloop::llm::Generate(*llm->model, tok.Encode(prompt, p.add_bos != 0), o, [&](int32_t id) {
      if (!on_token) return true;
      const std::string piece = tok.Piece(id);
      return on_token(piece.c_str(), id, user) == 0;
    });
    if (!st.ok()) {
      SetCError(error, st.status());
      return 1;
    }
    return 0;
  });
}

}  // extern "C"
