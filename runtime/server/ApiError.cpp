//===- ApiError.cpp - OpenAI-style errors with their HTTP status ----------===//
#include "runtime/server/ApiError.h"

#include <nlohmann/json.hpp>

namespace sol {

namespace {

std::string defaultType(int status) {
  switch (status) {
  case 401:
    return "authentication_error";
  case 404:
    return "not_found_error";
  case 429:
    return "rate_limit_error";
  case 500:
  case 503:
    return "server_error";
  default:
    return "invalid_request_error";
  }
}

} // namespace

ApiError::ApiError(int status, std::string message, std::string param,
                   std::string code, std::string type)
    : status(status), message(std::move(message)),
      type(type.empty() ? defaultType(status) : std::move(type)),
      param(std::move(param)), code(std::move(code)) {}

std::string ApiError::body() const {
  nlohmann::ordered_json e;
  e["message"] = message;
  e["type"] = type;
  e["param"] =
      param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(param);
  e["code"] =
      code.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(code);
  nlohmann::ordered_json j;
  j["error"] = e;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void badRequest(const std::string &param, const std::string &message) {
  throw ApiError(400, message, param);
}

} // namespace sol
