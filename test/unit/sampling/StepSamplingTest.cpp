//===- StepSamplingTest.cpp - Every sampling-input error, by message ------===//

#include "runtime/sampling/StepSampling.h"

#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace sol;
using namespace sol::sampling;

namespace {

constexpr int64_t kVocab = 100;

/// A valid two-row step with every sampling field in use; tests break one
/// field at a time.
struct Fixture {
  std::vector<int32_t> rows = {0, 1};
  std::vector<SamplingRow> params = std::vector<SamplingRow>(2);
  std::vector<int32_t> offsets = {0, 2, 3};
  std::vector<int32_t> ids = {5, 7, 5};
  std::vector<int32_t> counts = {1, 0, 2};
  std::vector<uint8_t> inPrompt = {0, 1, 1};
  int32_t numTop = 2;
  std::vector<int32_t> argmax = std::vector<int32_t>(2);
  std::vector<float> logprobs = std::vector<float>(2);
  std::vector<int32_t> topIds = std::vector<int32_t>(4);
  std::vector<float> topLogprobs = std::vector<float>(4);

  Fixture() {
    params[1].temperature = 0.7f;
    params[1].topK = 40;
    params[1].topP = 0.9f;
    params[1].minP = 0.05f;
    params[1].repetitionPenalty = 1.1f;
  }
  StepBatch batch() const {
    StepBatch b;
    b.logitRows = rows;
    b.sampling = params;
    b.penalties = {offsets, ids, counts, inPrompt};
    b.numTopLogprobs = numTop;
    return b;
  }
  StepOutput out() {
    StepOutput o;
    o.argmax = argmax;
    o.logprobs = logprobs;
    o.topIds = topIds;
    o.topLogprobs = topLogprobs;
    return o;
  }
};

std::string errorOf(const std::function<void(Fixture &)> &change) {
  Fixture f;
  change(f);
  try {
    validateSampling(f.batch(), f.out(), kVocab);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(StepSampling, ValidStepsPass) {
  EXPECT_EQ(errorOf([](Fixture &) {}), "");
  // No sampling fields at all: greedy, no penalties, no logprobs.
  StepBatch b;
  std::vector<int32_t> rows = {0, 1, 2};
  b.logitRows = rows;
  EXPECT_NO_THROW(validateSampling(b, StepOutput{}, kVocab));
  EXPECT_EQ(errorOf([](Fixture &f) {
              f.params[0].temperature = 0.0f;
              f.params[0].topP = 1.0f;
              f.params[0].minP = 1.0f;
              f.params[1].topK = 1000; // more than the vocabulary: all
            }),
            "");
}

struct ErrorCase {
  const char *name;
  std::function<void(Fixture &)> change;
  const char *message;
};

class StepSamplingErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(StepSamplingErrors, NamesTheFieldAndRow) {
  const std::string error = errorOf(GetParam().change);
  EXPECT_NE(error.find(GetParam().message), std::string::npos)
      << "got: '" << error << "'";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, StepSamplingErrors,
    ::testing::Values(
        ErrorCase{"SamplingRows",
                  [](Fixture &f) { f.params.pop_back(); },
                  "sampling holds 1 rows, expected one per logits row (2)"},
        ErrorCase{"NegativeTemperature",
                  [](Fixture &f) { f.params[1].temperature = -1.0f; },
                  "sampling row 1: temperature must be a finite number >= 0"},
        ErrorCase{"NanTemperature",
                  [](Fixture &f) { f.params[0].temperature = NAN; },
                  "sampling row 0: temperature must be a finite number >= 0"},
        ErrorCase{"InfiniteTemperature",
                  [](Fixture &f) { f.params[0].temperature = INFINITY; },
                  "sampling row 0: temperature must be a finite number"},
        ErrorCase{"TopK", [](Fixture &f) { f.params[1].topK = -1; },
                  "sampling row 1: topK must be >= 0 (0 = every token), got "
                  "-1"},
        ErrorCase{"TopPZero", [](Fixture &f) { f.params[1].topP = 0.0f; },
                  "sampling row 1: topP must be in (0, 1], got 0"},
        ErrorCase{"TopPAboveOne",
                  [](Fixture &f) { f.params[1].topP = 1.5f; },
                  "sampling row 1: topP must be in (0, 1], got 1.5"},
        ErrorCase{"TopPNan", [](Fixture &f) { f.params[1].topP = NAN; },
                  "sampling row 1: topP must be in (0, 1]"},
        ErrorCase{"MinPNegative",
                  [](Fixture &f) { f.params[1].minP = -0.1f; },
                  "sampling row 1: minP must be in [0, 1], got -0.1"},
        ErrorCase{"MinPAboveOne",
                  [](Fixture &f) { f.params[0].minP = 1.1f; },
                  "sampling row 0: minP must be in [0, 1], got 1.1"},
        ErrorCase{"MinPNan", [](Fixture &f) { f.params[0].minP = NAN; },
                  "sampling row 0: minP must be in [0, 1]"},
        ErrorCase{"RepetitionZero",
                  [](Fixture &f) { f.params[1].repetitionPenalty = 0.0f; },
                  "sampling row 1: repetitionPenalty must be a finite number "
                  "> 0 (1 = none), got 0"},
        ErrorCase{"RepetitionNan",
                  [](Fixture &f) { f.params[1].repetitionPenalty = NAN; },
                  "sampling row 1: repetitionPenalty must be"},
        ErrorCase{"Presence",
                  [](Fixture &f) { f.params[0].presencePenalty = NAN; },
                  "sampling row 0: presencePenalty must be finite"},
        ErrorCase{"Frequency",
                  [](Fixture &f) { f.params[1].frequencyPenalty = INFINITY; },
                  "sampling row 1: frequencyPenalty must be finite"},
        ErrorCase{"TopLogprobsTooMany", [](Fixture &f) { f.numTop = 21; },
                  "numTopLogprobs must be in 0..20, got 21"},
        ErrorCase{"TopLogprobsNegative", [](Fixture &f) { f.numTop = -1; },
                  "numTopLogprobs must be in 0..20, got -1"},
        ErrorCase{"OffsetsLength",
                  [](Fixture &f) { f.offsets.pop_back(); },
                  "penalties.offsets holds 2 entries, expected R + 1 = 3"},
        ErrorCase{"OffsetsStart", [](Fixture &f) { f.offsets[0] = 1; },
                  "penalties.offsets[0] must be 0, got 1"},
        ErrorCase{"OffsetsDecrease",
                  [](Fixture &f) { f.offsets = {0, 3, 2}; },
                  "penalties.offsets decreases at row 1: 3 then 2"},
        ErrorCase{"OffsetsEnd", [](Fixture &f) { f.offsets[2] = 2; },
                  "penalties.offsets[2] is 2 but penalties.ids holds 3 "
                  "entries"},
        ErrorCase{"CountsLength", [](Fixture &f) { f.counts.pop_back(); },
                  "penalties.outputCounts holds 2 entries but penalties.ids "
                  "holds 3"},
        ErrorCase{"InPromptLength",
                  [](Fixture &f) { f.inPrompt.push_back(0); },
                  "penalties.inPrompt holds 4 entries but penalties.ids holds "
                  "3"},
        ErrorCase{"IdTooLarge", [](Fixture &f) { f.ids[2] = 100; },
                  "penalties row 1 entry 2: token id 100 is outside the "
                  "vocabulary of 100 ids"},
        ErrorCase{"IdNegative", [](Fixture &f) { f.ids[0] = -3; },
                  "penalties row 0 entry 0: token id -3 is outside"},
        ErrorCase{"CountNegative", [](Fixture &f) { f.counts[1] = -1; },
                  "penalties row 0 entry 1: outputCounts is -1; counts must "
                  "be >= 0"},
        ErrorCase{"DuplicateId", [](Fixture &f) { f.ids[1] = 5; },
                  "penalties row 0 lists token id 5 twice"},
        ErrorCase{"LogprobsSize",
                  [](Fixture &f) { f.logprobs.push_back(0); },
                  "the logprobs output holds 3 floats, expected 2"},
        ErrorCase{"TopIdsSize",
                  [](Fixture &f) {
                    f.topIds.resize(6);
                    f.topLogprobs.resize(6);
                  },
                  "the topIds output holds 6 ids, expected R x "
                  "numTopLogprobs = 2 x 2 = 4"},
        ErrorCase{"TopSpansDisagree",
                  [](Fixture &f) { f.topLogprobs.pop_back(); },
                  "the topIds output holds 4 ids but topLogprobs holds 3 "
                  "floats"},
        ErrorCase{"TopSpansMissing",
                  [](Fixture &f) {
                    f.topIds.clear();
                    f.topLogprobs.clear();
                  },
                  "numTopLogprobs is 2 but the topIds and topLogprobs "
                  "outputs are empty"}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(StepSampling, TopLogprobsAreCappedByASmallVocabulary) {
  Fixture f;
  f.ids = {1, 2, 1};
  try {
    validateSampling(f.batch(), f.out(), 1);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("numTopLogprobs must be in 0..1"),
              std::string::npos)
        << e.what();
  }
}

TEST(StepSampling, NeedsSampling) {
  Fixture f;
  StepBatch greedy;
  greedy.logitRows = f.rows;
  StepOutput ids;
  ids.argmax = f.argmax;
  EXPECT_FALSE(stepNeedsSampling(greedy, ids));
  std::vector<SamplingRow> allGreedy(2);
  greedy.sampling = allGreedy;
  EXPECT_FALSE(stepNeedsSampling(greedy, ids));
  EXPECT_TRUE(stepNeedsSampling(f.batch(), ids)); // temperature
  StepBatch noTop = f.batch();
  noTop.numTopLogprobs = 0;
  EXPECT_FALSE(stepNeedsSampling(noTop, StepOutput{})); // logits only
  StepBatch penalties = greedy;
  penalties.penalties = {f.offsets, f.ids, f.counts, f.inPrompt};
  EXPECT_TRUE(stepNeedsSampling(penalties, ids));
  StepOutput lps;
  lps.logprobs = f.logprobs;
  EXPECT_TRUE(stepNeedsSampling(greedy, lps));
  StepBatch top = greedy;
  top.numTopLogprobs = 1;
  EXPECT_TRUE(stepNeedsSampling(top, StepOutput{}));
}

} // namespace
