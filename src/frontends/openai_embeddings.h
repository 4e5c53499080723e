// POST /v1/embeddings of the OpenAI-compatible API: the request body parsed and checked into a
// serve::EmbeddingRequest, and the response body. Separate from the handler so it can be
// unit-tested and fuzzed without a server.
//
// Fields: model (required); input (required): a string, [string, ...], [token id, ...] or
// [[token id, ...], ...], at most 2048 inputs, no empty string or list; encoding_format "float"
// (default) or "base64" (each vector's float32 values, little-endian, base64-encoded: what the
// openai SDK decodes); dimensions (an integer >= 1: the first `dimensions` values, renormalised;
// the service refuses more than the model has); user (ignored). Any other field is a 400.
#pragma once

#include <string>
#include <string_view>

#include "frontends/openai_request.h"
#include "serve/text_generation_service.h"

namespace inferloop::frontends {

struct OpenAiEmbeddingsRequest {
  serve::EmbeddingRequest request;
  bool base64 = false;
};

// False with *err set (the field at fault and a message naming it) for broken JSON, a missing,
// wrongly typed or unknown field, or a value out of range.
bool ParseOpenAiEmbeddingsRequest(std::string_view body, OpenAiEmbeddingsRequest* out, OpenAiFieldError* err);

// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
//  "usage": {"prompt_tokens", "total_tokens"}}
std::string OpenAiEmbeddingsJson(const serve::EmbeddingResult& result, const std::string& model, bool base64);

// The base64 text (RFC 4648, padded) of `values` as little-endian float32.
std::string Float32Base64(const std::vector<float>& values);

}  // namespace inferloop::frontends
