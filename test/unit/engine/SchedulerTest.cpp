//===- SchedulerTest.cpp - Budgets, chunked prefill, FCFS, preemption -----===//
#include "runtime/engine/Scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <set>

using namespace sol;

namespace {

/// A scheduler driven without an executor: every drawn token is 7.
struct Sim {
  Sim(int32_t numBlocks, int32_t blockSize, SchedulerConfig config,
      bool prefixCaching = false)
      : blocks(numBlocks, blockSize, prefixCaching), sched(config, blocks) {}

  Sequence &add(int32_t promptLen, int32_t maxTokens, int32_t firstId = 1) {
    Request r;
    for (int32_t i = 0; i < promptLen; ++i)
      r.promptIds.push_back(firstId + i);
    r.maxTokens = maxTokens;
    auto seq = std::make_unique<Sequence>(static_cast<int64_t>(seqs.size()),
                                          std::move(r), 0,
                                          std::span<const int32_t>(), nullptr);
    sched.add(*seq);
    seqs.push_back(std::move(seq));
    return *seqs.back();
  }

  Schedule step() {
    Schedule s = sched.schedule();
    sched.commit(s);
    for (const ScheduledChunk &c : s.chunks) {
      if (!c.sample)
        continue;
      c.seq->appendOutput(7);
      if (c.seq->numOutput() >= c.seq->request.maxTokens) {
        sched.remove(*c.seq);
        c.seq->status = SequenceStatus::Finished;
      }
    }
    return s;
  }

  bool done() const {
    return sched.running().empty() && sched.waiting().empty();
  }

  BlockManager blocks;
  Scheduler sched;
  std::vector<std::unique_ptr<Sequence>> seqs;
};

struct Piece {
  int64_t id;
  int32_t numTokens;
  bool sample;
  bool operator==(const Piece &) const = default;
};

std::vector<Piece> pieces(const Schedule &s) {
  std::vector<Piece> out;
  for (const ScheduledChunk &c : s.chunks)
    out.push_back({c.seq->id, c.numTokens, c.sample});
  return out;
}

std::ostream &operator<<(std::ostream &os, const Piece &p) {
  return os << "{" << p.id << ", " << p.numTokens << (p.sample ? ", s}" : "}");
}

} // namespace

TEST(Scheduler, ChunksALongPromptToTheBudget) {
  Sim sim(16, 4, {4, 4});
  sim.add(10, 3);
  EXPECT_EQ(pieces(sim.step()), (std::vector<Piece>{{0, 4, false}}));
  EXPECT_EQ(pieces(sim.step()), (std::vector<Piece>{{0, 4, false}}));
  EXPECT_EQ(pieces(sim.step()), (std::vector<Piece>{{0, 2, true}}));
  EXPECT_EQ(pieces(sim.step()), (std::vector<Piece>{{0, 1, true}}));
  EXPECT_EQ(pieces(sim.step()), (std::vector<Piece>{{0, 1, true}}));
  EXPECT_TRUE(sim.done());
  EXPECT_TRUE(sim.step().empty());
  EXPECT_EQ(sim.blocks.numReferenced(), 0);
}

TEST(Scheduler, DecodesFirstThenPromptChunksThenAdmissions) {
  Sim sim(32, 4, {8, 6});
  sim.add(3, 6);  // 0
  sim.add(10, 2); // 1
  sim.add(2, 2);  // 2
  // Step 1: 0 whole, 1 gets the other 3 tokens of the budget.
  EXPECT_EQ(pieces(sim.step()),
            (std::vector<Piece>{{0, 3, true}, {1, 3, false}}));
  // Step 2: 0 decodes first; 1 takes the rest (5 of its 7); 2 must wait.
  EXPECT_EQ(pieces(sim.step()),
            (std::vector<Piece>{{0, 1, true}, {1, 5, false}}));
  // Step 3: 0 decodes, 1 finishes its prompt, 2 is admitted whole.
  EXPECT_EQ(pieces(sim.step()),
            (std::vector<Piece>{{0, 1, true}, {1, 2, true}, {2, 2, true}}));
  // Step 4: decodes only, oldest first.
  EXPECT_EQ(pieces(sim.step()),
            (std::vector<Piece>{{0, 1, true}, {1, 1, true}, {2, 1, true}}));
  while (!sim.done())
    sim.step();
  EXPECT_EQ(sim.blocks.numReferenced(), 0);
}

TEST(Scheduler, RespectsTheBudgetAndMaxNumSeqs) {
  Sim sim(64, 4, {4, 16});
  std::mt19937 rng(3);
  for (int i = 0; i < 60; ++i)
    sim.add(1 + static_cast<int32_t>(rng() % 30),
            1 + static_cast<int32_t>(rng() % 10));
  int steps = 0;
  while (!sim.done()) {
    const Schedule s = sim.sched.schedule();
    ASSERT_FALSE(s.empty()) << "stalled with work left";
    int32_t total = 0;
    std::set<int64_t> ids;
    for (const ScheduledChunk &c : s.chunks) {
      total += c.numTokens;
      EXPECT_GT(c.numTokens, 0);
      EXPECT_TRUE(ids.insert(c.seq->id).second) << "a sequence twice";
    }
    EXPECT_EQ(total, s.numTokens);
    EXPECT_LE(total, 16);
    EXPECT_LE(sim.sched.running().size(), 4u);
    sim.sched.commit(s);
    for (const ScheduledChunk &c : s.chunks)
      if (c.sample) {
        c.seq->appendOutput(7);
        if (c.seq->numOutput() >= c.seq->request.maxTokens)
          sim.sched.remove(*c.seq);
      }
    ++steps;
    ASSERT_LT(steps, 10000);
  }
  for (const auto &seq : sim.seqs)
    EXPECT_EQ(seq->numOutput(), seq->request.maxTokens);
  EXPECT_EQ(sim.blocks.numReferenced(), 0);
  EXPECT_EQ(sim.blocks.numFree(), 64);
}

TEST(Scheduler, AdmitsFirstComeFirstServed) {
  // 8 blocks of 4 = 32 tokens.
  Sim sim(8, 4, {8, 32});
  sim.add(20, 4); // 0: 5 blocks for its prompt
  sim.step();
  sim.add(16, 4); // 1: needs 4 blocks, 3 are free
  sim.add(2, 2);  // 2: would fit, but 1 came first
  for (int i = 0; i < 3; ++i) {
    const std::vector<Piece> p = pieces(sim.step());
    EXPECT_EQ(p, (std::vector<Piece>{{0, 1, true}})) << "step " << i;
  }
  // 0 finished: 1 is admitted, then 2 behind it.
  EXPECT_EQ(pieces(sim.step()),
            (std::vector<Piece>{{1, 16, true}, {2, 2, true}}));
  while (!sim.done())
    sim.step();
  EXPECT_EQ(sim.blocks.numReferenced(), 0);
}

TEST(Scheduler, PreemptsTheMostRecentlyAdmittedAndResumesIt) {
  // 4 blocks of 4 tokens; each sequence grows to 4 + 8 = 12 tokens.
  Sim sim(4, 4, {4, 16});
  Sequence &a = sim.add(4, 8);
  Sequence &b = sim.add(4, 8, 100);
  EXPECT_EQ(pieces(sim.step()),
            (std::vector<Piece>{{0, 4, true}, {1, 4, true}}));
  // Both decode in a second block each (positions 4..7).
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(pieces(sim.step()),
              (std::vector<Piece>{{0, 1, true}, {1, 1, true}}));
  EXPECT_EQ(sim.blocks.numAvailable(), 0);
  // Position 8 needs a third block: b, admitted last, is preempted.
  const Schedule s = sim.step();
  EXPECT_EQ(pieces(s), (std::vector<Piece>{{0, 1, true}}));
  EXPECT_EQ(s.numPreempted, 1);
  EXPECT_EQ(b.numPreemptions, 1);
  EXPECT_EQ(b.status, SequenceStatus::Waiting);
  EXPECT_EQ(b.numComputed, 0);
  EXPECT_TRUE(b.blocks.blocks.empty());
  ASSERT_EQ(sim.sched.waiting().size(), 1u);
  EXPECT_EQ(sim.sched.waiting().front(), &b);
  EXPECT_EQ(b.numOutput(), 5); // kept: recomputed, not regenerated
  EXPECT_EQ(sim.sched.numPreemptions(), 1);
  // a runs alone until it is done; b then recomputes its 4 + 5 tokens in
  // one chunk and continues where it stopped.
  while (a.status != SequenceStatus::Finished) {
    const Schedule t = sim.step();
    EXPECT_EQ(t.chunks.size(), 1u);
  }
  EXPECT_EQ(pieces(sim.step()), (std::vector<Piece>{{1, 9, true}}));
  EXPECT_EQ(b.numOutput(), 6);
  while (!sim.done())
    sim.step();
  EXPECT_EQ(b.numOutput(), 8);
  EXPECT_EQ(sim.sched.numPreemptions(), 1);
  EXPECT_EQ(sim.blocks.numReferenced(), 0);
  EXPECT_EQ(sim.blocks.numFree(), 4);
}

TEST(Scheduler, PreemptsItselfWhenItIsTheNewest) {
  // 3 blocks of 2: a (older) holds 2, b holds 1 and needs a second.
  Sim sim(3, 2, {4, 8});
  Sequence &a = sim.add(3, 3); // blocks for 3 tokens: 2
  Sequence &b = sim.add(2, 3); // 1 block
  sim.step();
  // a decodes position 3 (block 2 of 2 has room); b needs position 2, a new
  // block: none, so b (the newest) preempts itself.
  const Schedule s = sim.step();
  EXPECT_EQ(pieces(s), (std::vector<Piece>{{0, 1, true}}));
  EXPECT_EQ(b.numPreemptions, 1);
  EXPECT_EQ(a.numPreemptions, 0);
  while (!sim.done())
    sim.step();
  EXPECT_EQ(a.numOutput(), 3);
  EXPECT_EQ(b.numOutput(), 3);
  EXPECT_EQ(sim.blocks.numFree(), 3);
}

TEST(Scheduler, NewSequencesReuseCachedPrefixBlocks) {
  Sim sim(16, 4, {4, 64}, /*prefixCaching=*/true);
  Sequence &a = sim.add(10, 1);
  sim.step(); // a computes 10 tokens, 2 full blocks cached, and finishes
  Sequence &b = sim.add(10, 1); // the same prompt
  const Schedule s = sim.step();
  // 2 blocks (8 tokens) from the cache; the last 2 tokens are computed.
  EXPECT_EQ(pieces(s), (std::vector<Piece>{{1, 2, true}}));
  EXPECT_EQ(b.numCachedTokens, 8);
  EXPECT_EQ(a.numCachedTokens, 0);
  // A prompt of exactly two blocks still computes its last token.
  Sequence &c = sim.add(8, 1);
  EXPECT_EQ(pieces(sim.step()), (std::vector<Piece>{{2, 4, true}}));
  EXPECT_EQ(c.numCachedTokens, 4);
  EXPECT_EQ(sim.blocks.queriedTokens(), 28);
  EXPECT_EQ(sim.blocks.hitTokens(), 12);
}
