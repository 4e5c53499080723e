// Errors of the C APIs (inferloop_c.h, inferloop_llm_c.h): messages handed to C callers as
// malloc'ed strings, freed with il_free_string.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

#include "inferloop/status.h"

namespace inferloop {

// Sets *error to a malloc'ed copy of msg (when error is not NULL; NULL if malloc fails).
inline void SetCError(char** error, const std::string& msg) {
  if (!error) return;
  *error = static_cast<char*>(std::malloc(msg.size() + 1));
  if (*error) std::memcpy(*error, msg.c_str(), msg.size() + 1);
}

// The same with "CODE: message" (Status::ToString).
inline void SetCError(char** error, const Status& st) { SetCError(error, st.ToString()); }

}  // namespace inferloop
