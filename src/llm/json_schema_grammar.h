// JSON schema -> Grammar (grammar.h): the texts the grammar accepts are JSON values that
// validate against the schema, written compactly (no whitespace except at most one space after
// ':' and ',' and one before the value), so a constrained model cannot loop on whitespace.
//
// Supported: type (object, array, string, number, integer, boolean, null, or a list of them),
// properties, required, additionalProperties (false, true, or a schema for an object without
// properties: a map), enum, const, anyOf, oneOf (as anyOf: the branches are not made exclusive),
// $ref to "#" and JSON pointers into the schema ($defs, definitions, ...), minimum and maximum
// of an integer (both, at most 10000 values apart, or minimum 0 or 1 alone), items, minItems,
// maxItems, minLength, maxLength (up to 4096), format "uuid", nested schemas, and the
// annotations title, description, default, examples, $schema, $id, $comment, deprecated,
// readOnly, writeOnly (ignored). Properties are written in the schema's order; with `strict`
// every property is written, otherwise those not in `required` may be left out. Numbers have
// at most 16 integer digits, 16 fraction digits and 3 exponent digits.
//
// Anything else (pattern, bounds of a number, multipleOf, allOf, not, if/then/else,
// patternProperties, prefixItems, other formats, ...) is refused, never ignored.
#pragma once

#include <string>
#include <string_view>

#include "inferloop/status.h"
#include "llm/grammar.h"

namespace inferloop::llm {

struct JsonSchemaOptions {
  bool strict = false;  // every property of every object is written
};

// The grammar of the JSON values valid under `schema_json` (a JSON schema as text). Errors:
// InvalidArgument with a message naming the problem and where it is as a JSON pointer, e.g.
// "unsupported keyword 'pattern' at #/properties/name" or "malformed JSON schema: ..." (it is
// not JSON, a keyword has the wrong type, a $ref that does not resolve, a left-recursive $ref).
Result<Grammar> JsonSchemaToGrammar(std::string_view schema_json, const JsonSchemaOptions& options = {});

// Any JSON object (response_format {"type": "json_object"}), with the same whitespace rules.
Grammar JsonObjectGrammar();

}  // namespace inferloop::llm
