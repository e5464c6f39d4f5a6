//===- ArgumentBinding.cpp - Python-style argument binding ----------------===//

#include "runtime/chat/Builtins.h"
#include "runtime/chat/EvalError.h"

namespace sol::jinja {

std::vector<Value> bindArguments(const std::string &function,
                                 const CallArgs &args,
                                 std::initializer_list<Param> params) {
  std::vector<Value> bound(params.size());
  std::vector<bool> given(params.size(), false);
  if (args.positional.size() > params.size())
    evalFail("TypeError: ", function, "() takes at most ", params.size(),
             " argument(s) (", args.positional.size(), " given)");
  for (size_t i = 0; i < args.positional.size(); ++i) {
    bound[i] = args.positional[i];
    given[i] = true;
  }
  for (const auto &[name, value] : args.keyword) {
    size_t index = 0;
    for (const Param &p : params) {
      if (name == p.name)
        break;
      ++index;
    }
    if (index == params.size())
      evalFail("TypeError: ", function,
               "() got an unexpected keyword argument '", name, "'");
    if (given[index])
      evalFail("TypeError: ", function, "() got multiple values for argument '",
               name, "'");
    bound[index] = value;
    given[index] = true;
  }
  size_t i = 0;
  for (const Param &p : params) {
    if (!given[i]) {
      if (!p.defaultValue)
        evalFail("TypeError: ", function, "() missing required argument '",
                 p.name, "'");
      bound[i] = *p.defaultValue;
    }
    ++i;
  }
  return bound;
}

} // namespace sol::jinja
