// Jinja's filters (declared in jinja_builtins.h), with jinja2 3.1's meanings; tojson as
// transformers overrides it.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>

#include "base/c_locale_number.h"
#include "base/status_macros.h"
#include "llm/jinja_builtins.h"

namespace inferloop::llm::jinja {
namespace {

Status Err(const std::string& m) { return Status::InvalidArgument(m); }

using FilterFn = Result<Value> (*)(const Value&, const Args&);

// An attribute path ("a.b", "0") as jinja2's make_attrgetter follows it.
Result<Value> Attribute(const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  while (true) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && part.size() < 18) {
      IL_ASSIGN_OR_RETURN(cur, GetItem(cur, Value::Int(std::atoll(part.c_str()))));
    } else {
      IL_ASSIGN_OR_RETURN(cur, GetItem(cur, Value::String(part)));
    }
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

Result<std::string> StrArg(const Value* v, const char* def) {
  if (v == nullptr) return std::string(def);
  return v->ToString();
}

// Args with the first `n` positional arguments removed.
Args Shift(const Args& a, size_t n) {
  Args out;
  out.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(std::min(n, a.pos.size())), a.pos.end());
  out.kw = a.kw;
  return out;
}

Result<Value> Select(const Value& v, const Args& a, bool attr, bool keep) {
  IL_ASSIGN_OR_RETURN(List items, Iterate(v));
  size_t next = 0;
  std::string path;
  if (attr) {
    if (a.pos.empty()) return Err("selectattr/rejectattr need an attribute name");
    path = a.pos[0].ToString();
    next = 1;
  }
  const bool has_test = a.pos.size() > next;
  const std::string test = has_test ? a.pos[next].ToString() : "";
  const Args test_args = Shift(a, next + 1);
  List out;
  for (const Value& item : items) {
    Value x = item;
    if (attr) {
      IL_ASSIGN_OR_RETURN(x, Attribute(item, path));
    }
    bool ok;
    if (has_test) {
      IL_ASSIGN_OR_RETURN(ok, ApplyTest(test, x, test_args));
    } else {
      ok = x.Truthy();
    }
    if (ok == keep) out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}

Result<Value> MapFilter(const Value& v, const Args& a) {
  IL_ASSIGN_OR_RETURN(List items, Iterate(v));
  List out;
  if (a.pos.empty()) {
    const Value* attr = a.Get(99, "attribute");
    if (attr == nullptr) return Err("map needs a filter name or attribute=");
    const Value* def = a.Get(99, "default");
    for (const Value& item : items) {
      IL_ASSIGN_OR_RETURN(Value x, Attribute(item, attr->ToString()));
      out.push_back(x.is_undefined() && def != nullptr ? *def : x);
    }
    return Value::MakeList(std::move(out));
  }
  const std::string name = a.pos[0].ToString();
  const Args rest = Shift(a, 1);
  for (const Value& item : items) {
    IL_ASSIGN_OR_RETURN(Value x, ApplyFilter(name, item, rest));
    out.push_back(std::move(x));
  }
  return Value::MakeList(std::move(out));
}

Result<Value> Join(const Value& v, const Args& a) {
  IL_ASSIGN_OR_RETURN(std::string sep, StrArg(a.Get(0, "d"), ""));
  IL_ASSIGN_OR_RETURN(List items, Iterate(v));
  const Value* attr = a.Get(1, "attribute");
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value x = items[i];
    if (attr != nullptr) {
      IL_ASSIGN_OR_RETURN(x, Attribute(x, attr->ToString()));
    }
    if (i) out += sep;
    out += x.ToString();
    if (static_cast<int64_t>(out.size()) > kMaxStringBytes) return Err("join: the result is too long");
  }
  return Value::String(out);
}

// The key a sort/unique/min/max compares (an attribute, lower-cased unless case_sensitive).
Result<Value> SortKey(const Value& item, const Value* attr, bool case_sensitive) {
  Value k = item;
  if (attr != nullptr && !attr->is_none()) {
    IL_ASSIGN_OR_RETURN(k, Attribute(item, attr->ToString()));
  }
  if (!case_sensitive && k.is_string()) {
    IL_ASSIGN_OR_RETURN(Value lower, GetAttr(k, "lower"));
    return lower.function()(Args{});
  }
  return k;
}

Result<Value> Sort(const Value& v, const Args& a) {
  IL_ASSIGN_OR_RETURN(List items, Iterate(v));
  const bool reverse = a.Get(0, "reverse") && a.Get(0, "reverse")->Truthy();
  const bool cs = a.Get(1, "case_sensitive") && a.Get(1, "case_sensitive")->Truthy();
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : items) {
    IL_ASSIGN_OR_RETURN(Value k, SortKey(item, a.Get(2, "attribute"), cs));
    keyed.emplace_back(std::move(k), item);
  }
  Status error;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    Result<Value> lt = BinaryOp("<", reverse ? y.first : x.first, reverse ? x.first : y.first);
    if (!lt.ok()) {
      if (error.ok()) error = lt.status();
      return false;
    }
    return lt->bool_value();
  });
  if (!error.ok()) return error;
  List out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::MakeList(std::move(out));
}

Result<Value> Unique(const Value& v, const Args& a) {
  IL_ASSIGN_OR_RETURN(List items, Iterate(v));
  const bool cs = a.Get(0, "case_sensitive") && a.Get(0, "case_sensitive")->Truthy();
  List seen, out;
  for (const Value& item : items) {
    IL_ASSIGN_OR_RETURN(Value k, SortKey(item, a.Get(1, "attribute"), cs));
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.Equals(k); })) continue;
    seen.push_back(k);
    out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}

Result<Value> MinMax(const Value& v, const Args& a, bool max) {
  IL_ASSIGN_OR_RETURN(List items, Iterate(v));
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  const bool cs = a.Get(0, "case_sensitive") && a.Get(0, "case_sensitive")->Truthy();
  size_t best = 0;
  IL_ASSIGN_OR_RETURN(Value bk, SortKey(items[0], a.Get(1, "attribute"), cs));
  for (size_t i = 1; i < items.size(); ++i) {
    IL_ASSIGN_OR_RETURN(Value k, SortKey(items[i], a.Get(1, "attribute"), cs));
    IL_ASSIGN_OR_RETURN(Value better, BinaryOp(max ? ">" : "<", k, bk));
    if (better.bool_value()) {
      best = i;
      bk = k;
    }
  }
  return items[best];
}

Result<Value> ToJson(const Value& v, const Args& a) {
  JsonDumpOptions o;
  if (const Value* x = a.Get(0, "ensure_ascii")) o.ensure_ascii = x->Truthy();
  if (const Value* x = a.Get(1, "indent"); x != nullptr && !x->is_none()) {
    if (x->is_string()) {
      o.indent_text = x->str();
      o.indent = o.indent_text.empty() ? 0 : -1;
    } else if (x->is_int()) {
      if (x->int_value() > 64) return Err("tojson: indent is too large");
      o.indent = static_cast<int>(std::max<int64_t>(x->int_value(), 0));
    } else {
      return Err("tojson: indent must be an integer or a string");
    }
  }
  if (const Value* x = a.Get(2, "separators"); x != nullptr && !x->is_none()) {
    if (!x->is_list() || x->list().size() != 2 || !x->list()[0].is_string() || !x->list()[1].is_string()) {
      return Err("tojson: separators must be a pair of strings");
    }
    o.item_separator = x->list()[0].str();
    o.key_separator = x->list()[1].str();
    if (o.item_separator.empty() || o.key_separator.empty()) return Err("tojson: empty separators are not supported");
  }
  if (const Value* x = a.Get(3, "sort_keys")) o.sort_keys = x->Truthy();
  IL_ASSIGN_OR_RETURN(std::string s, JsonDumps(v, o));
  if (static_cast<int64_t>(s.size()) > kMaxStringBytes) return Err("tojson: the result is too long");
  return Value::String(std::move(s));
}

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> lines;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.push_back(cur);
      cur.clear();
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      cur += s[i];
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  return lines;
}

Result<Value> Indent(const Value& v, const Args& a) {
  std::string unit;
  const Value* w = a.Get(0, "width");
  if (w != nullptr && w->is_string()) {
    unit = w->str();
  } else {
    const int64_t n = w == nullptr ? 4 : w->int_value();
    if (n < 0 || n > 1024) return Err("indent: bad width");
    unit.assign(static_cast<size_t>(n), ' ');
  }
  const bool first = a.Get(1, "first") && a.Get(1, "first")->Truthy();
  const bool blank = a.Get(2, "blank") && a.Get(2, "blank")->Truthy();
  const std::vector<std::string> lines = SplitLines(v.ToString() + "\n");
  std::string rv;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      rv += '\n';
      if (blank || !lines[i].empty()) rv += unit;
    }
    rv += lines[i];
    if (static_cast<int64_t>(rv.size()) > kMaxStringBytes) return Err("indent: the result is too long");
  }
  if (first) rv = unit + rv;
  return Value::String(rv);
}

Result<Value> Round(const Value& v, const Args& a) {
  if (!v.is_number()) return Err("round: expected a number, got " + TypeName(v));
  const Value* p = a.Get(0, "precision");
  const int64_t prec = p == nullptr ? 0 : p->int_value();
  const std::string method = a.Get(1, "method") ? a.Get(1, "method")->ToString() : "common";
  if (prec < -20 || prec > 20) return Err("round: bad precision");
  const double scale = std::pow(10.0, static_cast<double>(prec));
  const double x = v.float_value() * scale;
  double r;
  if (method == "common") r = std::nearbyint(x);  // round half to even, as Python's round()
  else if (method == "ceil") r = std::ceil(x);
  else if (method == "floor") r = std::floor(x);
  else return Err("round: method must be common, ceil or floor");
  if (v.is_int() && method == "common") return Value::Int(v.int_value());
  return Value::Float(r / scale);
}

Result<Value> ToInt(const Value& v, const Args& a) {
  const Value* def = a.Get(0, "default");
  const Value fallback = def ? *def : Value::Int(0);
  if (v.is_int() || v.is_bool()) return Value::Int(v.int_value());
  if (v.is_float()) {
    if (!std::isfinite(v.float_value()) || std::fabs(v.float_value()) > 9.2e18) return fallback;
    return Value::Int(static_cast<int64_t>(v.float_value()));
  }
  if (v.is_string()) {
    const std::string s = v.str();
    char* end = nullptr;
    errno = 0;
    const long long i = std::strtoll(s.c_str(), &end, 10);
    if (end != s.c_str() && *end == '\0' && errno == 0) return Value::Int(i);
    const double d = StrtodC(s.c_str(), &end);
    if (end != s.c_str() && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value::Int(static_cast<int64_t>(d));
  }
  return fallback;
}

Result<Value> ToFloat(const Value& v, const Args& a) {
  const Value* def = a.Get(0, "default");
  if (v.is_number()) return Value::Float(v.float_value());
  if (v.is_string()) {
    char* end = nullptr;
    const double d = StrtodC(v.str().c_str(), &end);
    if (end != v.str().c_str() && *end == '\0') return Value::Float(d);
  }
  return def ? *def : Value::Float(0);
}

Result<Value> Escape(const Value& v, const Args&) {
  std::string out;
  for (char c : v.ToString()) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value::String(out);
}

Result<Value> Length(const Value& v, const Args&) {
  const int64_t n = v.Length();
  if (n < 0) return Err("object of type '" + TypeName(v) + "' has no len()");
  return Value::Int(n);
}

Result<Value> Default(const Value& v, const Args& a) {
  const bool boolean = a.Get(1, "boolean") && a.Get(1, "boolean")->Truthy();
  if (v.is_undefined() || (boolean && !v.Truthy())) {
    const Value* d = a.Get(0, "default_value");
    return d ? *d : Value::String("");
  }
  return v;
}

Result<Value> FirstLast(const Value& v, bool first) {
  IL_ASSIGN_OR_RETURN(List items, Iterate(v));
  if (items.empty()) return Value::Undefined(first ? "No first item, sequence was empty." : "No last item, sequence was empty.");
  return first ? items.front() : items.back();
}

Result<Value> Items(const Value& v, const Args&) {
  if (v.is_undefined()) return Value::MakeList({});
  if (!v.is_dict()) return Err("items: expected a mapping, got " + TypeName(v));
  IL_ASSIGN_OR_RETURN(Value m, GetAttr(v, "items"));
  return m.function()(Args{});
}

Result<Value> Reverse(const Value& v, const Args&) {
  if (v.is_string()) {
    const Value step = Value::Int(-1);
    return GetSlice(v, nullptr, nullptr, &step);
  }
  IL_ASSIGN_OR_RETURN(List items, Iterate(v));
  std::reverse(items.begin(), items.end());
  return Value::MakeList(std::move(items));
}

Result<Value> Sum(const Value& v, const Args& a) {
  IL_ASSIGN_OR_RETURN(List items, Iterate(v));
  Value total = a.Get(1, "start") ? *a.Get(1, "start") : Value::Int(0);
  for (const Value& item : items) {
    Value x = item;
    if (const Value* attr = a.Get(0, "attribute")) {
      IL_ASSIGN_OR_RETURN(x, Attribute(item, attr->ToString()));
    }
    IL_ASSIGN_OR_RETURN(total, BinaryOp("+", total, x));
  }
  return total;
}

Result<Value> StringMethodFilter(const Value& v, const char* method, const Args& a) {
  IL_ASSIGN_OR_RETURN(Value m, GetAttr(Value::String(v.ToString()), method));
  return m.function()(a);
}

const std::map<std::string, FilterFn>& Filters() {
  static const std::map<std::string, FilterFn> kFilters = {
      {"abs", [](const Value& v, const Args&) -> Result<Value> {
         if (v.is_float()) return Value::Float(std::fabs(v.float_value()));
         if (v.is_int() || v.is_bool()) {
           if (v.int_value() == INT64_MIN) return Err("integer overflow");
           return Value::Int(std::llabs(v.int_value()));
         }
         return Err("bad operand type for abs(): '" + TypeName(v) + "'");
       }},
      {"capitalize", [](const Value& v, const Args&) { return StringMethodFilter(v, "capitalize", Args{}); }},
      {"count", Length},
      {"d", Default},
      {"default", Default},
      {"e", Escape},
      {"escape", Escape},
      {"first", [](const Value& v, const Args&) { return FirstLast(v, true); }},
      {"float", ToFloat},
      {"indent", Indent},
      {"int", ToInt},
      {"items", Items},
      {"join", Join},
      {"last", [](const Value& v, const Args&) { return FirstLast(v, false); }},
      {"length", Length},
      {"list", [](const Value& v, const Args&) -> Result<Value> {
         IL_ASSIGN_OR_RETURN(List items, Iterate(v));
         return Value::MakeList(std::move(items));
       }},
      {"lower", [](const Value& v, const Args&) { return StringMethodFilter(v, "lower", Args{}); }},
      {"map", MapFilter},
      {"max", [](const Value& v, const Args& a) { return MinMax(v, a, true); }},
      {"min", [](const Value& v, const Args& a) { return MinMax(v, a, false); }},
      {"reject", [](const Value& v, const Args& a) { return Select(v, a, false, false); }},
      {"rejectattr", [](const Value& v, const Args& a) { return Select(v, a, true, false); }},
      {"replace", [](const Value& v, const Args& a) { return StringMethodFilter(v, "replace", a); }},
      {"reverse", Reverse},
      {"round", Round},
      {"safe", [](const Value& v, const Args&) -> Result<Value> { return v; }},
      {"select", [](const Value& v, const Args& a) { return Select(v, a, false, true); }},
      {"selectattr", [](const Value& v, const Args& a) { return Select(v, a, true, true); }},
      {"sort", Sort},
      {"string", [](const Value& v, const Args&) -> Result<Value> { return Value::String(v.ToString()); }},
      {"sum", Sum},
      {"title", [](const Value& v, const Args&) -> Result<Value> { return Value::String(JinjaTitleFilter(v.ToString())); }},
      {"tojson", ToJson},
      {"trim", [](const Value& v, const Args& a) { return StringMethodFilter(v, "strip", a); }},
      {"unique", Unique},
      {"upper", [](const Value& v, const Args&) { return StringMethodFilter(v, "upper", Args{}); }},
  };
  return kFilters;
}

}  // namespace

Result<Value> ApplyFilter(const std::string& name, const Value& v, const Args& args) {
  const auto& filters = Filters();
  const auto it = filters.find(name);
  if (it == filters.end()) return Err("no filter named '" + name + "'");
  return it->second(v, args);
}

}  // namespace inferloop::llm::jinja
