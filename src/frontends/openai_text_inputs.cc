#include "frontends/openai_text_inputs.h"

#include <cstdint>

namespace inferloop::frontends {
namespace {

// One token-id input: a non-empty array of non-negative integers.
bool ReadTokenIds(const rapidjson::Value& v, const std::string& field, const std::string& where,
                  serve::TextPrompt* out, OpenAiFieldError* err) {
  if (v.Empty()) {
    *err = {field, "'" + where + "' is an empty list of token ids"};
    return false;
  }
  out->is_tokens = true;
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
    if (!v[i].IsInt64() || v[i].GetInt64() < 0 || v[i].GetInt64() > INT32_MAX) {
      *err = {field, "'" + where + "[" + std::to_string(i) + "]' must be a token id (a non-negative integer)"};
      return false;
    }
    out->tokens.push_back(static_cast<int32_t>(v[i].GetInt64()));
  }
  return true;
}

}  // namespace

bool ParseTextInputs(const rapidjson::Value& v, const std::string& field, std::vector<serve::TextPrompt>* out,
                     OpenAiFieldError* err) {
  if (v.IsString()) {
    out->push_back({std::string(v.GetString(), v.GetStringLength()), {}, false});
    return true;
  }
  if (!v.IsArray()) {
    *err = {field, "'" + field + "' must be a string, a list of strings, a list of token ids or a list of lists of token ids"};
    return false;
  }
  if (v.Empty()) {
    *err = {field, "'" + field + "' is an empty list: give at least one " + field};
    return false;
  }
  if (v[0].IsNumber()) {  // one input of token ids
    out->emplace_back();
    return ReadTokenIds(v, field, field, &out->back(), err);
  }
  const bool strings = v[0].IsString();
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
    const rapidjson::Value& item = v[i];
    const std::string where = field + "[" + std::to_string(i) + "]";
    serve::TextPrompt p;
    if (strings && item.IsString()) {
      p.text.assign(item.GetString(), item.GetStringLength());
    } else if (!strings && item.IsArray()) {
      if (!ReadTokenIds(item, field, where, &p, err)) return false;
    } else {
      *err = {field, "'" + where + "' must be " +
                         (strings ? "a string, like " + field + "[0]" : "a list of token ids, like " + field + "[0]")};
      return false;
    }
    out->push_back(std::move(p));
  }
  return true;
}

}  // namespace inferloop::frontends
