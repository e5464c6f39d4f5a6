//===- Ast.h - Syntax tree of a Jinja chat template -------------*- C++ -*-===//
//
// The parser produces these nodes; the evaluator walks them. Each node keeps
// the template line it came from so runtime errors can name it. Nodes mirror
// jinja2.nodes for the subset Sol implements.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Value.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sol::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

struct Expr {
  enum class Kind {
    Const,    // literal
    Name,     // variable
    NsRef,    // ns.attr as an assignment target
    GetAttr,  // x.name
    GetItem,  // x[expr]
    Slice,    // start:stop:step inside []
    Call,     // f(args)
    Filter,   // x | name(args)
    Test,     // x is name(args)
    Not,      // not x
    Neg,      // -x
    Pos,      // +x
    Binary,   // + - * / // % ** and or
    Concat,   // a ~ b ~ c
    Compare,  // a == b < c, in, not in
    CondExpr, // a if b else c
    List,     // [a, b]
    Tuple,    // (a, b) or a, b
    Dict      // {k: v}
  };
  Expr(Kind kind, int line) : kind(kind), line(line) {}
  virtual ~Expr() = default;
  Kind kind;
  int line;
};

struct ConstExpr : Expr {
  ConstExpr(Value value, int line) : Expr(Kind::Const, line), value(value) {}
  Value value;
};

struct NameExpr : Expr {
  NameExpr(std::string name, int line)
      : Expr(Kind::Name, line), name(std::move(name)) {}
  std::string name;
};

struct NsRefExpr : Expr {
  NsRefExpr(std::string name, std::string attr, int line)
      : Expr(Kind::NsRef, line), name(std::move(name)), attr(std::move(attr)) {}
  std::string name, attr;
};

struct GetAttrExpr : Expr {
  GetAttrExpr(ExprPtr object, std::string attr, int line)
      : Expr(Kind::GetAttr, line), object(std::move(object)),
        attr(std::move(attr)) {}
  ExprPtr object;
  std::string attr;
};

struct GetItemExpr : Expr {
  GetItemExpr(ExprPtr object, ExprPtr index, int line)
      : Expr(Kind::GetItem, line), object(std::move(object)),
        index(std::move(index)) {}
  ExprPtr object, index;
};

struct SliceExpr : Expr {
  explicit SliceExpr(int line) : Expr(Kind::Slice, line) {}
  ExprPtr start, stop, step; // each may be null
};

struct Keyword {
  std::string name;
  ExprPtr value;
};

/// Arguments of a call, filter or test.
struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<Keyword> keyword;
};

struct CallExpr : Expr {
  CallExpr(ExprPtr callee, Arguments args, int line)
      : Expr(Kind::Call, line), callee(std::move(callee)),
        args(std::move(args)) {}
  ExprPtr callee;
  Arguments args;
};

struct FilterExpr : Expr {
  FilterExpr(ExprPtr operand, std::string name, Arguments args, int line)
      : Expr(Kind::Filter, line), operand(std::move(operand)),
        name(std::move(name)), args(std::move(args)) {}
  ExprPtr operand; // null in {% filter %} blocks and {% set x | f %}
  std::string name;
  Arguments args;
};

struct TestExpr : Expr {
  TestExpr(ExprPtr operand, std::string name, Arguments args, int line)
      : Expr(Kind::Test, line), operand(std::move(operand)),
        name(std::move(name)), args(std::move(args)) {}
  ExprPtr operand;
  std::string name;
  Arguments args;
};

struct UnaryExpr : Expr {
  UnaryExpr(Kind kind, ExprPtr operand, int line)
      : Expr(kind, line), operand(std::move(operand)) {}
  ExprPtr operand;
};

struct BinaryExpr : Expr {
  BinaryExpr(std::string op, ExprPtr left, ExprPtr right, int line)
      : Expr(Kind::Binary, line), op(std::move(op)), left(std::move(left)),
        right(std::move(right)) {}
  std::string op; // "+", "-", "*", "/", "//", "%", "**", "and", "or"
  ExprPtr left, right;
};

struct ConcatExpr : Expr {
  explicit ConcatExpr(int line) : Expr(Kind::Concat, line) {}
  std::vector<ExprPtr> parts;
};

struct CompareExpr : Expr {
  CompareExpr(ExprPtr first, int line)
      : Expr(Kind::Compare, line), first(std::move(first)) {}
  ExprPtr first;
  /// Operator ("==", "!=", "<", "<=", ">", ">=", "in", "notin") and operand.
  std::vector<std::pair<std::string, ExprPtr>> rest;
};

struct CondExpr : Expr {
  CondExpr(ExprPtr test, ExprPtr then, ExprPtr otherwise, int line)
      : Expr(Kind::CondExpr, line), test(std::move(test)),
        then(std::move(then)), otherwise(std::move(otherwise)) {}
  ExprPtr test, then, otherwise; // otherwise may be null (→ undefined)
};

/// List and Tuple literals.
struct SequenceExpr : Expr {
  SequenceExpr(Kind kind, int line) : Expr(kind, line) {}
  std::vector<ExprPtr> items;
};

struct DictExpr : Expr {
  explicit DictExpr(int line) : Expr(Kind::Dict, line) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct Stmt {
  enum class Kind {
    Output,      // template text and {{ expressions }}
    If,          // if / elif / else
    For,         // for ... in ... [if ...] / else
    Assign,      // set target = expr
    AssignBlock, // set target %}...{% endset
    Macro,       // macro name(params)
    FilterBlock, // filter name %}...{% endfilter
    With,        // with a = 1 %}...{% endwith
    Scope,       // body rendered as-is ({% generation %})
    Break,
    Continue
  };
  Stmt(Kind kind, int line) : kind(kind), line(line) {}
  virtual ~Stmt() = default;
  Kind kind;
  int line;
};

struct OutputStmt : Stmt {
  explicit OutputStmt(int line) : Stmt(Kind::Output, line) {}
  /// Either text (expr null) or an expression to print.
  struct Piece {
    std::string text;
    ExprPtr expr;
  };
  std::vector<Piece> pieces;
};

struct IfStmt : Stmt {
  explicit IfStmt(int line) : Stmt(Kind::If, line) {}
  std::vector<std::pair<ExprPtr, StmtList>> branches; // if, elif...
  StmtList otherwise;
};

struct ForStmt : Stmt {
  explicit ForStmt(int line) : Stmt(Kind::For, line) {}
  ExprPtr target; // Name or Tuple of Names
  ExprPtr iterable;
  ExprPtr filter; // may be null
  StmtList body, otherwise;
};

struct AssignStmt : Stmt {
  AssignStmt(ExprPtr target, ExprPtr value, int line)
      : Stmt(Kind::Assign, line), target(std::move(target)),
        value(std::move(value)) {}
  ExprPtr target, value;
};

struct AssignBlockStmt : Stmt {
  explicit AssignBlockStmt(int line) : Stmt(Kind::AssignBlock, line) {}
  ExprPtr target;
  ExprPtr filter; // FilterExpr chain with a null innermost operand, or null
  StmtList body;
};

struct MacroStmt : Stmt {
  explicit MacroStmt(int line) : Stmt(Kind::Macro, line) {}
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults; // for the last defaults.size() params
  StmtList body;
};

struct FilterBlockStmt : Stmt {
  explicit FilterBlockStmt(int line) : Stmt(Kind::FilterBlock, line) {}
  ExprPtr filter; // FilterExpr chain with a null innermost operand
  StmtList body;
};

struct WithStmt : Stmt {
  explicit WithStmt(int line) : Stmt(Kind::With, line) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> assignments;
  StmtList body;
};

struct ScopeStmt : Stmt {
  explicit ScopeStmt(int line) : Stmt(Kind::Scope, line) {}
  StmtList body;
};

struct LoopControlStmt : Stmt {
  LoopControlStmt(Kind kind, int line) : Stmt(kind, line) {}
};

} // namespace sol::jinja
