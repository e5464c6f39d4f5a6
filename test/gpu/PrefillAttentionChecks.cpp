//===- PrefillAttentionChecks.cpp - The tensor-core prefill attention -----===//
//
// prefill_attention over ragged batches (prompt chunks after cached
// prefixes, decode tokens as one-row tiles, padding, sliding windows)
// against the float64 CPU reference, with the tiles the executor plans, at
// head dims 64, 80, 96, 128 and 256 and with the soft-capping variant; and
// 2,048-token prompts timed beside paged_attention on the same inputs.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "PagedBatch.h"
#include "ReferenceKernels.h"
#include "runtime/cuda/KernelSpecs.h"
#include "runtime/cuda/PrefillAttention.h"

#include <cmath>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;
using cuda::PagedAttentionSpec;
using cuda::PrefillAttentionSpec;
using cuda::PrefillTile;

struct HeadShape {
  int qHeads, kvHeads, headDim;
};

const HeadShape kShapes[] = {
    {32, 8, 64},  // Llama-3.2-1B
    {16, 8, 128}, // Qwen3-0.6B
    {28, 4, 128}, // Qwen2.5-7B
    {32, 8, 128}, // Llama-3.1-8B
    {32, 32, 80}, // Phi-2
    {32, 32, 96}, // Phi-3-mini
    {28, 4, 96},  // group 7
    {8, 4, 256},  // Gemma-2-2B
    {16, 8, 256}, // Gemma-2-9B
};

constexpr float kSoftcap = 50.0f;

bool isOtherHeadDim(const HeadShape &h) {
  return h.headDim != 64 && h.headDim != 128;
}

struct PrefillCase {
  std::string label;
  std::vector<SequenceSpec> seqs;
  int padding;
  int window;
  bool timed;
  float softcap = 0.0f;
  bool sinks = false; // random per-head sinks (gpt-oss)
};

void runPrefillCase(Checker &c, const HeadShape &h, const PrefillCase &pc) {
  const PrefillAttentionSpec spec{h.qHeads, h.kvHeads, h.headDim,
                                  16,       false,     pc.softcap > 0.0f};
  const PagedAttentionSpec paged{h.qHeads, h.kvHeads, h.headDim};
  const PagedBatch batch = makePagedBatch(c.rng, pc.seqs, pc.padding);
  const int hd = h.headDim;
  const std::vector<Bf16> qkv =
      attentionQkv(c.rng, batch, h.qHeads, h.kvHeads, hd);
  const Bf16Cache cache = makeBf16Cache(c.rng, batch, h.kvHeads, hd);
  const std::vector<Bf16> &kCache = cache.k, &vCache = cache.v;
  long long scorePairs = 0;
  int maxContext = 0;
  for (int t = 0; t < batch.tokens; ++t) {
    if (batch.tokenSeq[t] < 0)
      continue;
    const int pos = batch.positions[t];
    const int lo = pc.window > 0 ? std::max(0, pos - pc.window + 1) : 0;
    scorePairs += pos + 1 - lo;
    maxContext = std::max(maxContext, pos + 1);
  }
  const std::vector<PrefillTile> tiles = cuda::planPrefillTiles(
      batch.tokenSeq, batch.positions, PrefillAttentionSpec::kRows);
  std::vector<int> tileInts;
  for (const PrefillTile &t : tiles) {
    tileInts.push_back(t.firstToken);
    tileInts.push_back(t.rows);
  }

  const DeviceBuffer dK = c.upload(kCache), dV = c.upload(vCache);
  const DeviceBuffer dTables = c.upload(batch.blockTables);
  const DeviceBuffer dQkv = c.upload(qkv);
  const DeviceBuffer dPos = c.upload(batch.positions);
  const DeviceBuffer dSeq = c.upload(batch.tokenSeq);
  const DeviceBuffer dTiles = c.upload(tileInts);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const AttentionSinks sinks = randomSinks(c.rng, pc.sinks ? h.qHeads : 0);
  const DeviceBuffer dSinks =
      c.upload(pc.sinks ? sinks.bf16 : std::vector<Bf16>(1));

  AttentionProblem p{h.qHeads,
                     h.kvHeads,
                     hd,
                     16,
                     batch.tokens,
                     batch.maxBlocks,
                     qkv,
                     kCache,
                     vCache,
                     batch.positions,
                     batch.tokenSeq,
                     batch.blockTables,
                     scale,
                     pc.window};
  p.softcap = pc.softcap;
  p.sinks = sinks.values;
  const std::vector<double> ref = referenceAttention(p);

  const cuda::Kernel &kernel = c.kernels.kernel(spec.instance());
  kernel.setMaxDynamicSharedMemory(static_cast<int>(spec.sharedBytes()));
  DeviceBuffer dOut =
      c.poisoned(static_cast<std::size_t>(batch.tokens) * h.qHeads * hd * 2);
  const int numTiles = static_cast<int>(tiles.size());
  std::function<void(int)> launch = [&](int) {
    kernel.launch(
        spec.dims(numTiles), c.stream,
        kernels::TiledAttentionArgs{.out = dOut.address(),
                                    .qkv = dQkv.address(),
                                    .kCache = dK.address(),
                                    .vCache = dV.address(),
                                    .positions = dPos.address(),
                                    .tokenSeq = dSeq.address(),
                                    .blockTables = dTables.address(),
                                    .tiles = dTiles.address(),
                                    .maxBlocks = batch.maxBlocks,
                                    .scale = scale,
                                    .slidingWindow = pc.window,
                                    .softcap = pc.softcap,
                                    .sinks = pc.sinks ? dSinks.address() : 0});
  };
  launch(0);
  const std::vector<Bf16> out = c.download<Bf16>(dOut);
  CheckRecord r = makeRecord(
      c, "prefill_attention",
      sol::cat(
          h.qHeads, "/", h.kvHeads, "x", hd, " ", pc.label,
          pc.softcap > 0.0f ? sol::cat(" softcap=", pc.softcap) : std::string(),
          pc.sinks ? " sinks" : "", " T=", batch.tokens, " tiles=", numTiles),
      spec.instance());
  judge(r, relativeL2(toFloat(out), ref), 1e-2, countPoison(out));
  r.bytes = 2.0 * batch.tokens * h.qHeads * hd * 2;
  r.flops = 4.0 * static_cast<double>(scorePairs) * h.qHeads * hd;
  c.finish(std::move(r), pc.timed ? &launch : nullptr);

  if (!pc.timed)
    return;
  // The same problem on paged_attention (one token per block), for the
  // comparison the executor's choice rests on.
  const cuda::Kernel &pagedKernel = c.kernels.kernel(paged.instance());
  DeviceBuffer dPagedOut =
      c.poisoned(static_cast<std::size_t>(batch.tokens) * h.qHeads * hd * 2);
  std::function<void(int)> pagedLaunch = [&](int) {
    pagedKernel.launch(
        paged.dims(batch.tokens, 1), c.stream,
        kernels::PagedAttentionArgs{.out = dPagedOut.address(),
                                    .qkv = dQkv.address(),
                                    .kCache = dK.address(),
                                    .vCache = dV.address(),
                                    .positions = dPos.address(),
                                    .tokenSeq = dSeq.address(),
                                    .blockTables = dTables.address(),
                                    .maxBlocks = batch.maxBlocks,
                                    .scale = scale,
                                    .slidingWindow = pc.window,
                                    .tokens = batch.tokens});
  };
  pagedLaunch(0);
  CheckRecord pr = makeRecord(c, "prefill_attention",
                              sol::cat(h.qHeads, "/", h.kvHeads, "x", hd, " ",
                                       pc.label, " paged_attention (baseline)"),
                              paged.instance());
  judge(pr, relativeL2(toFloat(c.download<Bf16>(dPagedOut)), ref), 1e-2, 0);
  pr.flops = 4.0 * static_cast<double>(scorePairs) * h.qHeads * hd;
  c.finish(std::move(pr), &pagedLaunch);
}

void checkPrefillAttention(Checker &c) {
  for (const HeadShape &h : kShapes) {
    const bool first = &h == &kShapes[0];
    std::vector<PrefillCase> cases = {
        {"mixed",
         {{1, 1}, {37, 37}, {300, 300}, {500, 100}, {130, 70}, {2000, 1}},
         2,
         0,
         false},
        {"chunks after prefixes",
         {{64, 64}, {200, 65}, {1100, 128}},
         0,
         0,
         false},
    };
    if (first) {
      cases.push_back(
          {"window=64", {{300, 300}, {1000, 1}, {64, 2}}, 1, 64, false});
      cases.push_back({"window=1", {{150, 150}}, 0, 1, false});
      cases.push_back({"window=100", {{700, 400}}, 0, 100, false});
    }
    if (first || isOtherHeadDim(h)) {
      cases.push_back(
          {"window=100", {{700, 400}, {45, 45}}, 0, 100, false, kSoftcap});
      if (isOtherHeadDim(h))
        cases.push_back(
            {"window=64", {{300, 300}, {1000, 1}, {64, 2}}, 1, 64, false});
    }
    if (!c.options.quick)
      cases.push_back({"prompt 2048", {{2048, 2048}}, 0, 0, true});
    for (const PrefillCase &pc : cases)
      runPrefillCase(c, h, pc);
  }
  // gpt-oss's sinks (8 query heads of 64 a kv head).
  for (PrefillCase pc : std::vector<PrefillCase>{
           {"mixed", {{1, 1}, {37, 37}, {300, 300}, {500, 100}}, 2, 0, false},
           {"window=128", {{700, 400}, {45, 45}}, 0, 128, false}}) {
    pc.sinks = true;
    runPrefillCase(c, HeadShape{64, 8, 64}, pc);
  }
}

} // namespace

std::vector<CheckFamily> prefillAttentionChecks() {
  return {
      {"prefill_attention",
       [](KernelLibrary &k) {
         for (const HeadShape &h : kShapes) {
           k.require(PrefillAttentionSpec{h.qHeads, h.kvHeads, h.headDim, 16}
                         .instance());
           if (&h == &kShapes[0] || isOtherHeadDim(h))
             k.require(PrefillAttentionSpec{h.qHeads, h.kvHeads, h.headDim, 16,
                                            false, true}
                           .instance());
           k.require(
               PagedAttentionSpec{h.qHeads, h.kvHeads, h.headDim}.instance());
         }
         k.require(PrefillAttentionSpec{64, 8, 64, 16}.instance()); // gpt-oss
         k.require(PagedAttentionSpec{64, 8, 64}.instance());
       },
       checkPrefillAttention}};
}

} // namespace sol::check
