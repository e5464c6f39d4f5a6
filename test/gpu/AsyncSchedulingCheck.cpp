//===- AsyncSchedulingCheck.cpp - Chained steps give the same tokens ------===//
//
// sol-async-scheduling-check PLAN: runs request mixes through the engine on
// the CUDA executor twice, with async scheduling (decode steps queued before
// the previous step's ids reach the host, the embedding reading them on the
// device) and without, and checks that every request gets the same ids and
// logprobs. The mixes cover each place a step leaves its ids for the next:
// the one-row greedy LM head's fused argmax key (read in place by one-token
// steps), the argmax kernel's ids and the sampling kernel's ids; each with
// and without CUDA graphs. Also checks that the async runs did chain steps,
// so the comparison is not vacuous. Then, on the executor alone, a fixed
// list of steps in which chained tokens sit beside prompt chunks (the key
// read from a copy) and alone (read in place), queued two deep, against the
// same steps with the ids given; and steps whose logits rows shrink and grow
// across the argmax kernel's row buckets, whose ids must be the argmax of the
// logits they return. (Engine runs whose requests arrive while
// others decode batch differently with and without async scheduling, and
// batch shape may change bf16 rounding, so they are not compared.)
//
// Exit status: 0 passed, 1 a check failed, 2 bad usage or setup error, 77 no
// GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaDriver.h"
#include "runtime/engine/Engine.h"
#include "runtime/executor/ExecutorFactory.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>

namespace {

using namespace sol;

struct Mix {
  const char *name;
  int requests;
  bool sampled;
  bool logprobs;
};

struct Outcome {
  std::map<int, std::vector<int32_t>> ids;
  std::map<int, std::vector<float>> logprobs;
  EngineStats stats;
};

Outcome runMix(const PlanFile &plan, const Mix &mix, bool async, bool graphs) {
  ExecutorOptions options;
  options.maxModelLen = 512;
  options.disableCudaGraphs = !graphs;
  const std::unique_ptr<Executor> ex = makeExecutor(plan, "cuda", options);
  const int64_t vocab = plan.plan().model()->vocab_size();
  EngineConfig config;
  config.vocabSize = vocab;
  config.maxModelLen = 512;
  config.asyncScheduling = async;
  Engine engine(*ex, config);
  std::mt19937 rng(7);
  std::map<int64_t, int> index;
  std::vector<Request> requests;
  for (int i = 0; i < mix.requests; ++i) {
    Request r;
    const int promptLen = 16 + static_cast<int>(rng() % 48);
    for (int t = 0; t < promptLen; ++t)
      r.promptIds.push_back(static_cast<int32_t>(rng() % vocab));
    r.maxTokens = 24 + static_cast<int32_t>(rng() % 40);
    r.ignoreEos = true;
    if (mix.sampled) {
      r.sampling.temperature = 0.7f + 0.1f * static_cast<float>(i % 4);
      r.sampling.topK = i % 3 == 0 ? 40 : 0;
      r.sampling.topP = i % 2 == 0 ? 0.9f : 1.0f;
      r.sampling.seed = 1000 + static_cast<uint64_t>(i);
    }
    if (mix.logprobs)
      r.logprobs = 3;
    requests.push_back(std::move(r));
  }
  for (int i = 0; i < mix.requests; ++i)
    index[engine.submit(requests[static_cast<size_t>(i)])] = i;
  Outcome o;
  while (engine.hasUnfinished())
    for (const RequestOutput &out : engine.step()) {
      const int i = index.at(out.id);
      o.ids[i].insert(o.ids[i].end(), out.newTokenIds.begin(),
                      out.newTokenIds.end());
      o.logprobs[i].insert(o.logprobs[i].end(), out.logprobs.begin(),
                           out.logprobs.end());
    }
  o.stats = engine.stats();
  return o;
}

/// Two sequences on the executor: A decodes from the first step, B's prompt
/// joins in steps 2 and 3. Returns the ids of every step; with `chained`,
/// decode tokens are chained rows and steps are queued two deep.
std::vector<std::vector<int32_t>> runExecutorSteps(const PlanFile &plan,
                                                   bool chained, bool graphs) {
  ExecutorOptions options;
  options.maxModelLen = 64;
  options.disableCudaGraphs = !graphs;
  const std::unique_ptr<Executor> ex = makeExecutor(plan, "cuda", options);
  const auto vocab = static_cast<int32_t>(plan.plan().model()->vocab_size());
  const int32_t bs = ex->blockSize();
  const int32_t blocksPerSeq = (64 + bs - 1) / bs;
  std::vector<int32_t> table(2 * static_cast<size_t>(blocksPerSeq));
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = static_cast<int32_t>(i);
  std::vector<int32_t> promptA(8), promptB(8);
  for (int i = 0; i < 8; ++i) {
    promptA[static_cast<size_t>(i)] = (1009 * i + 17) % vocab;
    promptB[static_cast<size_t>(i)] = (733 * i + 5) % vocab;
  }
  // A step: its tokens (sequence, position, id; -1: the id the previous
  // step chose for that sequence) and its logits rows (token indices).
  struct Tok {
    int seq, pos;
    int32_t id;
  };
  struct Step {
    std::vector<Tok> toks;
    std::vector<int32_t> rows;
  };
  auto prompt = [](int seq, const std::vector<int32_t> &p, int from, int to) {
    std::vector<Tok> t;
    for (int i = from; i < to; ++i)
      t.push_back({seq, i, p[static_cast<size_t>(i)]});
    return t;
  };
  auto join = [](std::vector<Tok> a, const std::vector<Tok> &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  // Comments: where the step's chained ids come from.
  const std::vector<Step> steps = {
      {prompt(0, promptA, 0, 8), {7}},                        // (one row)
      {join({{0, 8, -1}}, prompt(1, promptB, 0, 4)), {0}},    // key copy
      {join({{0, 9, -1}}, prompt(1, promptB, 4, 8)), {0, 4}}, // key copy
      {{{0, 10, -1}, {1, 8, -1}}, {0, 1}},                    // argmax ids
      {{{0, 11, -1}}, {0}},                                   // argmax ids
      {{{0, 12, -1}}, {0}},                                   // key in place
      {{{0, 13, -1}}, {0}},                                   // key in place
      {{{0, 14, -1}, {1, 9, promptB[0]}}, {0, 1}},            // key copy
  };
  std::vector<std::vector<int32_t>> results(steps.size());
  // Per step, the logits row of each sequence (-1: none).
  std::vector<std::vector<int>> rowOfSeq(steps.size(), std::vector<int>(2, -1));
  struct Staged {
    std::vector<int32_t> tokens, positions, tokenSeq, rows, chainedRows;
  };
  std::vector<Staged> staged(steps.size());
  auto stage = [&](size_t k) {
    Staged &st = staged[k];
    for (const Tok &t : steps[k].toks) {
      st.positions.push_back(t.pos);
      st.tokenSeq.push_back(t.seq);
      int32_t id = t.id, chainedRow = -1;
      if (id < 0) {
        const int r = rowOfSeq.at(k - 1).at(static_cast<size_t>(t.seq));
        if (r < 0)
          fail("step ", k, " chains sequence ", t.seq,
               ", which had no logits row in the step before");
        if (chained)
          id = 0, chainedRow = r;
        else
          id = results[k - 1][static_cast<size_t>(r)];
      }
      st.tokens.push_back(id);
      st.chainedRows.push_back(chainedRow);
    }
    if (!chained)
      st.chainedRows.clear();
    st.rows = steps[k].rows;
    for (size_t r = 0; r < st.rows.size(); ++r)
      rowOfSeq[k][static_cast<size_t>(
          steps[k].toks[static_cast<size_t>(st.rows[r])].seq)] =
          static_cast<int>(r);
    results[k].assign(st.rows.size(), -1);
    StepBatch b;
    b.tokens = st.tokens;
    b.positions = st.positions;
    b.tokenSeq = st.tokenSeq;
    b.logitRows = st.rows;
    b.blockTables = table;
    b.numSeqs = 2;
    b.maxBlocksPerSeq = blocksPerSeq;
    b.chainedRows = st.chainedRows;
    StepOutput out;
    out.argmax = results[k];
    return std::pair{b, out};
  };
  if (chained) {
    // Two deep: step k + 1 is queued before step k's ids are read.
    auto [b0, o0] = stage(0);
    ex->submitStep(b0, o0);
    for (size_t k = 1; k < steps.size(); ++k) {
      auto [b, o] = stage(k);
      ex->submitStep(b, o);
      ex->finishStep();
    }
    ex->finishStep();
  } else {
    for (size_t k = 0; k < steps.size(); ++k) {
      auto [b, o] = stage(k);
      ex->step(b, o);
    }
  }
  return results;
}

/// Steps of one sequence whose logits rows shrink and grow across the argmax
/// kernel's row buckets (8, 4, 2, 1, 3, 5, 2 rows: every token of the step
/// a row, after a 3-token step that asks for no row), each returning its
/// logits and ids: the ids must be the argmax of those logits (lowest index
/// on ties), whatever the step before left in the argmax workspace. Returns
/// the number of rows whose id was not.
int runArgmaxAcrossRowCounts(const PlanFile &plan, bool graphs) {
  ExecutorOptions options;
  options.maxModelLen = 128;
  options.disableCudaGraphs = !graphs;
  const std::unique_ptr<Executor> ex = makeExecutor(plan, "cuda", options);
  const auto vocab = static_cast<int32_t>(plan.plan().model()->vocab_size());
  const int32_t blocksPerSeq = (128 + ex->blockSize() - 1) / ex->blockSize();
  std::vector<int32_t> table(static_cast<size_t>(blocksPerSeq));
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = static_cast<int32_t>(i);
  struct Shape {
    int tokens, rows;
  };
  int wrong = 0, pos = 0;
  for (const Shape sh : {Shape{8, 8}, Shape{4, 4}, Shape{2, 2}, Shape{1, 1},
                         Shape{3, 0}, Shape{3, 3}, Shape{5, 5}, Shape{2, 2}}) {
    std::vector<int32_t> tokens, positions,
        tokenSeq(static_cast<size_t>(sh.tokens)), logitRows,
        ids(static_cast<size_t>(sh.rows), -1);
    for (int i = 0; i < sh.tokens; ++i) {
      tokens.push_back((977 * (pos + 1)) % vocab);
      positions.push_back(pos++);
    }
    for (int r = 0; r < sh.rows; ++r)
      logitRows.push_back(sh.tokens - sh.rows + r);
    std::vector<float> logits(static_cast<size_t>(sh.rows) *
                              static_cast<size_t>(vocab));
    StepBatch b;
    b.tokens = tokens;
    b.positions = positions;
    b.tokenSeq = tokenSeq;
    b.logitRows = logitRows;
    b.blockTables = table;
    b.numSeqs = 1;
    b.maxBlocksPerSeq = blocksPerSeq;
    StepOutput out;
    out.argmax = ids;
    out.logits = logits;
    ex->step(b, out);
    for (int r = 0; r < sh.rows; ++r) {
      const float *row = logits.data() + static_cast<size_t>(r) * vocab;
      const auto best = std::max_element(row, row + vocab) - row;
      wrong += ids[static_cast<size_t>(r)] != static_cast<int32_t>(best);
    }
  }
  return wrong;
}

int run(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sol-async-scheduling-check PLAN\n");
    return 2;
  }
  if (!cuda::cudaAvailable()) {
    std::fprintf(stderr, "sol-async-scheduling-check: no CUDA GPU; skipped\n");
    return 77;
  }
  const PlanFile plan = PlanFile::open(argv[1]);
  const Mix mixes[] = {
      {"1 greedy request (fused argmax key)", 1, false, false},
      {"8 greedy requests (argmax kernel)", 8, false, false},
      {"1 sampled request + logprobs", 1, true, true},
      {"8 sampled requests (sampling kernel)", 8, true, false},
      {"8 greedy requests + logprobs", 8, false, true},
  };
  bool allPassed = true;
  for (const Mix &mix : mixes)
    for (const bool graphs : {true, false}) {
      const Outcome sync = runMix(plan, mix, false, graphs);
      const Outcome async = runMix(plan, mix, true, graphs);
      int same = 0;
      for (const auto &[i, ids] : sync.ids)
        same += async.ids.count(i) && async.ids.at(i) == ids &&
                async.logprobs.at(i) == sync.logprobs.at(i);
      const bool passed =
          same == mix.requests &&
          static_cast<int>(sync.ids.size()) == mix.requests &&
          async.stats.chainedSteps > 0 && sync.stats.chainedSteps == 0 &&
          async.stats.generatedTokens == sync.stats.generatedTokens;
      allPassed = allPassed && passed;
      std::printf("%-40s %-9s %s  %d/%d requests identical, %lld of %lld "
                  "steps chained, %lld tokens\n",
                  mix.name, graphs ? "graphs" : "no graphs",
                  passed ? "ok  " : "FAIL", same, mix.requests,
                  static_cast<long long>(async.stats.chainedSteps),
                  static_cast<long long>(async.stats.numSteps),
                  static_cast<long long>(async.stats.generatedTokens));
    }
  for (const bool graphs : {true, false}) {
    const auto given = runExecutorSteps(plan, false, graphs);
    const auto chained = runExecutorSteps(plan, true, graphs);
    const bool passed = given == chained;
    allPassed = allPassed && passed;
    std::string ids;
    for (const auto &step : chained)
      ids += sol::cat(ids.empty() ? "" : " | ", step.front(),
                      step.size() > 1 ? sol::cat(",", step[1]) : "");
    std::printf("%-40s %-9s %s  ids %s\n", "executor: chained beside prompts",
                graphs ? "graphs" : "no graphs", passed ? "ok  " : "FAIL",
                ids.c_str());
  }
  for (const bool graphs : {true, false}) {
    const int wrong = runArgmaxAcrossRowCounts(plan, graphs);
    allPassed = allPassed && wrong == 0;
    std::printf("%-40s %-9s %s  %d of 25 rows with an id other than the "
                "argmax of their logits\n",
                "executor: argmax over 8,4,2,1,3,5,2 rows",
                graphs ? "graphs" : "no graphs", wrong == 0 ? "ok  " : "FAIL",
                wrong);
  }
  std::printf("\n%s\n", allPassed ? "ALL CHECKS PASSED" : "SOME CHECKS FAILED");
  return allPassed ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "sol-async-scheduling-check: %s\n", e.what());
    return 2;
  }
}
