//===- JinjaTestUtil.h - Helpers for chat-template engine tests -*- C++ -*-===//
#pragma once

#include "runtime/chat/PyJson.h"
#include "runtime/chat/Template.h"
#include "runtime/support/Error.h"

#include <string>
#include <string_view>

namespace sol::jinja::testing {

/// Renders `source` with the JSON object `variables` as its context.
inline std::string render(std::string_view source,
                          std::string_view variables = "{}") {
  Value vars = valueFromJson(nlohmann::ordered_json::parse(variables));
  return Template(source).render(vars.dict());
}

/// The sol::Error message of parsing or rendering `source`, or
/// "<no error>" when it renders.
inline std::string renderError(std::string_view source,
                               std::string_view variables = "{}") {
  try {
    render(source, variables);
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

} // namespace sol::jinja::testing
