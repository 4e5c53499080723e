#include "llm/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include <unicode/locid.h>
#include <unicode/unistr.h>

#include "base/status_macros.h"

namespace inferloop::llm::jinja {
namespace {

Status Err(const std::string& m) { return Status::InvalidArgument(m); }

// Python's str.isspace() code points.
bool IsPySpace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string Encode(const std::vector<uint32_t>& cps, size_t b, size_t e) {
  std::string out;
  for (size_t i = b; i < e; ++i) AppendUtf8(out, cps[i]);
  return out;
}

// str.strip/lstrip/rstrip(chars): which = 1 left, 2 right, 3 both.
std::string Strip(const std::string& s, const Value* chars, int which) {
  const std::vector<uint32_t> cps = DecodeUtf8(s);
  std::vector<uint32_t> set;
  const bool custom = chars != nullptr && !chars->is_none() && !chars->is_undefined();
  if (custom) set = DecodeUtf8(chars->ToString());
  auto strip = [&](uint32_t c) { return custom ? std::find(set.begin(), set.end(), c) != set.end() : IsPySpace(c); };
  size_t b = 0, e = cps.size();
  if (which & 1) {
    while (b < e && strip(cps[b])) ++b;
  }
  if (which & 2) {
    while (e > b && strip(cps[e - 1])) --e;
  }
  return Encode(cps, b, e);
}

std::string CaseMap(const std::string& s, bool upper) {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
  if (upper) u.toUpper(icu::Locale::getRoot());
  else u.toLower(icu::Locale::getRoot());
  std::string out;
  u.toUTF8String(out);
  return out;
}

bool IsCased(uint32_t c) {
  const std::string one = Encode({c}, 0, 1);
  return CaseMap(one, true) != one || CaseMap(one, false) != one;
}

// Python's str.title(): a cased character after an uncased one starts a word.
std::string PyTitle(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (uint32_t c : DecodeUtf8(s)) {
    const std::string one = Encode({c}, 0, 1);
    out += prev_cased ? CaseMap(one, false) : CaseMap(one, true);
    prev_cased = IsCased(c);
  }
  return out;
}

std::string Capitalize(const std::string& s) {
  const std::vector<uint32_t> cps = DecodeUtf8(s);
  if (cps.empty()) return "";
  return CaseMap(Encode(cps, 0, 1), true) + CaseMap(Encode(cps, 1, cps.size()), false);
}

}  // namespace

std::string JinjaTitleFilter(const std::string& s) {
  std::string out;
  bool start = true;
  for (uint32_t c : DecodeUtf8(s)) {
    const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || IsPySpace(c);
    const std::string one = Encode({c}, 0, 1);
    out += sep ? one : start ? CaseMap(one, true) : CaseMap(one, false);
    start = sep;
  }
  return out;
}

namespace {

Result<Value> Replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {
    const std::vector<uint32_t> cps = DecodeUtf8(s);
    int64_t n = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || n < count) {
        out += to;
        ++n;
      }
      if (i < cps.size()) AppendUtf8(out, cps[i]);
      if (static_cast<int64_t>(out.size()) > kMaxStringBytes) return Err("replace: the result is too long");
    }
    return Value::String(out);
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t f = s.find(from, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += to;
    pos = f + from.size();
    ++n;
    if (static_cast<int64_t>(out.size()) > kMaxStringBytes) return Err("replace: the result is too long");
  }
  out.append(s, pos, std::string::npos);
  return Value::String(out);
}

Result<Value> Split(const std::string& s, const Value* sep, int64_t maxsplit) {
  List parts;
  if (sep == nullptr || sep->is_none()) {
    const std::vector<uint32_t> cps = DecodeUtf8(s);
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && IsPySpace(cps[i])) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t e = cps.size();
        while (e > i && IsPySpace(cps[e - 1])) --e;
        parts.push_back(Value::String(Encode(cps, i, e)));
        break;
      }
      size_t j = i;
      while (j < cps.size() && !IsPySpace(cps[j])) ++j;
      parts.push_back(Value::String(Encode(cps, i, j)));
      i = j;
    }
    return Value::MakeList(std::move(parts));
  }
  if (!sep->is_string()) return Err("split: the separator must be a string");
  const std::string& d = sep->str();
  if (d.empty()) return Err("split: empty separator");
  size_t pos = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    const size_t f = s.find(d, pos);
    if (f == std::string::npos) break;
    parts.push_back(Value::String(s.substr(pos, f - pos)));
    pos = f + d.size();
    if (static_cast<int64_t>(parts.size()) > kMaxListItems) return Err("split: too many parts");
  }
  parts.push_back(Value::String(s.substr(pos)));
  return Value::MakeList(std::move(parts));
}

Result<int64_t> IntArg(const Value* v, int64_t def, const char* what) {
  if (v == nullptr || v->is_none()) return def;
  if (!v->is_int() && !v->is_bool()) return Err(std::string(what) + ": expected an integer, got " + TypeName(*v));
  return v->int_value();
}

Result<Value> AffixTest(const std::string& s, const Value* arg, bool prefix) {
  if (arg == nullptr) return Err(prefix ? "startswith takes one argument" : "endswith takes one argument");
  List cands = arg->is_list() ? arg->list() : List{*arg};
  for (const Value& c : cands) {
    if (!c.is_string()) return Err("startswith/endswith: expected a string, got " + TypeName(c));
    const std::string& a = c.str();
    if (a.size() <= s.size() && (prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0)) {
      return Value::Bool(true);
    }
  }
  return Value::Bool(false);
}

Result<Value> StringMethod(const std::string& s, const std::string& name, const Args& a) {
  if (name == "strip") return Value::String(Strip(s, a.Get(0, "chars"), 3));
  if (name == "lstrip") return Value::String(Strip(s, a.Get(0, "chars"), 1));
  if (name == "rstrip") return Value::String(Strip(s, a.Get(0, "chars"), 2));
  if (name == "upper") return Value::String(CaseMap(s, true));
  if (name == "lower") return Value::String(CaseMap(s, false));
  if (name == "title") return Value::String(PyTitle(s));
  if (name == "capitalize") return Value::String(Capitalize(s));
  if (name == "startswith") return AffixTest(s, a.Get(0, "prefix"), true);
  if (name == "endswith") return AffixTest(s, a.Get(0, "suffix"), false);
  if (name == "split") {
    IL_ASSIGN_OR_RETURN(int64_t n, IntArg(a.Get(1, "maxsplit"), -1, "split"));
    return Split(s, a.Get(0, "sep"), n);
  }
  if (name == "replace") {
    const Value* from = a.Get(0, "old");
    const Value* to = a.Get(1, "new");
    if (from == nullptr || to == nullptr || !from->is_string() || !to->is_string()) return Err("replace takes two strings");
    IL_ASSIGN_OR_RETURN(int64_t n, IntArg(a.Get(2, "count"), -1, "replace"));
    return Replace(s, from->str(), to->str(), n);
  }
  if (name == "find" || name == "count") {
    const Value* sub = a.Get(0, "sub");
    if (sub == nullptr || !sub->is_string()) return Err(name + " takes a string");
    if (name == "count") {
      if (sub->str().empty()) return Value::Int(static_cast<int64_t>(DecodeUtf8(s).size()) + 1);
      int64_t n = 0;
      for (size_t p = s.find(sub->str()); p != std::string::npos; p = s.find(sub->str(), p + sub->str().size())) ++n;
      return Value::Int(n);
    }
    const size_t f = s.find(sub->str());
    return Value::Int(f == std::string::npos ? -1 : static_cast<int64_t>(DecodeUtf8(s.substr(0, f)).size()));
  }
  if (name == "join") {
    const Value* items = a.Get(0, "iterable");
    if (items == nullptr) return Err("join takes one argument");
    IL_ASSIGN_OR_RETURN(List l, Iterate(*items));
    std::string out;
    for (size_t i = 0; i < l.size(); ++i) {
      if (!l[i].is_string()) return Err("join: sequence item " + std::to_string(i) + ": expected str instance, " + TypeName(l[i]) + " found");
      if (i) out += s;
      out += l[i].str();
      if (static_cast<int64_t>(out.size()) > kMaxStringBytes) return Err("join: the result is too long");
    }
    return Value::String(out);
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum") {
    const std::vector<uint32_t> cps = DecodeUtf8(s);
    if (cps.empty()) return Value::Bool(false);
    for (uint32_t c : cps) {
      const bool ok = name == "isspace" ? IsPySpace(c)
                      : name == "isdigit" ? (c >= '0' && c <= '9')
                      : name == "isalpha" ? ((c | 32) >= 'a' && (c | 32) <= 'z') || (c > 0x7f && IsCased(c))
                                          : ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9') || (c > 0x7f && IsCased(c));
      if (!ok) return Value::Bool(false);
    }
    return Value::Bool(true);
  }
  if (name == "islower" || name == "isupper") {
    const bool want_upper = name == "isupper";
    bool any = false;
    for (uint32_t c : DecodeUtf8(s)) {
      if (!IsCased(c)) continue;
      const std::string one = Encode({c}, 0, 1);
      if ((want_upper ? CaseMap(one, true) : CaseMap(one, false)) != one) return Value::Bool(false);
      any = true;
    }
    return Value::Bool(any);
  }
  return Err("'str object' has no attribute '" + name + "'");
}

bool IsStringMethod(const std::string& n) {
  static const char* kNames[] = {"strip",   "lstrip", "rstrip", "upper",   "lower",   "title",   "capitalize",
                                 "startswith", "endswith", "split", "replace", "find", "count", "join",
                                 "isdigit", "isalpha", "isspace", "isalnum", "islower", "isupper"};
  for (const char* k : kNames) {
    if (n == k) return true;
  }
  return false;
}

Result<Value> DictMethod(const Value& d, const std::string& name, const Args& a) {
  if (name == "items" || name == "keys" || name == "values") {
    List out;
    for (const auto& [k, v] : d.dict().items) {
      if (name == "items") out.push_back(Value::MakeList({Value::String(k), v}));
      else out.push_back(name == "keys" ? Value::String(k) : v);
    }
    return Value::MakeList(std::move(out));
  }
  // get
  const Value* key = a.Get(0, "key");
  if (key == nullptr) return Err("get takes a key");
  const Value* def = a.Get(1, "default");
  if (key->is_string()) {
    if (const Value* v = d.dict().Find(key->str())) return *v;
  }
  return def != nullptr ? *def : Value::None();
}

}  // namespace

std::string TypeName(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "Undefined";
    case Value::Kind::kNone: return "NoneType";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kFloat: return "float";
    case Value::Kind::kString: return "str";
    case Value::Kind::kList: return "list";
    case Value::Kind::kDict: return v.dict().is_namespace ? "Namespace" : "dict";
    case Value::Kind::kCallable: return "function";
  }
  return "object";
}

Result<List> Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return List{};
    case Value::Kind::kList: return v.list();
    case Value::Kind::kDict: {
      List keys;
      for (const auto& kv : v.dict().items) keys.push_back(Value::String(kv.first));
      return keys;
    }
    case Value::Kind::kString: {
      List chars;
      for (uint32_t c : DecodeUtf8(v.str())) {
        std::string one;
        AppendUtf8(one, c);
        chars.push_back(Value::String(one));
      }
      return chars;
    }
    default: return Err(std::string("'") + TypeName(v) + "' object is not iterable");
  }
}

Result<Value> GetAttr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return Err(obj.str().empty() ? "an undefined value has no attribute '" + name + "'" : obj.str());
  if (obj.is_dict()) {
    if (!obj.dict().is_namespace && (name == "items" || name == "keys" || name == "values" || name == "get")) {
      return Value::Callable(name, [obj, name](const Args& a) { return DictMethod(obj, name, a); });
    }
    if (const Value* v = obj.dict().Find(name)) return *v;
    if (!obj.dict().is_namespace && (name == "update" || name == "pop" || name == "clear" || name == "setdefault" || name == "popitem")) {
      return Value::Undefined("access to attribute '" + name + "' of 'dict' object is unsafe");
    }
    return Value::Undefined("'dict object' has no attribute '" + name + "'");
  }
  if (obj.is_string() && IsStringMethod(name)) {
    const std::string s = obj.str();
    return Value::Callable(name, [s, name](const Args& a) { return StringMethod(s, name, a); });
  }
  if (obj.is_list() && (name == "append" || name == "extend" || name == "pop" || name == "insert" || name == "remove" ||
                        name == "clear" || name == "sort" || name == "reverse")) {
    return Value::Undefined("access to attribute '" + name + "' of 'list' object is unsafe");
  }
  return Value::Undefined(std::string("'") + TypeName(obj) + " object' has no attribute '" + name + "'");
}

Result<Value> GetItem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return Err(obj.str().empty() ? "an undefined value has no item" : obj.str());
  if (obj.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = obj.dict().Find(key.str())) return *v;
      return GetAttr(obj, key.str());
    }
    return Value::Undefined("'dict object' has no attribute " + key.Repr());
  }
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    if (obj.is_list()) {
      const auto n = static_cast<int64_t>(obj.list().size());
      int64_t i = key.int_value();
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::Undefined("list index out of range");
      return obj.list()[static_cast<size_t>(i)];
    }
    const std::vector<uint32_t> cps = DecodeUtf8(obj.str());
    const auto n = static_cast<int64_t>(cps.size());
    int64_t i = key.int_value();
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::Undefined("string index out of range");
    std::string one;
    AppendUtf8(one, cps[static_cast<size_t>(i)]);
    return Value::String(one);
  }
  if (key.is_string()) return GetAttr(obj, key.str());
  return Value::Undefined(std::string("'") + TypeName(obj) + " object' has no item " + key.Repr());
}

Result<Value> GetSlice(const Value& obj, const Value* start, const Value* stop, const Value* step) {
  auto get = [](const Value* v, bool* present) -> Result<int64_t> {
    *present = v != nullptr && !v->is_none();
    if (!*present) return int64_t{0};
    if (!v->is_int() && !v->is_bool()) return Err("slice indices must be integers or None");
    return v->int_value();
  };
  bool has_start, has_stop, has_step;
  IL_ASSIGN_OR_RETURN(int64_t st, get(step, &has_step));
  IL_ASSIGN_OR_RETURN(int64_t b, get(start, &has_start));
  IL_ASSIGN_OR_RETURN(int64_t e, get(stop, &has_stop));
  if (!has_step) st = 1;
  if (st == 0) return Err("slice step cannot be zero");
  std::vector<uint32_t> cps;
  int64_t n;
  if (obj.is_list()) {
    n = static_cast<int64_t>(obj.list().size());
  } else if (obj.is_string()) {
    cps = DecodeUtf8(obj.str());
    n = static_cast<int64_t>(cps.size());
  } else {
    return Err(std::string("'") + TypeName(obj) + "' object is not subscriptable");
  }
  auto clamp = [&](int64_t i, bool present, int64_t def) {
    if (!present) return def;
    if (i < 0) i += n;
    if (st > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  b = clamp(b, has_start, st > 0 ? 0 : n - 1);
  e = clamp(e, has_stop, st > 0 ? n : -1);
  List items;
  std::string s;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) {
    if (obj.is_list()) items.push_back(obj.list()[static_cast<size_t>(i)]);
    else AppendUtf8(s, cps[static_cast<size_t>(i)]);
  }
  return obj.is_list() ? Value::MakeList(std::move(items)) : Value::String(std::move(s));
}

}  // namespace inferloop::llm::jinja
