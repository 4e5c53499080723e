// Jinja's built-in filters, tests, operators and the Python methods templates call on strings and
// dicts, with jinja2's and Python's meanings (the tojson filter as transformers defines it:
// json.dumps with ensure_ascii=False). Errors are plain messages; the renderer adds the line.
#pragma once

#include <string>

#include "inferloop/status.h"
#include "llm/jinja_value.h"

namespace inferloop::llm::jinja {

// Bounds every built-in keeps to (so a hostile template cannot exhaust memory).
inline constexpr int64_t kMaxStringBytes = 32 << 20;
inline constexpr int64_t kMaxListItems = 1 << 20;

// A test (`x is name(args)`). InvalidArgument for an unknown test.
Result<bool> ApplyTest(const std::string& name, const Value& v, const Args& args);
// A filter (`x | name(args)`). InvalidArgument for an unknown filter.
Result<Value> ApplyFilter(const std::string& name, const Value& v, const Args& args);
// `obj.name`: a method bound to obj (str and dict methods), a dict's key, or undefined.
// InvalidArgument when obj is undefined.
Result<Value> GetAttr(const Value& obj, const std::string& name);
// `obj[key]`: a dict's key (then its attribute), a list's or string's index (negative from the
// end), or undefined. InvalidArgument when obj is undefined.
Result<Value> GetItem(const Value& obj, const Value& key);
// `obj[start:stop:step]` on a list or string (code points); null bounds are absent.
Result<Value> GetSlice(const Value& obj, const Value* start, const Value* stop, const Value* step);
// Binary operators: + - * / // % ** ~ == != < <= > >= in notin (and/or are the renderer's).
Result<Value> BinaryOp(const std::string& op, const Value& a, const Value& b);
// jinja2's title filter (words start after '-', whitespace or an opening bracket).
std::string JinjaTitleFilter(const std::string& s);
// Python's type name for messages ("str", "int", "dict", "NoneType", "Undefined").
std::string TypeName(const Value& v);
// The items a for loop or filter iterates: a list's items, a dict's keys, a string's
// characters, nothing for undefined. InvalidArgument for other values.
Result<List> Iterate(const Value& v);

}  // namespace inferloop::llm::jinja
