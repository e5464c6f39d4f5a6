//===- Calibration.h - solc's calibration tokens ----------------*- C++ -*-===//
//
// AWQ calibrates on real text, tokenized with the model's own tokenizer:
// `--calib FILE` (plain text, or JSON Lines with a "text" field per line) or
// the Brown Corpus excerpt compiled into solc (data/calibration/brown.txt).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/ModelAssets.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sol {

/// The calibration text's tokens (no special tokens added) cut into
/// sequences of `sequenceLength`, at most `maxTokens` in all (whole
/// sequences only). Throws sol::Error when the model has no tokenizer, the
/// file cannot be read or parsed, or the text is shorter than one sequence;
/// says on stderr (unless `quiet`) when it holds fewer tokens than asked.
std::vector<std::vector<int32_t>>
calibrationSequences(const ModelAssets &assets, const std::string &path,
                     int64_t maxTokens, int64_t sequenceLength, bool quiet);

} // namespace sol
