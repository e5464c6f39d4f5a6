//===- ErrorMessage.h - The message of an expected sol::Error ---*- C++ -*-===//
#pragma once

#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <string>

namespace sol::hf::test {

/// Runs `action` and returns the message of the sol::Error it throws; records
/// a test failure when it throws nothing. Any other exception escapes, which
/// fails the test too: malformed input must surface as sol::Error only.
template <typename Action> std::string errorOf(Action &&action) {
  try {
    action();
  } catch (const sol::Error &error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a sol::Error, but nothing was thrown";
  return {};
}

} // namespace sol::hf::test
