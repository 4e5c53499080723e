// JSON string literals for the hand-written JSON the CLI tools and the event log print.
#pragma once

#include <string>
#include <string_view>

namespace inferloop {

// Appends `s` as a quoted JSON string: '"' and '\' escaped, \n \r \t as such, other control
// characters as \u00XX; other bytes (UTF-8 included) as they are.
void AppendJsonString(std::string& out, std::string_view s);
// The same, returned.
std::string JsonString(std::string_view s);

}  // namespace inferloop
