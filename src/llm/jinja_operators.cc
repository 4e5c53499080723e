// Binary operators and tests (declared in jinja_builtins.h), with Python's meanings.
#include <cmath>
#include <limits>

#include "base/status_macros.h"
#include "llm/jinja_builtins.h"

namespace inferloop::llm::jinja {
namespace {

Status Err(const std::string& m) { return Status::InvalidArgument(m); }

Status Unsupported(const std::string& op, const Value& a, const Value& b) {
  return Err("unsupported operand type(s) for " + op + ": '" + TypeName(a) + "' and '" + TypeName(b) + "'");
}

// Python's ordering (<): numbers, strings, lists.
Result<int> Compare(const Value& a, const Value& b, const std::string& op) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.float_value(), y = b.float_value();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return a.int_value() < b.int_value() ? -1 : a.int_value() > b.int_value() ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    const List& x = a.list();
    const List& y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].Equals(y[i])) continue;
      return Compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  if (a.is_undefined() && !a.str().empty()) return Err(a.str());
  if (b.is_undefined() && !b.str().empty()) return Err(b.str());
  return Err("'" + op + "' not supported between instances of '" + TypeName(a) + "' and '" + TypeName(b) + "'");
}

Result<bool> Contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) return Err("'in <string>' requires string as left operand, not " + TypeName(item));
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_dict()) return item.is_string() && container.dict().Find(item.str()) != nullptr;
  if (container.is_list()) {
    for (const Value& v : container.list()) {
      if (v.Equals(item)) return true;
    }
    return false;
  }
  if (container.is_undefined()) return false;
  return Err("argument of type '" + TypeName(container) + "' is not iterable");
}

Result<Value> IntResult(__int128 r) {
  if (r > std::numeric_limits<int64_t>::max() || r < std::numeric_limits<int64_t>::min()) return Err("integer overflow");
  return Value::Int(static_cast<int64_t>(r));
}

Result<Value> Repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  const int64_t unit = seq.is_string() ? static_cast<int64_t>(seq.str().size()) : static_cast<int64_t>(seq.list().size());
  if (unit > 0 && n > (seq.is_string() ? kMaxStringBytes : kMaxListItems) / unit) return Err("'*': the result is too large");
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return Value::String(std::move(out));
  }
  List out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
  return Value::MakeList(std::move(out));
}

Result<Value> Arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined() && !a.str().empty()) return Err(a.str());
  if (b.is_undefined() && !b.str().empty()) return Err(b.str());
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (static_cast<int64_t>(a.str().size() + b.str().size()) > kMaxStringBytes) return Err("'+': the string is too long");
      return Value::String(a.str() + b.str());
    }
    if (a.is_list() && b.is_list()) {
      if (static_cast<int64_t>(a.list().size() + b.list().size()) > kMaxListItems) return Err("'+': the list is too long");
      List out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return Value::MakeList(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return Repeat(a, b.int_value());
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return Repeat(b, a.int_value());
  }
  if (!a.is_number() || !b.is_number()) return Unsupported(op, a, b);
  const bool floats = a.is_float() || b.is_float();
  if (op == "/") {
    if (b.float_value() == 0) return Err("division by zero");
    return Value::Float(a.float_value() / b.float_value());
  }
  if (op == "**") {
    if (!floats && b.int_value() >= 0) {
      __int128 r = 1;
      for (int64_t i = 0; i < b.int_value(); ++i) {
        r *= a.int_value();
        if (r > std::numeric_limits<int64_t>::max() || r < std::numeric_limits<int64_t>::min()) return Err("integer overflow");
        if (r == 0 || r == 1) break;
      }
      return IntResult(r);
    }
    return Value::Float(std::pow(a.float_value(), b.float_value()));
  }
  if (floats) {
    const double x = a.float_value(), y = b.float_value();
    if (op == "+") return Value::Float(x + y);
    if (op == "-") return Value::Float(x - y);
    if (op == "*") return Value::Float(x * y);
    if (y == 0) return Err("float division by zero");
    if (op == "//") return Value::Float(std::floor(x / y));
    double m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return Value::Float(m);
  }
  const __int128 x = a.int_value(), y = b.int_value();
  if (op == "+") return IntResult(x + y);
  if (op == "-") return IntResult(x - y);
  if (op == "*") return IntResult(x * y);
  if (y == 0) return Err("integer division or modulo by zero");
  __int128 q = x / y, m = x % y;
  if (m != 0 && ((m < 0) != (y < 0))) {
    m += y;
    q -= 1;
  }
  return IntResult(op == "//" ? q : m);
}

}  // namespace

Result<Value> BinaryOp(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    if (static_cast<int64_t>(a.ToString().size() + b.ToString().size()) > kMaxStringBytes) return Err("'~': the string is too long");
    return Value::String(a.ToString() + b.ToString());
  }
  if (op == "==") return Value::Bool(a.Equals(b));
  if (op == "!=") return Value::Bool(!a.Equals(b));
  if (op == "<" || op == "<=" || op == ">" || op == ">=") {
    IL_ASSIGN_OR_RETURN(int c, Compare(a, b, op));
    return Value::Bool(op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0);
  }
  if (op == "in" || op == "notin") {
    IL_ASSIGN_OR_RETURN(bool in, Contains(b, a));
    return Value::Bool(op == "in" ? in : !in);
  }
  if (op == "%" && a.is_string()) return Err("'%' string formatting is not supported");
  return Arithmetic(op, a, b);
}

Result<bool> ApplyTest(const std::string& name, const Value& v, const Args& args) {
  const Value* arg = args.Get(0, "value");
  auto need = [&]() -> Status { return arg ? Status::Ok() : Err("test '" + name + "' takes an argument"); };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.bool_value();
  if (name == "false") return v.is_bool() && !v.bool_value();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict() && !v.dict().is_namespace;
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "sequence") return v.is_list() || (v.is_dict() && !v.dict().is_namespace) || v.is_string() || v.is_undefined();
  if (name == "callable") return v.is_callable();
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    IL_ASSIGN_OR_RETURN(Value m, GetAttr(v, name == "lower" ? "islower" : "isupper"));
    IL_ASSIGN_OR_RETURN(Value r, m.function()(Args{}));
    return r.bool_value();
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!v.is_int() && !v.is_bool()) return Err("test '" + name + "' needs an integer, got " + TypeName(v));
    if (name == "divisibleby") {
      IL_RETURN_IF_ERROR(need());
      if (!arg->is_int() || arg->int_value() == 0) return Err("divisibleby needs a non-zero integer");
      return v.int_value() % arg->int_value() == 0;
    }
    const bool odd = (v.int_value() % 2) != 0;
    return name == "odd" ? odd : !odd;
  }
  static const std::pair<const char*, const char*> kCompare[] = {
      {"eq", "=="}, {"equalto", "=="}, {"==", "=="}, {"ne", "!="}, {"!=", "!="}, {"lt", "<"}, {"lessthan", "<"},
      {"<", "<"},   {"le", "<="},      {"<=", "<="}, {"gt", ">"},  {"greaterthan", ">"}, {">", ">"}, {"ge", ">="}, {">=", ">="}};
  for (const auto& [test, op] : kCompare) {
    if (name == test) {
      IL_RETURN_IF_ERROR(need());
      IL_ASSIGN_OR_RETURN(Value r, BinaryOp(op, v, *arg));
      return r.bool_value();
    }
  }
  if (name == "in") {
    IL_RETURN_IF_ERROR(need());
    IL_ASSIGN_OR_RETURN(Value r, BinaryOp("in", v, *arg));
    return r.bool_value();
  }
  if (name == "sameas") {
    IL_RETURN_IF_ERROR(need());
    if (v.kind() != arg->kind()) return false;
    if (v.is_list() || v.is_dict()) return v.is_list() ? &v.list() == &arg->list() : &v.dict() == &arg->dict();
    return v.Equals(*arg);
  }
  if (name == "escaped") return false;
  return Err("no test named '" + name + "'");
}

}  // namespace inferloop::llm::jinja
