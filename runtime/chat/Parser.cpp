//===- Parser.cpp - Jinja chat template parser ----------------------------===//

#include "runtime/chat/Parser.h"

#include "runtime/chat/Builtins.h"

#include "runtime/support/Error.h"

#include <initializer_list>
#include <string>

namespace sol::jinja {
namespace {

/// Deepest nesting of expressions and blocks accepted; Python Jinja2 hits
/// its recursion limit near 100 levels, and this keeps Sol's recursive
/// parser and evaluator far from the end of the stack.
constexpr int kMaxNesting = 256;

class Parser {
public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  StmtList parseAll() {
    StmtList body = subparse({});
    if (cur().type != Token::Type::Eof)
      error(cur().line, "unexpected " + describeToken(cur()));
    return body;
  }

private:
  using Type = Token::Type;

  // ---- token stream -------------------------------------------------------
  const Token &cur() const { return tokens_[pos_]; }
  const Token &look() const {
    return tokens_[std::min(pos_ + 1, tokens_.size() - 1)];
  }
  const Token &next() {
    const Token &t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size())
      ++pos_;
    return t;
  }
  static bool isName(const Token &t, std::string_view name) {
    return t.type == Type::Name && t.text == name;
  }
  static bool isOp(const Token &t, std::string_view op) {
    return t.type == Type::Operator && t.text == op;
  }
  bool skipName(std::string_view name) {
    if (!isName(cur(), name))
      return false;
    next();
    return true;
  }
  bool skipOp(std::string_view op) {
    if (!isOp(cur(), op))
      return false;
    next();
    return true;
  }
  [[noreturn]] void error(int line, const std::string &message) const {
    fail("chat template line ", line, ": ", message);
  }
  [[noreturn]] void unsupported(int line, const std::string &what) const {
    fail("chat template line ", line, ": unsupported Jinja construct: ", what,
         " (Sol's chat-template engine implements the Jinja subset that chat "
         "templates use)");
  }
  const Token &expectOp(std::string_view op) {
    if (!isOp(cur(), op))
      error(cur().line,
            "expected '" + std::string(op) + "', got " + describeToken(cur()));
    return next();
  }
  const Token &expectName(std::string_view name = {}) {
    if (cur().type != Type::Name || (!name.empty() && cur().text != name))
      error(cur().line, "expected " +
                            (name.empty() ? std::string("a name")
                                          : "'" + std::string(name) + "'") +
                            ", got " + describeToken(cur()));
    return next();
  }
  const Token &expectType(Type type, const char *what) {
    if (cur().type != type)
      error(cur().line,
            std::string("expected ") + what + ", got " + describeToken(cur()));
    return next();
  }

  /// Counts recursion in the parser; fails past kMaxNesting.
  struct NestingGuard {
    Parser &parser;
    explicit NestingGuard(Parser &p) : parser(p) {
      if (++parser.nesting_ > kMaxNesting)
        parser.error(parser.cur().line,
                     "expressions or blocks nest deeper than " +
                         std::to_string(kMaxNesting) + " levels");
    }
    ~NestingGuard() { --parser.nesting_; }
  };

  /// Left-deep chains (a + b + c, x.a.b, x|f|g) deepen the tree without
  /// recursing; each link counts as one level until the chain is built.
  struct ChainGuard {
    Parser &parser;
    int links = 0;
    explicit ChainGuard(Parser &p) : parser(p) {}
    void link() {
      ++links;
      if (++parser.nesting_ > kMaxNesting)
        parser.error(parser.cur().line, "expressions nest deeper than " +
                                            std::to_string(kMaxNesting) +
                                            " levels");
    }
    ~ChainGuard() { parser.nesting_ -= links; }
  };

  // ---- statements -----------------------------------------------------------
  /// Parses until a block tag whose name is in `endNames` (left current).
  StmtList subparse(std::initializer_list<std::string_view> endNames) {
    StmtList body;
    std::unique_ptr<OutputStmt> output;
    auto flush = [&] {
      if (output)
        body.push_back(std::move(output));
      output.reset();
    };
    auto ensureOutput = [&](int line) {
      if (!output)
        output = std::make_unique<OutputStmt>(line);
    };
    while (true) {
      const Token &t = cur();
      if (t.type == Type::Data) {
        ensureOutput(t.line);
        output->pieces.push_back({t.text, nullptr});
        next();
      } else if (t.type == Type::VariableBegin) {
        next();
        ensureOutput(t.line);
        output->pieces.push_back({"", parseTuple(false, true, false)});
        expectType(Type::VariableEnd, "'}}'");
      } else if (t.type == Type::BlockBegin) {
        flush();
        next();
        for (std::string_view end : endNames)
          if (isName(cur(), end))
            return body;
        body.push_back(parseStatement());
        expectType(Type::BlockEnd, "'%}'");
      } else {
        break; // Eof
      }
    }
    flush();
    return body;
  }

  /// Body of a block statement up to one of `endNames`.
  StmtList parseBody(std::initializer_list<std::string_view> endNames,
                     int openLine, std::string_view openTag, bool dropNeedle) {
    skipOp(":");
    expectType(Type::BlockEnd, "'%}'");
    StmtList body = subparse(endNames);
    if (cur().type == Type::Eof) {
      std::string expected;
      for (std::string_view e : endNames)
        expected += (expected.empty() ? "'" : " or '") + std::string(e) + "'";
      error(openLine, "unexpected end of template: the '" +
                          std::string(openTag) + "' tag opened here needs " +
                          expected);
    }
    if (dropNeedle)
      next();
    return body;
  }

  StmtPtr parseStatement() {
    NestingGuard guard(*this);
    const Token &t = cur();
    if (t.type != Type::Name)
      error(t.line, "tag name expected, got " + describeToken(t));
    const std::string &name = t.text;
    if (name == "if")
      return parseIf();
    if (name == "for")
      return parseFor();
    if (name == "set")
      return parseSet();
    if (name == "macro")
      return parseMacro();
    if (name == "filter")
      return parseFilterBlock();
    if (name == "with")
      return parseWith();
    if (name == "print")
      return parsePrint();
    if (name == "generation") {
      int line = next().line;
      auto stmt = std::make_unique<ScopeStmt>(line);
      stmt->body = parseBody({"endgeneration"}, line, "generation", true);
      return stmt;
    }
    if (name == "break" || name == "continue") {
      int line = next().line;
      if (loopDepth_ == 0)
        error(line, "'" + name + "' outside of a for loop");
      return std::make_unique<LoopControlStmt>(
          name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, line);
    }
    for (const char *tag : {"include", "extends", "import", "from", "block",
                            "call", "autoescape", "do"})
      if (name == tag)
        unsupported(t.line, "the '{% " + name + " %}' tag");
    error(t.line, "unknown tag '" + name +
                      "' (a misplaced end tag, or a tag Jinja does not have)");
  }

  StmtPtr parseIf() {
    int line = expectName("if").line;
    auto stmt = std::make_unique<IfStmt>(line);
    while (true) {
      ExprPtr test = parseTuple(false, false, false);
      StmtList body = parseBody({"elif", "else", "endif"}, line, "if", false);
      stmt->branches.emplace_back(std::move(test), std::move(body));
      const Token &end = next();
      if (end.text == "elif")
        continue;
      if (end.text == "else")
        stmt->otherwise = parseBody({"endif"}, line, "if", true);
      break;
    }
    return stmt;
  }

  StmtPtr parseFor() {
    int line = expectName("for").line;
    auto stmt = std::make_unique<ForStmt>(line);
    stmt->target = parseAssignTarget(true, false);
    expectName("in");
    stmt->iterable = parseTuple(false, false, false);
    if (skipName("if"))
      stmt->filter = parseExpression(true);
    if (isName(cur(), "recursive"))
      unsupported(cur().line, "recursive for loops");
    ++loopDepth_;
    stmt->body = parseBody({"endfor", "else"}, line, "for", false);
    --loopDepth_;
    if (next().text == "else")
      stmt->otherwise = parseBody({"endfor"}, line, "for", true);
    return stmt;
  }

  StmtPtr parseSet() {
    int line = expectName("set").line;
    ExprPtr target = parseAssignTarget(true, true);
    if (skipOp("="))
      return std::make_unique<AssignStmt>(std::move(target),
                                          parseTuple(false, true, false), line);
    auto stmt = std::make_unique<AssignBlockStmt>(line);
    stmt->target = std::move(target);
    stmt->filter = parseFilter(nullptr, false);
    stmt->body = parseBody({"endset"}, line, "set", true);
    return stmt;
  }

  StmtPtr parseMacro() {
    int line = expectName("macro").line;
    auto stmt = std::make_unique<MacroStmt>(line);
    stmt->name = expectName().text;
    expectOp("(");
    while (!isOp(cur(), ")")) {
      if (!stmt->params.empty())
        expectOp(",");
      stmt->params.push_back(expectName().text);
      if (skipOp("="))
        stmt->defaults.push_back(parseExpression(true));
      else if (!stmt->defaults.empty())
        error(cur().line, "non-default argument follows default argument");
    }
    expectOp(")");
    int savedDepth = loopDepth_;
    loopDepth_ = 0; // break/continue cannot cross a macro boundary
    stmt->body = parseBody({"endmacro"}, line, "macro", true);
    loopDepth_ = savedDepth;
    return stmt;
  }

  StmtPtr parseFilterBlock() {
    int line = expectName("filter").line;
    auto stmt = std::make_unique<FilterBlockStmt>(line);
    stmt->filter = parseFilter(nullptr, true);
    stmt->body = parseBody({"endfilter"}, line, "filter", true);
    return stmt;
  }

  StmtPtr parseWith() {
    int line = expectName("with").line;
    auto stmt = std::make_unique<WithStmt>(line);
    while (cur().type != Type::BlockEnd) {
      if (!stmt->assignments.empty())
        expectOp(",");
      ExprPtr target = parseAssignTarget(true, false);
      expectOp("=");
      stmt->assignments.emplace_back(std::move(target), parseExpression(true));
    }
    stmt->body = parseBody({"endwith"}, line, "with", true);
    return stmt;
  }

  StmtPtr parsePrint() {
    int line = expectName("print").line;
    auto stmt = std::make_unique<OutputStmt>(line);
    while (cur().type != Type::BlockEnd) {
      if (!stmt->pieces.empty())
        expectOp(",");
      stmt->pieces.push_back({"", parseExpression(true)});
    }
    return stmt;
  }

  /// A Name, NsRef or (for tuples) a Tuple of them.
  ExprPtr parseAssignTarget(bool withTuple, bool withNamespace) {
    int line = cur().line;
    ExprPtr target = withTuple ? parseTuple(true, true, false, withNamespace)
                               : parsePrimary(withNamespace);
    auto assignable = [](const Expr &e) {
      return e.kind == Expr::Kind::Name || e.kind == Expr::Kind::NsRef;
    };
    bool ok = assignable(*target);
    if (target->kind == Expr::Kind::Tuple) {
      ok = true;
      for (auto &item : static_cast<SequenceExpr &>(*target).items)
        ok = ok && item->kind == Expr::Kind::Name;
    }
    if (!ok)
      error(line, "can't assign to this expression (expected a name, a tuple "
                  "of names, or namespace.attribute)");
    return target;
  }

  // ---- expressions
  // ------------------------------------------------------------
  /// Jinja 3.1's is_tuple_end passes its extra end rules to test_any() as
  /// one tuple, so they never match; only these tokens end a tuple. (A
  /// trailing comma in `for a, in x` therefore fails in Jinja as here.)
  bool isTupleEnd() const {
    const Token &t = cur();
    return t.type == Type::VariableEnd || t.type == Type::BlockEnd ||
           isOp(t, ")");
  }

  ExprPtr parseTuple(bool simplified, bool withCondExpr,
                     bool explicitParentheses, bool withNamespace = false) {
    int line = cur().line;
    std::vector<ExprPtr> items;
    bool isTuple = false;
    while (true) {
      if (!items.empty())
        expectOp(",");
      if (isTupleEnd())
        break;
      items.push_back(simplified ? parsePrimary(withNamespace)
                                 : parseExpression(withCondExpr));
      if (isOp(cur(), ","))
        isTuple = true;
      else
        break;
    }
    if (!isTuple) {
      if (!items.empty())
        return std::move(items.front());
      if (!explicitParentheses)
        error(cur().line,
              "expected an expression, got " + describeToken(cur()));
    }
    auto tuple = std::make_unique<SequenceExpr>(Expr::Kind::Tuple, line);
    tuple->items = std::move(items);
    return tuple;
  }

  ExprPtr parseExpression(bool withCondExpr) {
    NestingGuard guard(*this);
    return withCondExpr ? parseCondExpr() : parseOr();
  }

  ExprPtr parseCondExpr() {
    ChainGuard chain(*this);
    int line = cur().line;
    ExprPtr expr = parseOr();
    while (skipName("if")) {
      chain.link();
      ExprPtr test = parseOr();
      ExprPtr otherwise = skipName("else") ? parseCondExpr() : nullptr;
      expr = std::make_unique<CondExpr>(std::move(test), std::move(expr),
                                        std::move(otherwise), line);
      line = cur().line;
    }
    return expr;
  }

  ExprPtr parseOr() {
    ChainGuard chain(*this);
    int line = cur().line;
    ExprPtr left = parseAnd();
    while (skipName("or")) {
      chain.link();
      left =
          std::make_unique<BinaryExpr>("or", std::move(left), parseAnd(), line);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parseAnd() {
    ChainGuard chain(*this);
    int line = cur().line;
    ExprPtr left = parseNot();
    while (skipName("and")) {
      chain.link();
      left = std::make_unique<BinaryExpr>("and", std::move(left), parseNot(),
                                          line);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parseNot() {
    NestingGuard guard(*this);
    if (isName(cur(), "not")) {
      int line = next().line;
      return std::make_unique<UnaryExpr>(Expr::Kind::Not, parseNot(), line);
    }
    return parseCompare();
  }

  ExprPtr parseCompare() {
    int line = cur().line;
    ExprPtr first = parseMath1();
    std::unique_ptr<CompareExpr> compare;
    auto add = [&](std::string op) {
      if (!compare)
        compare = std::make_unique<CompareExpr>(std::move(first), line);
      compare->rest.emplace_back(std::move(op), parseMath1());
    };
    while (true) {
      const Token &t = cur();
      if (t.type == Type::Operator &&
          (t.text == "==" || t.text == "!=" || t.text == "<" ||
           t.text == "<=" || t.text == ">" || t.text == ">=")) {
        std::string op = next().text;
        add(op);
      } else if (skipName("in")) {
        add("in");
      } else if (isName(t, "not") && isName(look(), "in")) {
        next();
        next();
        add("notin");
      } else {
        break;
      }
    }
    if (!compare)
      return first;
    return compare;
  }

  ExprPtr parseMath1() {
    ChainGuard chain(*this);
    int line = cur().line;
    ExprPtr left = parseConcat();
    while (isOp(cur(), "+") || isOp(cur(), "-")) {
      chain.link();
      std::string op = next().text;
      left = std::make_unique<BinaryExpr>(op, std::move(left), parseConcat(),
                                          line);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parseConcat() {
    int line = cur().line;
    ExprPtr first = parseMath2();
    if (!isOp(cur(), "~"))
      return first;
    auto concat = std::make_unique<ConcatExpr>(line);
    concat->parts.push_back(std::move(first));
    while (skipOp("~"))
      concat->parts.push_back(parseMath2());
    return concat;
  }

  ExprPtr parseMath2() {
    ChainGuard chain(*this);
    int line = cur().line;
    ExprPtr left = parsePow();
    while (isOp(cur(), "*") || isOp(cur(), "/") || isOp(cur(), "//") ||
           isOp(cur(), "%")) {
      chain.link();
      std::string op = next().text;
      left =
          std::make_unique<BinaryExpr>(op, std::move(left), parsePow(), line);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parsePow() {
    ChainGuard chain(*this);
    int line = cur().line;
    ExprPtr left = parseUnary(true);
    while (skipOp("**")) {
      chain.link();
      left = std::make_unique<BinaryExpr>("**", std::move(left),
                                          parseUnary(true), line);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parseUnary(bool withFilter) {
    NestingGuard guard(*this);
    int line = cur().line;
    ExprPtr node;
    if (skipOp("-"))
      node =
          std::make_unique<UnaryExpr>(Expr::Kind::Neg, parseUnary(false), line);
    else if (skipOp("+"))
      node =
          std::make_unique<UnaryExpr>(Expr::Kind::Pos, parseUnary(false), line);
    else
      node = parsePrimary(false);
    node = parsePostfix(std::move(node));
    if (withFilter)
      node = parseFilterExpr(std::move(node));
    return node;
  }

  ExprPtr parsePrimary(bool withNamespace) {
    const Token &t = cur();
    switch (t.type) {
    case Type::Name: {
      next();
      if (t.text == "true" || t.text == "True")
        return std::make_unique<ConstExpr>(Value(true), t.line);
      if (t.text == "false" || t.text == "False")
        return std::make_unique<ConstExpr>(Value(false), t.line);
      if (t.text == "none" || t.text == "None")
        return std::make_unique<ConstExpr>(Value::none(), t.line);
      if (withNamespace && isOp(cur(), ".")) {
        next();
        std::string attr = expectName().text;
        return std::make_unique<NsRefExpr>(t.text, attr, t.line);
      }
      return std::make_unique<NameExpr>(t.text, t.line);
    }
    case Type::String: {
      int line = t.line;
      std::string value;
      while (cur().type == Type::String)
        value += next().text; // adjacent literals concatenate
      return std::make_unique<ConstExpr>(Value(value), line);
    }
    case Type::Integer:
      next();
      return std::make_unique<ConstExpr>(Value(t.integer), t.line);
    case Type::Float:
      next();
      return std::make_unique<ConstExpr>(Value(t.floating), t.line);
    case Type::Operator:
      if (t.text == "(") {
        next();
        ExprPtr inner = parseTuple(false, true, true);
        expectOp(")");
        return inner;
      }
      if (t.text == "[")
        return parseList();
      if (t.text == "{")
        return parseDict();
      break;
    default:
      break;
    }
    error(t.line, "unexpected " + describeToken(t));
  }

  ExprPtr parseList() {
    int line = expectOp("[").line;
    auto list = std::make_unique<SequenceExpr>(Expr::Kind::List, line);
    while (!isOp(cur(), "]")) {
      if (!list->items.empty())
        expectOp(",");
      if (isOp(cur(), "]"))
        break;
      list->items.push_back(parseExpression(true));
    }
    expectOp("]");
    return list;
  }

  ExprPtr parseDict() {
    int line = expectOp("{").line;
    auto dict = std::make_unique<DictExpr>(line);
    while (!isOp(cur(), "}")) {
      if (!dict->items.empty())
        expectOp(",");
      if (isOp(cur(), "}"))
        break;
      ExprPtr key = parseExpression(true);
      expectOp(":");
      dict->items.emplace_back(std::move(key), parseExpression(true));
    }
    expectOp("}");
    return dict;
  }

  ExprPtr parsePostfix(ExprPtr node) {
    ChainGuard chain(*this);
    while (true) {
      chain.link();
      if (isOp(cur(), ".") || isOp(cur(), "["))
        node = parseSubscript(std::move(node));
      else if (isOp(cur(), "("))
        node = parseCall(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parseFilterExpr(ExprPtr node) {
    ChainGuard chain(*this);
    while (true) {
      chain.link();
      if (isOp(cur(), "|"))
        node = parseFilter(std::move(node), false);
      else if (isName(cur(), "is"))
        node = parseTest(std::move(node));
      else if (isOp(cur(), "("))
        node = parseCall(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parseSubscript(ExprPtr node) {
    const Token &t = next();
    if (t.text == ".") {
      const Token &attr = next();
      if (attr.type == Type::Name)
        return std::make_unique<GetAttrExpr>(std::move(node), attr.text,
                                             t.line);
      if (attr.type != Type::Integer)
        error(attr.line, "expected name or number after '.'");
      return std::make_unique<GetItemExpr>(
          std::move(node),
          std::make_unique<ConstExpr>(Value(attr.integer), attr.line), t.line);
    }
    std::vector<ExprPtr> args;
    while (!isOp(cur(), "]")) {
      if (!args.empty())
        expectOp(",");
      args.push_back(parseSubscribed());
    }
    expectOp("]");
    ExprPtr index;
    if (args.size() == 1) {
      index = std::move(args.front());
    } else {
      auto tuple = std::make_unique<SequenceExpr>(Expr::Kind::Tuple, t.line);
      tuple->items = std::move(args);
      index = std::move(tuple);
    }
    return std::make_unique<GetItemExpr>(std::move(node), std::move(index),
                                         t.line);
  }

  ExprPtr parseSubscribed() {
    int line = cur().line;
    auto slice = std::make_unique<SliceExpr>(line);
    if (isOp(cur(), ":")) {
      next();
    } else {
      ExprPtr node = parseExpression(true);
      if (!isOp(cur(), ":"))
        return node;
      next();
      slice->start = std::move(node);
    }
    auto atEnd = [&] { return isOp(cur(), "]") || isOp(cur(), ","); };
    if (!isOp(cur(), ":") && !atEnd())
      slice->stop = parseExpression(true);
    if (skipOp(":")) {
      if (!atEnd())
        slice->step = parseExpression(true);
    }
    return slice;
  }

  Arguments parseCallArgs() {
    int line = expectOp("(").line;
    Arguments args;
    bool requireComma = false;
    while (!isOp(cur(), ")")) {
      if (requireComma) {
        expectOp(",");
        if (isOp(cur(), ")"))
          break;
      }
      if (isOp(cur(), "*") || isOp(cur(), "**"))
        unsupported(cur().line, "*args / **kwargs in a call");
      if (cur().type == Type::Name && isOp(look(), "=")) {
        std::string key = next().text;
        next();
        args.keyword.push_back({key, parseExpression(true)});
      } else {
        if (!args.keyword.empty())
          error(line, "invalid syntax for function call expression "
                      "(positional argument after keyword argument)");
        args.positional.push_back(parseExpression(true));
      }
      requireComma = true;
    }
    expectOp(")");
    return args;
  }

  ExprPtr parseCall(ExprPtr callee) {
    int line = cur().line;
    Arguments args = parseCallArgs();
    return std::make_unique<CallExpr>(std::move(callee), std::move(args), line);
  }

  std::string parseDottedName() {
    std::string name = expectName().text;
    while (skipOp("."))
      name += "." + expectName().text;
    return name;
  }

  ExprPtr parseFilter(ExprPtr node, bool startInline) {
    ChainGuard chain(*this);
    while (isOp(cur(), "|") || startInline) {
      chain.link();
      if (!startInline)
        next();
      int line = cur().line;
      std::string name = parseDottedName();
      Arguments args;
      if (isOp(cur(), "("))
        args = parseCallArgs();
      node = std::make_unique<FilterExpr>(std::move(node), name,
                                          std::move(args), line);
      startInline = false;
    }
    return node;
  }

  ExprPtr parseTest(ExprPtr node) {
    int line = next().line; // 'is'
    bool negated = skipName("not");
    std::string name = parseDottedName();
    Arguments args;
    const Token &t = cur();
    if (isOp(t, "(")) {
      args = parseCallArgs();
    } else if ((t.type == Type::Name || t.type == Type::String ||
                t.type == Type::Integer || t.type == Type::Float ||
                isOp(t, "[") || isOp(t, "{")) &&
               !isName(t, "else") && !isName(t, "or") && !isName(t, "and")) {
      if (isName(t, "is"))
        error(t.line, "you cannot chain multiple tests with 'is'");
      args.positional.push_back(parsePostfix(parsePrimary(false)));
    }
    ExprPtr test = std::make_unique<TestExpr>(std::move(node), name,
                                              std::move(args), line);
    if (negated)
      return std::make_unique<UnaryExpr>(Expr::Kind::Not, std::move(test),
                                         line);
    return test;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int loopDepth_ = 0;
  int nesting_ = 0;
};

/// Jinja2's compiler rejects filter and test names it does not know, except
/// inside an if statement or an inline if-expression ("soft" frames), where
/// the error waits until the filter runs. Loop, macro, block-set, filter
/// and with bodies start non-soft frames again.
class NameChecker {
public:
  void statements(const StmtList &body, bool soft) {
    for (const StmtPtr &stmt : body)
      statement(*stmt, soft);
  }

private:
  [[noreturn]] static void unknown(int line, const char *kind,
                                   const std::string &name) {
    fail("chat template line ", line, ": no ", kind, " named '", name, "'");
  }

  void statement(const Stmt &stmt, bool soft) {
    switch (stmt.kind) {
    case Stmt::Kind::Output:
      for (const auto &piece : static_cast<const OutputStmt &>(stmt).pieces)
        if (piece.expr)
          expr(piece.expr.get(), soft);
      return;
    case Stmt::Kind::If: {
      const auto &s = static_cast<const IfStmt &>(stmt);
      for (const auto &[test, body] : s.branches) {
        expr(test.get(), true);
        statements(body, true);
      }
      statements(s.otherwise, true);
      return;
    }
    case Stmt::Kind::For: {
      const auto &s = static_cast<const ForStmt &>(stmt);
      expr(s.iterable.get(), soft);
      expr(s.filter.get(), false);
      statements(s.body, false);
      statements(s.otherwise, false);
      return;
    }
    case Stmt::Kind::Assign: {
      const auto &s = static_cast<const AssignStmt &>(stmt);
      expr(s.value.get(), soft);
      return;
    }
    case Stmt::Kind::AssignBlock: {
      const auto &s = static_cast<const AssignBlockStmt &>(stmt);
      expr(s.filter.get(), soft);
      statements(s.body, false);
      return;
    }
    case Stmt::Kind::Macro: {
      const auto &s = static_cast<const MacroStmt &>(stmt);
      for (const ExprPtr &d : s.defaults)
        expr(d.get(), false);
      statements(s.body, false);
      return;
    }
    case Stmt::Kind::FilterBlock: {
      const auto &s = static_cast<const FilterBlockStmt &>(stmt);
      expr(s.filter.get(), soft);
      statements(s.body, false);
      return;
    }
    case Stmt::Kind::With: {
      const auto &s = static_cast<const WithStmt &>(stmt);
      for (const auto &[target, value] : s.assignments)
        expr(value.get(), soft);
      statements(s.body, false);
      return;
    }
    case Stmt::Kind::Scope:
      statements(static_cast<const ScopeStmt &>(stmt).body, false);
      return;
    case Stmt::Kind::Break:
    case Stmt::Kind::Continue:
      return;
    }
  }

  void arguments(const Arguments &args, bool soft) {
    for (const ExprPtr &e : args.positional)
      expr(e.get(), soft);
    for (const Keyword &k : args.keyword)
      expr(k.value.get(), soft);
  }

  void expr(const Expr *e, bool soft) {
    if (!e)
      return;
    switch (e->kind) {
    case Expr::Kind::Const:
    case Expr::Kind::Name:
    case Expr::Kind::NsRef:
      return;
    case Expr::Kind::GetAttr:
      expr(static_cast<const GetAttrExpr *>(e)->object.get(), soft);
      return;
    case Expr::Kind::GetItem: {
      const auto *g = static_cast<const GetItemExpr *>(e);
      expr(g->object.get(), soft);
      expr(g->index.get(), soft);
      return;
    }
    case Expr::Kind::Slice: {
      const auto *s = static_cast<const SliceExpr *>(e);
      expr(s->start.get(), soft);
      expr(s->stop.get(), soft);
      expr(s->step.get(), soft);
      return;
    }
    case Expr::Kind::Call: {
      const auto *c = static_cast<const CallExpr *>(e);
      expr(c->callee.get(), soft);
      arguments(c->args, soft);
      return;
    }
    case Expr::Kind::Filter: {
      const auto *f = static_cast<const FilterExpr *>(e);
      if (!soft && !isJinjaFilterName(f->name))
        unknown(f->line, "filter", f->name);
      expr(f->operand.get(), soft);
      arguments(f->args, soft);
      return;
    }
    case Expr::Kind::Test: {
      const auto *t = static_cast<const TestExpr *>(e);
      if (!soft && !isJinjaTestName(t->name))
        unknown(t->line, "test", t->name);
      expr(t->operand.get(), soft);
      arguments(t->args, soft);
      return;
    }
    case Expr::Kind::Not:
    case Expr::Kind::Neg:
    case Expr::Kind::Pos:
      expr(static_cast<const UnaryExpr *>(e)->operand.get(), soft);
      return;
    case Expr::Kind::Binary: {
      const auto *b = static_cast<const BinaryExpr *>(e);
      expr(b->left.get(), soft);
      expr(b->right.get(), soft);
      return;
    }
    case Expr::Kind::Concat:
      for (const ExprPtr &part : static_cast<const ConcatExpr *>(e)->parts)
        expr(part.get(), soft);
      return;
    case Expr::Kind::Compare: {
      const auto *c = static_cast<const CompareExpr *>(e);
      expr(c->first.get(), soft);
      for (const auto &[op, operand] : c->rest)
        expr(operand.get(), soft);
      return;
    }
    case Expr::Kind::CondExpr: {
      const auto *c = static_cast<const CondExpr *>(e);
      expr(c->test.get(), true);
      expr(c->then.get(), true);
      expr(c->otherwise.get(), true);
      return;
    }
    case Expr::Kind::List:
    case Expr::Kind::Tuple:
      for (const ExprPtr &item : static_cast<const SequenceExpr *>(e)->items)
        expr(item.get(), soft);
      return;
    case Expr::Kind::Dict:
      for (const auto &[k, v] : static_cast<const DictExpr *>(e)->items) {
        expr(k.get(), soft);
        expr(v.get(), soft);
      }
      return;
    }
  }
};

} // namespace

StmtList parseTemplate(std::string_view source) {
  StmtList body = Parser(tokenizeTemplate(source)).parseAll();
  NameChecker().statements(body, false);
  return body;
}

} // namespace sol::jinja
