//===- Template.cpp - A parsed Jinja chat template ------------------------===//

#include "runtime/chat/Template.h"

#include "runtime/chat/Evaluator.h"
#include "runtime/chat/Parser.h"

namespace sol::jinja {

Template::Template(std::string_view source) : body_(parseTemplate(source)) {}

std::string Template::render(const DictData &variables) const {
  return evaluateTemplate(body_, variables);
}

} // namespace sol::jinja
