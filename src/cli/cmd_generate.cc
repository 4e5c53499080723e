// inferloop generate MODEL.gguf -p PROMPT -n N [--temp T --top-k K --top-p P --seed S]:
// streams a llama-family model's continuation of a prompt to stdout, then prints prompt and
// generation speed (tokens/s) on stderr.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "llm/generation.h"
#include "llm/llama_model.h"

namespace inferloop::cli {

Runner AddGenerateCommand(CLI::App& app) {
  struct Args {
    std::string model;
    std::string prompt;
    int n = 128;
    float temp = 0.8f;
    int top_k = 40;
    float top_p = 0.95f;
    uint64_t seed = 0;
    int threads = 0;
    bool ids = false;
    bool no_bos = false;
    bool ignore_eos = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate text with a GGUF llama-family model (llama, mistral, qwen2): streams the continuation of "
                  "the prompt to stdout and prints prompt and generation tokens/s to stderr.");
  cmd->add_option("model", a->model, "Path to a GGUF model file")->required();
  cmd->add_option("-p,--prompt", a->prompt, "Prompt text")->required();
  cmd->add_option("-n,--max-tokens", a->n, "Tokens to generate (default 128)")->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--temp", a->temp, "Sampling temperature; 0 = greedy (default 0.8)");
  cmd->add_option("--top-k", a->top_k, "Keep the K most likely tokens; 0 = all (default 40)");
  cmd->add_option("--top-p", a->top_p, "Keep the most likely tokens up to this probability mass (default 0.95)");
  cmd->add_option("--seed", a->seed, "Random seed for sampling (default 0)");
  cmd->add_option("-t,--threads", a->threads, "Threads; 0 (default) = the CPUs this process may use")->check(CLI::Range(0, 4096));
  cmd->add_flag("--print-token-ids", a->ids, "Also print the prompt's and the generated token ids on stderr");
  cmd->add_flag("--no-bos", a->no_bos, "Do not put the BOS token before the prompt");
  cmd->add_flag("--ignore-eos", a->ignore_eos, "Keep generating past end-of-generation tokens");
  return [a]() {
    auto model = llm::LlamaModel::Load(a->model);
    if (!model.ok()) {
      std::cerr << "error: " << model.status().message() << "\n";
      return 1;
    }
    const llm::Tokenizer& tok = (*model)->tokenizer();
    const std::vector<int32_t> prompt = tok.Encode(a->prompt, !a->no_bos, /*parse_special=*/true);
    llm::GenerationOptions o;
    o.max_tokens = a->n;
    o.sampling = {a->temp, a->top_k, a->top_p, a->seed};
    o.threads = a->threads;
    o.stop_at_eog = !a->ignore_eos;
    std::vector<int32_t> out;
    std::fwrite(a->prompt.data(), 1, a->prompt.size(), stdout);
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
    std::fprintf(stderr, "prompt: %d tokens in %.3f s (%.1f tokens/s); generation: %d tokens in %.3f s (%.1f tokens/s)%s\n",
                 st->prompt_tokens, st->prompt_seconds, rate(st->prompt_tokens, st->prompt_seconds),
                 st->generated_tokens, st->generate_seconds, rate(st->generated_tokens, st->generate_seconds),
                 st->stopped_at_eog ? "; stopped at end of generation" : "");
    return 0;
  };
}

}  // namespace inferloop::cli
