//===- SpeculativeConfig.h - How the engine speculates ----------*- C++ -*-===//
//
// Speculative decoding is configured as in vLLM, with the JSON object of
// `--speculative-config`, so that a vLLM command line carries over. Sol
// supports prompt lookup ("ngram", see NgramProposer.h) and a draft model (a
// smaller plan with the same tokenizer, see DraftModelProposer.h); the parser
// refuses everything else (other methods, keys it does not know) instead of
// silently running without speculation.
//
// Accepted keys:
//   "method"                  "ngram" or "draft_model"; may be left out when
//                             "model" is given (a draft model)
//   "model"                   the draft plan's path (draft_model only)
//   "num_speculative_tokens"  drafts per step, 1..16 (required)
//   "prompt_lookup_max"       longest n-gram matched, >= 1 (ngram only)
//   "prompt_lookup_min"       shortest n-gram matched, >= 1, <= the max
//   "disable_by_batch_size"   speculation is off while more sequences than
//                             this run, >= 1 (default 4, from measurement:
//                             a verifying step of 5 tokens costs about 1.3
//                             decode steps on the H200, and under load the
//                             decode steps of many sequences already read
//                             each weight once for all of them, so drafts
//                             only add work: the trained 1B-shaped model's
//                             solrun --bench with n-gram speculation gave
//                             1.01x plain at 4 sequences, 0.72x at 16 and
//                             0.50x at 64)
// When only one of the lookup bounds is given, the other takes its value;
// when neither is, they are 2 (min) and 4 (max): a range, so that a shorter
// match still proposes where the longest finds none.
// A key whose value is null counts as not given.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sol {

struct SpeculativeConfig {
  enum class Method { None, Ngram, DraftModel };
  Method method = Method::None;
  /// DraftModel: the draft plan's path; empty: the draft packed into the
  /// target plan (solc --draft).
  std::string draftModel;
  int32_t numSpeculativeTokens = 0;
  int32_t promptLookupMin = 0, promptLookupMax = 0;
  /// Speculation is off while more than this many sequences run (0: never
  /// off; the parser's default is kDefaultDisableByBatchSize).
  int32_t disableByBatchSize = 0;

  bool enabled() const { return method != Method::None; }
};

/// The lookup bounds used when the config gives neither.
inline constexpr int32_t kDefaultPromptLookupMin = 2;
inline constexpr int32_t kDefaultPromptLookupMax = 4;
/// disable_by_batch_size when the config gives none.
inline constexpr int32_t kDefaultDisableByBatchSize = 4;
/// The most drafts per step accepted for "num_speculative_tokens".
inline constexpr int32_t kMaxSpeculativeTokens = 16;

/// Parses the JSON object of vLLM's `--speculative-config` (see the file
/// comment for the keys). Throws sol::Error naming the offending key.
SpeculativeConfig parseSpeculativeConfig(std::string_view json);

} // namespace sol
