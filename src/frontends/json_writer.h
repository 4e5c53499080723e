// The JSON writer the frontends write response bodies with (rapidjson, writing into a
// StringBuffer), and the string_view forms of its Key and String calls: one home for the REST,
// OpenAI and adaptive-state writers.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string_view>

namespace inferloop::frontends {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

inline void Key(JsonWriter& w, std::string_view key) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
}
inline void Str(JsonWriter& w, std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }

}  // namespace inferloop::frontends
