// The text-or-token-ids inputs of the OpenAI API, one reader for both places that take them:
// /v1/completions' `prompt` and /v1/embeddings' `input`.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "frontends/openai_request.h"
#include "serve/text_generation_service.h"

namespace inferloop::frontends {

// `v` as the API allows it: a string, a list of strings, a list of token ids (one input) or a
// list of lists of token ids, appended to *out. False with *err (naming `field`, e.g. "prompt")
// for another type, an empty list, a list mixing the two forms, an empty list of token ids, or a
// token id that is not a non-negative 32-bit integer. Vocabulary limits are the model's to check.
bool ParseTextInputs(const rapidjson::Value& v, const std::string& field, std::vector<serve::TextPrompt>* out,
                     OpenAiFieldError* err);

// True when `v` is a list of several inputs (strings or token-id lists) rather than one input:
// what a limit on the number of inputs counts.
inline bool IsListOfInputs(const rapidjson::Value& v) { return v.IsArray() && !v.Empty() && !v[0].IsNumber(); }

}  // namespace inferloop::frontends
