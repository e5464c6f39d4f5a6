//===- BuiltinFilters.cpp - Jinja's built-in filters --------------------===//
//
// Each filter follows jinja2/filters.py (3.1); tojson is Transformers'
// override: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False). Filters Jinja has but Sol does not implement fail with a
// clear error instead of rendering something different.
//
//===----------------------------------------------------------------------===//

#include "runtime/chat/Builtins.h"
#include "runtime/chat/EvalError.h"
#include "runtime/chat/Operators.h"
#include "runtime/chat/PyJson.h"
#include "runtime/chat/PyStr.h"
#include "runtime/chat/Utf8.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>

namespace sol::jinja {
namespace {

using FilterFunction = Value (*)(const Value &, const CallArgs &);

/// make_attrgetter: "a.b.0" looks up each part with getitem semantics.
Value lookupAttributePath(const Value &item, const Value &attribute) {
  if (attribute.isInt())
    return getItem(item, attribute);
  std::string path = pyStr(attribute);
  Value current = item;
  for (const std::string &part : py::split(path, std::string("."))) {
    bool numeric =
        !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    current = numeric ? getItem(current,
                                Value(static_cast<Integer>(std::stoll(part))))
                      : getItem(current, Value(part));
  }
  return current;
}

Value ignoreCase(const Value &v, bool caseSensitive) {
  if (!caseSensitive && v.isString())
    return Value(py::lower(v.asString()));
  return v;
}

std::string htmlEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&#34;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out.push_back(c);
    }
  }
  return out;
}

Value filterTojson(const Value &x, const CallArgs &args) {
  auto v = bindArguments("tojson", args,
                         {{"ensure_ascii", false},
                          {"indent", Value::none()},
                          {"separators", Value::none()},
                          {"sort_keys", false}});
  JsonDumpOptions options;
  options.ensureAscii = v[0].truthy();
  if (v[1].isInt() || v[1].isBool()) {
    Integer n = v[1].isBool() ? Integer(v[1].asBool()) : v[1].asInt();
    options.indent = std::string(n > 0 ? static_cast<size_t>(n) : 0, ' ');
  } else if (v[1].isString()) {
    options.indent = v[1].asString();
  } else if (!v[1].isNone()) {
    evalFail("TypeError: tojson indent must be an int, a str or None, not ",
             v[1].typeName());
  }
  if (!v[2].isNone()) {
    if (!v[2].isList() || v[2].list().items.size() != 2 ||
        !v[2].list().items[0].isString() || !v[2].list().items[1].isString())
      evalFail("TypeError: tojson separators must be a pair of strings");
    options.separators = std::make_pair(v[2].list().items[0].asString(),
                                        v[2].list().items[1].asString());
  }
  options.sortKeys = v[3].truthy();
  return Value(pyJsonDumps(x, options));
}

Value filterDefault(const Value &x, const CallArgs &args) {
  auto v = bindArguments("default", args,
                         {{"default_value", Value("")}, {"boolean", false}});
  if (x.isUndefined() || (v[1].truthy() && !x.truthy()))
    return v[0];
  return x;
}

Value filterLength(const Value &x, const CallArgs &args) {
  bindArguments("length", args, {});
  return Value(pyLen(x));
}

Value filterString(const Value &x, const CallArgs &args) {
  bindArguments("string", args, {});
  return Value(pyStr(x));
}

Value filterSafe(const Value &x, const CallArgs &args) {
  bindArguments("safe", args, {});
  return x.isString() ? x : Value(pyStr(x));
}

Value filterEscape(const Value &x, const CallArgs &args) {
  bindArguments("escape", args, {});
  return Value(htmlEscape(pyStr(x)));
}

Value filterTrim(const Value &x, const CallArgs &args) {
  auto v = bindArguments("trim", args, {{"chars", Value::none()}});
  std::optional<std::string> chars;
  if (!v[0].isNone())
    chars = pyStr(v[0]);
  return Value(py::strip(pyStr(x), chars));
}

Value filterLower(const Value &x, const CallArgs &args) {
  bindArguments("lower", args, {});
  return Value(py::lower(pyStr(x)));
}

Value filterUpper(const Value &x, const CallArgs &args) {
  bindArguments("upper", args, {});
  return Value(py::upper(pyStr(x)));
}

Value filterCapitalize(const Value &x, const CallArgs &args) {
  bindArguments("capitalize", args, {});
  return Value(py::capitalize(pyStr(x)));
}

Value filterTitle(const Value &x, const CallArgs &args) {
  bindArguments("title", args, {});
  // Jinja splits before runs of [-\s({[<] and capitalises each piece.
  std::u32string cps = decodeUtf8(pyStr(x));
  auto isBoundary = [](char32_t c) {
    return py::isSpace(c) || c == '-' || c == '(' || c == '{' || c == '[' ||
           c == '<';
  };
  std::string out;
  size_t i = 0;
  while (i < cps.size()) {
    size_t j = i;
    bool boundary = isBoundary(cps[i]);
    while (j < cps.size() && isBoundary(cps[j]) == boundary)
      ++j;
    std::string piece = encodeUtf8(std::u32string_view(cps).substr(i, j - i));
    if (boundary) {
      out += piece;
    } else {
      std::u32string first = cps.substr(i, 1);
      out += py::upper(encodeUtf8(first)) +
             py::lower(
                 encodeUtf8(std::u32string_view(cps).substr(i + 1, j - i - 1)));
    }
    i = j;
  }
  return Value(out);
}

Value filterReplace(const Value &x, const CallArgs &args) {
  auto v = bindArguments("replace", args,
                         {{"old", {}}, {"new", {}}, {"count", Value::none()}});
  long long count = -1;
  if (!v[2].isNone()) {
    if (!v[2].isInt())
      evalFail("TypeError: replace count must be an integer");
    count = static_cast<long long>(v[2].asInt());
  }
  return Value(py::replace(pyStr(x), pyStr(v[0]), pyStr(v[1]), count));
}

Value filterJoin(const Value &x, const CallArgs &args) {
  auto v = bindArguments("join", args,
                         {{"d", Value("")}, {"attribute", Value::none()}});
  std::string separator = pyStr(v[0]);
  std::string out;
  bool first = true;
  for (const Value &item : pyIterate(x)) {
    if (!first)
      out += separator;
    first = false;
    out += pyStr(v[1].isNone() ? item : lookupAttributePath(item, v[1]));
  }
  return Value(out);
}

Value filterFirst(const Value &x, const CallArgs &args) {
  bindArguments("first", args, {});
  std::vector<Value> items = pyIterate(x);
  if (items.empty())
    return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value filterLast(const Value &x, const CallArgs &args) {
  bindArguments("last", args, {});
  if (!x.isUndefined() && !x.isList() && !x.isString() && !x.isDict())
    evalFail("TypeError: '", x.typeName(), "' object is not reversible");
  std::vector<Value> items = pyIterate(x);
  if (items.empty())
    return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value filterList(const Value &x, const CallArgs &args) {
  bindArguments("list", args, {});
  return Value::list(pyIterate(x));
}

Value filterReverse(const Value &x, const CallArgs &args) {
  bindArguments("reverse", args, {});
  if (x.isString()) {
    std::u32string cps = decodeUtf8(x.asString());
    std::reverse(cps.begin(), cps.end());
    return Value(encodeUtf8(cps));
  }
  std::vector<Value> items = pyIterate(x);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value filterItems(const Value &x, const CallArgs &args) {
  bindArguments("items", args, {});
  if (x.isUndefined())
    return Value::list({});
  if (!x.isDict())
    evalFail("TypeError: Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto &[k, v] : x.dict().entries)
    out.push_back(Value::list({Value(k), v}, true));
  return Value::list(std::move(out));
}

Value filterDictsort(const Value &x, const CallArgs &args) {
  auto v = bindArguments(
      "dictsort", args,
      {{"case_sensitive", false}, {"by", Value("key")}, {"reverse", false}});
  if (!x.isDict())
    evalFail("TypeError: dictsort expects a mapping, got ", x.typeName());
  std::string by = pyStr(v[1]);
  if (by != "key" && by != "value")
    evalFail("FilterArgumentError: You can only sort by either \"key\" or "
             "\"value\"");
  bool caseSensitive = v[0].truthy();
  std::vector<Value> out;
  for (const auto &[k, val] : x.dict().entries)
    out.push_back(Value::list({Value(k), val}, true));
  size_t pos = by == "key" ? 0 : 1;
  bool reverse = v[2].truthy();
  std::stable_sort(out.begin(), out.end(), [&](const Value &a, const Value &b) {
    Value x = ignoreCase(a.list().items[pos], caseSensitive);
    Value y = ignoreCase(b.list().items[pos], caseSensitive);
    return reverse ? lessThan(y, x) : lessThan(x, y);
  });
  return Value::list(std::move(out));
}

Value filterSort(const Value &x, const CallArgs &args) {
  auto v = bindArguments("sort", args,
                         {{"reverse", false},
                          {"case_sensitive", false},
                          {"attribute", Value::none()}});
  std::vector<Value> items = pyIterate(x);
  bool caseSensitive = v[1].truthy();
  auto key = [&](const Value &item) {
    return ignoreCase(v[2].isNone() ? item : lookupAttributePath(item, v[2]),
                      caseSensitive);
  };
  bool reverse = v[0].truthy();
  std::stable_sort(
      items.begin(), items.end(), [&](const Value &a, const Value &b) {
        return reverse ? lessThan(key(b), key(a)) : lessThan(key(a), key(b));
      });
  return Value::list(std::move(items));
}

Value filterUnique(const Value &x, const CallArgs &args) {
  auto v =
      bindArguments("unique", args,
                    {{"case_sensitive", false}, {"attribute", Value::none()}});
  std::vector<Value> seen, out;
  for (const Value &item : pyIterate(x)) {
    Value key = ignoreCase(
        v[1].isNone() ? item : lookupAttributePath(item, v[1]), v[0].truthy());
    bool duplicate = std::any_of(seen.begin(), seen.end(), [&](const Value &s) {
      return pyEquals(s, key);
    });
    if (!duplicate) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value minOrMax(const Value &x, const CallArgs &args, bool wantMax) {
  auto v =
      bindArguments(wantMax ? "max" : "min", args,
                    {{"case_sensitive", false}, {"attribute", Value::none()}});
  std::vector<Value> items = pyIterate(x);
  if (items.empty())
    return Value::undefined(wantMax ? "No largest item, sequence was empty."
                                    : "No smallest item, sequence was empty.");
  auto key = [&](const Value &item) {
    return ignoreCase(v[1].isNone() ? item : lookupAttributePath(item, v[1]),
                      v[0].truthy());
  };
  Value best = items.front();
  for (size_t i = 1; i < items.size(); ++i) {
    bool better = wantMax ? lessThan(key(best), key(items[i]))
                          : lessThan(key(items[i]), key(best));
    if (better)
      best = items[i];
  }
  return best;
}

Value filterMin(const Value &x, const CallArgs &args) {
  return minOrMax(x, args, false);
}
Value filterMax(const Value &x, const CallArgs &args) {
  return minOrMax(x, args, true);
}

Value filterSum(const Value &x, const CallArgs &args) {
  auto v =
      bindArguments("sum", args, {{"attribute", Value::none()}, {"start", 0}});
  Value total = v[1];
  for (const Value &item : pyIterate(x))
    total = binaryOperator(
        "+", total, v[0].isNone() ? item : lookupAttributePath(item, v[0]));
  return total;
}

Value filterAbs(const Value &x, const CallArgs &args) {
  bindArguments("abs", args, {});
  if (x.isInt() || x.isBool()) {
    Integer i = x.isBool() ? Integer(x.asBool()) : x.asInt();
    return Value(i < 0 ? -i : i);
  }
  if (x.isFloat())
    return Value(std::fabs(x.asFloat()));
  evalFail("TypeError: bad operand type for abs(): '", x.typeName(), "'");
}

std::optional<double> parsePythonFloat(const std::string &text) {
  std::string s = py::strip(text, std::nullopt);
  std::string cleaned;
  for (size_t i = 0; i < s.size(); ++i) {
    // Python accepts single underscores between digits.
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isdigit(s[i - 1]) &&
        std::isdigit(s[i + 1]))
      continue;
    cleaned.push_back(s[i]);
  }
  if (cleaned.empty() || cleaned.find_first_of("xXpP") != std::string::npos)
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  double d = std::strtod(cleaned.c_str(), &end);
  if (end != cleaned.c_str() + cleaned.size())
    return std::nullopt;
  return d;
}

Value filterInt(const Value &x, const CallArgs &args) {
  auto v = bindArguments("int", args, {{"default", 0}, {"base", 10}});
  if (x.isInt())
    return x;
  if (x.isBool())
    return Value(Integer(x.asBool()));
  if (x.isFloat()) {
    if (!std::isfinite(x.asFloat()))
      return v[0];
    return Value(static_cast<Integer>(std::trunc(x.asFloat())));
  }
  if (x.isString()) {
    if (!v[1].isInt() || v[1].asInt() != 10)
      evalFail("unsupported Jinja construct: int filter with a base other "
               "than 10");
    std::string s = py::strip(x.asString(), std::nullopt);
    std::string digits;
    size_t i = 0;
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
      negative = s[i++] == '-';
    for (; i < s.size(); ++i) {
      if (std::isdigit(static_cast<unsigned char>(s[i])))
        digits.push_back(s[i]);
      else if (!(s[i] == '_' && !digits.empty() && i + 1 < s.size() &&
                 std::isdigit(static_cast<unsigned char>(s[i + 1]))))
        break;
    }
    if (i == s.size() && !digits.empty() && digits.size() <= 38) {
      Integer value = 0;
      for (char d : digits)
        value = value * 10 + (d - '0');
      return Value(negative ? -value : value);
    }
    if (auto d = parsePythonFloat(x.asString()); d && std::isfinite(*d))
      return Value(static_cast<Integer>(std::trunc(*d)));
  }
  return v[0];
}

Value filterFloat(const Value &x, const CallArgs &args) {
  auto v = bindArguments("float", args, {{"default", 0.0}});
  if (x.isNumber())
    return Value(x.toDouble());
  if (x.isString()) {
    std::string s = py::lower(py::strip(x.asString(), std::nullopt));
    if (s == "inf" || s == "+inf" || s == "infinity" || s == "+infinity")
      return Value(HUGE_VAL);
    if (s == "-inf" || s == "-infinity")
      return Value(-HUGE_VAL);
    if (s == "nan" || s == "+nan" || s == "-nan")
      return Value(std::nan(""));
    if (auto d = parsePythonFloat(x.asString()))
      return Value(*d);
  }
  return v[0];
}

Value filterIndent(const Value &x, const CallArgs &args) {
  auto v = bindArguments("indent", args,
                         {{"width", 4}, {"first", false}, {"blank", false}});
  std::string indention;
  if (v[0].isString()) {
    indention = v[0].asString();
  } else if (v[0].isInt()) {
    indention = std::string(
        v[0].asInt() > 0 ? static_cast<size_t>(v[0].asInt()) : 0, ' ');
  } else {
    evalFail("TypeError: indent width must be an int or a str");
  }
  std::string s = pyStr(x) + "\n"; // Jinja's quirk for splitlines
  std::vector<std::string> lines = py::splitLines(s);
  std::string out;
  if (v[2].truthy()) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i)
        out += "\n" + indention;
      out += lines[i];
    }
  } else {
    out = lines.empty() ? "" : lines.front();
    for (size_t i = 1; i < lines.size(); ++i)
      out += "\n" + (lines[i].empty() ? lines[i] : indention + lines[i]);
  }
  if (v[1].truthy())
    out = indention + out;
  return Value(out);
}

Value filterAttr(const Value &x, const CallArgs &args) {
  auto v = bindArguments("attr", args, {{"name", {}}});
  return getAttribute(x, pyStr(v[0]));
}

Value filterCount(const Value &x, const CallArgs &args) {
  return filterLength(x, args);
}

/// select / reject / selectattr / rejectattr.
Value selectOrReject(const Value &x, const CallArgs &args, bool byAttribute,
                     bool keep, const char *name) {
  size_t skip = byAttribute ? 1 : 0;
  if (args.positional.size() < skip)
    evalFail("TypeError: ", name, "() missing the attribute argument");
  if (!args.keyword.empty())
    evalFail("TypeError: ", name, "() takes no keyword arguments");
  std::optional<std::string> test;
  CallArgs testArgs;
  if (args.positional.size() > skip) {
    test = pyStr(args.positional[skip]);
    testArgs.positional.assign(args.positional.begin() + skip + 1,
                               args.positional.end());
  }
  std::vector<Value> out;
  for (const Value &item : pyIterate(x)) {
    Value subject =
        byAttribute ? lookupAttributePath(item, args.positional[0]) : item;
    bool passed = test ? applyTest(*test, subject, testArgs) : subject.truthy();
    if (passed == keep)
      out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filterSelect(const Value &x, const CallArgs &a) {
  return selectOrReject(x, a, false, true, "select");
}
Value filterReject(const Value &x, const CallArgs &a) {
  return selectOrReject(x, a, false, false, "reject");
}
Value filterSelectattr(const Value &x, const CallArgs &a) {
  return selectOrReject(x, a, true, true, "selectattr");
}
Value filterRejectattr(const Value &x, const CallArgs &a) {
  return selectOrReject(x, a, true, false, "rejectattr");
}

Value filterMap(const Value &x, const CallArgs &args) {
  const Value *attribute = nullptr;
  const Value *defaultValue = nullptr;
  for (const auto &[k, v] : args.keyword) {
    if (k == "attribute")
      attribute = &v;
    else if (k == "default")
      defaultValue = &v;
  }
  std::vector<Value> out;
  if (args.positional.empty() && attribute) {
    for (const Value &item : pyIterate(x)) {
      Value mapped = lookupAttributePath(item, *attribute);
      if (mapped.isUndefined() && defaultValue)
        mapped = *defaultValue;
      out.push_back(mapped);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty())
    evalFail("TypeError: map() needs a filter name or attribute=");
  std::string filter = pyStr(args.positional[0]);
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value &item : pyIterate(x))
    out.push_back(applyFilter(filter, item, rest));
  return Value::list(std::move(out));
}

const std::map<std::string, FilterFunction> &filterTable() {
  static const std::map<std::string, FilterFunction> table = {
      {"abs", filterAbs},
      {"attr", filterAttr},
      {"capitalize", filterCapitalize},
      {"count", filterCount},
      {"d", filterDefault},
      {"default", filterDefault},
      {"dictsort", filterDictsort},
      {"e", filterEscape},
      {"escape", filterEscape},
      {"first", filterFirst},
      {"float", filterFloat},
      {"forceescape", filterEscape},
      {"indent", filterIndent},
      {"int", filterInt},
      {"items", filterItems},
      {"join", filterJoin},
      {"last", filterLast},
      {"length", filterLength},
      {"list", filterList},
      {"lower", filterLower},
      {"map", filterMap},
      {"max", filterMax},
      {"min", filterMin},
      {"reject", filterReject},
      {"rejectattr", filterRejectattr},
      {"replace", filterReplace},
      {"reverse", filterReverse},
      {"safe", filterSafe},
      {"select", filterSelect},
      {"selectattr", filterSelectattr},
      {"sort", filterSort},
      {"string", filterString},
      {"sum", filterSum},
      {"title", filterTitle},
      {"tojson", filterTojson},
      {"trim", filterTrim},
      {"unique", filterUnique},
      {"upper", filterUpper},
  };
  return table;
}

} // namespace

bool isJinjaFilterName(std::string_view name) {
  static const char *const kJinjaFilters[] = {
      "abs",      "attr",       "batch",       "capitalize",
      "center",   "count",      "d",           "default",
      "dictsort", "e",          "escape",      "filesizeformat",
      "first",    "float",      "forceescape", "format",
      "groupby",  "indent",     "int",         "items",
      "join",     "last",       "length",      "list",
      "lower",    "map",        "max",         "min",
      "pprint",   "random",     "reject",      "rejectattr",
      "replace",  "reverse",    "round",       "safe",
      "select",   "selectattr", "slice",       "sort",
      "string",   "striptags",  "sum",         "title",
      "tojson",   "trim",       "truncate",    "unique",
      "upper",    "urlencode",  "urlize",      "wordcount",
      "wordwrap", "xmlattr"};
  for (const char *known : kJinjaFilters)
    if (name == known)
      return true;
  return false;
}

Value applyFilter(const std::string &name, const Value &operand,
                  const CallArgs &args) {
  const auto &table = filterTable();
  auto it = table.find(name);
  if (it == table.end())
    evalFail("unsupported Jinja construct: filter '", name,
             "' (not implemented by Sol's chat-template engine, or not a "
             "Jinja filter)");
  return it->second(operand, args);
}

} // namespace sol::jinja
