//===- Request.cpp - What a user asks the engine for, and gets back -------===//
#include "runtime/engine/Request.h"

namespace sol {

std::string_view finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::None:
    return "";
  case FinishReason::Stop:
    return "stop";
  case FinishReason::Length:
    return "length";
  case FinishReason::Abort:
    return "abort";
  }
  return "";
}

double RequestOutput::ttftMs() const {
  if (numOutputTokens == 0)
    return 0.0;
  return std::chrono::duration<double, std::milli>(firstTokenTime - arrivalTime)
      .count();
}

double RequestOutput::tpotMs() const {
  if (numOutputTokens < 2)
    return 0.0;
  return std::chrono::duration<double, std::milli>(lastTokenTime -
                                                   firstTokenTime)
             .count() /
         static_cast<double>(numOutputTokens - 1);
}

} // namespace sol
