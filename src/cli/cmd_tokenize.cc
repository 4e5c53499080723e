// inferloop tokenize MODEL.gguf TEXT: the token ids (and pieces) a GGUF model's tokenizer gives
// for a text, as llama.cpp's llama-tokenize shows them.
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "llm/gguf_file.h"
#include "llm/tokenizer.h"

namespace inferloop::cli {

Runner AddTokenizeCommand(CLI::App& app) {
  struct Args {
    std::string model;
    std::string text;
    bool no_bos = false;
    bool parse_special = false;
    bool ids_only = false;
    bool stdin_text = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text under a GGUF model's tokenizer.");
  cmd->add_option("model", a->model, "Path to a GGUF model file")->required();
  cmd->add_option("text", a->text, "Text to tokenize (or --stdin)");
  cmd->add_flag("--stdin", a->stdin_text, "Read the text from standard input (all of it, bytes as they are)");
  cmd->add_flag("--no-bos", a->no_bos, "Do not put the BOS token first");
  cmd->add_flag("--parse-special", a->parse_special, "Recognize special tokens written in the text (<|eot_id|>, </s>, ...)");
  cmd->add_flag("--ids-only", a->ids_only, "Print only the ids, space-separated, on one line");
  return [a]() {
    auto file = llm::GgufFile::Open(a->model);
    if (!file.ok()) {
      std::cerr << "error: " << file.status().message() << "\n";
      return 1;
    }
    auto tok = llm::Tokenizer::FromGguf(*file);
    if (!tok.ok()) {
      std::cerr << "error: " << a->model << ": " << tok.status().message() << "\n";
      return 1;
    }
    std::string text = a->text;
    if (a->stdin_text) text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    const auto ids = tok->Encode(text, !a->no_bos, a->parse_special);
    if (a->ids_only) {
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
      std::cout << "\n";
      return 0;
    }
    for (int32_t id : ids) std::cout << id << " -> '" << tok->Piece(id, /*render_special=*/true) << "'\n";
    return 0;
  };
}

}  // namespace inferloop::cli
