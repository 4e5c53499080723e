// The fast path of the KServe v2 REST request decoder (v2_json_codec.h DecodeJsonInferRequest):
// simdjson's On Demand parser on the common form of a request, taken in one pass with the
// numbers converted straight into the input tensors, where the full decoder builds a rapidjson
// document, converts every number from its text and then looks the members up.
//
// The common form: an object with "id" (a string), "inputs" (objects of "name", "datatype",
// "shape" and a flat "data" array of numbers, "data" after the other three) and "outputs"
// (objects with a "name"), each key at most once, numeric datatypes (not BOOL or BYTES),
// strings without escapes. Anything else (parameters, binary data, nested or scalar data, other
// keys, NaN / Infinity, numbers out of range, duplicate names, a declared shape the full decoder
// refuses, broken JSON of any kind) gives std::nullopt and the caller runs the full decoder,
// which accepts or words the error as before: the fast path only ever gives the request the
// full decoder gives for the same text (tests/fuzz/v2_json_fast_fuzzer.cc checks that).
#pragma once

#include <optional>
#include <string_view>

#include "frontends/request_types.h"
#include "frontends/v2_json_codec.h"

namespace inferloop::frontends {

// `json` is the whole body (no binary data after it). Bodies over kMaxFastJsonBytes go to the
// full decoder, so the per-thread parser and its padded copy of the text stay small.
std::optional<InferRequest> TryDecodeJsonInferRequestFast(std::string_view json, const JsonDecodeOptions& options);

inline constexpr size_t kMaxFastJsonBytes = size_t{1} << 20;

}  // namespace inferloop::frontends
