// The values a Jinja template computes with, with Python's meanings (the engine renders chat
// templates as jinja2 does in Python): undefined, none, bool, int, float, str (UTF-8), list,
// dict (insertion-ordered, string keys) and callables (builtins, bound methods, macros).
// Lists and dicts are shared, immutable once built, except namespace() objects (`set ns.x`).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/utf8.h"
#include "inferloop/status.h"

namespace inferloop::llm::jinja {

class Value;
using List = std::vector<Value>;

struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;  // namespace(): attributes may be assigned
  const Value* Find(std::string_view key) const;
  void Set(const std::string& key, Value v);
};

// Call arguments: positional, then keyword.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The argument named `name` at position `index` (keyword first), or nullptr.
  const Value* Get(size_t index, std::string_view name) const;
};

using Function = std::function<Result<Value>(const Args&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

  Value() = default;  // undefined
  static Value Undefined(std::string name) {
    Value v;
    v.s_ = std::move(name);
    return v;
  }
  static Value None() { return Value(Kind::kNone); }
  static Value Bool(bool b) { Value v(Kind::kBool); v.i_ = b; return v; }
  static Value Int(int64_t i) { Value v(Kind::kInt); v.i_ = i; return v; }
  static Value Float(double f) { Value v(Kind::kFloat); v.f_ = f; return v; }
  static Value String(std::string s) { Value v(Kind::kString); v.s_ = std::move(s); return v; }
  static Value MakeList(List items);
  static Value MakeDict(Dict d);
  static Value Callable(std::string name, Function f);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool bool_value() const { return i_ != 0; }
  int64_t int_value() const { return i_; }   // int or bool
  double float_value() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  const std::string& str() const { return s_; }  // string; undefined: its name
  const List& list() const { return *list_; }
  const Dict& dict() const { return *dict_; }
  Dict& mutable_dict() const { return *dict_; }  // namespace() objects (and the renderer's own globals)
  const Function& function() const { return *fn_; }

  bool Truthy() const;
  // Python's str(): what {{ }} prints ("" for undefined, "None", "True", repr of containers).
  std::string ToString() const;
  // Python's repr().
  std::string Repr() const;
  // Python's ==.
  bool Equals(const Value& o) const;
  // len(); -1 for a value without one.
  int64_t Length() const;

 private:
  explicit Value(Kind k) : kind_(k) {}
  Kind kind_ = Kind::kUndefined;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> fn_;
};

// Python's repr(float) ("1.0", "0.1", "1e-05", "inf", "nan").
std::string PyFloatRepr(double d);

// json.dumps(v, ensure_ascii, indent (<0: none), separators (empty: the defaults for indent),
// sort_keys): what transformers' tojson filter gives. InvalidArgument for values JSON cannot hold.
struct JsonDumpOptions {
  bool ensure_ascii = false;
  int indent = -1;
  std::string indent_text;  // set: indent with this string instead of `indent` spaces
  std::string item_separator, key_separator;  // empty: json.dumps' defaults
  bool sort_keys = false;
};
Result<std::string> JsonDumps(const Value& v, const JsonDumpOptions& options);

// A JSON text as a value (objects keep their key order). InvalidArgument for bad JSON.
Result<Value> ParseJson(std::string_view text);

// UTF-8 helpers with Python's code-point semantics.
std::vector<uint32_t> DecodeUtf8(std::string_view s);  // invalid bytes as U+FFFD (encoding: base/utf8.h)

}  // namespace inferloop::llm::jinja
