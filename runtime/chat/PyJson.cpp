//===- PyJson.cpp - JSON in and out, as Python's json module does ---------===//

#include "runtime/chat/PyJson.h"

#include "runtime/chat/EvalError.h"
#include "runtime/chat/Utf8.h"

#include <algorithm>
#include <cstdio>

namespace sol::jinja {

namespace {

Value convertJson(const nlohmann::ordered_json &json, int depth) {
  using Type = nlohmann::ordered_json::value_t;
  if (depth > kMaxValueNesting)
    fail("chat request JSON nests deeper than ", kMaxValueNesting, " levels");
  switch (json.type()) {
  case Type::null:
    return Value::none();
  case Type::boolean:
    return Value(json.get<bool>());
  case Type::number_integer:
    return Value(static_cast<Integer>(json.get<long long>()));
  case Type::number_unsigned:
    return Value(static_cast<Integer>(json.get<unsigned long long>()));
  case Type::number_float:
    return Value(json.get<double>());
  case Type::string:
    return Value(json.get<std::string>());
  case Type::array: {
    std::vector<Value> items;
    items.reserve(json.size());
    for (const auto &item : json)
      items.push_back(convertJson(item, depth + 1));
    return Value::list(std::move(items));
  }
  case Type::object: {
    DictData dict;
    dict.entries.reserve(json.size());
    for (const auto &[key, item] : json.items())
      dict.set(key, convertJson(item, depth + 1));
    return Value::dict(std::move(dict));
  }
  default:
    fail("unsupported JSON value (binary or discarded) in a chat request");
  }
}

} // namespace

Value valueFromJson(const nlohmann::ordered_json &json) {
  return convertJson(json, 1);
}

namespace {

void appendHexEscape(std::string &out, unsigned codeUnit) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\u%04x", codeUnit & 0xFFFFu);
  out += buffer;
}

void appendJsonString(std::string &out, const std::string &text,
                      bool ensureAscii) {
  out.push_back('"');
  auto escapeSimple = [&](char32_t cp) {
    switch (cp) {
    case '"':
      out += "\\\"";
      return true;
    case '\\':
      out += "\\\\";
      return true;
    case '\n':
      out += "\\n";
      return true;
    case '\r':
      out += "\\r";
      return true;
    case '\t':
      out += "\\t";
      return true;
    case '\b':
      out += "\\b";
      return true;
    case '\f':
      out += "\\f";
      return true;
    default:
      if (cp < 0x20) {
        appendHexEscape(out, static_cast<unsigned>(cp));
        return true;
      }
      return false;
    }
  };
  if (!ensureAscii) {
    for (char c : text)
      if (!escapeSimple(static_cast<unsigned char>(c)))
        out.push_back(c);
  } else {
    for (char32_t cp : decodeUtf8(text)) {
      if (escapeSimple(cp))
        continue;
      if (cp < 0x7F) {
        out.push_back(static_cast<char>(cp));
      } else if (cp < 0x10000) {
        appendHexEscape(out, static_cast<unsigned>(cp));
      } else {
        char32_t v = cp - 0x10000;
        appendHexEscape(out, 0xD800 + static_cast<unsigned>(v >> 10));
        appendHexEscape(out, 0xDC00 + static_cast<unsigned>(v & 0x3FF));
      }
    }
  }
  out.push_back('"');
}

class Dumper {
public:
  explicit Dumper(const JsonDumpOptions &options) : options_(options) {
    if (options.separators) {
      itemSeparator_ = options.separators->first;
      keySeparator_ = options.separators->second;
    } else {
      itemSeparator_ = options.indent ? "," : ", ";
      keySeparator_ = ": ";
    }
  }

  void dump(const Value &value, int depth) {
    if (depth > 2 * kMaxValueNesting)
      evalFail("ValueError: Circular reference detected");
    switch (value.kind()) {
    case Value::Kind::None:
      out_ += "null";
      return;
    case Value::Kind::Bool:
      out_ += value.asBool() ? "true" : "false";
      return;
    case Value::Kind::Int:
      out_ += integerToString(value.asInt());
      return;
    case Value::Kind::Float:
      out_ += floatJson(value.asFloat());
      return;
    case Value::Kind::String:
      appendJsonString(out_, value.asString(), options_.ensureAscii);
      return;
    case Value::Kind::List: {
      if (value.list().viewName)
        evalFail("TypeError: Object of type ", value.typeName(),
                 " is not JSON serializable");
      const auto &items = value.list().items;
      if (items.empty()) {
        out_ += "[]";
        return;
      }
      out_ += "[";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i)
          out_ += itemSeparator_;
        newline(depth + 1);
        dump(items[i], depth + 1);
      }
      newline(depth);
      out_ += "]";
      return;
    }
    case Value::Kind::Dict: {
      std::vector<const std::pair<std::string, Value> *> entries;
      for (const auto &entry : value.dict().entries)
        entries.push_back(&entry);
      if (entries.empty()) {
        out_ += "{}";
        return;
      }
      if (options_.sortKeys)
        std::stable_sort(entries.begin(), entries.end(),
                         [](auto *a, auto *b) { return a->first < b->first; });
      out_ += "{";
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i)
          out_ += itemSeparator_;
        newline(depth + 1);
        appendJsonString(out_, entries[i]->first, options_.ensureAscii);
        out_ += keySeparator_;
        dump(entries[i]->second, depth + 1);
      }
      newline(depth);
      out_ += "}";
      return;
    }
    default:
      evalFail("TypeError: Object of type ", value.typeName(),
               " is not JSON serializable");
    }
  }

  std::string take() { return std::move(out_); }

private:
  void newline(int depth) {
    if (!options_.indent)
      return;
    out_ += "\n";
    for (int i = 0; i < depth; ++i)
      out_ += *options_.indent;
  }

  const JsonDumpOptions &options_;
  std::string itemSeparator_, keySeparator_;
  std::string out_;
};

} // namespace

std::string pyJsonDumps(const Value &value, const JsonDumpOptions &options) {
  Dumper dumper(options);
  dumper.dump(value, 0);
  return dumper.take();
}

} // namespace sol::jinja
