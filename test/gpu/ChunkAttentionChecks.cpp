//===- ChunkAttentionChecks.cpp - Attention of short prompt chunks --------===//
//
// chunk_attention and chunk_attention_fp8 (codegen/kernels/ChunkAttention.cuh)
// against the float64 CPU reference (on the dequantized cache for fp8),
// with the tiles the executor plans (planChunkTiles):
//  * 8 tokens after a 1,024-token prefix (the cached-prefix step), chunks
//    of several tiles beside decode tokens and padding, a context shorter
//    than one K/V tile, and sliding windows;
//  * GQA groups 1, 2, 4, 6 and 7, head dims 64, 80, 96, 128 and 256, blocks
//    of 16 and 32; the soft-capping variant (Gemma 2) with a window;
//  * every split count from 1 to 8 (the splits of a tile merge in one
//    cluster), so empty split ranges and every merge width run; every output
//    must be written (NaN sentinel) and within relative L2 1e-2;
//  * the cached-prefix step timed with the executor's split count beside
//    paged_attention (one token per block, with its own split choice and
//    cluster merge), the kernel such steps would run without it.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "PagedBatch.h"
#include "ReferenceKernels.h"
#include "runtime/cuda/ChunkAttention.h"
#include "runtime/cuda/KernelSelection.h"
#include "runtime/cuda/KernelSpecs.h"

#include <cmath>

namespace sol::check {
namespace {

using cuda::ChunkAttentionSpec;
using cuda::DeviceBuffer;
using cuda::PagedAttentionSpec;
using cuda::PrefillTile;

struct HeadShape {
  int qHeads, kvHeads, headDim, blockSize;
};

const HeadShape kShapes[] = {
    {32, 8, 64, 32},  // Llama-3.2-1B (the plan's block of 32)
    {16, 8, 128, 16}, // Qwen3-0.6B: group 2
    {12, 2, 128, 32}, // Qwen2.5-1.5B: group 6
    {28, 4, 128, 16}, // Qwen2.5-7B: group 7
    {32, 8, 128, 32}, // Llama-3.1-8B
    {32, 32, 96, 16}, // Phi-3-mini: group 1 (64 tokens a tile)
    {32, 8, 80, 32},  // group 4
    {28, 4, 96, 16},  // group 7
    {8, 4, 256, 16},  // Gemma-2-2B: group 2
    {4, 1, 256, 32},  // Gemma-3-1B: group 4
};

constexpr float kSoftcap = 50.0f;

// Shapes that also run soft-capped, windowed (Gemma 2's local layers): a 64
// and a 128 head dim shape and every other head dim.
bool runsSoftcap(const HeadShape &h) {
  return &h == &kShapes[0] || h.qHeads == 28 ||
         (h.headDim != 64 && h.headDim != 128);
}

struct ChunkCase {
  std::string label;
  std::vector<SequenceSpec> seqs;
  int padding;
  int window;
  bool timed;
  float softcap = 0.0f;
  bool sinks = false; // random per-head sinks (gpt-oss)
};

// gpt-oss's attention: 8 query heads of 64 a kv head, with sinks.
const HeadShape kGptOss{64, 8, 64, 16};

std::string shapeLabel(const HeadShape &h, bool fp8) {
  return sol::cat(h.qHeads, "/", h.kvHeads, "x", h.headDim, " BS=", h.blockSize,
                  fp8 ? " fp8" : "");
}

std::string capLabel(float softcap) {
  return softcap > 0.0f ? sol::cat(" softcap=", softcap) : std::string();
}

void runChunkCase(Checker &c, const HeadShape &h, bool fp8,
                  const ChunkCase &cc) {
  const ChunkAttentionSpec spec{h.qHeads,    h.kvHeads, h.headDim,
                                h.blockSize, fp8,       cc.softcap > 0.0f};
  const PagedBatch batch =
      makePagedBatch(c.rng, cc.seqs, cc.padding, h.blockSize);
  const int hd = h.headDim;
  const std::vector<Bf16> qkv =
      attentionQkv(c.rng, batch, h.qHeads, h.kvHeads, hd);
  // The cache: fp8 bytes and scales, or bf16 with NaN in dead slots.
  Fp8Cache fp8Cache;
  Bf16Cache bf16Cache;
  if (fp8)
    fp8Cache = makeFp8Cache(c.rng, batch, h.kvHeads, hd, false);
  else
    bf16Cache = makeBf16Cache(c.rng, batch, h.kvHeads, hd);
  long long scorePairs = 0;
  int maxContext = 0;
  for (int t = 0; t < batch.tokens; ++t) {
    if (batch.tokenSeq[t] < 0)
      continue;
    const int pos = batch.positions[t];
    const int lo = cc.window > 0 ? std::max(0, pos - cc.window + 1) : 0;
    scorePairs += pos + 1 - lo;
    maxContext = std::max(maxContext, pos + 1);
  }
  const std::vector<PrefillTile> tiles = cuda::planChunkTiles(
      batch.tokenSeq, batch.positions, spec.tokensPerTile());
  std::vector<int> tileInts;
  for (const PrefillTile &t : tiles) {
    tileInts.push_back(t.firstToken);
    tileInts.push_back(t.rows);
  }
  const int numTiles = static_cast<int>(tiles.size());

  const DeviceBuffer dK =
      fp8 ? c.upload(fp8Cache.kBytes) : c.upload(bf16Cache.k);
  const DeviceBuffer dV =
      fp8 ? c.upload(fp8Cache.vBytes) : c.upload(bf16Cache.v);
  const DeviceBuffer dKs =
      c.upload(fp8 ? fp8Cache.kScales : std::vector<float>{0.0f});
  const DeviceBuffer dVs =
      c.upload(fp8 ? fp8Cache.vScales : std::vector<float>{0.0f});
  const DeviceBuffer dTables = c.upload(batch.blockTables);
  const DeviceBuffer dQkv = c.upload(qkv);
  const DeviceBuffer dPos = c.upload(batch.positions);
  const DeviceBuffer dSeq = c.upload(batch.tokenSeq);
  const DeviceBuffer dTiles = c.upload(tileInts);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const AttentionSinks sinks = randomSinks(c.rng, cc.sinks ? h.qHeads : 0);
  const DeviceBuffer dSinks =
      c.upload(cc.sinks ? sinks.bf16 : std::vector<Bf16>(1));
  const CUdeviceptr sinksArg = cc.sinks ? dSinks.address() : 0;

  AttentionProblem p{h.qHeads,
                     h.kvHeads,
                     hd,
                     h.blockSize,
                     batch.tokens,
                     batch.maxBlocks,
                     qkv,
                     bf16Cache.k,
                     bf16Cache.v,
                     batch.positions,
                     batch.tokenSeq,
                     batch.blockTables,
                     scale,
                     cc.window};
  p.softcap = cc.softcap;
  p.sinks = sinks.values;
  if (fp8) {
    p.kCacheF32 = fp8Cache.kDeq;
    p.vCacheF32 = fp8Cache.vDeq;
  }
  const std::vector<double> ref = referenceAttention(p);

  const cuda::Kernel &kernel = c.kernels.kernel(spec.instance());
  kernel.setMaxDynamicSharedMemory(static_cast<int>(spec.sharedBytes()));
  const std::size_t outBytes =
      static_cast<std::size_t>(batch.tokens) * h.qHeads * hd * 2;
  const CUdeviceptr null = 0; // the fp8 scales of a bf16 cache
  const int chosen =
      spec.chooseSplits(numTiles, cuda::kPlannedMultiprocessors, true);
  for (int splits = 1; splits <= ChunkAttentionSpec::kMaxSplits; ++splits) {
    const bool timed = cc.timed && splits == chosen && !c.options.quick;
    DeviceBuffer dOut = c.poisoned(outBytes);
    std::function<void(int)> launch = [&](int) {
      kernel.launch(
          spec.dims(numTiles, splits), c.stream,
          kernels::TiledAttentionArgs{.out = dOut.address(),
                                      .qkv = dQkv.address(),
                                      .kCache = dK.address(),
                                      .vCache = dV.address(),
                                      .kScales = fp8 ? dKs.address() : null,
                                      .vScales = fp8 ? dVs.address() : null,
                                      .positions = dPos.address(),
                                      .tokenSeq = dSeq.address(),
                                      .blockTables = dTables.address(),
                                      .tiles = dTiles.address(),
                                      .maxBlocks = batch.maxBlocks,
                                      .scale = scale,
                                      .slidingWindow = cc.window,
                                      .softcap = cc.softcap,
                                      .sinks = sinksArg});
    };
    launch(0);
    const std::vector<Bf16> out = c.download<Bf16>(dOut);
    CheckRecord r = makeRecord(
        c, "chunk_attention",
        sol::cat(shapeLabel(h, fp8), " ", cc.label, capLabel(cc.softcap),
                 cc.sinks ? " sinks" : "", " T=", batch.tokens,
                 " tiles=", numTiles, " splits=", splits,
                 splits == chosen ? " (chosen)" : ""),
        spec.instance());
    judge(r, relativeL2(toFloat(out), ref), 1e-2, countPoison(out));
    r.bytes = 2.0 * batch.tokens * h.qHeads * hd * 2;
    r.flops = 4.0 * static_cast<double>(scorePairs) * h.qHeads * hd;
    c.finish(std::move(r), timed ? &launch : nullptr);
  }
  if (!cc.timed || c.options.quick)
    return;

  // paged_attention on the same problem with the split count and cluster
  // merge the executor would give it: the baseline chunk_attention beats.
  PagedAttentionSpec paged{h.qHeads, h.kvHeads, hd, h.blockSize, fp8};
  paged.clusterMerge = true;
  paged.softcap = cc.softcap > 0.0f;
  const int pagedSplits = paged.chooseSplits(batch.tokens, maxContext,
                                             cuda::kPlannedMultiprocessors);
  const SplitWorkspace ws = splitWorkspace(c, paged, batch.tokens, pagedSplits);
  const cuda::Kernel &pagedKernel = c.kernels.kernel(paged.instance());
  DeviceBuffer dPagedOut = c.poisoned(outBytes);
  const cuda::LaunchDims pagedDims =
      paged.dims(batch.tokens, pagedSplits, cuda::kPlannedMultiprocessors);
  std::function<void(int)> pagedLaunch = [&](int) {
    pagedKernel.launch(
        pagedDims, c.stream,
        kernels::PagedAttentionArgs{.out = dPagedOut.address(),
                                    .qkv = dQkv.address(),
                                    .kCache = dK.address(),
                                    .vCache = dV.address(),
                                    .kScales = fp8 ? dKs.address() : null,
                                    .vScales = fp8 ? dVs.address() : null,
                                    .positions = dPos.address(),
                                    .tokenSeq = dSeq.address(),
                                    .blockTables = dTables.address(),
                                    .partials = ws.partials(),
                                    .arrivals = ws.arrivals(),
                                    .maxBlocks = batch.maxBlocks,
                                    .scale = scale,
                                    .slidingWindow = cc.window,
                                    .tokens = batch.tokens,
                                    .softcap = cc.softcap});
  };
  pagedLaunch(0);
  const std::vector<Bf16> pagedOut = c.download<Bf16>(dPagedOut);
  CheckRecord pr = makeRecord(c, "chunk_attention",
                              sol::cat(shapeLabel(h, fp8), " ", cc.label,
                                       " splits=", pagedSplits,
                                       " paged_attention (baseline)"),
                              paged.instance());
  judge(pr, relativeL2(toFloat(pagedOut), ref), 1e-2, countPoison(pagedOut));
  pr.flops = 4.0 * static_cast<double>(scorePairs) * h.qHeads * hd;
  c.finish(std::move(pr), &pagedLaunch);
}

void checkChunkAttention(Checker &c) {
  for (const HeadShape &h : kShapes) {
    const bool first = &h == &kShapes[0];
    for (bool fp8 : {false, true}) {
      std::vector<ChunkCase> cases = {
          {"8 after 1024", {{1032, 8}}, 0, 0, true},
          {"chunks, decodes, padding",
           {{300, 5}, {129, 1}, {90, 23}, {2, 2}},
           3,
           0,
           false},
          {"shorter than a K/V tile", {{5, 3}}, 0, 0, false},
      };
      if (first || h.qHeads == 28) {
        cases.push_back({"window=64", {{500, 12}, {40, 3}}, 1, 64, false});
        cases.push_back({"window=1", {{77, 7}}, 0, 1, false});
      }
      if (runsSoftcap(h))
        cases.push_back(
            {"window=64", {{500, 12}, {40, 3}}, 1, 64, false, kSoftcap});
      for (const ChunkCase &cc : cases)
        runChunkCase(c, h, fp8, cc);
    }
  }
  // Sinks through both writes: one split, and the cluster merge.
  for (bool fp8 : {false, true})
    for (ChunkCase cc : std::vector<ChunkCase>{
             {"chunks, decodes, padding",
              {{300, 5}, {129, 1}, {90, 23}, {2, 2}},
              3,
              0,
              false},
             {"window=128", {{500, 12}, {40, 3}}, 1, 128, false}}) {
      cc.sinks = true;
      runChunkCase(c, kGptOss, fp8, cc);
    }
}

} // namespace

std::vector<CheckFamily> chunkAttentionChecks() {
  return {{"chunk_attention",
           [](KernelLibrary &k) {
             for (const HeadShape &h : kShapes)
               for (bool fp8 : {false, true}) {
                 k.require(ChunkAttentionSpec{h.qHeads, h.kvHeads, h.headDim,
                                              h.blockSize, fp8}
                               .instance());
                 if (runsSoftcap(h))
                   k.require(ChunkAttentionSpec{h.qHeads, h.kvHeads, h.headDim,
                                                h.blockSize, fp8, true}
                                 .instance());
                 PagedAttentionSpec paged{h.qHeads, h.kvHeads, h.headDim,
                                          h.blockSize, fp8};
                 paged.clusterMerge = true;
                 k.require(paged.instance());
               }
             for (bool fp8 : {false, true})
               k.require(ChunkAttentionSpec{kGptOss.qHeads, kGptOss.kvHeads,
                                            kGptOss.headDim, kGptOss.blockSize,
                                            fp8}
                             .instance());
           },
           checkChunkAttention}};
}

} // namespace sol::check
