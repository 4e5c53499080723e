#include "llm/jinja_parser.h"

#include <initializer_list>

#include "llm/jinja_lexer.h"

namespace inferloop::llm::jinja {
namespace {

using T = Token::Type;

// Recursive descent over the token list. Functions return null after recording the first error.
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Result<Body> Run() {
    Body body;
    std::string end;
    if (!ParseBody(&body, {}, &end)) return status_;
    return body;
  }

 private:
  const Token& Cur() const { return t_[p_]; }
  bool IsOp(const char* op) const { return Cur().type == T::kOp && Cur().text == op; }
  bool IsName(const char* n) const { return Cur().type == T::kName && Cur().text == n; }
  bool Fail(const std::string& m) {
    if (status_.ok()) status_ = Status::InvalidArgument("line " + std::to_string(Cur().line) + ": " + m);
    return false;
  }
  std::nullptr_t FailE(const std::string& m) {
    Fail(m);
    return nullptr;
  }
  bool Expect(const char* op) {
    if (!IsOp(op)) return Fail(std::string("expected '") + op + "'" + Found());
    ++p_;
    return true;
  }
  std::string Found() const {
    switch (Cur().type) {
      case T::kEnd: return ", found the end of the template";
      case T::kBlockEnd: return ", found '%}'";
      case T::kVarEnd: return ", found '}}'";
      case T::kText: return ", found template text";
      default: return ", found '" + Cur().text + "'";
    }
  }
  bool ExpectBlockEnd() {
    if (Cur().type != T::kBlockEnd) return Fail("expected '%}'" + Found());
    ++p_;
    return true;
  }

  // Statements until a {% name %} with name in `ends` (consumed up to the name; *end set), or the
  // end of the template when `ends` is empty.
  bool ParseBody(Body* body, std::initializer_list<const char*> ends, std::string* end) {
    if (++depth_ > kMaxParseDepth) return Fail("the template nests too deeply");
    while (true) {
      const Token& tok = Cur();
      if (tok.type == T::kEnd) {
        --depth_;
        if (ends.size() == 0) return true;
        return Fail(std::string("unexpected end of template: missing '{% ") + *(ends.end() - 1) + " %}'");
      }
      if (tok.type == T::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->text = tok.text;
        body->push_back(std::move(s));
        ++p_;
        continue;
      }
      if (tok.type == T::kVarBegin) {
        ++p_;
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->line = tok.line;
        s->expr = ParseTuple(true);
        if (!s->expr) return false;
        if (Cur().type != T::kVarEnd) return Fail("expected '}}'" + Found());
        ++p_;
        body->push_back(std::move(s));
        continue;
      }
      // {% ... %}
      ++p_;
      if (Cur().type != T::kName) return Fail("expected a tag name" + Found());
      for (const char* e : ends) {
        if (Cur().text == e) {
          *end = e;
          ++p_;
          --depth_;
          return true;
        }
      }
      StmtPtr s = ParseStatement();
      if (!s) return false;
      body->push_back(std::move(s));
    }
  }

  StmtPtr ParseStatement() {
    const std::string tag = Cur().text;
    const int line = Cur().line;
    ++p_;
    auto s = std::make_unique<Stmt>();
    s->line = line;
    if (tag == "if") return ParseIf(std::move(s));
    if (tag == "for") return ParseFor(std::move(s));
    if (tag == "set") return ParseSet(std::move(s));
    if (tag == "macro") return ParseMacro(std::move(s));
    if (tag == "break" || tag == "continue") {
      s->kind = tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      if (loop_depth_ == 0) return FailE("'" + tag + "' outside a loop");
      if (!ExpectBlockEnd()) return nullptr;
      return s;
    }
    if (tag == "generation") {
      s->kind = Stmt::Kind::kBlock;
      std::string end;
      if (!ExpectBlockEnd() || !ParseBody(&s->body, {"endgeneration"}, &end) || !ExpectBlockEnd()) return nullptr;
      return s;
    }
    return FailE("unknown or unsupported tag '" + tag + "'");
  }

  StmtPtr ParseIf(StmtPtr s) {
    s->kind = Stmt::Kind::kIf;
    while (true) {
      ExprPtr cond = ParseTuple(true);
      if (!cond || !ExpectBlockEnd()) return nullptr;
      s->conds.push_back(std::move(cond));
      s->bodies.emplace_back();
      std::string end;
      if (!ParseBody(&s->bodies.back(), {"elif", "else", "endif"}, &end)) return nullptr;
      if (end == "elif") continue;
      if (end == "else") {
        if (!ExpectBlockEnd() || !ParseBody(&s->else_body, {"endif"}, &end)) return nullptr;
      }
      if (!ExpectBlockEnd()) return nullptr;
      return s;
    }
  }

  bool ParseTargets(std::vector<std::string>* targets) {
    bool paren = IsOp("(");
    if (paren) ++p_;
    while (true) {
      if (Cur().type != T::kName) return Fail("expected a variable name" + Found());
      targets->push_back(Cur().text);
      ++p_;
      if (!IsOp(",")) break;
      ++p_;
    }
    if (paren) return Expect(")");
    return true;
  }

  StmtPtr ParseFor(StmtPtr s) {
    s->kind = Stmt::Kind::kFor;
    if (!ParseTargets(&s->targets)) return nullptr;
    if (!IsName("in")) return FailE("expected 'in'" + Found());
    ++p_;
    s->expr = ParseTuple(false);
    if (!s->expr) return nullptr;
    if (IsName("if")) {
      ++p_;
      s->filter = ParseTuple(true);
      if (!s->filter) return nullptr;
    }
    if (IsName("recursive")) return FailE("recursive loops are not supported");
    if (!ExpectBlockEnd()) return nullptr;
    ++loop_depth_;
    const int loop_names = loop_names_;
    std::string end;
    if (!ParseBody(&s->body, {"else", "endfor"}, &end)) return nullptr;
    s->uses_loop = loop_names_ != loop_names;
    --loop_depth_;
    if (end == "else") {
      if (!ExpectBlockEnd() || !ParseBody(&s->else_body, {"endfor"}, &end)) return nullptr;
    }
    if (!ExpectBlockEnd()) return nullptr;
    return s;
  }

  StmtPtr ParseSet(StmtPtr s) {
    if (Cur().type != T::kName) return FailE("expected a variable name" + Found());
    if (t_[p_ + 1].type == T::kOp && t_[p_ + 1].text == ".") {
      s->name = Cur().text;
      p_ += 2;
      if (Cur().type != T::kName) return FailE("expected an attribute name" + Found());
      s->attr = Cur().text;
      ++p_;
    } else if (!ParseTargets(&s->targets)) {
      return nullptr;
    }
    if (Cur().type == T::kBlockEnd && s->attr.empty() && s->targets.size() == 1) {
      ++p_;
      s->kind = Stmt::Kind::kSetBlock;
      s->name = s->targets[0];
      std::string end;
      if (!ParseBody(&s->body, {"endset"}, &end) || !ExpectBlockEnd()) return nullptr;
      return s;
    }
    s->kind = Stmt::Kind::kSet;
    if (!Expect("=")) return nullptr;
    s->expr = ParseTuple(true);
    if (!s->expr || !ExpectBlockEnd()) return nullptr;
    return s;
  }

  StmtPtr ParseMacro(StmtPtr s) {
    s->kind = Stmt::Kind::kMacro;
    if (Cur().type != T::kName) return FailE("expected a macro name" + Found());
    s->name = Cur().text;
    ++p_;
    if (!Expect("(")) return nullptr;
    while (!IsOp(")")) {
      if (Cur().type != T::kName) return FailE("expected a parameter name" + Found());
      std::string pname = Cur().text;
      ++p_;
      ExprPtr def;
      if (IsOp("=")) {
        ++p_;
        def = ParseExpr(true);
        if (!def) return nullptr;
      }
      s->params.emplace_back(std::move(pname), std::move(def));
      if (!IsOp(",")) break;
      ++p_;
    }
    if (!Expect(")") || !ExpectBlockEnd()) return nullptr;
    const int saved = loop_depth_;
    loop_depth_ = 0;
    std::string end;
    if (!ParseBody(&s->body, {"endmacro"}, &end) || !ExpectBlockEnd()) return nullptr;
    loop_depth_ = saved;
    return s;
  }

  ExprPtr Make(Expr::Kind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }

  // An expression, or several separated by commas (a tuple, held as a list).
  ExprPtr ParseTuple(bool with_cond) {
    const int line = Cur().line;
    ExprPtr first = ParseExpr(with_cond);
    if (!first || !IsOp(",")) return first;
    ExprPtr list = Make(Expr::Kind::kList, line);
    list->args.push_back(std::move(first));
    while (IsOp(",")) {
      ++p_;
      if (Cur().type == T::kBlockEnd || Cur().type == T::kVarEnd || IsOp(")")) break;
      ExprPtr e = ParseExpr(with_cond);
      if (!e) return nullptr;
      list->args.push_back(std::move(e));
    }
    return list;
  }

  struct DepthGuard {
    int* d;
    explicit DepthGuard(int* x) : d(x) { ++*d; }
    ~DepthGuard() { --*d; }
  };

  ExprPtr ParseExpr(bool with_cond) {
    DepthGuard g(&depth_);
    if (depth_ > kMaxParseDepth) return FailE("the expression nests too deeply");
    ExprPtr e = ParseOr();
    if (!e || !with_cond) return e;
    while (IsName("if")) {
      const int line = Cur().line;
      ++p_;
      ExprPtr c = Make(Expr::Kind::kCond, line);
      c->a = ParseOr();
      if (!c->a) return nullptr;
      c->b = std::move(e);
      if (IsName("else")) {
        ++p_;
        c->c = ParseExpr(true);
        if (!c->c) return nullptr;
      }
      e = std::move(c);
    }
    return e;
  }

  ExprPtr Binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
    if (!l || !r) return nullptr;
    ExprPtr e = Make(Expr::Kind::kBinary, line);
    e->name = op;
    e->a = std::move(l);
    e->b = std::move(r);
    return e;
  }

  ExprPtr ParseOr() {
    ExprPtr l = ParseAnd();
    while (l && IsName("or")) {
      const int line = Cur().line;
      ++p_;
      l = Binary("or", std::move(l), ParseAnd(), line);
    }
    return l;
  }

  ExprPtr ParseAnd() {
    ExprPtr l = ParseNot();
    while (l && IsName("and")) {
      const int line = Cur().line;
      ++p_;
      l = Binary("and", std::move(l), ParseNot(), line);
    }
    return l;
  }

  ExprPtr ParseNot() {
    if (IsName("not")) {
      DepthGuard g(&depth_);
      if (depth_ > kMaxParseDepth) return FailE("the expression nests too deeply");
      ExprPtr e = Make(Expr::Kind::kNot, Cur().line);
      ++p_;
      e->a = ParseNot();
      if (!e->a) return nullptr;
      return e;
    }
    return ParseCompare();
  }

  ExprPtr ParseCompare() {
    ExprPtr l = ParseMath1();
    while (l) {
      const int line = Cur().line;
      std::string op;
      if (Cur().type == T::kOp && (Cur().text == "==" || Cur().text == "!=" || Cur().text == "<" || Cur().text == "<=" ||
                                   Cur().text == ">" || Cur().text == ">=")) {
        op = Cur().text;
        ++p_;
      } else if (IsName("in")) {
        op = "in";
        ++p_;
      } else if (IsName("not") && t_[p_ + 1].type == T::kName && t_[p_ + 1].text == "in") {
        op = "notin";
        p_ += 2;
      } else {
        break;
      }
      l = Binary(op, std::move(l), ParseMath1(), line);
    }
    return l;
  }

  ExprPtr ParseMath1() {
    ExprPtr l = ParseConcat();
    while (l && (IsOp("+") || IsOp("-"))) {
      const std::string op = Cur().text;
      const int line = Cur().line;
      ++p_;
      l = Binary(op, std::move(l), ParseConcat(), line);
    }
    return l;
  }

  ExprPtr ParseConcat() {
    ExprPtr l = ParseMath2();
    while (l && IsOp("~")) {
      const int line = Cur().line;
      ++p_;
      l = Binary("~", std::move(l), ParseMath2(), line);
    }
    return l;
  }

  ExprPtr ParseMath2() {
    ExprPtr l = ParsePow();
    while (l && (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%"))) {
      const std::string op = Cur().text;
      const int line = Cur().line;
      ++p_;
      l = Binary(op, std::move(l), ParsePow(), line);
    }
    return l;
  }

  ExprPtr ParsePow() {
    ExprPtr l = ParseUnary(true);
    while (l && IsOp("**")) {
      const int line = Cur().line;
      ++p_;
      l = Binary("**", std::move(l), ParseUnary(true), line);
    }
    return l;
  }

  ExprPtr ParseUnary(bool with_filter) {
    DepthGuard g(&depth_);
    if (depth_ > kMaxParseDepth) return FailE("the expression nests too deeply");
    ExprPtr e;
    if (IsOp("-") || IsOp("+")) {
      e = Make(IsOp("-") ? Expr::Kind::kNeg : Expr::Kind::kPos, Cur().line);
      ++p_;
      e->a = ParseUnary(false);
      if (!e->a) return nullptr;
    } else {
      e = ParsePrimary();
    }
    e = ParsePostfix(std::move(e));
    if (with_filter) e = ParseFilters(std::move(e));
    return e;
  }

  bool ParseCallArgs(std::vector<ExprPtr>* args, std::vector<std::pair<std::string, ExprPtr>>* kwargs) {
    // after '('
    while (!IsOp(")")) {
      if (Cur().type == T::kName && t_[p_ + 1].type == T::kOp && t_[p_ + 1].text == "=") {
        std::string k = Cur().text;
        p_ += 2;
        ExprPtr v = ParseExpr(true);
        if (!v) return false;
        kwargs->emplace_back(std::move(k), std::move(v));
      } else {
        if (!kwargs->empty()) return Fail("a positional argument follows a keyword argument");
        ExprPtr v = ParseExpr(true);
        if (!v) return false;
        args->push_back(std::move(v));
      }
      if (!IsOp(",")) break;
      ++p_;
    }
    return Expect(")");
  }

  ExprPtr ParsePostfix(ExprPtr e) {
    while (e) {
      const int line = Cur().line;
      if (IsOp(".")) {
        ++p_;
        if (Cur().type == T::kName) {
          ExprPtr a = Make(Expr::Kind::kAttr, line);
          a->name = Cur().text;
          a->a = std::move(e);
          e = std::move(a);
        } else if (Cur().type == T::kInt) {
          ExprPtr a = Make(Expr::Kind::kItem, line);
          a->a = std::move(e);
          a->b = Make(Expr::Kind::kLiteral, line);
          a->b->value = Value::Int(Cur().int_value);
          e = std::move(a);
        } else {
          return FailE("expected an attribute name after '.'" + Found());
        }
        ++p_;
      } else if (IsOp("[")) {
        ++p_;
        e = ParseSubscript(std::move(e), line);
      } else if (IsOp("(")) {
        ++p_;
        ExprPtr c = Make(Expr::Kind::kCall, line);
        c->a = std::move(e);
        if (!ParseCallArgs(&c->args, &c->kwargs)) return nullptr;
        e = std::move(c);
      } else {
        break;
      }
    }
    return e;
  }

  ExprPtr ParseSubscript(ExprPtr obj, int line) {
    ExprPtr parts[3];
    bool slice = false;
    for (int i = 0; i < 3; ++i) {
      if (!IsOp(":") && !IsOp("]")) {
        parts[i] = ParseExpr(true);
        if (!parts[i]) return nullptr;
      }
      if (i < 2 && IsOp(":")) {
        slice = true;
        ++p_;
        continue;
      }
      break;
    }
    if (!Expect("]")) return nullptr;
    if (!slice) {
      if (!parts[0]) return FailE("expected an index");
      ExprPtr e = Make(Expr::Kind::kItem, line);
      e->a = std::move(obj);
      e->b = std::move(parts[0]);
      return e;
    }
    ExprPtr e = Make(Expr::Kind::kSlice, line);
    e->a = std::move(obj);
    e->b = std::move(parts[0]);
    e->c = std::move(parts[1]);
    e->d = std::move(parts[2]);
    return e;
  }

  ExprPtr ParseFilters(ExprPtr e) {
    while (e) {
      const int line = Cur().line;
      if (IsOp("|")) {
        ++p_;
        if (Cur().type != T::kName) return FailE("expected a filter name" + Found());
        ExprPtr f = Make(Expr::Kind::kFilter, line);
        f->name = Cur().text;
        ++p_;
        f->a = std::move(e);
        if (IsOp("(")) {
          ++p_;
          if (!ParseCallArgs(&f->args, &f->kwargs)) return nullptr;
        }
        e = std::move(f);
      } else if (IsName("is")) {
        ++p_;
        ExprPtr t = Make(Expr::Kind::kTest, line);
        if (IsName("not")) {
          t->negated = true;
          ++p_;
        }
        if (Cur().type != T::kName) return FailE("expected a test name" + Found());
        t->name = Cur().text;
        ++p_;
        t->a = std::move(e);
        if (IsOp("(")) {
          ++p_;
          if (!ParseCallArgs(&t->args, &t->kwargs)) return nullptr;
        } else if ((Cur().type == T::kName && !IsName("else") && !IsName("or") && !IsName("and") && !IsName("if") &&
                    !IsName("in") && !IsName("not") && !IsName("is")) ||
                   Cur().type == T::kString || Cur().type == T::kInt || Cur().type == T::kFloat || IsOp("[") || IsOp("{")) {
          ExprPtr arg = ParsePostfix(ParsePrimary());
          if (!arg) return nullptr;
          t->args.push_back(std::move(arg));
        }
        e = std::move(t);
      } else {
        break;
      }
    }
    return e;
  }

  ExprPtr ParsePrimary() {
    const Token& tok = Cur();
    const int line = tok.line;
    ExprPtr e = Make(Expr::Kind::kLiteral, line);
    switch (tok.type) {
      case T::kName:
        if (tok.text == "true" || tok.text == "True") e->value = Value::Bool(true);
        else if (tok.text == "false" || tok.text == "False") e->value = Value::Bool(false);
        else if (tok.text == "none" || tok.text == "None") e->value = Value::None();
        else {
          e->kind = Expr::Kind::kName;
          e->name = tok.text;
          if (e->name == "loop") ++loop_names_;
        }
        ++p_;
        return e;
      case T::kString: {
        std::string s;
        while (Cur().type == T::kString) s += t_[p_++].text;  // adjacent literals concatenate
        e->value = Value::String(std::move(s));
        return e;
      }
      case T::kInt: e->value = Value::Int(tok.int_value); ++p_; return e;
      case T::kFloat: e->value = Value::Float(tok.float_value); ++p_; return e;
      default: break;
    }
    if (IsOp("(")) {
      ++p_;
      if (IsOp(")")) {
        ++p_;
        e->kind = Expr::Kind::kList;
        return e;
      }
      ExprPtr inner = ParseTuple(true);
      if (!inner || !Expect(")")) return nullptr;
      return inner;
    }
    if (IsOp("[")) {
      ++p_;
      e->kind = Expr::Kind::kList;
      while (!IsOp("]")) {
        ExprPtr item = ParseExpr(true);
        if (!item) return nullptr;
        e->args.push_back(std::move(item));
        if (!IsOp(",")) break;
        ++p_;
      }
      if (!Expect("]")) return nullptr;
      return e;
    }
    if (IsOp("{")) {
      ++p_;
      e->kind = Expr::Kind::kDict;
      while (!IsOp("}")) {
        ExprPtr k = ParseExpr(true);
        if (!k || !Expect(":")) return nullptr;
        ExprPtr v = ParseExpr(true);
        if (!v) return nullptr;
        e->pairs.emplace_back(std::move(k), std::move(v));
        if (!IsOp(",")) break;
        ++p_;
      }
      if (!Expect("}")) return nullptr;
      return e;
    }
    return FailE("unexpected token" + Found().substr(std::string(", found").size()));
  }

  std::vector<Token> t_;
  size_t p_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  int loop_names_ = 0;  // `loop` names parsed so far
  Status status_;
};

}  // namespace

Result<Body> Parse(std::string_view source) {
  Result<std::vector<Token>> tokens = Tokenize(source);
  if (!tokens.ok()) return tokens.status();
  return Parser(std::move(*tokens)).Run();
}

}  // namespace inferloop::llm::jinja
