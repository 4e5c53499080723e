#include "llm/jinja_render.h"

#include <ctime>
#include <memory>
#include <unordered_map>

#include "base/status_macros.h"
#include "llm/jinja_builtins.h"

namespace inferloop::llm::jinja {
namespace {

// Variables of one scope: the template's top level, one loop iteration, or one macro call.
struct Frame {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;
};

Status AtLine(const Status& s, int line) {
  if (s.ok() || s.code() != StatusCode::kInvalidArgument || s.message().rfind("line ", 0) == 0) return s;
  return Status::InvalidArgument("line " + std::to_string(line) + ": " + s.message());
}

Result<Value> RangeGlobal(const Args& a) {
  int64_t v[3] = {0, 0, 1};
  if (a.pos.empty() || a.pos.size() > 3) return Status::InvalidArgument("range takes 1 to 3 integers");
  for (const Value& x : a.pos) {
    if (!x.is_int() && !x.is_bool()) return Status::InvalidArgument("range: expected integers, got " + TypeName(x));
  }
  if (a.pos.size() == 1) {
    v[1] = a.pos[0].int_value();
  } else {
    v[0] = a.pos[0].int_value();
    v[1] = a.pos[1].int_value();
    if (a.pos.size() == 3) v[2] = a.pos[2].int_value();
  }
  if (v[2] == 0) return Status::InvalidArgument("range() arg 3 must not be zero");
  List out;
  for (int64_t i = v[0]; v[2] > 0 ? i < v[1] : i > v[1]; i += v[2]) {
    if (static_cast<int64_t>(out.size()) >= kMaxListItems) return Status::ResourceExhausted("range: too many items");
    out.push_back(Value::Int(i));
  }
  return Value::MakeList(std::move(out));
}

Result<Value> DictGlobal(const Args& a, bool ns) {
  Dict d;
  d.is_namespace = ns;
  for (const Value& p : a.pos) {
    if (!p.is_dict()) return Status::InvalidArgument(std::string(ns ? "namespace" : "dict") + "() takes a mapping");
    for (const auto& [k, v] : p.dict().items) d.Set(k, v);
  }
  for (const auto& [k, v] : a.kw) d.Set(k, v);
  return Value::MakeDict(std::move(d));
}

Result<Value> StrftimeNow(const Args& a) {
  const Value* f = a.Get(0, "format");
  if (f == nullptr || !f->is_string()) return Status::InvalidArgument("strftime_now takes a format string");
  if (f->str().size() > 256) return Status::InvalidArgument("strftime_now: the format is too long");
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[1024];
  const size_t n = std::strftime(buf, sizeof buf, f->str().c_str(), &tm);
  return Value::String(std::string(buf, n));
}

Value Globals() {
  Dict g;
  g.Set("range", Value::Callable("range", RangeGlobal));
  g.Set("dict", Value::Callable("dict", [](const Args& a) { return DictGlobal(a, false); }));
  g.Set("raise_exception", Value::Callable("raise_exception", [](const Args& a) -> Result<Value> {
          const Value* m = a.Get(0, "message");
          return Status::FailedPrecondition(m ? m->ToString() : "");
        }));
  g.Set("strftime_now", Value::Callable("strftime_now", StrftimeNow));
  return Value::MakeDict(std::move(g));
}

class Renderer {
 public:
  Renderer(const RenderLimits& limits, std::string* out) : limits_(limits), out_(out), globals_(Globals()) {
    // namespace(): made here so that the render can empty them at its end (a namespace may
    // hold itself, `set ns.x = ns`: a reference cycle that would leak).
    globals_.mutable_dict().Set("namespace", Value::Callable("namespace", [this](const Args& a) -> Result<Value> {
      Result<Value> ns = DictGlobal(a, true);
      if (ns.ok()) namespaces_.push_back(*ns);
      return ns;
    }));
  }
  ~Renderer() {
    frame_.reset();
    for (const Value& ns : namespaces_) ns.mutable_dict().items.clear();
  }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  Status Run(const Body& body, const Value& context) {
    frame_ = std::make_shared<Frame>();
    if (context.is_dict()) {
      for (const auto& [k, v] : context.dict().items) frame_->vars[k] = v;
    } else if (!context.is_undefined() && !context.is_none()) {
      return Status::InvalidArgument("the template context must be a mapping");
    }
    Flow flow = Flow::kNormal;
    return Exec(body, &flow);
  }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Status Step() {
    if (++steps_ > limits_.max_steps) {
      return Status::ResourceExhausted("the template ran for more than " + std::to_string(limits_.max_steps) + " steps");
    }
    return Status::Ok();
  }

  Status Emit(const std::string& s) {
    if (static_cast<int64_t>(out_->size() + s.size()) > limits_.max_output_bytes) {
      return Status::ResourceExhausted("the template's output is over " + std::to_string(limits_.max_output_bytes) + " bytes");
    }
    out_->append(s);
    return Status::Ok();
  }

  Value Lookup(const std::string& name) const {
    for (const Frame* f = frame_.get(); f != nullptr; f = f->parent.get()) {
      const auto it = f->vars.find(name);
      if (it != f->vars.end()) return it->second;
    }
    if (const Value* g = globals_.dict().Find(name)) return *g;
    return Value::Undefined("'" + name + "' is undefined");
  }

  Status Exec(const Body& body, Flow* flow) {
    for (const StmtPtr& s : body) {
      IL_RETURN_IF_ERROR(ExecStmt(*s, flow));
      if (*flow != Flow::kNormal) return Status::Ok();
    }
    return Status::Ok();
  }

  Status Assign(const std::vector<std::string>& targets, const Value& v, int line) {
    if (targets.size() == 1) {
      frame_->vars[targets[0]] = v;
      return Status::Ok();
    }
    IL_ASSIGN_OR_RETURN(List items, Iterate(v));
    if (items.size() != targets.size()) {
      return AtLine(Status::InvalidArgument(std::string(items.size() > targets.size() ? "too many" : "not enough") +
                                            " values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                                            std::to_string(items.size()) + ")"),
                    line);
    }
    for (size_t i = 0; i < targets.size(); ++i) frame_->vars[targets[i]] = items[i];
    return Status::Ok();
  }

  Status ExecStmt(const Stmt& s, Flow* flow) {
    IL_RETURN_IF_ERROR(Step());
    switch (s.kind) {
      case Stmt::Kind::kText: return Emit(s.text);
      case Stmt::Kind::kOutput: {
        IL_ASSIGN_OR_RETURN(Value v, Eval(*s.expr));
        return Emit(v.ToString());
      }
      case Stmt::Kind::kIf:
        for (size_t i = 0; i < s.conds.size(); ++i) {
          IL_ASSIGN_OR_RETURN(Value c, Eval(*s.conds[i]));
          if (c.Truthy()) return Exec(s.bodies[i], flow);
        }
        return Exec(s.else_body, flow);
      case Stmt::Kind::kFor: return ExecFor(s, flow);
      case Stmt::Kind::kSet: {
        IL_ASSIGN_OR_RETURN(Value v, Eval(*s.expr));
        if (s.attr.empty()) return Assign(s.targets, v, s.line);
        const Value ns = Lookup(s.name);
        if (!ns.is_dict() || !ns.dict().is_namespace) {
          return AtLine(Status::InvalidArgument("cannot assign attribute '" + s.attr + "' on '" + s.name +
                                                "': it is not a namespace() object"),
                        s.line);
        }
        ns.mutable_dict().Set(s.attr, std::move(v));
        return Status::Ok();
      }
      case Stmt::Kind::kSetBlock: {
        IL_ASSIGN_OR_RETURN(std::string text, Capture(s.body));
        frame_->vars[s.name] = Value::String(std::move(text));
        return Status::Ok();
      }
      case Stmt::Kind::kMacro: frame_->vars[s.name] = MakeMacro(s); return Status::Ok();
      case Stmt::Kind::kBreak: *flow = Flow::kBreak; return Status::Ok();
      case Stmt::Kind::kContinue: *flow = Flow::kContinue; return Status::Ok();
      case Stmt::Kind::kBlock: return Exec(s.body, flow);
    }
    return Status::Ok();
  }

  // The text `body` renders to, in the current scope.
  Result<std::string> Capture(const Body& body) {
    std::string text;
    std::string* saved = out_;
    out_ = &text;
    Flow flow = Flow::kNormal;
    Status st = Exec(body, &flow);
    out_ = saved;
    if (!st.ok()) return st;
    if (static_cast<int64_t>(out_->size() + text.size()) > limits_.max_output_bytes) {
      return Status::ResourceExhausted("the template's output is over " + std::to_string(limits_.max_output_bytes) + " bytes");
    }
    return text;
  }

  static Value LoopObject(const List& items, size_t i) {
    const auto n = static_cast<int64_t>(items.size());
    const auto k = static_cast<int64_t>(i);
    Dict d;
    d.Set("index", Value::Int(k + 1));
    d.Set("index0", Value::Int(k));
    d.Set("revindex", Value::Int(n - k));
    d.Set("revindex0", Value::Int(n - k - 1));
    d.Set("first", Value::Bool(k == 0));
    d.Set("last", Value::Bool(k == n - 1));
    d.Set("length", Value::Int(n));
    d.Set("depth", Value::Int(1));
    d.Set("depth0", Value::Int(0));
    d.Set("previtem", i > 0 ? items[i - 1] : Value::Undefined("there is no previous item"));
    d.Set("nextitem", i + 1 < items.size() ? items[i + 1] : Value::Undefined("there is no next item"));
    d.Set("cycle", Value::Callable("cycle", [i](const Args& a) -> Result<Value> {
            if (a.pos.empty()) return Status::InvalidArgument("loop.cycle needs at least one argument");
            return a.pos[i % a.pos.size()];
          }));
    return Value::MakeDict(std::move(d));
  }

  Status ExecFor(const Stmt& s, Flow* flow) {
    IL_ASSIGN_OR_RETURN(Value seq, Eval(*s.expr));
    Result<List> all = Iterate(seq);
    if (!all.ok()) return AtLine(all.status(), s.line);
    const std::shared_ptr<Frame> outer = frame_;
    List items;
    if (s.filter) {
      for (const Value& item : *all) {
        IL_RETURN_IF_ERROR(Step());
        frame_ = std::make_shared<Frame>(Frame{{}, outer});
        Status st = Assign(s.targets, item, s.line);
        Result<Value> keep = st.ok() ? Eval(*s.filter) : Result<Value>(st);
        frame_ = outer;
        if (!keep.ok()) return keep.status();
        if (keep->Truthy()) items.push_back(item);
      }
    } else {
      items = std::move(*all);
    }
    Status st;
    for (size_t i = 0; i < items.size() && st.ok(); ++i) {
      st = Step();
      if (!st.ok()) break;
      frame_ = std::make_shared<Frame>(Frame{{}, outer});
      if (s.uses_loop) frame_->vars["loop"] = LoopObject(items, i);
      st = Assign(s.targets, items[i], s.line);
      Flow inner = Flow::kNormal;
      if (st.ok()) st = Exec(s.body, &inner);
      if (inner == Flow::kBreak) break;
    }
    frame_ = outer;
    IL_RETURN_IF_ERROR(st);
    if (items.empty()) return Exec(s.else_body, flow);
    return Status::Ok();
  }

  Value MakeMacro(const Stmt& s) {
    const Stmt* macro = &s;
    std::weak_ptr<Frame> weak = frame_;  // weak: the frame holds this value (no cycle)
    return Value::Callable(s.name, [this, macro, weak](const Args& a) -> Result<Value> {
      std::shared_ptr<Frame> closure = weak.lock();
      if (!closure) return Status::InvalidArgument("macro '" + macro->name + "' called outside the scope it was defined in");
      if (depth_ >= limits_.max_call_depth) {
        return Status::ResourceExhausted("macro calls nest deeper than " + std::to_string(limits_.max_call_depth));
      }
      if (a.pos.size() > macro->params.size()) {
        return AtLine(Status::InvalidArgument("macro '" + macro->name + "' takes at most " +
                                              std::to_string(macro->params.size()) + " arguments"),
                      macro->line);
      }
      const std::shared_ptr<Frame> saved = frame_;
      frame_ = std::make_shared<Frame>(Frame{{}, closure});
      ++depth_;
      Status st;
      for (size_t i = 0; i < macro->params.size() && st.ok(); ++i) {
        const auto& [pname, def] = macro->params[i];
        if (const Value* v = a.Get(i, pname)) {
          frame_->vars[pname] = *v;
        } else if (def) {
          Result<Value> d = Eval(*def);
          if (d.ok()) frame_->vars[pname] = *d;
          else st = d.status();
        } else {
          frame_->vars[pname] = Value::Undefined("parameter '" + pname + "' was not provided");
        }
      }
      Result<std::string> text = st.ok() ? Capture(macro->body) : Result<std::string>(st);
      --depth_;
      frame_ = saved;
      if (!text.ok()) return text.status();
      return Value::String(std::move(*text));
    });
  }

  Status EvalArgs(const Expr& e, Args* args) {
    for (const ExprPtr& x : e.args) {
      IL_ASSIGN_OR_RETURN(Value v, Eval(*x));
      args->pos.push_back(std::move(v));
    }
    for (const auto& [k, x] : e.kwargs) {
      IL_ASSIGN_OR_RETURN(Value v, Eval(*x));
      args->kw.emplace_back(k, std::move(v));
    }
    return Status::Ok();
  }

  Result<Value> Eval(const Expr& e) {
    IL_RETURN_IF_ERROR(Step());
    Result<Value> r = EvalNode(e);
    if (!r.ok()) return AtLine(r.status(), e.line);
    return r;
  }

  Result<Value> EvalNode(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: return Lookup(e.name);
      case Expr::Kind::kList: {
        List items;
        for (const ExprPtr& x : e.args) {
          IL_ASSIGN_OR_RETURN(Value v, Eval(*x));
          items.push_back(std::move(v));
        }
        return Value::MakeList(std::move(items));
      }
      case Expr::Kind::kDict: {
        Dict d;
        for (const auto& [k, x] : e.pairs) {
          IL_ASSIGN_OR_RETURN(Value key, Eval(*k));
          if (!key.is_string()) return Status::InvalidArgument("dict keys must be strings, got " + TypeName(key));
          IL_ASSIGN_OR_RETURN(Value v, Eval(*x));
          d.Set(key.str(), std::move(v));
        }
        return Value::MakeDict(std::move(d));
      }
      case Expr::Kind::kAttr: {
        IL_ASSIGN_OR_RETURN(Value obj, Eval(*e.a));
        return GetAttr(obj, e.name);
      }
      case Expr::Kind::kItem: {
        IL_ASSIGN_OR_RETURN(Value obj, Eval(*e.a));
        IL_ASSIGN_OR_RETURN(Value key, Eval(*e.b));
        return GetItem(obj, key);
      }
      case Expr::Kind::kSlice: return EvalSlice(e);
      case Expr::Kind::kCall: {
        IL_ASSIGN_OR_RETURN(Value fn, Eval(*e.a));
        Args args;
        IL_RETURN_IF_ERROR(EvalArgs(e, &args));
        if (fn.is_undefined()) return Status::InvalidArgument(fn.str().empty() ? "an undefined value is not callable" : fn.str());
        if (!fn.is_callable()) return Status::InvalidArgument(std::string("'") + TypeName(fn) + "' object is not callable");
        return fn.function()(args);
      }
      case Expr::Kind::kFilter: {
        IL_ASSIGN_OR_RETURN(Value v, Eval(*e.a));
        Args args;
        IL_RETURN_IF_ERROR(EvalArgs(e, &args));
        return ApplyFilter(e.name, v, args);
      }
      case Expr::Kind::kTest: {
        IL_ASSIGN_OR_RETURN(Value v, Eval(*e.a));
        Args args;
        IL_RETURN_IF_ERROR(EvalArgs(e, &args));
        IL_ASSIGN_OR_RETURN(bool r, ApplyTest(e.name, v, args));
        return Value::Bool(r != e.negated);
      }
      case Expr::Kind::kNeg:
      case Expr::Kind::kPos: {
        IL_ASSIGN_OR_RETURN(Value v, Eval(*e.a));
        if (e.kind == Expr::Kind::kPos && v.is_number()) return v.is_bool() ? Value::Int(v.int_value()) : v;
        return BinaryOp("-", Value::Int(0), v);
      }
      case Expr::Kind::kNot: {
        IL_ASSIGN_OR_RETURN(Value v, Eval(*e.a));
        return Value::Bool(!v.Truthy());
      }
      case Expr::Kind::kBinary: return EvalBinary(e);
      case Expr::Kind::kCond: {
        IL_ASSIGN_OR_RETURN(Value c, Eval(*e.a));
        if (c.Truthy()) return Eval(*e.b);
        if (e.c) return Eval(*e.c);
        return Value::Undefined("the inline if expression evaluated to false and no else section was defined");
      }
    }
    return Value();
  }

  Result<Value> EvalSlice(const Expr& e) {
    IL_ASSIGN_OR_RETURN(Value obj, Eval(*e.a));
    Value parts[3];
    const Expr* exprs[3] = {e.b.get(), e.c.get(), e.d.get()};
    for (int i = 0; i < 3; ++i) {
      if (exprs[i] != nullptr) {
        IL_ASSIGN_OR_RETURN(parts[i], Eval(*exprs[i]));
      }
    }
    if (obj.is_undefined()) return Status::InvalidArgument(obj.str());
    return GetSlice(obj, exprs[0] ? &parts[0] : nullptr, exprs[1] ? &parts[1] : nullptr, exprs[2] ? &parts[2] : nullptr);
  }

  Result<Value> EvalBinary(const Expr& e) {
    IL_ASSIGN_OR_RETURN(Value a, Eval(*e.a));
    if (e.name == "and") {
      if (!a.Truthy()) return a;
      return Eval(*e.b);
    }
    if (e.name == "or") {
      if (a.Truthy()) return a;
      return Eval(*e.b);
    }
    IL_ASSIGN_OR_RETURN(Value b, Eval(*e.b));
    return BinaryOp(e.name, a, b);
  }

  const RenderLimits limits_;
  std::string* out_;
  Value globals_;
  std::shared_ptr<Frame> frame_;
  std::vector<Value> namespaces_;  // every namespace() this render made
  int64_t steps_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<std::string> Render(const Body& body, const Value& context, const RenderLimits& limits) {
  std::string out;
  Renderer r(limits, &out);
  IL_RETURN_IF_ERROR(r.Run(body, context));
  return out;
}

}  // namespace inferloop::llm::jinja
