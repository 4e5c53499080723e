// The parsed form of a Jinja template: expression and statement trees (made by jinja_parser.h,
// run by jinja_render.h). Immutable once parsed, so one parse serves any number of renders.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "llm/jinja_value.h"

namespace inferloop::llm::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,   // value
    kName,      // name
    kList,      // args (also tuples)
    kDict,      // kwargs-like pairs in `pairs`
    kAttr,      // a.name
    kItem,      // a[b]
    kSlice,     // a[b:c:d], each optional (null)
    kCall,      // a(args, kwargs)
    kFilter,    // a | name(args, kwargs)
    kTest,      // a is [not] name(args)
    kNeg, kPos, kNot,  // a
    kBinary,    // a op b (name = the operator: + - * / // % ** ~ == != < <= > >= in notin and or)
    kCond,      // b if a else c (c may be null)
  };
  Kind kind = Kind::kLiteral;
  int line = 0;
  Value value;
  std::string name;
  bool negated = false;
  ExprPtr a, b, c, d;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::pair<ExprPtr, ExprPtr>> pairs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // conds[i] -> bodies[i]; else_body
    kFor,       // for targets in expr [if filter]: body; else_body
    kSet,       // targets (one name, or name.attr via attr) = expr
    kSetBlock,  // {% set name %}body{% endset %}
    kMacro,     // name(params = defaults) body
    kBreak,
    kContinue,
    kBlock,     // body, rendered in place ({% generation %})
  };
  Kind kind = Kind::kText;
  int line = 0;
  std::string text;
  std::string name, attr;            // set/macro
  std::vector<std::string> targets;  // for/set names
  ExprPtr expr, filter;
  std::vector<ExprPtr> conds;
  std::vector<Body> bodies;
  Body body, else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters (default may be null)
  bool uses_loop = true;  // for: the body names `loop` (else no loop object is made)
};

}  // namespace inferloop::llm::jinja
