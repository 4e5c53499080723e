// inferloop._inferloop.LLM and Generation (exported as inferloop.LLM): text generation with a GGUF
// llama-family model in process, through the same API `inferloop generate` uses (llm/generation.h:
// one sequence, prefill then decode) and the server's streaming text rules (llm/text_stream.h:
// whole UTF-8 characters only, never any part of a stop string).
//
// LLM.generate(..., stream=True) starts the generation on a thread of its own and returns a
// Generation, an iterator of text pieces: __next__ waits for the next piece with the GIL released,
// so other Python threads run meanwhile. The thread computes at most kReadAhead pieces ahead of
// the consumer, then waits for it. close() (or leaving a `with` block, or dropping the
// object) stops the generation at the next token and waits for its thread. stream=False runs the
// same generation on the calling thread (GIL released) and returns the whole text; the pieces of
// a stream joined are that text.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "bindings.h"
#include "errors.h"
#include "llm/generation.h"
#include "llm/llama_model.h"
#include "llm/text_stream.h"

namespace inferloop::py {
namespace {

using Prompt = std::variant<std::string, std::vector<int32_t>>;
using StopArg = std::optional<std::variant<std::string, std::vector<std::string>>>;
using LogitBias = std::optional<std::map<int32_t, double>>;  // token id -> bias

// generate()'s sampling keywords beyond temperature/top_k/top_p/seed (llm/sampler.h's meaning).
struct Penalties {
  double min_p, presence, frequency, repetition;
  const LogitBias& logit_bias;
};

// One generation request, checked and ready to run.
struct GenerationJob {
  std::shared_ptr<const llm::LlamaModel> model;
  std::vector<int32_t> prompt;
  llm::GenerationOptions options;
  std::vector<std::string> stop;
};

struct GenerationOutcome {
  std::vector<int32_t> tokens;  // generated ids (an end-of-generation token is not among them)
  std::string finish_reason;    // "stop" (end of generation or a stop string), "length", "cancelled"
  llm::GenerationStats stats;
};

// Runs `job` on the calling thread, calling `emit` with each generated token and the text that
// became final with it (often "", when text is held back), then once with the held-back rest and
// token -1 unless a stop string ended the text; stops early when `cancel` is set. The texts
// joined are the whole generated text.
Result<GenerationOutcome> RunGeneration(const GenerationJob& job, const std::atomic<bool>& cancel,
                                        const std::function<void(std::string, int32_t token)>& emit) {
  const llm::Tokenizer& tok = job.model->tokenizer();
  llm::TextStream text(job.stop);
  GenerationOutcome out;
  bool cancelled = false;
  auto stats = llm::Generate(*job.model, job.prompt, job.options, [&](int32_t id) {
    out.tokens.push_back(id);
    emit(text.Push(tok.Piece(id)), id);
    if (text.stopped()) return false;
    if (cancel.load()) cancelled = true;
    return !cancelled;
  });
  if (!stats.ok()) return stats.status();
  out.stats = *stats;
  if (!text.stopped()) emit(text.Finish(), -1);
  if (stats->stopped_at_eog || text.stopped()) out.finish_reason = "stop";
  else if (cancelled) out.finish_reason = "cancelled";
  else out.finish_reason = "length";
  return out;
}

nb::dict StatsDict(const GenerationOutcome& o) {
  nb::dict d;
  d["prompt_tokens"] = o.stats.prompt_tokens;
  d["generated_tokens"] = static_cast<int>(o.tokens.size());
  d["prompt_seconds"] = o.stats.prompt_seconds;
  d["generate_seconds"] = o.stats.generate_seconds;
  return d;
}

// A streaming generation: a thread runs the job and queues text pieces for __next__.
class PyGeneration {
 public:
  PyGeneration(GenerationJob job) : prompt_(job.prompt) {
    worker_ = std::thread([this, job = std::move(job)] {
      Result<GenerationOutcome> r = Status::Internal("generation did not run");
      try {
        r = RunGeneration(job, cancel_, [this](std::string piece, int32_t token) {
          std::unique_lock<std::mutex> l(mu_);
          if (token >= 0) tokens_.push_back(token);
          if (piece.empty()) return;
          // Read-ahead is bounded: an iterator nobody advances holds its generation.
          cv_.wait(l, [this] { return pieces_.size() < kReadAhead || cancel_.load(); });
          pieces_.push_back(std::move(piece));
          cv_.notify_all();
        });
      } catch (const std::exception& e) {
        r = Status::Internal(std::string("generation failed: ") + e.what());
      }
      std::lock_guard<std::mutex> l(mu_);
      if (r.ok()) outcome_ = std::move(r).value();
      else error_ = r.status();
      done_ = true;
      cv_.notify_all();
    });
  }
  ~PyGeneration() { Stop(); }
  PyGeneration(const PyGeneration&) = delete;
  PyGeneration& operator=(const PyGeneration&) = delete;

  // The next piece; StopIteration at the end, the engine's error if it failed. Waits with the
  // GIL released (and never takes the GIL while holding mu_: the two would deadlock).
  std::string Next() {
    std::optional<std::string> piece;
    Status error;
    {
      nb::gil_scoped_release release;
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return !pieces_.empty() || done_; });
      if (!pieces_.empty()) {
        piece = std::move(pieces_.front());
        pieces_.pop_front();
        cv_.notify_all();  // the generation may be waiting for room
      } else {
        error = std::exchange(error_, Status::Ok());  // raised once; then the iterator is exhausted
      }
    }
    if (piece) return std::move(*piece);
    if (!error.ok()) throw StatusError(error);
    throw nb::stop_iteration();
  }

  // Stops the generation at the next token and waits for its thread; pieces not yet taken are
  // dropped. Safe to call more than once.
  void Close() {
    nb::gil_scoped_release release;
    Stop();
    std::lock_guard<std::mutex> l(mu_);
    pieces_.clear();
  }

  std::vector<int32_t> tokens() {
    std::lock_guard<std::mutex> l(mu_);
    return tokens_;
  }
  const std::vector<int32_t>& prompt() const { return prompt_; }
  nb::object finish_reason() {
    std::lock_guard<std::mutex> l(mu_);
    if (!outcome_) return nb::none();
    return nb::str(outcome_->finish_reason.c_str());
  }
  nb::object stats() {
    std::lock_guard<std::mutex> l(mu_);
    if (!outcome_) return nb::none();
    return StatsDict(*outcome_);
  }

 private:
  void Stop() {
    {
      std::lock_guard<std::mutex> l(mu_);
      cancel_.store(true);
      cv_.notify_all();
    }
    if (worker_.joinable()) worker_.join();
  }

  static constexpr size_t kReadAhead = 8;  // pieces computed ahead of the consumer at most

  const std::vector<int32_t> prompt_;
  std::atomic<bool> cancel_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> pieces_;
  std::vector<int32_t> tokens_;
  std::optional<GenerationOutcome> outcome_;
  Status error_;
  bool done_ = false;
  std::thread worker_;  // last: started after every member it uses exists
};

std::vector<std::string> StopStrings(const StopArg& stop) {
  std::vector<std::string> out;
  if (!stop) return out;
  if (const auto* one = std::get_if<std::string>(&*stop)) out.push_back(*one);
  else out = std::get<std::vector<std::string>>(*stop);
  for (const auto& s : out)
    if (s.empty()) throw StatusError(Status::InvalidArgument("stop: an empty stop string"));
  return out;
}

class PyLLM {
 public:
  PyLLM(const std::string& path, int threads, const std::string& kv_type) : threads_(threads) {
    if (threads < 0) throw StatusError(Status::InvalidArgument("threads must be >= 0 (0: the CPUs this process may use)"));
    kv_type_ = ValueOrThrow(llm::ParseKvType(kv_type));
    Result<std::unique_ptr<llm::LlamaModel>> loaded = Status::Internal("not loaded");
    {
      nb::gil_scoped_release release;
      loaded = llm::LlamaModel::Load(path);
    }
    model_ = ValueOrThrow(std::move(loaded));
    // Q8_0 needs a head dim that is a multiple of 32: say so now rather than at generate().
    if (auto fits = llm::KvBlockPool::Create(model_->kv_shape(16, kv_type_), 1); !fits.ok())
      throw StatusError(fits.status().WithContext("kv_type"));
  }

  std::vector<int32_t> Tokenize(const std::string& text, bool add_bos, bool parse_special) const {
    return model_->tokenizer().Encode(text, add_bos, parse_special);
  }

  std::string Detokenize(const std::vector<int32_t>& ids, bool render_special) const {
    const llm::Tokenizer& tok = model_->tokenizer();
    for (int32_t id : ids)
      if (id < 0 || id >= tok.vocab_size())
        throw StatusError(Status::InvalidArgument("token id " + std::to_string(id) + " is not a token id of this model (0.." +
                                                  std::to_string(tok.vocab_size() - 1) + ")"));
    return llm::SanitizeUtf8(tok.Decode(ids, render_special));
  }

  nb::object Generate(const Prompt& prompt, int max_tokens, double temperature, int top_k, double top_p, uint64_t seed,
                      const StopArg& stop, bool stream, bool add_bos, bool ignore_eos, const Penalties& pen) {
    GenerationJob job;
    job.model = model_;
    if (const auto* text = std::get_if<std::string>(&prompt)) job.prompt = Tokenize(*text, add_bos, /*parse_special=*/true);
    else job.prompt = std::get<std::vector<int32_t>>(prompt);
    job.options.max_tokens = max_tokens;
    job.options.sampling.temperature = static_cast<float>(temperature);
    job.options.sampling.top_k = top_k;
    job.options.sampling.top_p = static_cast<float>(top_p);
    job.options.sampling.seed = seed;
    job.options.sampling.min_p = static_cast<float>(pen.min_p);
    job.options.sampling.presence_penalty = static_cast<float>(pen.presence);
    job.options.sampling.frequency_penalty = static_cast<float>(pen.frequency);
    job.options.sampling.repetition_penalty = static_cast<float>(pen.repetition);
    if (pen.logit_bias)
      for (const auto& [token, bias] : *pen.logit_bias) job.options.sampling.logit_bias.emplace_back(token, static_cast<float>(bias));
    job.options.stop_at_eog = !ignore_eos;
    job.options.threads = threads_;
    job.options.kv_type = kv_type_;
    job.stop = StopStrings(stop);
    ThrowIfError(llm::ValidateGeneration(*model_, job.prompt, job.options));  // bad requests raise here
    if (stream) return nb::cast(new PyGeneration(std::move(job)), nb::rv_policy::take_ownership);
    std::string text;
    Result<GenerationOutcome> r = Status::Internal("generation did not run");
    {
      nb::gil_scoped_release release;
      const std::atomic<bool> never{false};
      r = RunGeneration(job, never, [&](std::string piece, int32_t) { text += piece; });
    }
    if (!r.ok()) throw StatusError(r.status());
    return nb::str(text.data(), text.size());
  }

  const llm::LlamaModel& model() const { return *model_; }

 private:
  std::shared_ptr<const llm::LlamaModel> model_;
  int threads_ = 0;
  llm::KvType kv_type_ = llm::KvType::kF16;
};

}  // namespace

void RegisterLlm(nb::module_& m) {
  nb::class_<PyGeneration>(m, "Generation",
                           "A streaming generation (LLM.generate(..., stream=True)): iterate for text pieces; close() "
                           "stops it early.")
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__", &PyGeneration::Next)
      .def("close", &PyGeneration::Close, "Stops the generation (at the next token) and waits for it to end.")
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](PyGeneration& g, nb::handle, nb::handle, nb::handle) { g.Close(); },
           nb::arg("exc_type").none(), nb::arg("exc").none(), nb::arg("tb").none())
      .def_prop_ro("token_ids", &PyGeneration::tokens, "Ids of the tokens generated so far.")
      .def_prop_ro("prompt_token_ids", &PyGeneration::prompt, "The prompt's token ids.")
      .def_prop_ro("finish_reason", &PyGeneration::finish_reason,
                   "None while running; then 'stop' (end-of-generation token or a stop string), 'length' "
                   "(max_tokens) or 'cancelled' (closed early).")
      .def_prop_ro("stats", &PyGeneration::stats,
                   "None while running; then {prompt_tokens, generated_tokens, prompt_seconds, generate_seconds}.");

  nb::class_<PyLLM>(m, "LLM", "A GGUF llama-family model (llama, mistral, qwen2) for text generation.")
      .def(nb::init<const std::string&, int, const std::string&>(), nb::arg("path"), nb::kw_only(),
           nb::arg("threads") = 0, nb::arg("kv_type") = "f16")
      .def("tokenize", &PyLLM::Tokenize, nb::arg("text"), nb::kw_only(), nb::arg("add_bos") = true,
           nb::arg("parse_special") = false)
      .def("detokenize", &PyLLM::Detokenize, nb::arg("ids"), nb::kw_only(), nb::arg("render_special") = false)
      .def("generate",
           [](PyLLM& llm, const Prompt& prompt, int max_tokens, double temperature, int top_k, double top_p,
              uint64_t seed, const StopArg& stop, bool stream, bool add_bos, bool ignore_eos, double min_p,
              double presence_penalty, double frequency_penalty, double repetition_penalty,
              const LogitBias& logit_bias) {
             return llm.Generate(prompt, max_tokens, temperature, top_k, top_p, seed, stop, stream, add_bos, ignore_eos,
                                 Penalties{min_p, presence_penalty, frequency_penalty, repetition_penalty, logit_bias});
           },
           nb::arg("prompt"), nb::kw_only(), nb::arg("max_tokens") = 128,
           nb::arg("temperature") = 0.8, nb::arg("top_k") = 40, nb::arg("top_p") = 0.95, nb::arg("seed") = 0,
           nb::arg("stop").none() = nb::none(), nb::arg("stream") = true, nb::arg("add_bos") = true,
           nb::arg("ignore_eos") = false, nb::arg("min_p") = 0.0, nb::arg("presence_penalty") = 0.0,
           nb::arg("frequency_penalty") = 0.0, nb::arg("repetition_penalty") = 1.0,
           nb::arg("logit_bias").none() = nb::none())
      .def_prop_ro("path", [](const PyLLM& l) { return l.model().path(); })
      .def_prop_ro("vocab_size", [](const PyLLM& l) { return l.model().tokenizer().vocab_size(); })
      .def_prop_ro("context_length", [](const PyLLM& l) { return l.model().hparams().n_ctx_train; })
      .def_prop_ro("bos_token_id", [](const PyLLM& l) { return l.model().tokenizer().bos(); })
      .def_prop_ro("eos_token_id", [](const PyLLM& l) { return l.model().tokenizer().eos(); });
}

}  // namespace inferloop::py
