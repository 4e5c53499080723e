// The byte grammar and its pushdown recognizer on hand-made grammars, the JSON schema compiler
// (accepted and refused texts for each supported keyword, errors for the rest), and the token
// masks: the trie walk equals a token-by-token check, and the cached masks equal fresh walks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "llm/gguf_file.h"
#include "llm/grammar.h"
#include "llm/grammar_matcher.h"
#include "llm/json_schema_grammar.h"
#include "llm/token_mask.h"
#include "llm/tokenizer.h"

namespace inferloop::llm {
namespace {

using Sym = GrammarSymbol;

bool Accepts(const Grammar& g, const std::string& text) {
  GrammarMatcher m(&g);
  return m.Advance(text) && m.CanEnd();
}

bool Prefix(const Grammar& g, const std::string& text) {
  GrammarMatcher m(&g);
  return m.Advance(text);
}

// s ::= '(' s ')' s | ''   (balanced parentheses)
Grammar Parens() {
  Grammar g;
  const int s = g.NewRule("s");
  g.AddAlternative(s, {Sym::Byte('('), Sym::Rule(s), Sym::Byte(')'), Sym::Rule(s)});
  g.AddAlternative(s, {});
  g.SetRoot(s);
  EXPECT_TRUE(g.Finalize().ok());
  return g;
}

TEST(GrammarMatcher, BalancedParentheses) {
  const Grammar g = Parens();
  EXPECT_TRUE(Accepts(g, ""));
  EXPECT_TRUE(Accepts(g, "()"));
  EXPECT_TRUE(Accepts(g, "(()())()"));
  EXPECT_FALSE(Accepts(g, "(()"));
  EXPECT_TRUE(Prefix(g, "(()"));
  EXPECT_FALSE(Prefix(g, "())"));
  EXPECT_FALSE(Prefix(g, "x"));
  GrammarMatcher m(&g);
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.Advance(')'));  // refused: the state is unchanged
  EXPECT_TRUE(m.Advance('('));
  EXPECT_FALSE(m.CanEnd());
  EXPECT_EQ(m.NextBytes().count(), 2u);
  // A refused multi-byte advance consumes nothing.
  EXPECT_FALSE(m.Advance(std::string("()x")));
  EXPECT_TRUE(m.Advance(')'));
  EXPECT_TRUE(m.CanEnd());
}

TEST(GrammarMatcher, AlternativesAndDoneState) {
  // r ::= "ab" | "ac" | "abd"
  Grammar g;
  const int r = g.NewRule("r");
  g.AddAlternative(r, Literal("ab"));
  g.AddAlternative(r, Literal("ac"));
  g.AddAlternative(r, Literal("abd"));
  g.SetRoot(r);
  ASSERT_TRUE(g.Finalize().ok());
  GrammarMatcher m(&g);
  ASSERT_TRUE(m.Advance(std::string("ab")));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.Done());  // "abd" is still open
  ASSERT_TRUE(m.Advance('d'));
  EXPECT_TRUE(m.Done());
  EXPECT_FALSE(m.Advance('d'));
  // Equal states, equal keys.
  GrammarMatcher a(&g), b(&g);
  a.Advance('a');
  b.Advance('a');
  EXPECT_EQ(a.Key(), b.Key());
  b.Advance('c');
  EXPECT_NE(a.Key(), b.Key());
}

TEST(Grammar, RefusesLeftRecursionAndMissingRules) {
  Grammar g;
  const int a = g.NewRule("a");
  const int b = g.NewRule("b");
  g.AddAlternative(a, {Sym::Rule(b), Sym::Byte('x')});
  g.AddAlternative(b, {Sym::Rule(a)});
  g.SetRoot(a);
  const Status st = g.Finalize();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("left-recursive"), std::string::npos) << st.message();
  Grammar h;
  h.SetRoot(h.NewRule("empty"));
  EXPECT_FALSE(h.Finalize().ok());
  // Through a nullable prefix too: c ::= n c 'x' | 'y' with n ::= '' | 'z'.
  Grammar k;
  const int c = k.NewRule("c");
  const int n = k.NewRule("n");
  k.AddAlternative(n, {});
  k.AddAlternative(n, {Sym::Byte('z')});
  k.AddAlternative(c, {Sym::Rule(n), Sym::Rule(c), Sym::Byte('x')});
  k.AddAlternative(c, {Sym::Byte('y')});
  k.SetRoot(c);
  EXPECT_FALSE(k.Finalize().ok());
}

Grammar Schema(const std::string& json, bool strict = false) {
  auto g = JsonSchemaToGrammar(json, {strict});
  EXPECT_TRUE(g.ok()) << json << ": " << g.status().message();
  return g.ok() ? std::move(*g) : Grammar();
}

std::string SchemaError(const std::string& json) {
  auto g = JsonSchemaToGrammar(json);
  return g.ok() ? "" : g.status().message();
}

TEST(JsonSchemaGrammar, Scalars) {
  const Grammar i = Schema(R"({"type": "integer"})");
  for (const char* ok : {"0", "-7", "42", " 12", "1234567890123456"}) EXPECT_TRUE(Accepts(i, ok)) << ok;
  for (const char* bad : {"01", "1.5", "-", "+1", "12345678901234567", "\"1\"", "  1"}) EXPECT_FALSE(Accepts(i, bad)) << bad;
  const Grammar n = Schema(R"({"type": "number"})");
  for (const char* ok : {"0", "-0.5", "3.25e10", "1E-3", "7"}) EXPECT_TRUE(Accepts(n, ok)) << ok;
  for (const char* bad : {".5", "1.", "1e", "NaN", "1e1234"}) EXPECT_FALSE(Accepts(n, bad)) << bad;
  const Grammar b = Schema(R"({"type": "boolean"})");
  EXPECT_TRUE(Accepts(b, "true"));
  EXPECT_TRUE(Accepts(b, "false"));
  EXPECT_FALSE(Accepts(b, "True"));
  const Grammar z = Schema(R"({"type": "null"})");
  EXPECT_TRUE(Accepts(z, "null"));
  EXPECT_FALSE(Accepts(z, "nul"));
  const Grammar u = Schema(R"({"type": ["integer", "null"]})");
  EXPECT_TRUE(Accepts(u, "null"));
  EXPECT_TRUE(Accepts(u, "3"));
  EXPECT_FALSE(Accepts(u, "true"));
}

TEST(JsonSchemaGrammar, IntegerBounds) {
  const Grammar r = Schema(R"({"type": "integer", "minimum": -12, "maximum": 120})");
  for (int v = -30; v <= 300; ++v) EXPECT_EQ(Accepts(r, std::to_string(v)), v >= -12 && v <= 120) << v;
  EXPECT_FALSE(Accepts(r, "007"));
  EXPECT_FALSE(Accepts(r, "-0"));
  const Grammar nat = Schema(R"({"type": "integer", "minimum": 0})");
  EXPECT_TRUE(Accepts(nat, "0"));
  EXPECT_TRUE(Accepts(nat, "123"));
  EXPECT_FALSE(Accepts(nat, "-1"));
  const Grammar pos = Schema(R"({"type": "integer", "minimum": 1})");
  EXPECT_FALSE(Accepts(pos, "0"));
  EXPECT_TRUE(Accepts(pos, "10"));
}

TEST(JsonSchemaGrammar, Strings) {
  const Grammar s = Schema(R"({"type": "string"})");
  for (const char* ok : {"\"\"", "\"abc\"", "\"a\\\"b\"", "\"\\u00e9\\n\"", "\"caf\xC3\xA9\"", "\"\xF0\x9F\x98\x80\""}) {
    EXPECT_TRUE(Accepts(s, ok)) << ok;
  }
  for (const char* bad : {"\"abc", "abc", "\"a\nb\"", "\"\\x\"", "\"\xC3\"", "\"\xED\xA0\x80\"", "\"\xC0\xAF\""}) {
    EXPECT_FALSE(Accepts(s, bad)) << bad;
  }
  const Grammar len = Schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_FALSE(Accepts(len, "\"a\""));
  EXPECT_TRUE(Accepts(len, "\"ab\""));
  EXPECT_TRUE(Accepts(len, "\"a\xC3\xA9\""));  // characters, not bytes
  EXPECT_TRUE(Accepts(len, "\"abc\""));
  EXPECT_FALSE(Accepts(len, "\"abcd\""));
  const Grammar id = Schema(R"({"type": "string", "format": "uuid"})");
  EXPECT_TRUE(Accepts(id, "\"123e4567-e89b-12d3-a456-426614174000\""));
  EXPECT_FALSE(Accepts(id, "\"123e4567e89b12d3a456426614174000\""));
}

TEST(JsonSchemaGrammar, EnumConstAnyOf) {
  const Grammar e = Schema(R"({"enum": ["red", 1, null, {"a": [true]}]})");
  for (const char* ok : {"\"red\"", "1", "null", "{\"a\":[true]}"}) EXPECT_TRUE(Accepts(e, ok)) << ok;
  for (const char* bad : {"\"blue\"", "2", "{\"a\": [true]}"}) EXPECT_FALSE(Accepts(e, bad)) << bad;
  const Grammar c = Schema(R"({"const": "x"})");
  EXPECT_TRUE(Accepts(c, "\"x\""));
  EXPECT_FALSE(Accepts(c, "\"y\""));
  const Grammar a = Schema(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})");
  EXPECT_TRUE(Accepts(a, "5"));
  EXPECT_TRUE(Accepts(a, "\"q\""));
  EXPECT_FALSE(Accepts(a, "\"qq\""));
  const Grammar o = Schema(R"({"oneOf": [{"type": "boolean"}, {"type": "null"}]})");
  EXPECT_TRUE(Accepts(o, "null"));
  EXPECT_FALSE(Accepts(o, "0"));
}

TEST(JsonSchemaGrammar, ObjectsRequiredAndStrict) {
  const std::string schema =
      R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
          "required": ["b"], "additionalProperties": false})";
  const Grammar g = Schema(schema);
  for (const char* ok : {"{\"b\":\"x\"}", "{\"a\":1,\"b\":\"x\"}", "{\"a\": 1, \"b\": \"x\", \"c\": true}", "{\"b\":\"\",\"c\":false}"}) {
    EXPECT_TRUE(Accepts(g, ok)) << ok;
  }
  for (const char* bad : {"{}", "{\"a\":1}", "{\"b\":\"x\",\"a\":1}", "{\"b\":\"x\",\"d\":1}", "{\"b\":\"x\",}",
                          "{ \"b\":\"x\"}", "{\"b\":  \"x\"}"}) {
    EXPECT_FALSE(Accepts(g, bad)) << bad;
  }
  // strict: every property is written.
  const Grammar s = Schema(schema, /*strict=*/true);
  EXPECT_FALSE(Accepts(s, "{\"b\":\"x\"}"));
  EXPECT_TRUE(Accepts(s, "{\"a\":1,\"b\":\"x\",\"c\":true}"));
  // No properties: any object; additionalProperties false: only {}; a schema: a map.
  const Grammar any = Schema(R"({"type": "object"})");
  EXPECT_TRUE(Accepts(any, "{\"k\": [1, {\"z\": null}], \"q\": \"v\"}"));
  EXPECT_FALSE(Accepts(any, "[1]"));
  const Grammar none = Schema(R"({"type": "object", "additionalProperties": false})");
  EXPECT_TRUE(Accepts(none, "{}"));
  EXPECT_FALSE(Accepts(none, "{\"a\":1}"));
  const Grammar map = Schema(R"({"type": "object", "additionalProperties": {"type": "integer"}})");
  EXPECT_TRUE(Accepts(map, "{\"a\":1, \"b\":2}"));
  EXPECT_FALSE(Accepts(map, "{\"a\":\"1\"}"));
  // Nested.
  const Grammar nest = Schema(R"({"type": "object", "properties": {"p": {"type": "object", "properties": {"q": {"type": "null"}},
      "required": ["q"]}}, "required": ["p"]})");
  EXPECT_TRUE(Accepts(nest, "{\"p\": {\"q\": null}}"));
  EXPECT_FALSE(Accepts(nest, "{\"p\": {}}"));
}

TEST(JsonSchemaGrammar, Arrays) {
  const Grammar g = Schema(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})");
  EXPECT_FALSE(Accepts(g, "[]"));
  EXPECT_TRUE(Accepts(g, "[1]"));
  EXPECT_TRUE(Accepts(g, "[1, 2,3]"));
  EXPECT_FALSE(Accepts(g, "[1,2,3,4]"));
  EXPECT_FALSE(Accepts(g, "[1,\"2\"]"));
  const Grammar any = Schema(R"({"type": "array"})");
  EXPECT_TRUE(Accepts(any, "[]"));
  EXPECT_TRUE(Accepts(any, "[1, \"a\", [null]]"));
  const Grammar exact = Schema(R"({"type": "array", "items": {"const": 0}, "minItems": 2, "maxItems": 2})");
  EXPECT_TRUE(Accepts(exact, "[0,0]"));
  EXPECT_FALSE(Accepts(exact, "[0]"));
}

TEST(JsonSchemaGrammar, Refs) {
  const Grammar g = Schema(R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
      "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v", "next"]}},
      "$ref": "#/$defs/node"})");
  EXPECT_TRUE(Accepts(g, "{\"v\":1,\"next\":{\"v\":2,\"next\":null}}"));
  EXPECT_FALSE(Accepts(g, "{\"v\":1,\"next\":{\"v\":2}}"));
  const Grammar d = Schema(R"({"definitions": {"a/b": {"type": "boolean"}}, "type": "array", "items": {"$ref": "#/definitions/a~1b"}})");
  EXPECT_TRUE(Accepts(d, "[true,false]"));
}

TEST(JsonSchemaGrammar, ErrorsNameTheKeywordAndWhere) {
  struct Case {
    const char* schema;
    std::vector<const char*> words;
  };
  const std::vector<Case> cases = {
      {R"({"type": "string", "pattern": "^a+$"})", {"pattern", "#"}},
      {R"({"type": "object", "properties": {"x": {"patternProperties": {}}}})", {"patternProperties", "#/properties/x"}},
      {R"({"if": {}, "then": {}})", {"if"}},
      {R"({"type": "number", "minimum": 0})", {"minimum"}},
      {R"({"type": "integer", "minimum": 5})", {"minimum"}},
      {R"({"type": "integer", "maximum": 5})", {"maximum"}},
      {R"({"type": "integer", "minimum": 0, "maximum": 100000})", {"10000"}},
      {R"({"type": "integer", "minimum": 3, "maximum": 2})", {"minimum"}},
      {R"({"allOf": [{"type": "string"}]})", {"allOf"}},
      {R"({"type": "string", "format": "email"})", {"format", "email"}},
      {R"({"type": "strin"})", {"unknown type", "strin"}},
      {R"({"$ref": "#/$defs/missing"})", {"does not resolve"}},
      {R"({"$ref": "https://example.com/s.json"})", {"$ref"}},
      {R"({"$ref": "#"})", {"left-recursive"}},
      {R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})", {"left-recursive"}},
      {R"({"type": "string", "minLength": 5, "maxLength": 2})", {"minLength"}},
      {R"({"type": "array", "maxItems": -1})", {"maxItems"}},
      {R"({"type": "array", "items": [{"type": "string"}]})", {"items"}},
      {R"({"enum": []})", {"enum"}},
      {R"({"properties": []})", {"properties"}},
      {R"({"type": "object", "required": "a"})", {"required"}},
      {R"(false)", {"false"}},
      {R"([1, 2])", {"schema"}},
      {R"({"type": )", {"not JSON"}},
      {R"({"type": "string", "maxLength": 100000})", {"maxLength"}},
  };
  for (const Case& c : cases) {
    const std::string e = SchemaError(c.schema);
    ASSERT_FALSE(e.empty()) << c.schema;
    for (const char* w : c.words) EXPECT_NE(e.find(w), std::string::npos) << c.schema << " -> " << e;
  }
  // Deep nesting is refused, not a stack overflow.
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += R"({"type": "array", "items": )";
  deep += "true";
  for (int i = 0; i < 200; ++i) deep += "}";
  EXPECT_FALSE(SchemaError(deep).empty());
}

TEST(JsonSchemaGrammar, JsonObjectMode) {
  const Grammar g = JsonObjectGrammar();
  EXPECT_TRUE(Accepts(g, "{}"));
  EXPECT_TRUE(Accepts(g, " {\"a\": [1, 2.5, \"x\", true, null, {\"b\": {}}]}"));
  EXPECT_FALSE(Accepts(g, "[]"));
  EXPECT_FALSE(Accepts(g, "\"x\""));
  EXPECT_FALSE(Accepts(g, "{\"a\":1}}"));
}

// The allowed tokens by checking every token on its own.
TokenMask BruteForce(const GrammarMatcher& m, const TokenVocabulary& v) {
  TokenMask mask;
  mask.bits.assign((static_cast<size_t>(v.size()) + 63) / 64, 0);
  for (int32_t id = 0; id < v.size(); ++id) {
    GrammarMatcher c = m;
    if (!v.piece(id).empty() && c.Advance(v.piece(id))) mask.Set(id);
  }
  if (m.CanEnd()) {
    for (int32_t e : v.end_tokens()) mask.Set(e);
  }
  return mask;
}

// Walks `text` byte by byte; at every state the cached, fresh and brute-force masks agree.
// Returns the cache hits of the walk (states seen before on it).
int64_t CheckMasksAlong(const Grammar& g, std::shared_ptr<const TokenVocabulary> v, const std::string& text) {
  TokenMasker masker(&g, v);
  GrammarMatcher m(&g);
  for (size_t i = 0; i <= text.size(); ++i) {
    const TokenMask fresh = masker.Compute(m);
    const TokenMask brute = BruteForce(m, *v);
    const TokenMask& cached = masker.Mask(m);
    EXPECT_EQ(fresh.bits, brute.bits) << "at byte " << i << " of " << text;
    EXPECT_EQ(cached.bits, fresh.bits) << "at byte " << i << " of " << text;
    EXPECT_EQ(cached.allowed, fresh.allowed);
    const int64_t hits = masker.hits();
    EXPECT_EQ(masker.Mask(m).bits, fresh.bits);  // now from the cache
    EXPECT_EQ(masker.hits(), hits + 1);
    if (i < text.size()) {
      EXPECT_TRUE(m.Advance(static_cast<uint8_t>(text[i]))) << text.substr(0, i + 1);
    }
  }
  return masker.hits() - static_cast<int64_t>(text.size()) - 1;
}

TEST(TokenMask, SmallVocabularyMatchesBruteForce) {
  const std::vector<std::string> pieces = {"", "{", "}", "\"", "\"a", "a", "ab", "abc", ":", ": ", ",", ", ", "1", "12",
                                           "-", "true", "tr", "null", " ", " {", "{\"", "\"}", "\xC3", "\xA9", "\xC3\xA9", "x\"y"};
  auto v = std::make_shared<TokenVocabulary>(pieces, std::vector<int32_t>{0});
  const Grammar g = Schema(R"({"type": "object", "properties": {"ab": {"type": "integer"}, "a": {"type": "string", "maxLength": 4}},
      "required": ["ab", "a"]})");
  CheckMasksAlong(g, v, " {\"ab\": -12, \"a\": \"a\xC3\xA9\"}");
  // EOS only where the grammar can end: at the end, and then alone.
  GrammarMatcher m(&g);
  TokenMasker masker(&g, v);
  EXPECT_FALSE(masker.Mask(m).Test(0));
  ASSERT_TRUE(m.Advance(std::string("{\"ab\":1,\"a\":\"\"}")));
  const TokenMask& end = masker.Mask(m);
  EXPECT_TRUE(end.Test(0));
  EXPECT_EQ(end.allowed, 1);
}

TEST(TokenMask, StoriesVocabularyMatchesBruteForce) {
  auto file = GgufFile::Open(INFERLOOP_STORIES260K_GGUF);
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  auto v = TokenVocabulary::FromTokenizer(*tok);
  EXPECT_EQ(v->size(), 512);
  EXPECT_FALSE(v->end_tokens().empty());
  const Grammar g = Schema(R"({"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "array",
      "items": {"type": "number"}}, "ok": {"enum": ["yes", "no"]}}, "required": ["name", "n", "ok"]})");
  // Inside an unbounded string the state repeats: cache hits on the first walk.
  EXPECT_GT(CheckMasksAlong(g, v, " {\"name\": \"Lily went \\\"home\\\".\", \"n\": [1.5, -2e3], \"ok\": \"yes\"}"), 5);
  EXPECT_GT(CheckMasksAlong(JsonObjectGrammar(), v, "{\"a\": {\"b\": [true, null, \"c d\"]}}"), 0);
}

}  // namespace
}  // namespace inferloop::llm
