#include "llm/json_schema_grammar.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace inferloop::llm {
namespace {

using rapidjson::Value;
using Sym = GrammarSymbol;
using Seq = GrammarSequence;

constexpr int kMaxDepth = 64;         // nested schemas
constexpr int kMaxRepeat = 4096;      // minLength/maxLength/minItems/maxItems
constexpr size_t kMaxJsonDepth = 128;  // nesting of the schema document

Seq Cat(std::initializer_list<Seq> parts) {
  Seq s;
  for (const Seq& p : parts) s.insert(s.end(), p.begin(), p.end());
  return s;
}

std::string Compact(const Value& v) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  v.Accept(w);
  return std::string(sb.GetString(), sb.GetSize());
}

// JSON pointer token escaping (~ -> ~0, / -> ~1).
std::string PointerToken(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') out += "~0"; else if (c == '/') out += "~1"; else out += c;
  }
  return out;
}

size_t JsonDepth(const Value& root) {
  std::vector<std::pair<const Value*, size_t>> todo = {{&root, 1}};
  size_t deepest = 0;
  while (!todo.empty()) {
    auto [v, d] = todo.back();
    todo.pop_back();
    deepest = std::max(deepest, d);
    if (d > kMaxJsonDepth) return d;
    if (v->IsObject()) {
      for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) todo.push_back({&it->value, d + 1});
    } else if (v->IsArray()) {
      for (const Value& x : v->GetArray()) todo.push_back({&x, d + 1});
    }
  }
  return deepest;
}

class Compiler {
 public:
  Compiler(const Value* root, JsonSchemaOptions o) : root_(root), opt_(o) {}

  Grammar& grammar() { return g_; }
  const Status& error() const { return error_; }

  // The rule for the whole text: an optional space, then the value.
  int Top(int value) {
    const int top = g_.NewRule("root");
    g_.AddAlternative(top, {Sym::Rule(value)});
    g_.AddAlternative(top, {Sym::Byte(' '), Sym::Rule(value)});
    g_.SetRoot(top);
    return top;
  }

  int Schema(const Value& s, const std::string& path);
  int AnyObject();

 private:
  int Fail(std::string message) {
    if (error_.ok()) error_ = Status::InvalidArgument(std::move(message));
    return -1;
  }
  int Rule(const std::string& name, const std::vector<Seq>& alts) {
    const int r = g_.NewRule(name);
    for (const Seq& a : alts) g_.AddAlternative(r, a);
    return r;
  }
  int Shared(int* slot, const char* name, const std::vector<Seq>& alts) {
    if (*slot < 0) *slot = Rule(name, alts);
    return *slot;
  }
  // `x` repeated min..max times (max < 0: unbounded), with `sep` before every one but the first.
  int Repeat(const std::string& name, int x, int min, int max, const Seq& sep);
  bool ReadCount(const Value& s, const char* key, const std::string& path, int* out);
  bool CheckKeywords(const Value& s, const std::string& path);

  int Space() { return Shared(&space_, "sp", {{}, Literal(" ")}); }
  int Char();
  int String() {
    if (string_ < 0) {
      const int chars = Repeat("chars", Char(), 0, -1, {});
      string_ = Rule("string", {Cat({Literal("\""), {Sym::Rule(chars)}, Literal("\"")})});
    }
    return string_;
  }
  int Digits(const char* name, int min, int max) { return Repeat(name, Shared(&digit_, "digit", {{Sym::Range('0', '9')}}), min, max, {}); }
  int Integer();
  int Number();
  int AnyValue();
  int AnyArray();
  int Ref(const Value& s, const std::string& path);
  int Union(const std::string& name, const std::vector<int>& rules) {
    std::vector<Seq> alts;
    for (int r : rules) alts.push_back({Sym::Rule(r)});
    return Rule(name, alts);
  }
  int Literally(const std::string& name, const Value& v) { return Rule(name, {Literal(Compact(v))}); }
  int Typed(const std::string& type, const Value& s, const std::string& path);
  int IntegerOf(const Value& s, const std::string& path);
  int Strings(const std::string& name, const std::vector<std::string>& sorted, size_t depth, size_t lo, size_t hi);
  int ObjectOf(const Value& s, const std::string& path);
  int ArrayOf(const Value& s, const std::string& path);
  int StringOf(const Value& s, const std::string& path);

  const Value* root_;
  JsonSchemaOptions opt_;
  Grammar g_;
  Status error_;
  int depth_ = 0;
  std::map<std::string, int> refs_;
  int space_ = -1, char_ = -1, string_ = -1, digit_ = -1, integer_ = -1, number_ = -1;
  int value_ = -1, object_ = -1, array_ = -1, bool_ = -1, null_ = -1;
};

int Compiler::Repeat(const std::string& name, int x, int min, int max, const Seq& sep) {
  // tail_k: up to k more (each after `sep`); tail_inf: any number more.
  int tail = -1;
  const Seq item = Cat({sep, {Sym::Rule(x)}});
  if (max < 0) {
    tail = g_.NewRule(name + "_more");
    g_.AddAlternative(tail, Cat({item, {Sym::Rule(tail)}}));
    g_.AddAlternative(tail, {});
  } else {
    for (int k = 1; k <= max - std::max(min, 1); ++k) {
      const int t = g_.NewRule(name + "_upto" + std::to_string(k));
      g_.AddAlternative(t, tail < 0 ? item : Cat({item, {Sym::Rule(tail)}}));
      g_.AddAlternative(t, {});
      tail = t;
    }
  }
  const int r = g_.NewRule(name);
  if (max == 0) {
    g_.AddAlternative(r, {});
    return r;
  }
  // The first item has no separator; then min - 1 required ones; then the optional tail.
  Seq body = {Sym::Rule(x)};
  for (int i = 1; i < min; ++i) body = Cat({body, item});
  if (tail >= 0) body.push_back(Sym::Rule(tail));
  g_.AddAlternative(r, body);
  if (min == 0) g_.AddAlternative(r, {});
  return r;
}

int Compiler::Char() {
  if (char_ >= 0) return char_;
  ByteSet ascii;
  for (int c = 0x20; c < 0x80; ++c) ascii.set(c);
  ascii.reset('"');
  ascii.reset('\\');
  const Sym cont = Sym::Range(0x80, 0xBF);
  ByteSet esc;
  for (char c : std::string("\"\\/bfnrt")) esc.set(static_cast<uint8_t>(c));
  ByteSet hex;
  for (char c : std::string("0123456789abcdefABCDEF")) hex.set(static_cast<uint8_t>(c));
  const Sym h = Sym::Bytes(hex);
  // Valid UTF-8 only (no overlong forms, no surrogates), as RFC 3629 lists the sequences.
  char_ = Rule("char", {{Sym::Bytes(ascii)},
                        {Sym::Range(0xC2, 0xDF), cont},
                        {Sym::Byte(0xE0), Sym::Range(0xA0, 0xBF), cont},
                        {Sym::Range(0xE1, 0xEC), cont, cont},
                        {Sym::Byte(0xED), Sym::Range(0x80, 0x9F), cont},
                        {Sym::Range(0xEE, 0xEF), cont, cont},
                        {Sym::Byte(0xF0), Sym::Range(0x90, 0xBF), cont, cont},
                        {Sym::Range(0xF1, 0xF3), cont, cont, cont},
                        {Sym::Byte(0xF4), Sym::Range(0x80, 0x8F), cont, cont},
                        {Sym::Byte('\\'), Sym::Bytes(esc)},
                        {Sym::Byte('\\'), Sym::Byte('u'), h, h, h, h}});
  return char_;
}

int Compiler::Integer() {
  if (integer_ >= 0) return integer_;
  const int digits = Digits("digits15", 0, 15);
  const int uint = Rule("uint", {Literal("0"), {Sym::Range('1', '9'), Sym::Rule(digits)}});
  integer_ = Rule("integer", {{Sym::Rule(uint)}, {Sym::Byte('-'), Sym::Rule(uint)}});
  return integer_;
}

int Compiler::Number() {
  if (number_ >= 0) return number_;
  const int frac = Rule("frac", {{}, {Sym::Byte('.'), Sym::Rule(Digits("digits1_16", 1, 16))}});
  ByteSet e, sign;
  e.set('e');
  e.set('E');
  sign.set('+');
  sign.set('-');
  const int exp_digits = Digits("digits1_3", 1, 3);
  const int exp = Rule("exp", {{}, {Sym::Bytes(e), Sym::Rule(exp_digits)}, {Sym::Bytes(e), Sym::Bytes(sign), Sym::Rule(exp_digits)}});
  number_ = Rule("number", {{Sym::Rule(Integer()), Sym::Rule(frac), Sym::Rule(exp)}});
  return number_;
}

int Compiler::AnyObject() {
  if (object_ >= 0) return object_;
  object_ = g_.NewRule("object");
  const int pair = Rule("pair", {{Sym::Rule(String()), Sym::Byte(':'), Sym::Rule(Space()), Sym::Rule(AnyValue())}});
  const int pairs = Repeat("pairs", pair, 0, -1, {Sym::Byte(','), Sym::Rule(Space())});
  g_.AddAlternative(object_, Cat({Literal("{"), {Sym::Rule(pairs)}, Literal("}")}));
  return object_;
}

int Compiler::AnyArray() {
  if (array_ >= 0) return array_;
  array_ = g_.NewRule("array");
  const int items = Repeat("values", AnyValue(), 0, -1, {Sym::Byte(','), Sym::Rule(Space())});
  g_.AddAlternative(array_, Cat({Literal("["), {Sym::Rule(items)}, Literal("]")}));
  return array_;
}

int Compiler::AnyValue() {
  if (value_ >= 0) return value_;
  value_ = g_.NewRule("value");
  g_.AddAlternative(value_, {Sym::Rule(AnyObject())});
  g_.AddAlternative(value_, {Sym::Rule(AnyArray())});
  g_.AddAlternative(value_, {Sym::Rule(String())});
  g_.AddAlternative(value_, {Sym::Rule(Number())});
  g_.AddAlternative(value_, {Sym::Rule(Shared(&bool_, "boolean", {Literal("true"), Literal("false")}))});
  g_.AddAlternative(value_, {Sym::Rule(Shared(&null_, "null", {Literal("null")}))});
  return value_;
}

bool Compiler::ReadCount(const Value& s, const char* key, const std::string& path, int* out) {
  auto it = s.FindMember(key);
  if (it == s.MemberEnd()) return true;
  if (!it->value.IsInt64() || it->value.GetInt64() < 0) {
    Fail("malformed JSON schema: '" + std::string(key) + "' must be a non-negative integer at " + path);
    return false;
  }
  if (it->value.GetInt64() > kMaxRepeat) {
    Fail("'" + std::string(key) + "' above " + std::to_string(kMaxRepeat) + " is not supported at " + path);
    return false;
  }
  *out = static_cast<int>(it->value.GetInt64());
  return true;
}

bool Compiler::CheckKeywords(const Value& s, const std::string& path) {
  static const std::set<std::string> kSupported = {
      "type", "properties", "required", "additionalProperties", "enum", "const", "anyOf", "oneOf", "$ref", "$defs",
      "definitions", "items", "minItems", "maxItems", "minLength", "maxLength", "format", "title", "description",
      "default", "examples", "$schema", "$id", "$comment", "deprecated", "readOnly", "writeOnly", "minimum", "maximum"};
  for (auto it = s.MemberBegin(); it != s.MemberEnd(); ++it) {
    const std::string k(it->name.GetString(), it->name.GetStringLength());
    if (!kSupported.count(k)) {
      Fail("unsupported keyword '" + k + "' at " + path);
      return false;
    }
  }
  return true;
}

int Compiler::Schema(const Value& s, const std::string& path) {
  if (!error_.ok()) return -1;
  if (s.IsBool()) return s.GetBool() ? AnyValue() : Fail("the schema false (no value is valid) at " + path);
  if (!s.IsObject()) return Fail("malformed JSON schema: a schema must be an object or a boolean at " + path);
  if (depth_ >= kMaxDepth) return Fail("the schema nests deeper than " + std::to_string(kMaxDepth) + " levels at " + path);
  if (!CheckKeywords(s, path)) return -1;
  struct Deeper {
    int& d;
    explicit Deeper(int& x) : d(x) { ++d; }
    ~Deeper() { --d; }
  } deeper(depth_);
  if (s.HasMember("minimum") || s.HasMember("maximum")) {
    auto t = s.FindMember("type");
    if (t == s.MemberEnd() || !t->value.IsString() || std::string_view(t->value.GetString()) != "integer" ||
        s.HasMember("enum") || s.HasMember("const")) {
      return Fail(std::string("unsupported keyword '") + (s.HasMember("minimum") ? "minimum" : "maximum") + "' at " + path +
                  " (supported only with \"type\": \"integer\")");
    }
  }
  if (s.HasMember("$ref")) return Ref(s, path);
  if (auto c = s.FindMember("const"); c != s.MemberEnd()) return Literally(path + "/const", c->value);
  if (auto e = s.FindMember("enum"); e != s.MemberEnd()) {
    if (!e->value.IsArray() || e->value.Empty()) return Fail("malformed JSON schema: 'enum' must be a non-empty array at " + path);
    std::vector<Seq> alts;
    for (const Value& v : e->value.GetArray()) alts.push_back(Literal(Compact(v)));
    return Rule(path + "/enum", alts);
  }
  for (const char* k : {"anyOf", "oneOf"}) {
    auto a = s.FindMember(k);
    if (a == s.MemberEnd()) continue;
    if (!a->value.IsArray() || a->value.Empty()) return Fail("malformed JSON schema: '" + std::string(k) + "' must be a non-empty array at " + path);
    if (s.HasMember("type") || s.HasMember("properties") || s.HasMember("items")) {
      return Fail("'" + std::string(k) + "' next to 'type', 'properties' or 'items' is not supported at " + path + " (put them in each branch)");
    }
    std::vector<int> branches;
    for (rapidjson::SizeType i = 0; i < a->value.Size(); ++i) {
      branches.push_back(Schema(a->value[i], path + "/" + k + "/" + std::to_string(i)));
      if (branches.back() < 0) return -1;
    }
    return Union(path + "/" + k, branches);
  }
  auto t = s.FindMember("type");
  if (t == s.MemberEnd()) {
    if (s.HasMember("properties") || s.HasMember("additionalProperties") || s.HasMember("required")) return ObjectOf(s, path);
    if (s.HasMember("items") || s.HasMember("minItems") || s.HasMember("maxItems")) return ArrayOf(s, path);
    if (s.HasMember("minLength") || s.HasMember("maxLength") || s.HasMember("format")) return StringOf(s, path);
    return AnyValue();
  }
  if (t->value.IsString()) return Typed(t->value.GetString(), s, path);
  if (!t->value.IsArray() || t->value.Empty()) return Fail("malformed JSON schema: 'type' must be a string or a non-empty array of strings at " + path);
  std::vector<int> types;
  for (const Value& x : t->value.GetArray()) {
    if (!x.IsString()) return Fail("malformed JSON schema: 'type' must be a string or a non-empty array of strings at " + path);
    types.push_back(Typed(x.GetString(), s, path));
    if (types.back() < 0) return -1;
  }
  return Union(path + "/type", types);
}

int Compiler::Typed(const std::string& type, const Value& s, const std::string& path) {
  if (type == "object") return ObjectOf(s, path);
  if (type == "array") return ArrayOf(s, path);
  if (type == "string") return StringOf(s, path);
  if (type == "integer") return IntegerOf(s, path);
  if (type == "number") return Number();
  if (type == "boolean") return Shared(&bool_, "boolean", {Literal("true"), Literal("false")});
  if (type == "null") return Shared(&null_, "null", {Literal("null")});
  return Fail("malformed JSON schema: unknown type '" + type + "' at " + path + "/type");
}

// The strings sorted[lo..hi) (all sharing their first `depth` bytes) as a prefix tree of rules.
int Compiler::Strings(const std::string& name, const std::vector<std::string>& sorted, size_t depth, size_t lo, size_t hi) {
  const int r = g_.NewRule(name);
  size_t i = lo;
  if (sorted[i].size() == depth) {
    g_.AddAlternative(r, {});
    ++i;
  }
  while (i < hi) {
    size_t j = i;
    while (j < hi && sorted[j][depth] == sorted[i][depth]) ++j;
    const auto c = static_cast<uint8_t>(sorted[i][depth]);
    if (j == i + 1 && sorted[i].size() == depth + 1) {
      g_.AddAlternative(r, {Sym::Byte(c)});
    } else {
      g_.AddAlternative(r, {Sym::Byte(c), Sym::Rule(Strings(name, sorted, depth + 1, i, j))});
    }
    i = j;
  }
  return r;
}

// An integer; with minimum and maximum at most 10000 values apart, exactly those (as a prefix
// tree of their decimal forms); with only a minimum of 0 or 1, the non-negative or positive ones.
int Compiler::IntegerOf(const Value& s, const std::string& path) {
  auto mn = s.FindMember("minimum"), mx = s.FindMember("maximum");
  if (mn == s.MemberEnd() && mx == s.MemberEnd()) return Integer();
  for (auto it : {mn, mx}) {
    if (it != s.MemberEnd() && !(it->value.IsInt64() || (it->value.IsDouble() && it->value.GetDouble() == static_cast<double>(static_cast<int64_t>(it->value.GetDouble())) && std::abs(it->value.GetDouble()) < 1e15))) {
      return Fail("'" + std::string(it->name.GetString()) + "' of an integer must be an integer at " + path);
    }
  }
  auto num = [](const Value& v) { return v.IsInt64() ? v.GetInt64() : static_cast<int64_t>(v.GetDouble()); };
  if (mx == s.MemberEnd()) {
    const int64_t lo = num(mn->value);
    if (lo != 0 && lo != 1) {
      return Fail("'minimum' without 'maximum' is supported only as 0 or 1 at " + path + " (or give both, at most 10000 apart)");
    }
    const int more = Digits("digits15", 0, 15);
    if (lo == 1) return Rule(path + "/positive", {{Sym::Range('1', '9'), Sym::Rule(more)}});
    return Rule(path + "/natural", {Literal("0"), {Sym::Range('1', '9'), Sym::Rule(more)}});
  }
  if (mn == s.MemberEnd()) return Fail("'maximum' is supported only with 'minimum' (at most 10000 apart) at " + path);
  const int64_t lo = num(mn->value), hi = num(mx->value);
  if (lo > hi) return Fail("malformed JSON schema: 'minimum' is above 'maximum' at " + path);
  if (hi - lo > 10000) return Fail("'minimum'/'maximum' more than 10000 apart is not supported at " + path);
  std::vector<std::string> values;
  for (int64_t v = lo; v <= hi; ++v) values.push_back(std::to_string(v));
  std::sort(values.begin(), values.end());
  return Strings(path + "/range", values, 0, 0, values.size());
}

int Compiler::Ref(const Value& s, const std::string& path) {
  const Value& ref = s["$ref"];
  if (!ref.IsString()) return Fail("malformed JSON schema: '$ref' must be a string at " + path);
  const std::string target(ref.GetString(), ref.GetStringLength());
  for (auto it = s.MemberBegin(); it != s.MemberEnd(); ++it) {
    const std::string k = it->name.GetString();
    if (k != "$ref" && k != "title" && k != "description" && k != "$comment" && k != "default" && k != "examples" &&
        k != "$defs" && k != "definitions") {
      return Fail("'$ref' next to '" + k + "' is not supported at " + path);
    }
  }
  if (auto it = refs_.find(target); it != refs_.end()) return it->second;
  if (target.empty() || target[0] != '#') {
    return Fail("'$ref' '" + target + "' at " + path + " is not supported: only references within the schema ('#...')");
  }
  // Resolve the JSON pointer after '#'.
  const Value* v = root_;
  size_t i = 1;
  while (i < target.size()) {
    if (target[i] != '/') return Fail("malformed JSON schema: '$ref' '" + target + "' is not a JSON pointer at " + path);
    const size_t end = std::min(target.find('/', i + 1), target.size());
    std::string tok = target.substr(i + 1, end - i - 1);
    for (size_t p; (p = tok.find("~1")) != std::string::npos;) tok.replace(p, 2, "/");
    for (size_t p; (p = tok.find("~0")) != std::string::npos;) tok.replace(p, 2, "~");
    if (v->IsObject() && v->HasMember(tok.c_str())) {
      v = &(*v)[tok.c_str()];
    } else if (v->IsArray() && !tok.empty() && tok.find_first_not_of("0123456789") == std::string::npos &&
               tok.size() < 9 && std::stoul(tok) < v->Size()) {
      v = &(*v)[static_cast<rapidjson::SizeType>(std::stoul(tok))];
    } else {
      return Fail("malformed JSON schema: '$ref' '" + target + "' at " + path + " does not resolve");
    }
    i = end;
  }
  const int r = g_.NewRule("ref:" + target);
  refs_[target] = r;
  const int body = Schema(*v, target);
  if (body < 0) return -1;
  g_.AddAlternative(r, {Sym::Rule(body)});
  return r;
}


int Compiler::ObjectOf(const Value& s, const std::string& path) {
  auto props = s.FindMember("properties");
  if (props != s.MemberEnd() && !props->value.IsObject()) return Fail("malformed JSON schema: 'properties' must be an object at " + path);
  std::set<std::string> required;
  if (auto req = s.FindMember("required"); req != s.MemberEnd()) {
    if (!req->value.IsArray()) return Fail("malformed JSON schema: 'required' must be an array of strings at " + path);
    for (const Value& r : req->value.GetArray()) {
      if (!r.IsString()) return Fail("malformed JSON schema: 'required' must be an array of strings at " + path);
      required.insert(r.GetString());
    }
  }
  const Value* extra = nullptr;  // additionalProperties
  if (auto ap = s.FindMember("additionalProperties"); ap != s.MemberEnd()) {
    if (!ap->value.IsBool() && !ap->value.IsObject()) return Fail("malformed JSON schema: 'additionalProperties' must be a boolean or a schema at " + path);
    extra = &ap->value;
  }
  // (name, value rule, required) in the schema's order; required names not listed: any value.
  struct Prop {
    std::string name;
    int rule;
    bool required;
  };
  std::vector<Prop> list;
  std::set<std::string> listed;
  if (props != s.MemberEnd()) {
    for (auto it = props->value.MemberBegin(); it != props->value.MemberEnd(); ++it) {
      const std::string name(it->name.GetString(), it->name.GetStringLength());
      const int r = Schema(it->value, path + "/properties/" + PointerToken(name));
      if (r < 0) return -1;
      list.push_back({name, r, opt_.strict || required.count(name) > 0});
      listed.insert(name);
    }
  }
  for (const std::string& name : required) {
    if (!listed.count(name)) list.push_back({name, AnyValue(), true});
  }
  if (list.empty()) {
    if (extra != nullptr && extra->IsBool() && !extra->GetBool()) return Rule(path + "/empty", {Literal("{}")});
    if (extra == nullptr || extra->IsBool()) return AnyObject();
    // A map: string keys, values of the additionalProperties schema.
    const int v = Schema(*extra, path + "/additionalProperties");
    if (v < 0) return -1;
    const int pair = Rule(path + "/pair", {{Sym::Rule(String()), Sym::Byte(':'), Sym::Rule(Space()), Sym::Rule(v)}});
    const int pairs = Repeat(path + "/pairs", pair, 0, -1, {Sym::Byte(','), Sym::Rule(Space())});
    return Rule(path, {Cat({Literal("{"), {Sym::Rule(pairs)}, Literal("}")})});
  }
  // first_i: no member written yet, properties i.. may follow; rest_i: some member written.
  const int n = static_cast<int>(list.size());
  std::vector<int> first(n + 1), rest(n + 1);
  first[n] = Rule(path + "/none", {{}});
  rest[n] = first[n];
  for (int i = n - 1; i >= 0; --i) {
    Value key(list[i].name.c_str(), static_cast<rapidjson::SizeType>(list[i].name.size()));
    const Seq member = Cat({Literal(Compact(key) + ":"), {Sym::Rule(Space()), Sym::Rule(list[i].rule)}});
    const std::string base = path + "/" + PointerToken(list[i].name);
    std::vector<Seq> r_alts = {Cat({Literal(","), {Sym::Rule(Space())}, member, {Sym::Rule(rest[i + 1])}})};
    std::vector<Seq> f_alts = {Cat({member, {Sym::Rule(rest[i + 1])}})};
    if (!list[i].required) {
      r_alts.push_back({Sym::Rule(rest[i + 1])});
      f_alts.push_back({Sym::Rule(first[i + 1])});
    }
    rest[i] = Rule(base + "+rest", r_alts);
    first[i] = Rule(base + "+first", f_alts);
  }
  return Rule(path, {Cat({Literal("{"), {Sym::Rule(first[0])}, Literal("}")})});
}

int Compiler::ArrayOf(const Value& s, const std::string& path) {
  int min = 0, max = -1;
  if (!ReadCount(s, "minItems", path, &min) || !ReadCount(s, "maxItems", path, &max)) return -1;
  if (max >= 0 && min > max) return Fail("malformed JSON schema: 'minItems' is above 'maxItems' at " + path);
  int item = -1;
  if (auto it = s.FindMember("items"); it != s.MemberEnd()) {
    if (it->value.IsArray()) return Fail("'items' as an array (tuple validation) is not supported at " + path);
    item = Schema(it->value, path + "/items");
  } else {
    item = AnyValue();
  }
  if (item < 0) return -1;
  const int items = Repeat(path + "/items*", item, min, max, {Sym::Byte(','), Sym::Rule(Space())});
  return Rule(path, {Cat({Literal("["), {Sym::Rule(items)}, Literal("]")})});
}

int Compiler::StringOf(const Value& s, const std::string& path) {
  if (auto f = s.FindMember("format"); f != s.MemberEnd()) {
    if (!f->value.IsString()) return Fail("malformed JSON schema: 'format' must be a string at " + path);
    const std::string format = f->value.GetString();
    if (format != "uuid") return Fail("unsupported string format '" + format + "' at " + path + "/format (supported: uuid)");
    if (s.HasMember("minLength") || s.HasMember("maxLength")) {
      return Fail("'minLength'/'maxLength' next to 'format' is not supported at " + path);
    }
    ByteSet hex;
    for (char c : std::string("0123456789abcdef")) hex.set(static_cast<uint8_t>(c));
    Seq seq = Literal("\"");
    for (int group : {8, 4, 4, 4, 12}) {
      if (seq.size() > 1) seq.push_back(Sym::Byte('-'));
      for (int i = 0; i < group; ++i) seq.push_back(Sym::Bytes(hex));
    }
    seq.push_back(Sym::Byte('"'));
    return Rule(path + "/uuid", {seq});
  }
  int min = 0, max = -1;
  if (!ReadCount(s, "minLength", path, &min) || !ReadCount(s, "maxLength", path, &max)) return -1;
  if (max >= 0 && min > max) return Fail("malformed JSON schema: 'minLength' is above 'maxLength' at " + path);
  if (min == 0 && max < 0) return String();
  const int chars = Repeat(path + "/chars", Char(), min, max, {});
  return Rule(path, {Cat({Literal("\""), {Sym::Rule(chars)}, Literal("\"")})});
}

}  // namespace

Result<Grammar> JsonSchemaToGrammar(std::string_view schema_json, const JsonSchemaOptions& options) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(schema_json.data(), schema_json.size());
  if (doc.HasParseError()) {
    return Status::InvalidArgument("malformed JSON schema: not JSON (" + std::string(rapidjson::GetParseError_En(doc.GetParseError())) +
                                   " at offset " + std::to_string(doc.GetErrorOffset()) + ")");
  }
  if (JsonDepth(doc) > kMaxJsonDepth) {
    return Status::InvalidArgument("the JSON schema nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  Compiler c(&doc, options);
  const int value = c.Schema(doc, "#");
  if (!c.error().ok()) return c.error();
  c.Top(value);
  Grammar g = std::move(c.grammar());
  if (Status st = g.Finalize(); !st.ok()) {
    return Status::InvalidArgument("the JSON schema cannot be compiled: " + st.message() +
                                   " (a $ref that refers back to itself before any value starts?)");
  }
  return g;
}

Grammar JsonObjectGrammar() {
  rapidjson::Document doc;
  doc.SetObject();
  Compiler c(&doc, {});
  c.Top(c.AnyObject());
  Grammar g = std::move(c.grammar());
  (void)g.Finalize();
  return g;
}

}  // namespace inferloop::llm
