#include "llm/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

namespace inferloop::llm::jinja {

const Value* Dict::Find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::Set(const std::string& key, Value v) {
  for (auto& [k, old] : items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items.emplace_back(key, std::move(v));
}

const Value* Args::Get(size_t index, std::string_view name) const {
  for (const auto& [k, v] : kw) {
    if (k == name) return &v;
  }
  return index < pos.size() ? &pos[index] : nullptr;
}

Value Value::MakeList(List items) {
  Value v(Kind::kList);
  v.list_ = std::make_shared<List>(std::move(items));
  return v;
}

Value Value::MakeDict(Dict d) {
  Value v(Kind::kDict);
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::Callable(std::string name, Function f) {
  Value v(Kind::kCallable);
  v.s_ = std::move(name);
  v.fn_ = std::make_shared<Function>(std::move(f));
  return v;
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool:
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0;
    case Kind::kString: return !s_.empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return !dict_->items.empty();
    case Kind::kCallable: return true;
  }
  return false;
}

std::string PyFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // e.g. -1.2345e+02
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp = std::stoi(sci.substr(e + 1));
  if (exp >= -5 + 1 && exp < 16) {
    std::string out;
    if (exp < 0) {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
    }
    return sign + out;
  }
  std::string mant = digits.substr(0, 1);
  if (digits.size() > 1) mant += "." + digits.substr(1);
  char eb[16];
  std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return sign + mant + eb;
}

namespace {

std::string PyStrRepr(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == static_cast<unsigned char>(q)) out += std::string("\\") + q;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

}  // namespace

std::string Value::ToString() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString: return s_;
    default: return Repr();
  }
}

std::string Value::Repr() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "None";
    case Kind::kBool: return i_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: return PyFloatRepr(f_);
    case Kind::kString: return PyStrRepr(s_);
    case Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].Repr();
      return out + "]";
    }
    case Kind::kDict: {
      if (dict_->is_namespace) return "<Namespace>";
      std::string out = "{";
      for (size_t i = 0; i < dict_->items.size(); ++i) {
        out += (i ? ", " : "") + PyStrRepr(dict_->items[i].first) + ": " + dict_->items[i].second.Repr();
      }
      return out + "}";
    }
    case Kind::kCallable: return "<function " + s_ + ">";
  }
  return "";
}

bool Value::Equals(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (kind_ == Kind::kFloat || o.kind_ == Kind::kFloat) return float_value() == o.float_value();
    return i_ == o.i_;
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return s_ == o.s_;
    case Kind::kList: {
      if (list_ == o.list_) return true;
      if (list_->size() != o.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].Equals((*o.list_)[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (dict_ == o.dict_) return true;
      if (dict_->items.size() != o.dict_->items.size()) return false;
      for (const auto& [k, v] : dict_->items) {
        const Value* ov = o.dict_->Find(k);
        if (ov == nullptr || !v.Equals(*ov)) return false;
      }
      return true;
    }
    case Kind::kCallable: return fn_ == o.fn_;
    default: return false;
  }
}

std::vector<uint32_t> DecodeUtf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n < 0 || i + static_cast<size_t>(n) >= s.size()) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    uint32_t cp = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
    bool ok = true;
    for (int k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc & 0xC0) != 0x80) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += static_cast<size_t>(n) + 1;
  }
  return out;
}

int64_t Value::Length() const {
  switch (kind_) {
    case Kind::kUndefined: return 0;
    case Kind::kString: return static_cast<int64_t>(DecodeUtf8(s_).size());
    case Kind::kList: return static_cast<int64_t>(list_->size());
    case Kind::kDict: return static_cast<int64_t>(dict_->items.size());
    default: return -1;
  }
}

namespace {

void JsonString(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (uint32_t cp : DecodeUtf8(s)) {
    char b[16];
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp < 0x20 || (ensure_ascii && cp > 0x7e)) {
      if (cp >= 0x10000) {
        const uint32_t v = cp - 0x10000;
        std::snprintf(b, sizeof b, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(b, sizeof b, "\\u%04x", cp);
      }
      out += b;
    } else {
      AppendUtf8(out, cp);
    }
  }
  out += '"';
}

Status Dump(std::string& out, const Value& v, const JsonDumpOptions& o, int depth) {
  if (depth > 200) return Status::InvalidArgument("tojson: the value is nested too deeply");
  const bool pretty = o.indent >= 0 || !o.indent_text.empty();
  const std::string item_sep = !o.item_separator.empty() ? o.item_separator : pretty ? "," : ", ";
  const std::string key_sep = !o.key_separator.empty() ? o.key_separator : ": ";
  const std::string unit = !o.indent_text.empty() ? o.indent_text : std::string(static_cast<size_t>(std::max(o.indent, 0)), ' ');
  auto newline = [&](int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += unit;
  };
  switch (v.kind()) {
    case Value::Kind::kNone: out += "null"; return Status::Ok();
    case Value::Kind::kBool: out += v.bool_value() ? "true" : "false"; return Status::Ok();
    case Value::Kind::kInt: out += std::to_string(v.int_value()); return Status::Ok();
    case Value::Kind::kFloat: {
      const double d = v.float_value();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : PyFloatRepr(d);
      return Status::Ok();
    }
    case Value::Kind::kString: JsonString(out, v.str(), o.ensure_ascii); return Status::Ok();
    case Value::Kind::kList: {
      if (v.list().empty()) {
        out += "[]";
        return Status::Ok();
      }
      out += '[';
      for (size_t i = 0; i < v.list().size(); ++i) {
        if (i) out += item_sep;
        if (pretty) newline(depth + 1);
        Status s = Dump(out, v.list()[i], o, depth + 1);
        if (!s.ok()) return s;
      }
      if (pretty) newline(depth);
      out += ']';
      return Status::Ok();
    }
    case Value::Kind::kDict: {
      if (v.dict().items.empty()) {
        out += "{}";
        return Status::Ok();
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.dict().items) items.push_back(&kv);
      if (o.sort_keys) std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        if (pretty) newline(depth + 1);
        JsonString(out, items[i]->first, o.ensure_ascii);
        out += key_sep;
        Status s = Dump(out, items[i]->second, o, depth + 1);
        if (!s.ok()) return s;
      }
      if (pretty) newline(depth);
      out += '}';
      return Status::Ok();
    }
    case Value::Kind::kUndefined: return Status::InvalidArgument("tojson: Object of type Undefined is not JSON serializable");
    case Value::Kind::kCallable: return Status::InvalidArgument("tojson: a function is not JSON serializable");
  }
  return Status::Ok();
}

Value FromRapid(const rapidjson::Value& j) {
  if (j.IsNull()) return Value::None();
  if (j.IsBool()) return Value::Bool(j.GetBool());
  if (j.IsInt64()) return Value::Int(j.GetInt64());
  if (j.IsNumber()) return Value::Float(j.GetDouble());
  if (j.IsString()) return Value::String(std::string(j.GetString(), j.GetStringLength()));
  if (j.IsArray()) {
    List l;
    for (const auto& x : j.GetArray()) l.push_back(FromRapid(x));
    return Value::MakeList(std::move(l));
  }
  Dict d;
  for (const auto& m : j.GetObject()) d.Set(std::string(m.name.GetString(), m.name.GetStringLength()), FromRapid(m.value));
  return Value::MakeDict(std::move(d));
}

}  // namespace

Result<std::string> JsonDumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Status s = Dump(out, v, options, 0);
  if (!s.ok()) return s;
  return out;
}

Result<Value> ParseJson(std::string_view text) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseFullPrecisionFlag | rapidjson::kParseStopWhenDoneFlag>(text.data(), text.size());
  if (doc.HasParseError()) {
    return Status::InvalidArgument(std::string("bad JSON at offset ") + std::to_string(doc.GetErrorOffset()) + ": " +
                                   rapidjson::GetParseError_En(doc.GetParseError()));
  }
  return FromRapid(doc);
}

}  // namespace inferloop::llm::jinja
