//===- TokenId.h - The integer type of token ids ----------------*- C++ -*-===//
#pragma once

#include <cstdint>

namespace sol {

/// A token id, as in tokenizer.json and the model's embedding table.
using TokenId = std::uint32_t;

} // namespace sol
