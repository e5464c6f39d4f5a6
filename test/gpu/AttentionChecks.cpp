//===- AttentionChecks.cpp - rope_kv_write and paged_attention ------------===//
//
// rope_kv_write against the bf16 RoPE reference (Llama's table, partial
// rotary tables with pass-through pairs and attention scaling != 1, and a
// LongRoPE table whose switch falls inside the tested positions), and
// paged_attention against the float64 reference: prefill and decode at
// several split counts (global and cluster merges), sliding windows, blocks
// of 16 and 32, head dims 64, 80, 96, 128 and 256 over GQA groups 1 to 8,
// and the soft-capping variant (Gemma 2). Batch-1 decode at 1,024 positions
// is timed for every head dim.
//

#include "Checks.h"
#include "PagedBatch.h"
#include "ReferenceKernels.h"

#include <cmath>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;
using cuda::KernelInstance;
using cuda::PagedAttentionSpec;
using cuda::RopeKvWriteSpec;

struct HeadShape {
  int qHeads, kvHeads, headDim;
};

const HeadShape kHeadShapes[] = {
    {32, 8, 64},  // Llama-3.2-1B
    {16, 8, 128}, // Qwen3-0.6B
    {28, 4, 128}, // Qwen2.5-7B
    {32, 8, 128}, // Llama-3.1-8B
};

// Head dims whose lanes a position pads (80, 96) or fills a warp (256).
const HeadShape kMoreHeadShapes[] = {
    {32, 32, 80}, // Phi-2: group 1
    {32, 8, 80},  // group 4
    {32, 32, 96}, // Phi-3-mini: group 1
    {28, 4, 96},  // group 7
    {8, 4, 256},  // Gemma-2-2B: group 2
    {4, 1, 256},  // Gemma-3-1B: group 4
    {16, 2, 256}, // group 8
};

// Gemma 2's attention soft-cap.
constexpr float kSoftcap = 50.0f;

void checkRope(Checker &c, const HeadShape &h, const RopeTable &table) {
  const RopeKvWriteSpec spec{h.qHeads, h.kvHeads, h.headDim};
  const KernelInstance instance = spec.instance();
  const PagedBatch batch = makePagedBatch(
      c.rng, {{1, 1}, {40, 40}, {5000, 1}, {70, 3}, {8191, 2}}, 2);
  const int hd = h.headDim;
  const int rowElems = (h.qHeads + 2 * h.kvHeads) * hd;
  const std::vector<Bf16> qkv = randomBf16(
      c.rng, static_cast<std::size_t>(batch.tokens) * rowElems, -2, 2);
  DeviceBuffer dQkv = c.upload(qkv);
  const std::size_t cacheElems =
      static_cast<std::size_t>(batch.numBlocks) * 16 * h.kvHeads * hd;
  DeviceBuffer dK = c.poisoned(cacheElems * 2), dV = c.poisoned(cacheElems * 2);
  const DeviceBuffer dFreq = c.upload(table.invFreq);
  const DeviceBuffer dPos = c.upload(batch.positions);
  const DeviceBuffer dSeq = c.upload(batch.tokenSeq);
  const DeviceBuffer dTables = c.upload(batch.blockTables);
  const cuda::Kernel &kernel = c.kernels.kernel(instance);
  std::function<void(int)> launch = [&](int) {
    kernel.launch(
        spec.dims(batch.tokens), c.stream,
        kernels::RopeKvWriteArgs{.qkv = dQkv.address(),
                                 .kCache = dK.address(),
                                 .vCache = dV.address(),
                                 .invFreq = dFreq.address(),
                                 .positions = dPos.address(),
                                 .tokenSeq = dSeq.address(),
                                 .blockTables = dTables.address(),
                                 .attentionScaling = table.attentionScaling,
                                 .maxBlocks = batch.maxBlocks,
                                 .tokens = batch.tokens,
                                 .ropeLongFrom = table.longFrom});
  };
  launch(0);
  const std::vector<Bf16> out = c.download<Bf16>(dQkv);
  const std::vector<Bf16> kCache = c.download<Bf16>(dK);
  const std::vector<Bf16> vCache = c.download<Bf16>(dV);

  std::vector<float> got;
  std::vector<double> ref;
  std::size_t exactMismatches = 0, cacheWrites = 0;
  for (int t = 0; t < batch.tokens; ++t) {
    const std::size_t row = static_cast<std::size_t>(t) * rowElems;
    const int seq = batch.tokenSeq[t];
    if (seq < 0) { // padding: untouched
      for (int i = 0; i < rowElems; ++i)
        exactMismatches += out[row + i] != qkv[row + i];
      continue;
    }
    for (int head = 0; head < h.qHeads + h.kvHeads; ++head) {
      const std::vector<float> x =
          toFloat(std::span<const Bf16>(qkv.data() + row + head * hd, hd));
      const std::vector<float> expected =
          referenceRope(x, batch.positions[t], table);
      for (int d = 0; d < hd; ++d) {
        got.push_back(bf16ToFloat(out[row + head * hd + d]));
        ref.push_back(expected[d]);
      }
    }
    const long long slot = batch.slot(seq, batch.positions[t]);
    for (int g = 0; g < h.kvHeads; ++g)
      for (int d = 0; d < hd; ++d) {
        const std::size_t c0 = (slot * h.kvHeads + g) * hd + d;
        const std::size_t kAt = row + (h.qHeads + g) * hd + d;
        const std::size_t vAt = row + (h.qHeads + h.kvHeads + g) * hd + d;
        exactMismatches += kCache[c0] != out[kAt]; // the rotated k
        exactMismatches += vCache[c0] != qkv[vAt]; // v, copied as is
        exactMismatches += out[vAt] != qkv[vAt];   // v left in place
        cacheWrites += 2;
      }
  }
  // Nothing but the tokens' slots may be written.
  const std::size_t written =
      (cacheElems - countPoison(kCache)) + (cacheElems - countPoison(vCache));
  CheckRecord r = makeRecord(c, "rope_kv_write",
                             sol::cat(h.qHeads, "/", h.kvHeads, "x", hd,
                                      " T=", batch.tokens, " ", table.label),
                             instance);
  judge(r, relativeL2(got, ref), 1e-2, 0);
  if (exactMismatches || written != cacheWrites) {
    r.passed = false;
    r.note += sol::cat(exactMismatches, " cache/V mismatches, ", written,
                       " cache elements written, expected ", cacheWrites);
  }
  r.bytes = 2.0 * batch.tokens * rowElems * 2;
  c.finish(std::move(r), &launch);
}

struct AttentionCase {
  std::string label;
  std::vector<SequenceSpec> seqs;
  int padding;
  int window;
  std::vector<int> splits; // 0 = PagedAttentionSpec::chooseSplits
  bool timed;
  bool checked;
  int blockSize = 16; // the KV layout's tokens per block
  float softcap = 0.0f;
  bool sinks = false; // random per-head sinks (gpt-oss)
};

// Runs one case at every split count, against the CPU reference.
void runAttentionCase(Checker &c, const HeadShape &h, const AttentionCase &ac) {
  PagedAttentionSpec spec{h.qHeads, h.kvHeads, h.headDim, ac.blockSize};
  spec.softcap = ac.softcap > 0.0f;
  const KernelInstance instance = spec.instance();
  const PagedBatch batch =
      makePagedBatch(c.rng, ac.seqs, ac.padding, ac.blockSize);
  const int hd = h.headDim;
  const int rowElems = (h.qHeads + 2 * h.kvHeads) * hd;
  std::vector<Bf16> qkv = randomBf16(
      c.rng, static_cast<std::size_t>(batch.tokens) * rowElems, -1, 1);
  for (int t = 0; t < batch.tokens; ++t) // larger q: a peakier softmax
    for (int i = 0; i < h.qHeads * hd; ++i) {
      Bf16 &v = qkv[static_cast<std::size_t>(t) * rowElems + i];
      v = floatToBf16(bf16ToFloat(v) * 3.0f);
    }
  const std::size_t slotElems = static_cast<std::size_t>(h.kvHeads) * hd;
  const std::size_t cacheElems =
      static_cast<std::size_t>(batch.numBlocks) * ac.blockSize * slotElems;
  std::vector<Bf16> kCache = randomBf16(c.rng, cacheElems, -1, 1);
  std::vector<Bf16> vCache = randomBf16(c.rng, cacheElems, -1, 1);
  const std::vector<bool> live = batch.liveSlots();
  for (std::size_t s = 0; s < live.size(); ++s)
    if (!live[s])
      for (std::size_t i = 0; i < slotElems; ++i) {
        kCache[s * slotElems + i] = kPoisonBf16;
        vCache[s * slotElems + i] = kPoisonBf16;
      }
  int maxContext = 0;
  long long kvPositions = 0, scorePairs = 0;
  for (int t = 0; t < batch.tokens; ++t) {
    if (batch.tokenSeq[t] < 0)
      continue;
    const int pos = batch.positions[t];
    const int lo = ac.window > 0 ? std::max(0, pos - ac.window + 1) : 0;
    maxContext = std::max(maxContext, pos + 1);
    scorePairs += pos + 1 - lo;
  }
  for (std::size_t s = 0; s < batch.contexts.size(); ++s)
    kvPositions += batch.contexts[s];

  // Timed decode cases rotate through cache copies larger than L2.
  const int copies =
      ac.timed && c.options.timing
          ? rotationCopies(2 * cacheElems * 2, c.context.l2CacheBytes(), 16)
          : 1;
  std::vector<DeviceBuffer> dK, dV, dTables;
  for (int copy = 0; copy < copies; ++copy) {
    dK.push_back(c.upload(kCache));
    dV.push_back(c.upload(vCache));
  }
  dTables.push_back(c.upload(batch.blockTables));
  const DeviceBuffer dQkv = c.upload(qkv);
  const DeviceBuffer dPos = c.upload(batch.positions);
  const DeviceBuffer dSeq = c.upload(batch.tokenSeq);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const AttentionSinks sinks = randomSinks(c.rng, ac.sinks ? h.qHeads : 0);
  const DeviceBuffer dSinks =
      c.upload(ac.sinks ? sinks.bf16 : std::vector<Bf16>(1));

  std::vector<double> ref;
  if (ac.checked) {
    AttentionProblem p{h.qHeads,
                       h.kvHeads,
                       hd,
                       ac.blockSize,
                       batch.tokens,
                       batch.maxBlocks,
                       qkv,
                       kCache,
                       vCache,
                       batch.positions,
                       batch.tokenSeq,
                       batch.blockTables,
                       scale,
                       ac.window};
    p.softcap = ac.softcap;
    p.sinks = sinks.values;
    ref = referenceAttention(p);
  }

  const cuda::Kernel &attention = c.kernels.kernel(instance);
  for (const SplitRun &run :
       splitRuns(c, spec, batch.tokens, maxContext, ac.splits)) {
    const int splits = run.splits;
    const bool cluster = run.cluster;
    PagedAttentionSpec launchSpec = spec;
    launchSpec.clusterMerge = cluster;
    DeviceBuffer dOut =
        c.poisoned(static_cast<std::size_t>(batch.tokens) * h.qHeads * hd * 2);
    const SplitWorkspace work = splitWorkspace(c, spec, batch.tokens, splits);
    float *partials = work.partials();
    unsigned *arrivals = work.arrivals();
    std::function<void(int)> launch = [&](int rotation) {
      const int copy = rotation % copies;
      attention.launch(launchSpec.dims(batch.tokens, splits, kClusterCheckSMs),
                       c.stream,
                       kernels::PagedAttentionArgs{
                           .out = dOut.address(),
                           .qkv = dQkv.address(),
                           .kCache = dK[copy].address(),
                           .vCache = dV[copy].address(),
                           .positions = dPos.address(),
                           .tokenSeq = dSeq.address(),
                           .blockTables = dTables[0].address(),
                           .partials = partials,
                           .arrivals = arrivals,
                           .maxBlocks = batch.maxBlocks,
                           .scale = scale,
                           .slidingWindow = ac.window,
                           .tokens = batch.tokens,
                           .softcap = ac.softcap,
                           .sinks = ac.sinks ? dSinks.address() : 0});
    };
    launch(0);
    const std::vector<Bf16> out = c.download<Bf16>(dOut);
    // A second launch must reproduce the first bit for bit (the arrival
    // counters of split merging are back at zero).
    bool repeatable = true;
    if (splits > 1) {
      dOut.fillBytes(0xff, c.stream);
      launch(0);
      repeatable = c.download<Bf16>(dOut) == out;
    }
    CheckRecord r = makeRecord(
        c, "attention",
        sol::cat(h.qHeads, "/", h.kvHeads, "x", hd, " ", ac.label, " BS=",
                 ac.blockSize, " splits=", splits, cluster ? " cluster" : "",
                 ac.softcap > 0.0f ? sol::cat(" softcap=", ac.softcap)
                                   : std::string(),
                 ac.sinks ? " sinks" : ""),
        instance);
    if (ac.checked) {
      judge(r, relativeL2(toFloat(out), ref), 1e-2, countPoison(out));
    } else {
      r.unwritten = countPoison(out);
      r.passed = r.unwritten == 0;
    }
    if (!repeatable) {
      r.passed = false;
      r.note += "a second launch gave a different result; ";
    }
    // K and V of every attended position once per kv head, q in, out.
    r.bytes = 2.0 * static_cast<double>(kvPositions) * slotElems * 2 +
              2.0 * batch.tokens * h.qHeads * hd * 2;
    r.flops = 4.0 * static_cast<double>(scorePairs) * h.qHeads * hd;
    c.finish(std::move(r), ac.timed ? &launch : nullptr);
  }
}

std::vector<SequenceSpec> decodeBatch(int sequences, int context) {
  return std::vector<SequenceSpec>(sequences, SequenceSpec{context, 1});
}

void checkAttention(Checker &c) {
  const bool quick = c.options.quick;
  for (const HeadShape &h : kHeadShapes) {
    const bool first = &h == &kHeadShapes[0];
    std::vector<AttentionCase> cases = {
        {"prefill",
         {{1, 1}, {37, 37}, {300, 300}, {500, 100}},
         2,
         0,
         {1, 3},
         false,
         true},
        {"decode",
         {{1, 1},
          {15, 1},
          {16, 1},
          {17, 1},
          {100, 1},
          {1000, 1},
          {2500, 1},
          {4096, 1}},
         1,
         0,
         {1, 0, 7},
         false,
         true},
    };
    // A bf16 cache in blocks of 32 (sol-plan-kv-cache's choice for head
    // dim 64): decode with splits and a prefill.
    cases.push_back({"decode",
                     {{1, 1}, {33, 1}, {100, 1}, {2500, 1}},
                     1,
                     0,
                     {1, 0, 5},
                     false,
                     true,
                     32});
    cases.push_back(
        {"prefill", {{37, 37}, {300, 100}}, 1, 0, {1, 3}, false, true, 32});
    if (first) {
      cases.push_back({"window=64",
                       {{300, 300}, {1000, 1}, {64, 2}},
                       1,
                       64,
                       {1, 4},
                       false,
                       true});
      cases.push_back({"window=1", {{50, 50}}, 0, 1, {1}, false, true});
    }
    if (!quick) {
      cases.push_back({"decode T=1 ctx=4096",
                       decodeBatch(1, 4096),
                       0,
                       0,
                       {1, 0},
                       true,
                       true});
      cases.push_back({"decode T=8 ctx=4096",
                       decodeBatch(8, 4096),
                       0,
                       0,
                       {1, 0},
                       true,
                       true});
      cases.push_back({"decode T=32 ctx=1024",
                       decodeBatch(32, 1024),
                       0,
                       0,
                       {1, 0},
                       true,
                       true});
      if (first) {
        cases.push_back({"decode T=64 ctx=4096",
                         decodeBatch(64, 4096),
                         0,
                         0,
                         {0},
                         true,
                         true});
        cases.push_back(
            {"prefill T=2048", {{2048, 2048}}, 0, 0, {1}, true, true});
        // A cached-prefix prompt step (8 own tokens after 1,024 cached), in
        // blocks of 32 as the Llama-3.2-1B plan has them.
        cases.push_back({"prompt T=8 ctx=1032",
                         {{1032, 8}},
                         0,
                         0,
                         {4, 8, 9, 16, 0},
                         true,
                         true,
                         32});
      }
    }
    if (!quick)
      cases.push_back(
          {"decode T=1 ctx=1024", decodeBatch(1, 1024), 0, 0, {0}, true, true});
    if (h.headDim == 128 && h.qHeads == 28) // group 7: the soft-cap variant
      cases.push_back({"decode, window=64",
                       {{1, 1}, {100, 1}, {1000, 1}, {64, 2}},
                       1,
                       64,
                       {1, 0},
                       false,
                       true,
                       16,
                       kSoftcap});
    for (const AttentionCase &ac : cases)
      runAttentionCase(c, h, ac);
  }
  // Head dims 80, 96 and 256: the same paths on fewer cases, soft-capped
  // and windowed too.
  for (const HeadShape &h : kMoreHeadShapes) {
    std::vector<AttentionCase> cases = {
        {"prefill",
         {{1, 1}, {37, 37}, {300, 300}, {500, 100}},
         2,
         0,
         {1, 3},
         false,
         true},
        {"decode",
         {{1, 1}, {15, 1}, {17, 1}, {100, 1}, {1000, 1}, {2500, 1}},
         1,
         0,
         {1, 0, 7},
         false,
         true},
        {"decode", {{1, 1}, {33, 1}, {2500, 1}}, 1, 0, {1, 0}, false, true, 32},
        {"prefill, window=64",
         {{300, 300}, {1000, 1}, {64, 2}},
         1,
         64,
         {1, 4},
         false,
         true,
         16,
         kSoftcap},
        {"decode",
         {{1, 1}, {100, 1}, {2500, 1}},
         1,
         0,
         {1, 0},
         false,
         true,
         16,
         kSoftcap},
    };
    if (!quick)
      cases.push_back(
          {"decode T=1 ctx=1024", decodeBatch(1, 1024), 0, 0, {0}, true, true});
    for (const AttentionCase &ac : cases)
      runAttentionCase(c, h, ac);
  }
  // gpt-oss's sinks (8 query heads of 64 a kv head): every merge path
  // (one split, global partials, a cluster), windowed and not.
  const HeadShape gptOss{64, 8, 64};
  for (AttentionCase ac :
       std::vector<AttentionCase>{{"prefill",
                                   {{1, 1}, {37, 37}, {300, 300}},
                                   2,
                                   0,
                                   {1, 3},
                                   false,
                                   true},
                                  {"decode",
                                   {{1, 1}, {17, 1}, {1000, 1}, {2500, 1}},
                                   1,
                                   0,
                                   {1, 0, 7},
                                   false,
                                   true},
                                  {"decode, window=128",
                                   {{100, 1}, {1000, 1}, {129, 1}},
                                   1,
                                   128,
                                   {1, 0},
                                   false,
                                   true}}) {
    ac.sinks = true;
    runAttentionCase(c, gptOss, ac);
  }
}

void checkRopeAll(Checker &c) {
  checkRope(c, kHeadShapes[0], llamaRopeTable(64));
  checkRope(c, kHeadShapes[1], llamaRopeTable(128));
  checkRope(c, kHeadShapes[2], partialRopeTable(128, 0.8f));
  checkRope(c, kHeadShapes[0], longRopeTable(64, 32, 1.19f));
  for (const HeadShape &h : kMoreHeadShapes) {
    checkRope(c, h, llamaRopeTable(h.headDim));
    checkRope(c, h, partialRopeTable(h.headDim, 1.19f));
    checkRope(c, h, longRopeTable(h.headDim, 32, 1.19f));
  }
}

} // namespace

std::vector<CheckFamily> attentionChecks() {
  return {
      {"rope_kv_write",
       [](KernelLibrary &k) {
         for (int i = 0; i < 3; ++i) {
           const HeadShape &h = kHeadShapes[i];
           k.require(
               RopeKvWriteSpec{h.qHeads, h.kvHeads, h.headDim}.instance());
         }
         for (const HeadShape &h : kMoreHeadShapes)
           k.require(
               RopeKvWriteSpec{h.qHeads, h.kvHeads, h.headDim}.instance());
       },
       checkRopeAll},
      {"attention",
       [](KernelLibrary &k) {
         for (const HeadShape &h : kHeadShapes) {
           const PagedAttentionSpec spec{h.qHeads, h.kvHeads, h.headDim};
           k.require(spec.instance());
           k.require(PagedAttentionSpec{h.qHeads, h.kvHeads, h.headDim, 32}
                         .instance());
         }
         PagedAttentionSpec capped{28, 4, 128};
         capped.softcap = true;
         k.require(capped.instance());
         k.require(PagedAttentionSpec{64, 8, 64}.instance()); // gpt-oss
         for (const HeadShape &h : kMoreHeadShapes) {
           PagedAttentionSpec spec{h.qHeads, h.kvHeads, h.headDim};
           k.require(spec.instance());
           k.require(PagedAttentionSpec{h.qHeads, h.kvHeads, h.headDim, 32}
                         .instance());
           spec.softcap = true;
           k.require(spec.instance());
         }
       },
       checkAttention},
  };
}

} // namespace sol::check
