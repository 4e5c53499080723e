// inferloop generate MODEL.gguf -p PROMPT -n N [--temp T --top-k K --top-p P --min-p P --seed S
//   --presence-penalty A --frequency-penalty F --repeat-penalty R --logit-bias TOKEN=BIAS...
//   --kv-type f16|q8_0]:
// streams a llama-family model's continuation of a prompt to stdout, then prints prompt and
// generation speed (tokens/s) on stderr.
#include <unistd.h>

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "llm/amx_matmul.h"
#include "llm/generation.h"
#include "llm/llm_engine.h"
#include "llm/llama_model.h"
#include "llm/llm_kernels.h"
#include "llm/sampler.h"

namespace inferloop::cli {
namespace {

// The sampling flags, as given.
struct SamplingFlags {
  float temp = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  uint64_t seed = 0;
  float min_p = 0;
  float presence_penalty = 0;
  float frequency_penalty = 0;
  float repeat_penalty = 1;
  std::vector<std::string> logit_bias;  // "TOKEN=BIAS" each
};

// The flags as SamplingParams for a model of `vocab` tokens: InvalidArgument naming the flag
// (ValidateSamplingParams' message after it) for a value out of range or a malformed --logit-bias.
Result<llm::SamplingParams> SamplingFromFlags(const SamplingFlags& f, int64_t vocab) {
  llm::SamplingParams p;
  p.temperature = f.temp;
  p.top_k = f.top_k;
  p.top_p = f.top_p;
  p.seed = f.seed;
  p.min_p = f.min_p;
  p.presence_penalty = f.presence_penalty;
  p.frequency_penalty = f.frequency_penalty;
  p.repetition_penalty = f.repeat_penalty;
  for (const std::string& item : f.logit_bias) {
    const size_t eq = item.find('=');
    try {
      if (eq == std::string::npos) throw std::invalid_argument(item);
      size_t used_t = 0, used_b = 0;
      const long token = std::stol(item.substr(0, eq), &used_t);
      const float bias = std::stof(item.substr(eq + 1), &used_b);
      if (used_t != eq || used_b != item.size() - eq - 1 || token < 0 || token > INT32_MAX) throw std::invalid_argument(item);
      p.logit_bias.emplace_back(static_cast<int32_t>(token), bias);
    } catch (const std::exception&) {
      return Status::InvalidArgument("--logit-bias: '" + item + "' is not TOKEN=BIAS (a token id and a number in [-100, 100])");
    }
  }
  if (Status st = llm::ValidateSamplingParams(p, vocab); !st.ok()) {
    static const std::pair<const char*, const char*> kFlags[] = {
        {"temperature", "--temp"}, {"top_k", "--top-k"}, {"top_p", "--top-p"}, {"min_p", "--min-p"},
        {"presence_penalty", "--presence-penalty"}, {"frequency_penalty", "--frequency-penalty"},
        {"repetition_penalty", "--repeat-penalty"}, {"logit_bias", "--logit-bias"}};
    for (const auto& [param, flag] : kFlags)
      if (st.message().rfind(param, 0) == 0) return Status::InvalidArgument(std::string(flag) + ": " + st.message());
    return st;
  }
  return p;
}

// N sequences through LlmEngine (the server's scheduler): prefill and decode batched together.
template <typename Args>
int RunParallel(std::unique_ptr<llm::LlamaModel> model, const std::vector<int32_t>& prompt, const Args& a,
                const llm::SamplingParams& sampling, llm::KvType kv_type) {
  std::shared_ptr<const llm::LlamaModel> m = std::move(model);
  llm::EngineOptions eo;
  eo.threads = a.threads;
  eo.max_running = a.parallel;
  eo.prefix_cache_blocks = 0;  // every sequence computes its prompt (no reuse between them)
  eo.kv_type = kv_type;
  eo.draft.max_draft = a.speculative_ngram;
  const int64_t per_seq = static_cast<int64_t>(prompt.size()) + a.n + 1;
  eo.kv_blocks = static_cast<int>(a.parallel * ((per_seq + eo.block_tokens - 1) / eo.block_tokens + 1));
  auto engine = llm::LlmEngine::Create(m, eo);
  if (!engine.ok()) {
    std::cerr << "error: " << engine.status().message() << "\n";
    return 1;
  }
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  int64_t generated = 0;
  Status failure;
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  Clock::time_point first_token{};
  std::vector<int32_t> first_ids;  // sequence 0's tokens, printed when it runs alone
  for (int i = 0; i < a.parallel; ++i) {
    llm::EngineRequest r;
    r.prompt = prompt;
    r.max_tokens = a.n;
    r.sampling = sampling;
    r.sampling.seed = sampling.seed + static_cast<uint64_t>(i);
    r.stop_at_eog = !a.ignore_eos;
    r.on_token = [&, i](int, const llm::GeneratedToken& g) {
      std::lock_guard<std::mutex> l(mu);
      if (generated++ == 0) first_token = Clock::now();
      if (i == 0) first_ids.push_back(g.token);
      return true;
    };
    r.on_finish = [&](const llm::SequenceResult& res) {
      std::lock_guard<std::mutex> l(mu);
      if (res.reason == llm::FinishReason::kError && failure.ok()) failure = res.error;
      ++done;
      cv.notify_all();
    };
    auto h = (*engine)->Submit(std::move(r));
    if (!h.ok()) {
      std::cerr << "error: " << h.status().message() << "\n";
      return 1;
    }
  }
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return done == a.parallel; });
  const Clock::time_point end = Clock::now();
  const double total = std::chrono::duration<double>(end - t0).count();
  // After the first token: the decoding rate, without the prompt's prefill.
  const double decode_s = generated > 1 ? std::chrono::duration<double>(end - first_token).count() : 0;
  if (!failure.ok()) {
    std::cerr << "error: " << failure.message() << "\n";
    return 1;
  }
  const llm::EngineStats st = (*engine)->stats();
  if (a.parallel == 1) {
    const std::string text = m->tokenizer().DecodeText(prompt) + m->tokenizer().Decode(first_ids);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    if (a.ids) {
      std::cerr << "generated ids:";
      for (int32_t id : first_ids) std::cerr << ' ' << id;
      std::cerr << "\n";
    }
  }
  std::fprintf(stderr,
               "parallel: %d sequences, %lld prompt tokens and %lld generated tokens in %.3f s "
               "(%.1f generated tokens/s overall, %.1f after the first token; %d steps)\n",
               a.parallel, static_cast<long long>(st.prompt_tokens), static_cast<long long>(generated), total,
               generated / total, decode_s > 0 ? (generated - 1) / decode_s : 0.0, static_cast<int>(st.steps));
  if (a.speculative_ngram > 0) {
    std::fprintf(stderr, "speculative: %lld tokens drafted, %lld accepted (%.1f%%)\n",
                 static_cast<long long>(st.draft_tokens), static_cast<long long>(st.draft_accepted_tokens),
                 st.draft_tokens > 0 ? 100.0 * st.draft_accepted_tokens / st.draft_tokens : 0.0);
  }
  return 0;
}

}  // namespace

Runner AddGenerateCommand(CLI::App& app) {
  struct Args {
    std::string model;
    std::string prompt;
    int n = 128;
    SamplingFlags s;
    int threads = 0;
    bool ids = false;
    bool no_bos = false;
    bool ignore_eos = false;
    int parallel = 0;
    int speculative_ngram = 0;
    std::string prompt_ids;
    std::string kv_type = "f16";
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate text with a GGUF llama-family model (llama, mistral, qwen2): streams the continuation of "
                  "the prompt to stdout and prints prompt and generation tokens/s to stderr.");
  cmd->add_option("model", a->model, "Path to a GGUF model file")->required();
  auto* text_opt = cmd->add_option("-p,--prompt", a->prompt, "Prompt text");
  auto* ids_opt = cmd->add_option("--prompt-ids", a->prompt_ids, "The prompt as token ids, comma-separated (instead of -p)");
  text_opt->excludes(ids_opt);
  cmd->add_option("-n,--max-tokens", a->n, "Tokens to generate (default 128)")->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--temp", a->s.temp, "Sampling temperature; 0 = greedy (default 0.8)");
  cmd->add_option("--top-k", a->s.top_k, "Keep the K most likely tokens; 0 = all (default 40)");
  cmd->add_option("--top-p", a->s.top_p, "Keep the most likely tokens up to this probability mass (default 0.95)");
  cmd->add_option("--min-p", a->s.min_p,
                  "Keep tokens at least this fraction of the top token's probability, in [0, 1]; 0 = off (default)");
  cmd->add_option("--seed", a->s.seed, "Random seed for sampling (default 0)");
  cmd->add_option("--presence-penalty", a->s.presence_penalty,
                  "Lower the logit of every token generated so far by this, in [-2, 2] (OpenAI's; default 0)");
  cmd->add_option("--frequency-penalty", a->s.frequency_penalty,
                  "Lower the logit of every token generated so far by this times its count, in [-2, 2] "
                  "(OpenAI's; default 0)");
  cmd->add_option("--repeat-penalty", a->s.repeat_penalty,
                  "Repetition penalty over the prompt and the generated tokens, > 0: positive logits are divided by "
                  "it, negative ones multiplied (llama.cpp's; default 1 = off)");
  cmd->add_option("--logit-bias", a->s.logit_bias,
                  "TOKEN=BIAS: add BIAS (in [-100, 100]) to the token's logit; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("-t,--threads", a->threads, "Threads; 0 (default) = the CPUs this process may use")->check(CLI::Range(0, 4096));
  cmd->add_flag("--print-token-ids", a->ids, "Also print the prompt's and the generated token ids on stderr");
  cmd->add_flag("--no-bos", a->no_bos, "Do not put the BOS token before the prompt");
  cmd->add_flag("--ignore-eos", a->ignore_eos, "Keep generating past end-of-generation tokens");
  cmd->add_option("--parallel", a->parallel,
                  "Run N sequences of the prompt at once through the continuous-batching engine (prints the "
                  "aggregate speed, and the text only for N = 1; sequence i samples with seed + i)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--speculative-ngram", a->speculative_ngram,
                  "Speculative decoding by prompt lookup: draft up to N tokens per step from an earlier occurrence of "
                  "the last 2-4 tokens, verified in one forward pass (same output as without; runs through the engine, "
                  "as --parallel 1 when --parallel is not given); 0 = off (default)")
      ->check(CLI::Range(0, 64));
  cmd->add_option("--kv-type", a->kv_type,
                  "Element type of the KV cache: f16 (default), or q8_0 (about 1.9x the tokens in the same memory; "
                  "needs a head dim that is a multiple of 32)");
  return [a]() {
    auto kv_type = llm::ParseKvType(a->kv_type);
    if (!kv_type.ok()) {
      std::cerr << "error: --kv-type: " << kv_type.status().message() << "\n";
      return 2;
    }
    auto model = llm::LlamaModel::Load(a->model);
    if (!model.ok()) {
      std::cerr << "error: " << model.status().message() << "\n";
      return 1;
    }
    if (auto fits = llm::KvBlockPool::Create((*model)->kv_shape(16, *kv_type), 1); !fits.ok()) {
      std::cerr << "error: --kv-type: " << fits.status().message() << "\n";  // before any output
      return 2;
    }
    const llm::Tokenizer& tok = (*model)->tokenizer();
    auto sampling = SamplingFromFlags(a->s, tok.vocab_size());
    if (!sampling.ok()) {
      std::cerr << "error: " << sampling.status().message() << "\n";  // before any output
      return 2;
    }
    std::vector<int32_t> prompt;
    if (!a->prompt_ids.empty()) {
      std::stringstream ss(a->prompt_ids);
      std::string item;
      while (std::getline(ss, item, ',')) {
        try {
          size_t used = 0;
          const long v = std::stol(item, &used);
          if (used != item.size() || v < 0 || v >= tok.vocab_size()) throw std::out_of_range(item);
          prompt.push_back(static_cast<int32_t>(v));
        } catch (const std::exception&) {
          std::cerr << "error: --prompt-ids: '" << item << "' is not a token id of this model (0.." << tok.vocab_size() - 1 << ")\n";
          return 2;
        }
      }
    } else if (!a->prompt.empty()) {
      prompt = tok.Encode(a->prompt, !a->no_bos, /*parse_special=*/true);
    } else {
      std::cerr << "error: give the prompt with -p TEXT or --prompt-ids ID,ID,...\n";
      return 2;
    }
    if (a->speculative_ngram > 0 && a->parallel == 0) a->parallel = 1;
    if (a->parallel > 0) return RunParallel(std::move(*model), prompt, *a, *sampling, *kv_type);
    llm::GenerationOptions o;
    o.max_tokens = a->n;
    o.sampling = *sampling;
    o.threads = a->threads;
    o.stop_at_eog = !a->ignore_eos;
    o.kv_type = *kv_type;
    std::vector<int32_t> out;
    const std::string shown = a->prompt.empty() ? tok.DecodeText(prompt) : a->prompt;
    std::fwrite(shown.data(), 1, shown.size(), stdout);
    std::fflush(stdout);
    auto st = llm::Generate(**model, prompt, o, [&](int32_t id) {
      out.push_back(id);
      const std::string piece = tok.Piece(id);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      return true;
    });
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (!st.ok()) {
      std::cerr << "error: " << st.status().message() << "\n";
      return 1;
    }
    if (a->ids) {
      std::cerr << "prompt ids:";
      for (int32_t id : prompt) std::cerr << ' ' << id;
      std::cerr << "\ngenerated ids:";
      for (int32_t id : out) std::cerr << ' ' << id;
      std::cerr << "\n";
    }
    auto rate = [](int n, double s) { return s > 0 ? n / s : 0.0; };
    // The ISA path (bench/llm_bench.py reports it next to its timings).
    std::fprintf(stderr, "kernels: %s%s\n", llm::ActiveLlmKernels().name,
                 llm::AmxAvailable() ? " + amx" : "");
    std::fprintf(stderr, "prompt: %d tokens in %.3f s (%.1f tokens/s); generation: %d tokens in %.3f s (%.1f tokens/s)%s\n",
                 st->prompt_tokens, st->prompt_seconds, rate(st->prompt_tokens, st->prompt_seconds),
                 st->generated_tokens, st->generate_seconds, rate(st->generated_tokens, st->generate_seconds),
                 st->stopped_at_eog ? "; stopped at end of generation" : "");
    return 0;
  };
}

}  // namespace inferloop::cli
