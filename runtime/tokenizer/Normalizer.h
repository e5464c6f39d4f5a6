//===- Normalizer.h - The `normalizer` of tokenizer.json --------*- C++ -*-===//
//
// Supported: null, NFC, NFD, NFKC, NFKD and a Sequence of those (Qwen2/3 use
// NFC). Anything else is rejected at load time, naming the type, rather than
// silently producing different ids.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace sol {

class Normalizer {
public:
  enum class Form { NFC, NFD, NFKC, NFKD };

  /// Parses the "normalizer" value (may be null). `where` names it in errors.
  static Normalizer fromJson(const nlohmann::json &value,
                             std::string_view where);

  /// True when normalize() is the identity.
  bool isIdentity() const { return forms_.empty(); }

  /// Normalizes valid UTF-8 text.
  std::string normalize(std::string_view text) const;

private:
  std::vector<Form> forms_;
};

} // namespace sol
