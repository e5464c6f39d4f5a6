//===- Evaluator.cpp - Runs a parsed Jinja template -----------------------===//

#include "runtime/chat/Evaluator.h"

#include "runtime/chat/Builtins.h"
#include "runtime/chat/EvalError.h"
#include "runtime/chat/Operators.h"

#include <memory>
#include <unordered_map>

namespace sol::jinja {
namespace {

/// Guards against templates that never finish or exhaust memory.
constexpr size_t kMaxLoopIterations = 10'000'000;
constexpr size_t kMaxOutputBytes = size_t(1) << 28;
constexpr int kMaxMacroDepth = 200;

struct Scope;
using ScopePtr = std::shared_ptr<Scope>;

struct Scope {
  explicit Scope(ScopePtr parent) : parent(std::move(parent)) {}
  ScopePtr parent;
  std::unordered_map<std::string, Value> variables;

  const Value *lookup(const std::string &name) const {
    for (const Scope *s = this; s; s = s->parent.get()) {
      auto it = s->variables.find(name);
      if (it != s->variables.end())
        return &it->second;
    }
    return nullptr;
  }
};

ScopePtr childOf(const ScopePtr &parent) {
  return std::make_shared<Scope>(parent);
}

[[noreturn]] void failAt(int line, const EvalError &error) {
  if (dynamic_cast<const TemplateRaisedError *>(&error))
    fail("chat template raised an exception (line ", line, "): ", error.what());
  fail("chat template line ", line, ": ", error.what());
}

class Evaluator {
public:
  std::string run(const StmtList &body, const ScopePtr &root) {
    std::string out;
    execList(body, root, out);
    return out;
  }

private:
  enum class Flow { Normal, Break, Continue };

  Flow execList(const StmtList &body, const ScopePtr &scope, std::string &out) {
    for (const StmtPtr &stmt : body) {
      Flow flow = exec(*stmt, scope, out);
      if (flow != Flow::Normal)
        return flow;
    }
    return Flow::Normal;
  }

  Flow exec(const Stmt &stmt, const ScopePtr &scope, std::string &out) {
    try {
      Flow flow = execInner(stmt, scope, out);
      if (out.size() > kMaxOutputBytes)
        evalFail("the rendered text exceeds ", kMaxOutputBytes, " bytes");
      return flow;
    } catch (const EvalError &e) {
      failAt(stmt.line, e);
    }
  }

  Flow execInner(const Stmt &stmt, const ScopePtr &scope, std::string &out) {
    switch (stmt.kind) {
    case Stmt::Kind::Output:
      for (const auto &piece : static_cast<const OutputStmt &>(stmt).pieces) {
        if (piece.expr)
          out += pyStr(eval(*piece.expr, scope));
        else
          out += piece.text;
      }
      return Flow::Normal;
    case Stmt::Kind::If: {
      const auto &s = static_cast<const IfStmt &>(stmt);
      for (const auto &[test, body] : s.branches)
        if (eval(*test, scope).truthy())
          return execList(body, scope, out);
      return execList(s.otherwise, scope, out);
    }
    case Stmt::Kind::For:
      return execFor(static_cast<const ForStmt &>(stmt), scope, out);
    case Stmt::Kind::Assign: {
      const auto &s = static_cast<const AssignStmt &>(stmt);
      assign(*s.target, eval(*s.value, scope), scope);
      return Flow::Normal;
    }
    case Stmt::Kind::AssignBlock: {
      const auto &s = static_cast<const AssignBlockStmt &>(stmt);
      std::string captured;
      execList(s.body, childOf(scope), captured);
      Value value(captured);
      if (s.filter)
        value = applyFilterChain(*s.filter, value, scope);
      assign(*s.target, value, scope);
      return Flow::Normal;
    }
    case Stmt::Kind::Macro:
      defineMacro(static_cast<const MacroStmt &>(stmt), scope);
      return Flow::Normal;
    case Stmt::Kind::FilterBlock: {
      const auto &s = static_cast<const FilterBlockStmt &>(stmt);
      std::string captured;
      execList(s.body, childOf(scope), captured);
      out += pyStr(applyFilterChain(*s.filter, Value(captured), scope));
      return Flow::Normal;
    }
    case Stmt::Kind::With: {
      const auto &s = static_cast<const WithStmt &>(stmt);
      std::vector<Value> values;
      for (const auto &[target, value] : s.assignments)
        values.push_back(eval(*value, scope));
      ScopePtr inner = childOf(scope);
      for (size_t i = 0; i < values.size(); ++i)
        assign(*s.assignments[i].first, values[i], inner);
      return execList(s.body, inner, out);
    }
    case Stmt::Kind::Scope:
      return execList(static_cast<const ScopeStmt &>(stmt).body, childOf(scope),
                      out);
    case Stmt::Kind::Break:
      return Flow::Break;
    case Stmt::Kind::Continue:
      return Flow::Continue;
    }
    return Flow::Normal;
  }

  Flow execFor(const ForStmt &s, const ScopePtr &scope, std::string &out) {
    Value iterable = eval(*s.iterable, scope);
    std::vector<Value> items = pyIterate(iterable);
    if (s.filter) {
      std::vector<Value> kept;
      for (const Value &item : items) {
        ScopePtr probe = childOf(scope);
        assign(*s.target, item, probe);
        if (eval(*s.filter, probe).truthy())
          kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty())
      return execList(s.otherwise, childOf(scope), out);
    const Integer length = static_cast<Integer>(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (++iterations_ > kMaxLoopIterations)
        evalFail("the template ran more than ", kMaxLoopIterations,
                 " loop iterations");
      ScopePtr iteration = childOf(scope);
      assign(*s.target, items[i], iteration);
      Integer index = static_cast<Integer>(i);
      DictData loop;
      loop.set("index0", Value(index));
      loop.set("index", Value(index + 1));
      loop.set("revindex", Value(length - index));
      loop.set("revindex0", Value(length - index - 1));
      loop.set("first", Value(i == 0));
      loop.set("last", Value(index == length - 1));
      loop.set("length", Value(length));
      loop.set("depth", Value(1));
      loop.set("depth0", Value(0));
      loop.set("previtem", i > 0
                               ? items[i - 1]
                               : Value::undefined("there is no previous item"));
      loop.set("nextitem", i + 1 < items.size()
                               ? items[i + 1]
                               : Value::undefined("there is no next item"));
      loop.set("cycle", Value::callable("loop.cycle", [i](const CallArgs &a) {
                 if (a.positional.empty())
                   evalFail("TypeError: no items for cycling given");
                 return a.positional[i % a.positional.size()];
               }));
      iteration->variables["loop"] =
          Value::object(ObjectData::Type::Loop, std::move(loop));
      Flow flow = execList(s.body, iteration, out);
      if (flow == Flow::Break)
        break;
    }
    return Flow::Normal;
  }

  void assign(const Expr &target, const Value &value, const ScopePtr &scope) {
    switch (target.kind) {
    case Expr::Kind::Name:
      scope->variables[static_cast<const NameExpr &>(target).name] = value;
      return;
    case Expr::Kind::NsRef: {
      const auto &ref = static_cast<const NsRefExpr &>(target);
      const Value *ns = scope->lookup(ref.name);
      if (!ns || !ns->isNamespace())
        evalFail("cannot assign attribute '", ref.attr, "' on '", ref.name,
                 "': it is not a namespace() object");
      ns->object().attributes.set(ref.attr, value);
      return;
    }
    case Expr::Kind::Tuple: {
      const auto &names = static_cast<const SequenceExpr &>(target).items;
      if (value.isUndefined())
        failUndefined(value);
      std::vector<Value> items = pyIterate(value);
      if (items.size() < names.size())
        evalFail("ValueError: not enough values to unpack (expected ",
                 names.size(), ", got ", items.size(), ")");
      if (items.size() > names.size())
        evalFail("ValueError: too many values to unpack (expected ",
                 names.size(), ")");
      for (size_t i = 0; i < names.size(); ++i)
        assign(*names[i], items[i], scope);
      return;
    }
    default:
      evalFail("cannot assign to this expression");
    }
  }

  void defineMacro(const MacroStmt &macro, const ScopePtr &scope) {
    std::weak_ptr<Scope> definition = scope;
    const MacroStmt *node = &macro;
    scope->variables[macro.name] = Value::callable(
        macro.name, [this, node, definition](const CallArgs &args) {
          return callMacro(*node, definition.lock(), args);
        });
  }

  Value callMacro(const MacroStmt &macro, const ScopePtr &definition,
                  const CallArgs &args) {
    if (!definition)
      evalFail("macro '", macro.name, "' was called after its scope ended");
    if (args.positional.size() > macro.params.size())
      evalFail("TypeError: macro '", macro.name, "' takes not more than ",
               macro.params.size(), " argument(s)");
    struct DepthGuard {
      int &depth;
      explicit DepthGuard(int &d) : depth(d) { ++depth; }
      ~DepthGuard() { --depth; }
    } guard(macroDepth_);
    if (macroDepth_ > kMaxMacroDepth)
      evalFail("macro '", macro.name, "' nested more than ", kMaxMacroDepth,
               " calls deep (infinite recursion?)");
    ScopePtr call = childOf(definition);
    size_t firstDefault = macro.params.size() - macro.defaults.size();
    for (size_t i = 0; i < macro.params.size(); ++i) {
      const std::string &param = macro.params[i];
      const Value *given = nullptr;
      if (i < args.positional.size())
        given = &args.positional[i];
      for (const auto &[k, v] : args.keyword) {
        if (k != param)
          continue;
        if (given)
          evalFail("TypeError: macro '", macro.name,
                   "' got multiple values for argument '", param, "'");
        given = &v;
      }
      if (given)
        call->variables[param] = *given;
      else if (i >= firstDefault)
        call->variables[param] = eval(*macro.defaults[i - firstDefault], call);
      else
        call->variables[param] =
            Value::undefined("parameter '" + param + "' was not provided");
    }
    for (const auto &[k, v] : args.keyword) {
      bool known = false;
      for (const auto &p : macro.params)
        known = known || p == k;
      if (!known)
        evalFail("TypeError: macro '", macro.name,
                 "' takes no keyword argument '", k, "'");
    }
    std::string out;
    execList(macro.body, call, out);
    return Value(out);
  }

  CallArgs evalArgs(const Arguments &arguments, const ScopePtr &scope) {
    CallArgs args;
    for (const ExprPtr &e : arguments.positional)
      args.positional.push_back(eval(*e, scope));
    for (const Keyword &k : arguments.keyword)
      args.keyword.emplace_back(k.name, eval(*k.value, scope));
    return args;
  }

  /// Applies a filter chain whose innermost operand is empty to `input`.
  Value applyFilterChain(const Expr &chain, const Value &input,
                         const ScopePtr &scope) {
    const auto &f = static_cast<const FilterExpr &>(chain);
    Value operand =
        f.operand ? applyFilterChain(*f.operand, input, scope) : input;
    try {
      return applyFilter(f.name, operand, evalArgs(f.args, scope));
    } catch (const EvalError &e) {
      failAt(f.line, e);
    }
  }

  Value eval(const Expr &expr, const ScopePtr &scope) {
    try {
      return evalInner(expr, scope);
    } catch (const EvalError &e) {
      failAt(expr.line, e);
    }
  }

  Value evalInner(const Expr &expr, const ScopePtr &scope) {
    switch (expr.kind) {
    case Expr::Kind::Const:
      return static_cast<const ConstExpr &>(expr).value;
    case Expr::Kind::Name: {
      const auto &name = static_cast<const NameExpr &>(expr).name;
      if (const Value *v = scope->lookup(name))
        return *v;
      return Value::undefined("'" + name + "' is undefined");
    }
    case Expr::Kind::GetAttr: {
      const auto &e = static_cast<const GetAttrExpr &>(expr);
      return getAttribute(eval(*e.object, scope), e.attr);
    }
    case Expr::Kind::GetItem: {
      const auto &e = static_cast<const GetItemExpr &>(expr);
      Value object = eval(*e.object, scope);
      if (e.index->kind == Expr::Kind::Slice) {
        const auto &s = static_cast<const SliceExpr &>(*e.index);
        auto part = [&](const ExprPtr &p) -> std::optional<Value> {
          if (!p)
            return std::nullopt;
          return eval(*p, scope);
        };
        auto start = part(s.start), stop = part(s.stop), step = part(s.step);
        return getSlice(object, start, stop, step);
      }
      return getItem(object, eval(*e.index, scope));
    }
    case Expr::Kind::Call: {
      const auto &e = static_cast<const CallExpr &>(expr);
      Value callee = eval(*e.callee, scope);
      CallArgs args = evalArgs(e.args, scope);
      if (callee.isUndefined())
        failUndefined(callee);
      if (!callee.isCallable())
        evalFail("TypeError: '", callee.typeName(), "' object is not callable");
      return callee.callable().function(args);
    }
    case Expr::Kind::Filter: {
      const auto &e = static_cast<const FilterExpr &>(expr);
      Value operand = eval(*e.operand, scope);
      return applyFilter(e.name, operand, evalArgs(e.args, scope));
    }
    case Expr::Kind::Test: {
      const auto &e = static_cast<const TestExpr &>(expr);
      Value operand = eval(*e.operand, scope);
      return Value(applyTest(e.name, operand, evalArgs(e.args, scope)));
    }
    case Expr::Kind::Not:
      return Value(
          !eval(*static_cast<const UnaryExpr &>(expr).operand, scope).truthy());
    case Expr::Kind::Neg:
      return negate(eval(*static_cast<const UnaryExpr &>(expr).operand, scope));
    case Expr::Kind::Pos:
      return unaryPlus(
          eval(*static_cast<const UnaryExpr &>(expr).operand, scope));
    case Expr::Kind::Binary: {
      const auto &e = static_cast<const BinaryExpr &>(expr);
      Value left = eval(*e.left, scope);
      if (e.op == "and")
        return left.truthy() ? eval(*e.right, scope) : left;
      if (e.op == "or")
        return left.truthy() ? left : eval(*e.right, scope);
      return binaryOperator(e.op, left, eval(*e.right, scope));
    }
    case Expr::Kind::Concat: {
      std::string out;
      for (const ExprPtr &part : static_cast<const ConcatExpr &>(expr).parts)
        out += pyStr(eval(*part, scope));
      return Value(out);
    }
    case Expr::Kind::Compare: {
      const auto &e = static_cast<const CompareExpr &>(expr);
      Value left = eval(*e.first, scope);
      for (const auto &[op, operand] : e.rest) {
        Value right = eval(*operand, scope);
        if (!compareValues(op, left, right))
          return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::Kind::CondExpr: {
      const auto &e = static_cast<const CondExpr &>(expr);
      if (eval(*e.test, scope).truthy())
        return eval(*e.then, scope);
      if (e.otherwise)
        return eval(*e.otherwise, scope);
      return Value::undefined("the inline if-expression evaluated to false "
                              "and has no else section");
    }
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      std::vector<Value> items;
      for (const ExprPtr &item : static_cast<const SequenceExpr &>(expr).items)
        items.push_back(eval(*item, scope));
      return Value::list(std::move(items), expr.kind == Expr::Kind::Tuple);
    }
    case Expr::Kind::Dict: {
      DictData dict;
      for (const auto &[k, v] : static_cast<const DictExpr &>(expr).items) {
        Value key = eval(*k, scope);
        if (!key.isString())
          evalFail(
              "unsupported Jinja construct: dict literal with a non-string "
              "key (",
              key.typeName(), ")");
        dict.set(key.asString(), eval(*v, scope));
      }
      return Value::dict(std::move(dict));
    }
    case Expr::Kind::NsRef:
    case Expr::Kind::Slice:
      break;
    }
    evalFail("internal error: unexpected expression");
  }

  size_t iterations_ = 0;
  int macroDepth_ = 0;
};

} // namespace

std::string evaluateTemplate(const StmtList &body, const DictData &variables) {
  // Namespaces are the only mutable values, so every reference cycle
  // (`set ns.me = ns`) passes through one; emptying them all when the render
  // ends frees such cycles.
  struct NamespaceRegistry {
    std::vector<Value> created;
    ~NamespaceRegistry() {
      for (Value &ns : created)
        ns.object().attributes.entries.clear();
    }
  } namespaces;
  auto root = std::make_shared<Scope>(nullptr);
  for (auto &[name, value] : builtinGlobals().entries)
    root->variables[name] = value;
  root->variables["namespace"] =
      Value::callable("namespace", [&namespaces](const CallArgs &args) {
        Value ns = makeNamespace(args);
        namespaces.created.push_back(ns);
        return ns;
      });
  for (const auto &[name, value] : variables.entries)
    root->variables[name] = value;
  Evaluator evaluator;
  return evaluator.run(body, root);
}

} // namespace sol::jinja
