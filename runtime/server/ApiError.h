//===- ApiError.h - OpenAI-style errors with their HTTP status ---*- C++
//-*-===//
//
// Every error the API answers has OpenAI's body
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// and a status that says what to do: 400 fix the request (param names the
// field), 401 the API key, 404 the model or path, 413 a smaller body, 429 or
// 503 retry later (with Retry-After).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <exception>
#include <string>

namespace sol {

struct ApiError : std::exception {
  int status = 400;
  std::string message;
  /// OpenAI's type: invalid_request_error, authentication_error,
  /// rate_limit_error, server_error, ...
  std::string type;
  /// The request field at fault; empty for none.
  std::string param;
  /// A machine-readable code (model_not_found, ...); empty for none.
  std::string code;

  ApiError(int status, std::string message, std::string param = {},
           std::string code = {}, std::string type = {});
  const char *what() const noexcept override { return message.c_str(); }

  /// The JSON body.
  std::string body() const;
};

/// A 400 naming `param`.
[[noreturn]] void badRequest(const std::string &param,
                             const std::string &message);

} // namespace sol
