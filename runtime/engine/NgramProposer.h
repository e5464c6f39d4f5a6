//===- NgramProposer.h - Draft tokens by prompt lookup ----------*- C++ -*-===//
//
// N-gram speculative decoding ("prompt lookup", vLLM's "ngram" method)
// drafts the next tokens of a sequence without a draft model: when the last
// n tokens already occurred earlier in the sequence (prompt or output), the
// tokens that followed that occurrence are a cheap guess at what comes next.
// Summaries, code edits and retrieval answers repeat their input a lot, so
// the target model often accepts several of these drafts in one step.
//
// The proposer runs on every decode step of every speculating sequence, over
// sequences of tens of thousands of tokens, so it is a single backward scan
// that compares the last token first and allocates nothing but its result.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sol {

/// Proposes up to `numTokens` draft tokens to follow `tokens`.
///
/// For n from `maxN` down to `minN` (only n < tokens.size()), the pattern is
/// the last n tokens; the most recent earlier occurrence of it in `tokens`
/// (one that starts before tokens.size() - n: never the suffix itself, though
/// it may overlap it) supplies the tokens that follow it, up to `numTokens`
/// of them (fewer when the sequence ends first; at least one). The longest n
/// with an occurrence wins. Returns nothing when no n matches, `numTokens` <=
/// 0 or `maxN` < `minN`; a `minN` below 1 counts as 1.
///
/// Costs O(tokens.size() * maxN) in the worst case, O(tokens.size()) when
/// the last token is rare.
std::vector<int32_t> proposeNgram(std::span<const int32_t> tokens, int32_t minN,
                                  int32_t maxN, int32_t numTokens);

} // namespace sol
