//===- Normalizer.cpp - The `normalizer` of tokenizer.json ----------------===//

#include "runtime/tokenizer/Normalizer.h"

#include "runtime/support/Error.h"

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include <cstdlib>
#include <memory>

namespace sol {
namespace {

void parseInto(const nlohmann::json &value, std::string_view where,
               std::vector<Normalizer::Form> &forms) {
  if (value.is_null())
    return;
  if (!value.is_object() || !value.contains("type") ||
      !value["type"].is_string())
    fail(where, ": a normalizer must be an object with a string \"type\"");
  const std::string type = value["type"].get<std::string>();
  if (type == "NFC")
    forms.push_back(Normalizer::Form::NFC);
  else if (type == "NFD")
    forms.push_back(Normalizer::Form::NFD);
  else if (type == "NFKC")
    forms.push_back(Normalizer::Form::NFKC);
  else if (type == "NFKD")
    forms.push_back(Normalizer::Form::NFKD);
  else if (type == "Sequence") {
    if (!value.contains("normalizers") || !value["normalizers"].is_array())
      fail(where, ": normalizer Sequence needs a \"normalizers\" array");
    for (const nlohmann::json &child : value["normalizers"])
      parseInto(child, where, forms);
  } else {
    fail(where, ": normalizer type \"", type,
         "\" is not supported by Sol (supported: NFC, NFD, NFKC, NFKD, "
         "Sequence)");
  }
}

struct FreeDeleter {
  void operator()(utf8proc_uint8_t *p) const { std::free(p); }
};

std::string applyForm(std::string_view text, Normalizer::Form form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
  case Normalizer::Form::NFC:
    options |= UTF8PROC_COMPOSE;
    break;
  case Normalizer::Form::NFD:
    options |= UTF8PROC_DECOMPOSE;
    break;
  case Normalizer::Form::NFKC:
    options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    break;
  case Normalizer::Form::NFKD:
    options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    break;
  }
  utf8proc_uint8_t *raw = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &raw,
                   static_cast<utf8proc_option_t>(options));
  std::unique_ptr<utf8proc_uint8_t, FreeDeleter> owned(raw);
  if (length < 0)
    fail("Unicode normalization failed: ",
         utf8proc_errmsg(static_cast<utf8proc_ssize_t>(length)));
  return std::string(reinterpret_cast<const char *>(raw),
                     static_cast<std::size_t>(length));
}

bool isAscii(std::string_view text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80)
      return false;
  return true;
}

} // namespace

Normalizer Normalizer::fromJson(const nlohmann::json &value,
                                std::string_view where) {
  Normalizer normalizer;
  parseInto(value, where, normalizer.forms_);
  return normalizer;
}

std::string Normalizer::normalize(std::string_view text) const {
  // ASCII is invariant under every normalization form: skip the copy-heavy
  // utf8proc call for the common case.
  if (forms_.empty() || isAscii(text))
    return std::string(text);
  std::string out(text);
  for (Form form : forms_)
    out = applyForm(out, form);
  return out;
}

} // namespace sol
