//===- EngineTest.cpp - The engine over a fake executor -------------------===//
//
// The fake executor (FakeExecutor.h) reads each sequence's context back
// through the block tables, so exact outputs here prove the block tables,
// the prefix cache and recompute after preemption right; its recorded
// batches let the tests check what the engine asks of an executor.
//
//===----------------------------------------------------------------------===//
#include "EngineTestSupport.h"
#include "FakeExecutor.h"

#include "runtime/tokenizer/ByteLevelAlphabet.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace sol;
using namespace sol::test;

namespace {

constexpr int32_t kVocab = 50;

EngineConfig configOf(int64_t maxModelLen = 256) {
  return fakeConfig(kVocab, maxModelLen);
}

/// Many random requests, all submitted at once, against each run alone.
void expectOutputsMatchRunningAlone(bool prefixCaching, bool sharedPrefixes,
                                    uint32_t seed) {
  FakeExecutor ex(/*numBlocks=*/40, /*blockSize=*/4, /*maxTokens=*/32, kVocab);
  ex.record = false;
  EngineConfig c = configOf(160);
  c.maxNumSeqs = 16;
  c.enablePrefixCaching = prefixCaching;
  c.eosTokenIds = {3};
  Engine engine(ex, c);
  std::mt19937 rng(seed);
  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < 6; ++i)
    prefixes.push_back(randomIds(rng, size_t(uniform(rng, 4, 30)), kVocab));
  std::map<int64_t, Request> requests;
  for (int i = 0; i < 400; ++i) {
    Request r;
    if (sharedPrefixes)
      r.promptIds = prefixes[rng() % prefixes.size()];
    const auto tail = randomIds(rng, size_t(uniform(rng, 1, 30)), kVocab);
    r.promptIds.insert(r.promptIds.end(), tail.begin(), tail.end());
    r.maxTokens = uniform(rng, 1, 40);
    r.ignoreEos = rng() % 2 == 0;
    if (rng() % 4 == 0)
      r.stopTokenIds = {uniform(rng, 0, kVocab - 1)};
    if (rng() % 4 == 0)
      r.minTokens = uniform(rng, 0, r.maxTokens);
    const int64_t id = engine.submit(r);
    requests.emplace(id, std::move(r));
  }
  const auto results = runToEnd(engine);
  ASSERT_EQ(results.size(), requests.size());
  auto model = [](std::span<const int32_t> ctx) {
    return FakeExecutor::hashModel(ctx, kVocab);
  };
  for (const auto &[id, r] : requests) {
    const Finished alone = generateAlone(r, c.eosTokenIds, model);
    ASSERT_EQ(results.at(id).ids, alone.ids) << "request " << id;
    ASSERT_EQ(results.at(id).reason, alone.reason) << "request " << id;
  }
  const EngineStats s = engine.stats();
  EXPECT_GT(s.numPreemptions, 0) << "the cache should be too small";
  EXPECT_EQ(s.numRunning, 0);
  EXPECT_EQ(s.numWaiting, 0);
  EXPECT_EQ(s.kvBlocksUsed, 0);
  EXPECT_EQ(engine.blockManager().numFree() + engine.blockManager().numCached(),
            40);
  EXPECT_NO_THROW(engine.blockManager().checkConsistency());
  if (sharedPrefixes) {
    EXPECT_GT(s.prefixCacheHits, 0);
  }
  if (!prefixCaching) {
    EXPECT_EQ(s.prefixCacheHits, 0);
  }
}

} // namespace

TEST(Engine, ConcurrentOutputsMatchRunningAlone) {
  expectOutputsMatchRunningAlone(false, false, 1);
}

TEST(Engine, ConcurrentOutputsMatchRunningAloneWithPrefixCaching) {
  expectOutputsMatchRunningAlone(true, true, 2);
  expectOutputsMatchRunningAlone(true, false, 3);
}

TEST(Engine, PrefixCacheServesARepeatedPrompt) {
  FakeExecutor ex(32, 4, 64, kVocab);
  EngineConfig c = configOf();
  c.enablePrefixCaching = true;
  Engine engine(ex, c);
  std::mt19937 rng(5);
  const auto prompt = randomIds(rng, 18, kVocab);
  const int64_t a = engine.submit(greedy(prompt, 5));
  const auto first = runToEnd(engine);
  const size_t stepsBefore = ex.batches.size();
  const int64_t b = engine.submit(greedy(prompt, 5));
  int32_t cached = -1;
  std::map<int64_t, Finished> second;
  while (engine.hasUnfinished())
    for (const RequestOutput &o : engine.step()) {
      cached = o.numCachedTokens;
      second[o.id].ids.insert(second[o.id].ids.end(), o.newTokenIds.begin(),
                              o.newTokenIds.end());
    }
  EXPECT_EQ(first.at(a).ids, second.at(b).ids);
  // 18 prompt + 4 generated tokens were computed: 5 full blocks cached; the
  // new prompt may reuse (18 - 1) / 4 = 4 of them.
  EXPECT_EQ(cached, 16);
  ASSERT_GT(ex.batches.size(), stepsBefore);
  const RecordedBatch &prefill = ex.batches[stepsBefore];
  EXPECT_EQ(prefill.tokens.size(), 2u);
  EXPECT_EQ(prefill.positions, (std::vector<int32_t>{16, 17}));
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.prefixCacheQueries, 36);
  EXPECT_EQ(s.prefixCacheHits, 16);
}

TEST(Engine, BuildsSamplingRowsAndPenaltyTokens) {
  FakeExecutor ex(32, 4, 64, kVocab);
  Engine engine(ex, configOf());
  Request a = greedy({5, 3, 5, 9}, 3);
  a.sampling.temperature = 0.8f;
  a.sampling.topK = 5;
  a.sampling.topP = 0.9f;
  a.sampling.minP = 0.05f;
  a.sampling.repetitionPenalty = 1.1f;
  a.sampling.presencePenalty = 0.5f;
  a.sampling.frequencyPenalty = 0.25f;
  a.sampling.seed = 42;
  Request b = greedy({1, 2}, 3); // no seed: one is drawn at submission
  const int64_t ia = engine.submit(a), ib = engine.submit(b);
  const auto results = runToEnd(engine);
  ASSERT_EQ(ex.batches.size(), 3u);
  const std::vector<int32_t> &outA = results.at(ia).ids;
  ASSERT_EQ(outA.size(), 3u);
  ASSERT_EQ(results.at(ib).ids.size(), 3u);
  for (size_t step = 0; step < 3; ++step) {
    const RecordedBatch &batch = ex.batches[step];
    ASSERT_EQ(batch.logitRows.size(), 2u);
    ASSERT_EQ(batch.sampling.size(), 2u);
    const SamplingRow &ra = batch.sampling[0], &rb = batch.sampling[1];
    EXPECT_EQ(ra.temperature, 0.8f);
    EXPECT_EQ(ra.topK, 5);
    EXPECT_EQ(ra.topP, 0.9f);
    EXPECT_EQ(ra.minP, 0.05f);
    EXPECT_EQ(ra.repetitionPenalty, 1.1f);
    EXPECT_EQ(ra.presencePenalty, 0.5f);
    EXPECT_EQ(ra.frequencyPenalty, 0.25f);
    EXPECT_EQ(ra.seed, 42u);
    EXPECT_EQ(ra.counter, static_cast<int32_t>(step)); // output index
    EXPECT_EQ(rb.temperature, 0.0f);
    EXPECT_EQ(rb.counter, static_cast<int32_t>(step));
    EXPECT_NE(rb.seed, 42u);
    if (step > 0) {
      EXPECT_EQ(rb.seed, ex.batches[0].sampling[1].seed); // fixed per request
    }

    // Penalty rows: a's tokens (prompt 3, 5, 9 and its outputs so far),
    // sorted, with output counts; b has none.
    std::map<int32_t, std::pair<int32_t, uint8_t>> want;
    for (int32_t id : a.promptIds)
      want[id] = {0, 1};
    for (size_t k = 0; k < step; ++k) {
      auto [it, fresh] = want.try_emplace(outA[k], 0, 0);
      ++it->second.first;
    }
    ASSERT_EQ(batch.penaltyOffsets.size(), 3u);
    EXPECT_EQ(batch.penaltyOffsets[0], 0);
    EXPECT_EQ(batch.penaltyOffsets[1], static_cast<int32_t>(want.size()));
    EXPECT_EQ(batch.penaltyOffsets[2], batch.penaltyOffsets[1]);
    size_t k = 0;
    for (const auto &[id, v] : want) {
      EXPECT_EQ(batch.penaltyIds[k], id);
      EXPECT_EQ(batch.penaltyCounts[k], v.first);
      EXPECT_EQ(batch.penaltyInPrompt[k], v.second);
      ++k;
    }
  }
}

TEST(Engine, PlainGreedyStepsCarryNoSamplingRows) {
  FakeExecutor ex(32, 4, 64, kVocab);
  Engine engine(ex, configOf());
  engine.submit(greedy({1, 2, 3}, 2));
  Request topK = greedy({4, 5}, 2);
  topK.sampling.topK = 3; // irrelevant when greedy
  engine.submit(topK);
  runToEnd(engine);
  for (const RecordedBatch &b : ex.batches) {
    EXPECT_TRUE(b.sampling.empty());
    EXPECT_TRUE(b.penaltyOffsets.empty());
    EXPECT_EQ(b.numTopLogprobs, 0);
    EXPECT_FALSE(b.logprobsRequested);
  }
  // Greedy with a penalty needs its rows.
  Request pen = greedy({4, 5}, 2);
  pen.sampling.repetitionPenalty = 1.3f;
  engine.submit(pen);
  runToEnd(engine);
  EXPECT_EQ(ex.batches.back().sampling.size(), 1u);
  EXPECT_EQ(ex.batches.back().penaltyOffsets.size(), 2u);
}

TEST(Engine, SeedsAreDrawnPerRequestAndReproducible) {
  auto seedsOf = [](uint64_t engineSeed) {
    FakeExecutor ex(32, 4, 64, kVocab);
    EngineConfig c = configOf();
    c.seed = engineSeed;
    Engine engine(ex, c);
    for (int i = 0; i < 3; ++i) {
      Request r = greedy({1, 2}, 1);
      r.sampling.temperature = 1.0f;
      engine.submit(r);
    }
    runToEnd(engine);
    std::vector<uint64_t> seeds;
    for (const SamplingRow &row : ex.batches.at(0).sampling)
      seeds.push_back(row.seed);
    return seeds;
  };
  const auto a = seedsOf(7), b = seedsOf(7), c = seedsOf(8);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a[0], a[1]);
  EXPECT_NE(a[1], a[2]);
}

TEST(Engine, ReportsLogprobs) {
  FakeExecutor ex(32, 4, 64, kVocab);
  Engine engine(ex, configOf());
  Request withTop = greedy({1, 2, 3}, 3);
  withTop.logprobs = 2;
  Request chosenOnly = greedy({4, 5}, 3);
  chosenOnly.logprobs = 0;
  const int64_t a = engine.submit(withTop);
  const int64_t b = engine.submit(chosenOnly);
  engine.submit(greedy({6}, 3)); // none
  int seen = 0;
  while (engine.hasUnfinished())
    for (const RequestOutput &o : engine.step()) {
      ASSERT_EQ(o.newTokenIds.size(), 1u);
      const int32_t id = o.newTokenIds[0];
      if (o.id == a) {
        ASSERT_EQ(o.logprobs.size(), 1u);
        EXPECT_EQ(o.logprobs[0], FakeExecutor::logprobOf(id));
        ASSERT_EQ(o.topLogprobs.size(), 1u);
        ASSERT_EQ(o.topLogprobs[0].size(), 2u);
        EXPECT_EQ(o.topLogprobs[0][0].id, id);
        EXPECT_EQ(o.topLogprobs[0][1].id, (id + 1) % kVocab);
        EXPECT_EQ(o.topLogprobs[0][1].logprob, -1.0f);
        ++seen;
      } else if (o.id == b) {
        ASSERT_EQ(o.logprobs.size(), 1u);
        ASSERT_EQ(o.topLogprobs.size(), 1u);
        EXPECT_TRUE(o.topLogprobs[0].empty());
      } else {
        EXPECT_TRUE(o.logprobs.empty());
        EXPECT_TRUE(o.topLogprobs.empty());
      }
    }
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(ex.batches[0].numTopLogprobs, 2);
  EXPECT_TRUE(ex.batches[0].logprobsRequested);
}

namespace {

/// A model that ignores the context and plays `script` as its outputs
/// (prompts of `promptLen` tokens).
FakeExecutor::Model scripted(std::vector<int32_t> script, size_t promptLen) {
  return [script = std::move(script), promptLen](std::span<const int32_t> c) {
    return script.at(c.size() - promptLen);
  };
}

Finished runOne(const Request &r, const FakeExecutor::Model &model,
                std::vector<int32_t> eos = {3},
                const Tokenizer *tokenizer = nullptr) {
  FakeExecutor ex(32, 4, 64, 300);
  ex.model = model;
  EngineConfig c = configOf();
  c.vocabSize = 300;
  c.eosTokenIds = std::move(eos);
  c.tokenizer = tokenizer;
  Engine engine(ex, c);
  const int64_t id = engine.submit(r);
  auto out = runToEnd(engine);
  EXPECT_EQ(engine.stats().kvBlocksUsed, 0);
  return out.at(id);
}

} // namespace

TEST(Engine, StopsOnEosStopIdsAndLength) {
  const auto model = scripted({10, 11, 3, 12, 13, 14, 15, 16}, 2);
  Request r = greedy({1, 2}, 6);
  Finished f = runOne(r, model);
  EXPECT_EQ(f.ids, (std::vector<int32_t>{10, 11, 3}));
  EXPECT_EQ(f.reason, FinishReason::Stop);

  r.ignoreEos = true;
  f = runOne(r, model);
  EXPECT_EQ(f.ids, (std::vector<int32_t>{10, 11, 3, 12, 13, 14}));
  EXPECT_EQ(f.reason, FinishReason::Length);

  r.stopTokenIds = {12};
  f = runOne(r, model);
  EXPECT_EQ(f.ids, (std::vector<int32_t>{10, 11, 3, 12}));
  EXPECT_EQ(f.reason, FinishReason::Stop);

  // The request's own EOS ids replace the engine's.
  r = greedy({1, 2}, 6);
  r.eosTokenIds = std::vector<int32_t>{13};
  f = runOne(r, model);
  EXPECT_EQ(f.ids, (std::vector<int32_t>{10, 11, 3, 12, 13}));
  EXPECT_EQ(f.reason, FinishReason::Stop);
}

TEST(Engine, MinTokensSuppressesStops) {
  // The fake ignores the engine's bans here, as an executor that could not
  // ban: the stop check alone must hold (LogitBiasEngineTest.cpp has the
  // bans).
  const auto model = scripted({10, 3, 12, 3, 14, 15, 16}, 2);
  Request r = greedy({1, 2}, 6);
  r.minTokens = 3; // the EOS at 2 does not count, the one at 4 does
  Finished f = runOne(r, model);
  EXPECT_EQ(f.ids, (std::vector<int32_t>{10, 3, 12, 3}));
  EXPECT_EQ(f.reason, FinishReason::Stop);
  r.minTokens = 2; // exactly min_tokens tokens may end on a stop
  EXPECT_EQ(runOne(r, model).ids, (std::vector<int32_t>{10, 3}));
  r.minTokens = 6;
  f = runOne(r, model);
  EXPECT_EQ(f.ids.size(), 6u);
  EXPECT_EQ(f.reason, FinishReason::Length);
}

namespace {

/// Byte-level BPE without merges (id = byte) plus a special <eos> = 256.
Tokenizer byteTokenizer() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b)
    vocab[byte_level::encode(std::string(1, static_cast<char>(b)))] = b;
  nlohmann::json root = {{"version", "1.0"},
                         {"added_tokens",
                          {{{"id", 256},
                            {"content", "<eos>"},
                            {"single_word", false},
                            {"lstrip", false},
                            {"rstrip", false},
                            {"normalized", false},
                            {"special", true}}}},
                         {"normalizer", nullptr},
                         {"pre_tokenizer",
                          {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", false},
                           {"use_regex", false}}},
                         {"post_processor", nullptr},
                         {"decoder", {{"type", "ByteLevel"}}},
                         {"model",
                          {{"type", "BPE"},
                           {"dropout", nullptr},
                           {"unk_token", nullptr},
                           {"byte_fallback", false},
                           {"ignore_merges", false},
                           {"vocab", vocab},
                           {"merges", nlohmann::json::array()}}}};
  return Tokenizer::fromJson(root.dump());
}

std::vector<int32_t> bytesOf(const std::string &s) {
  std::vector<int32_t> ids;
  for (unsigned char ch : s)
    ids.push_back(ch);
  return ids;
}

} // namespace

TEST(Engine, StopStringsCutTheText) {
  const Tokenizer tok = byteTokenizer();
  const std::string said = "Hello, STOP here and more text";
  auto script = bytesOf(said);
  const auto model = scripted(script, 1);
  Request r = greedy({65}, 30);
  r.stop = {"STOP", "nothing"};
  Finished f = runOne(r, model, {256}, &tok);
  EXPECT_EQ(f.reason, FinishReason::Stop);
  EXPECT_EQ(f.text, "Hello, ");
  // The ids run to the token that completed the stop string.
  EXPECT_EQ(f.ids, bytesOf("Hello, STOP"));

  // Not found: the whole text, cut by max_tokens.
  r.stop = {"xyz"};
  r.maxTokens = 10;
  f = runOne(r, model, {256}, &tok);
  EXPECT_EQ(f.reason, FinishReason::Length);
  EXPECT_EQ(f.text, "Hello, STO");

  // min_tokens: a stop string completed before it does not count.
  r.stop = {"STOP", "and"};
  r.maxTokens = 30;
  r.minTokens = 12;
  f = runOne(r, model, {256}, &tok);
  EXPECT_EQ(f.text, "Hello, STOP here ");
  EXPECT_EQ(f.reason, FinishReason::Stop);

  // EOS (a special token) ends the request and leaves no text.
  script = bytesOf("ab");
  script.push_back(256);
  r = greedy({65}, 10);
  f = runOne(r, scripted(script, 1), {256}, &tok);
  EXPECT_EQ(f.reason, FinishReason::Stop);
  EXPECT_EQ(f.text, "ab");
  EXPECT_EQ(f.ids, (std::vector<int32_t>{'a', 'b', 256}));
}

TEST(Engine, StreamedTextHoldsBackAPossibleStopString) {
  const Tokenizer tok = byteTokenizer();
  FakeExecutor ex(32, 4, 64, 300);
  ex.model = scripted(bytesOf("abcdeSTxyzST"), 1);
  EngineConfig c = configOf();
  c.vocabSize = 300;
  c.tokenizer = &tok;
  Engine engine(ex, c);
  Request r = greedy({65}, 12);
  r.stop = {"STOP"};
  engine.submit(r);
  std::vector<std::string> chunks;
  while (engine.hasUnfinished())
    for (const RequestOutput &o : engine.step())
      chunks.push_back(o.newText);
  // Up to 3 bytes ("STO" could follow) wait for the next token.
  ASSERT_EQ(chunks.size(), 12u);
  EXPECT_EQ(chunks[0], "");
  EXPECT_EQ(chunks[2], "");
  EXPECT_EQ(chunks[3], "a");
  EXPECT_EQ(chunks[4], "b");
  std::string all;
  for (const std::string &s : chunks)
    all += s;
  EXPECT_EQ(all, "abcdeSTxyzST");
}

TEST(Engine, AbortFreesTheRequestAndReportsIt) {
  FakeExecutor ex(32, 4, 64, kVocab);
  Engine engine(ex, configOf());
  const int64_t a = engine.submit(greedy({1, 2, 3, 4, 5}, 20));
  const int64_t b = engine.submit(greedy({6, 7}, 6));
  engine.step();
  engine.step();
  EXPECT_GT(engine.stats().kvBlocksUsed, 0);
  EXPECT_TRUE(engine.abort(a));
  EXPECT_FALSE(engine.abort(a));
  EXPECT_FALSE(engine.abort(12345));
  const auto out = engine.step();
  bool reported = false;
  for (const RequestOutput &o : out)
    if (o.id == a) {
      EXPECT_TRUE(o.finished);
      EXPECT_EQ(o.finishReason, FinishReason::Abort);
      EXPECT_EQ(finishReasonName(o.finishReason), "abort");
      EXPECT_EQ(o.numOutputTokens, 2);
      reported = true;
    }
  EXPECT_TRUE(reported);
  const auto rest = runToEnd(engine);
  EXPECT_EQ(rest.count(a), 0u);
  EXPECT_EQ(rest.at(b).reason, FinishReason::Length);
  EXPECT_EQ(engine.stats().kvBlocksUsed, 0);
  // A waiting request can be aborted too.
  const int64_t c = engine.submit(greedy({1}, 2));
  EXPECT_TRUE(engine.abort(c));
  EXPECT_TRUE(engine.hasUnfinished());
  EXPECT_EQ(engine.step().size(), 1u);
  EXPECT_FALSE(engine.hasUnfinished());
}

TEST(Engine, RejectsRequestsThatCanNeverBeServed) {
  FakeExecutor ex(8, 4, 64, kVocab); // 32 tokens of KV cache
  Engine engine(ex, configOf(40));
  auto err = [&](Request r) {
    return engineErrorOf([&] { engine.submit(std::move(r)); });
  };
  EXPECT_EQ(err(greedy({}, 4)),
            "the prompt is empty; give at least one token id");
  EXPECT_EQ(err(greedy({1, 50}, 4)),
            "prompt token 1 has id 50, outside the vocabulary [0, 50)");
  EXPECT_EQ(err(greedy({1, -1}, 4)),
            "prompt token 1 has id -1, outside the vocabulary [0, 50)");
  EXPECT_EQ(err(greedy(std::vector<int32_t>(30, 1), 11)),
            "the prompt (30 tokens) plus 11 new tokens exceeds the maximum "
            "model length of 40 tokens (--max-model-len)");
  EXPECT_EQ(err(greedy(std::vector<int32_t>(30, 1), 3)),
            "the KV cache holds 32 tokens (8 blocks of 4) but this request "
            "needs 33 (prompt 30 + 3 new tokens); lower max_tokens or raise "
            "--gpu-memory-utilization");
  EXPECT_EQ(err(greedy({1}, 0)), "max_tokens must be >= 1, got 0");
  Request r = greedy({1}, 4);
  r.minTokens = 5;
  EXPECT_EQ(err(r), "min_tokens must be in [0, max_tokens = 4], got 5");
  r = greedy({1}, 4);
  r.sampling.temperature = -1;
  EXPECT_EQ(err(r), "temperature must be >= 0 (0: greedy), got -1");
  r = greedy({1}, 4);
  r.sampling.topP = 0;
  EXPECT_EQ(err(r), "top_p must be in (0, 1], got 0");
  r = greedy({1}, 4);
  r.logprobs = 21;
  EXPECT_EQ(err(r), "logprobs must be in [0, 20], got 21");
  r = greedy({1}, 4);
  r.stopTokenIds = {77};
  EXPECT_EQ(err(r), "stop token id 77 is outside the vocabulary [0, 50)");
  r = greedy({1}, 4);
  r.stop = {"x"};
  EXPECT_NE(err(r).find("stop strings need the model's tokenizer"),
            std::string::npos);
  // Nothing was queued by the failures.
  EXPECT_FALSE(engine.hasUnfinished());
  EXPECT_EQ(engine.stats().numRequests, 0);
}

TEST(Engine, RejectsLimitsTheExecutorCannotMeet) {
  FakeExecutor ex(8, 4, 64, kVocab);
  EngineConfig c = configOf();
  c.maxNumBatchedTokens = 65;
  EXPECT_EQ(engineErrorOf([&] { Engine e(ex, c); }),
            "--max-num-batched-tokens 65 exceeds the 64 tokens one step of "
            "this executor may hold (the plan's limit, set by solc "
            "--max-num-batched-tokens)");
  c.maxNumBatchedTokens = 16;
  c.maxNumSeqs = 17;
  EXPECT_NE(engineErrorOf([&] {
              Engine e(ex, c);
            }).find("--max-num-seqs 17 exceeds --max-num-batched-tokens 16"),
            std::string::npos);
  c.maxNumSeqs = 0;
  Engine e(ex, c);
  EXPECT_EQ(e.schedulerConfig().maxNumSeqs, 16);
  EXPECT_EQ(e.schedulerConfig().maxNumBatchedTokens, 16);
}

TEST(Engine, ReportsTimesAndStats) {
  FakeExecutor ex(64, 4, 64, kVocab);
  EngineConfig c = configOf();
  Engine engine(ex, c);
  for (int i = 0; i < 5; ++i)
    engine.submit(greedy({1, 2, 3, 4, 5, 6}, 4));
  int finished = 0;
  while (engine.hasUnfinished())
    for (const RequestOutput &o : engine.step()) {
      EXPECT_GE(o.firstTokenTime, o.arrivalTime);
      EXPECT_GE(o.lastTokenTime, o.firstTokenTime);
      EXPECT_GE(o.ttftMs(), 0.0);
      if (o.finished) {
        ++finished;
        EXPECT_EQ(o.numOutputTokens, 4);
        EXPECT_EQ(o.numPromptTokens, 6);
        EXPECT_GE(o.tpotMs(), 0.0);
      }
    }
  EXPECT_EQ(finished, 5);
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.numRequests, 5);
  EXPECT_EQ(s.promptTokens, 30);
  EXPECT_EQ(s.generatedTokens, 20);
  EXPECT_EQ(s.computedTokens, 30 + 15);
  EXPECT_EQ(s.numSteps, 4);
  EXPECT_EQ(s.kvBlocksTotal, 64);
  EXPECT_EQ(s.kvBlocksUsed, 0);
  EXPECT_EQ(s.peakKvBlocksUsed, 15); // 5 x 9 computed tokens in blocks of 4
  EXPECT_EQ(s.peakKvTokens, 45);
  EXPECT_EQ(s.numPreemptions, 0);
}

TEST(Engine, BuildsTheStepBatch) {
  FakeExecutor ex(32, 4, 64, kVocab);
  Engine engine(ex, configOf(40)); // tables of at most 10 blocks
  const std::vector<int32_t> a = {1, 2, 3, 4, 5},
                             b = {9, 8, 7, 6, 5, 4, 3, 2, 1};
  engine.submit(greedy(a, 2));
  engine.submit(greedy(b, 30));
  engine.step();
  const RecordedBatch &first = ex.batches.at(0);
  std::vector<int32_t> tokens = a;
  tokens.insert(tokens.end(), b.begin(), b.end());
  EXPECT_EQ(first.tokens, tokens);
  EXPECT_EQ(first.positions,
            (std::vector<int32_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(first.tokenSeq,
            (std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(first.logitRows, (std::vector<int32_t>{4, 13}));
  EXPECT_EQ(first.numSeqs, 2);
  // 2 and 3 blocks, the width rounded up to 4, padded with block 0.
  EXPECT_EQ(first.maxBlocksPerSeq, 4);
  EXPECT_EQ(first.blockTables, (std::vector<int32_t>{0, 1, 0, 0, 2, 3, 4, 0}));
  runToEnd(engine);
  // b alone, 9 + 29 = 38 positions: 10 blocks, the cap for 40 tokens (not 16).
  EXPECT_EQ(ex.batches.back().maxBlocksPerSeq, 10);
  EXPECT_EQ(ex.batches.back().numSeqs, 1);
}
