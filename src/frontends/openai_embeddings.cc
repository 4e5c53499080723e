#include "frontends/openai_embeddings.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cstdint>
#include <cstring>
#include <set>

#include "frontends/json_writer.h"
#include "frontends/openai_text_inputs.h"

namespace inferloop::frontends {
namespace {

constexpr size_t kMaxInputs = 2048;  // OpenAI's limit per request

// input: a string, [string, ...], [id, ...] or [[id, ...], ...]; at most kMaxInputs; no empty string.
bool ParseInputs(const rapidjson::Value& in, std::vector<serve::TextPrompt>* out, OpenAiFieldError* err) {
  if (IsListOfInputs(in) && in.Size() > kMaxInputs) {
    *err = {"input", "'input' holds " + std::to_string(in.Size()) + " inputs, at most " + std::to_string(kMaxInputs) +
                         " are allowed in one request"};
    return false;
  }
  if (!ParseTextInputs(in, "input", out, err)) return false;
  for (size_t i = 0; i < out->size(); ++i) {
    if (!(*out)[i].is_tokens && (*out)[i].text.empty()) {
      *err = {"input", out->size() > 1 ? "'input[" + std::to_string(i) + "]' is an empty string" : "'input' is an empty string"};
      return false;
    }
  }
  return true;
}

}  // namespace

bool ParseOpenAiEmbeddingsRequest(std::string_view body, OpenAiEmbeddingsRequest* out, OpenAiFieldError* err) {
  rapidjson::Document d;
  d.Parse(body.data(), body.size());
  if (d.HasParseError()) {
    *err = {"", std::string("malformed JSON body at offset ") + std::to_string(d.GetErrorOffset()) + ": " +
                    rapidjson::GetParseError_En(d.GetParseError())};
    return false;
  }
  if (!d.IsObject()) {
    *err = {"", "the request body must be a JSON object"};
    return false;
  }
  std::set<std::string> known = {"model", "input", "encoding_format", "dimensions", "user"};
  for (auto it = d.MemberBegin(); it != d.MemberEnd(); ++it) {
    if (!known.count(it->name.GetString())) {
      *err = {it->name.GetString(), std::string("'") + it->name.GetString() + "' is not a supported field of /v1/embeddings"};
      return false;
    }
  }
  auto get = [&](const char* name) -> const rapidjson::Value* {
    auto it = d.FindMember(name);
    return it == d.MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
  };
  const rapidjson::Value* model = get("model");
  if (model == nullptr || !model->IsString()) {
    *err = {"model", "'model' is required (a string)"};
    return false;
  }
  out->request.model.assign(model->GetString(), model->GetStringLength());
  const rapidjson::Value* input = get("input");
  if (input == nullptr) {
    *err = {"input", "'input' is required"};
    return false;
  }
  if (!ParseInputs(*input, &out->request.inputs, err)) return false;
  if (const rapidjson::Value* f = get("encoding_format")) {
    const std::string v = f->IsString() ? f->GetString() : "";
    if (v != "float" && v != "base64") {
      *err = {"encoding_format", "'encoding_format' must be \"float\" or \"base64\""};
      return false;
    }
    out->base64 = v == "base64";
  }
  if (const rapidjson::Value* dims = get("dimensions")) {
    if (!dims->IsInt64() || dims->GetInt64() < 1 || dims->GetInt64() > INT32_MAX) {
      *err = {"dimensions", "'dimensions' must be an integer >= 1"};
      return false;
    }
    out->request.dimensions = static_cast<int>(dims->GetInt64());
  }
  if (const rapidjson::Value* user = get("user"); user != nullptr && !user->IsString()) {
    *err = {"user", "'user' must be a string"};
    return false;
  }
  return true;
}

std::string Float32Base64(const std::vector<float>& values) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  bytes.reserve(values.size() * 4);
  for (float v : values) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>((u >> (8 * b)) & 0xFF));  // little-endian
  }
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k) chunk = (chunk << 8) | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out.push_back(k <= n ? kAlphabet[(chunk >> (18 - 6 * k)) & 63] : '=');
  }
  return out;
}

std::string OpenAiEmbeddingsJson(const serve::EmbeddingResult& result, const std::string& model, bool base64) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("object");
  w.String("list");
  w.Key("data");
  w.StartArray();
  for (size_t i = 0; i < result.embeddings.size(); ++i) {
    w.StartObject();
    w.Key("object");
    w.String("embedding");
    w.Key("index");
    w.Uint64(i);
    w.Key("embedding");
    if (base64) {
      Str(w, Float32Base64(result.embeddings[i]));
    } else {
      w.StartArray();
      for (float v : result.embeddings[i]) w.Double(v);
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("model");
  Str(w, model);
  w.Key("usage");
  w.StartObject();
  w.Key("prompt_tokens");
  w.Int(result.prompt_tokens);
  w.Key("total_tokens");
  w.Int(result.prompt_tokens);
  w.EndObject();
  w.EndObject();
  return sb.GetString();
}

}  // namespace inferloop::frontends
