//===- PrefillAttentionFp8Checks.cpp - Prefill attention, fp8 KV cache ----===//
//
// prefill_attention_fp8 (codegen/kernels/PrefillAttention.cuh) over an E4M3
// KV cache with per-(block, slot, kv head) scales, against the float64 CPU
// reference on the dequantized cache (e4m3 x scale in float32, what
// paged_attention_fp8 and the reference executor compute with):
//  * ragged batches (prompt chunks after cached prefixes, decode tokens as
//    one-row tiles, padding tokens), sliding windows, head dims 64, 80, 96,
//    128 and 256, GQA groups 1 to 8, blocks of 16 and 32, soft-capping
//    (Gemma 2), with the tiles the
//    executor plans; every output must be written (NaN sentinel) and within
//    the bf16 kernel's bound (relative L2 <= 1e-2): the kernel's only
//    roundings are the bf16 kernel's (see the header);
//  * every finite E4M3 code read back exactly: with a window of 1 a token
//    sees only its own position, so with power-of-two V scales the output
//    must equal e4m3 x scale exactly (bf16 holds it), subnormal codes
//    included (negative zero reads as zero: the accumulators start at +0);
//  * 2,048-token prompts timed beside prefill_attention on the same values
//    in a bf16 cache and paged_attention_fp8 (the kernel fp8 plans ran for
//    prompts before) on the same fp8 cache.
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
  bool timed; // the 2,048-token prompt (full runs only)
};

const HeadShape kShapes[] = {
    {32, 8, 64, true},   // Llama-3.2-1B: group 4
    {16, 16, 64, false}, // group 1 (multi-head)
    {16, 8, 128, false}, // Qwen3-0.6B: group 2
    {28, 4, 128, true},  // Qwen2.5-7B: group 7
    {32, 4, 128, false}, // group 8
    {32, 8, 128, true},  // Llama-3.1-8B: group 4
    {32, 32, 80, false}, // Phi-2: 5 fp8 chunks a row
    {32, 32, 96, false}, // Phi-3-mini
    {8, 4, 256, false},  // Gemma-2-2B
};

constexpr float kSoftcap = 50.0f;

bool isOtherHeadDim(const HeadShape &h) {
  return h.headDim != 64 && h.headDim != 128;
}
const int kBlockSizes[] = {16, 32};

struct Fp8Case {
  std::string label;
  std::vector<SequenceSpec> seqs;
  int padding;
  int window;
  bool timed;
  /// V rows cycle through every finite E4M3 code with power-of-two scales
  /// (the exact read-back check; needs window 1).
  bool exactCodes = false;
  float softcap = 0.0f;
};

std::string shapeLabel(const HeadShape &h, int blockSize) {
  return sol::cat(h.qHeads, "/", h.kvHeads, "x", h.headDim, " BS=", blockSize);
}

void runFp8PrefillCase(Checker &c, const HeadShape &h, int blockSize,
                       const Fp8Case &fc) {
  const PrefillAttentionSpec spec{h.qHeads,  h.kvHeads, h.headDim,
                                  blockSize, true,      fc.softcap > 0.0f};
  const PagedBatch batch =
      makePagedBatch(c.rng, fc.seqs, fc.padding, blockSize);
  const int hd = h.headDim;
  const std::vector<Bf16> qkv =
      attentionQkv(c.rng, batch, h.qHeads, h.kvHeads, hd);
  const Fp8Cache cache =
      makeFp8Cache(c.rng, batch, h.kvHeads, hd, fc.exactCodes);
  long long scorePairs = 0;
  for (int t = 0; t < batch.tokens; ++t) {
    if (batch.tokenSeq[t] < 0)
      continue;
    const int pos = batch.positions[t];
    const int lo = fc.window > 0 ? std::max(0, pos - fc.window + 1) : 0;
    scorePairs += pos + 1 - lo;
  }
  const std::vector<PrefillTile> tiles = cuda::planPrefillTiles(
      batch.tokenSeq, batch.positions, PrefillAttentionSpec::kRows);
  std::vector<int> tileInts;
  for (const PrefillTile &t : tiles) {
    tileInts.push_back(t.firstToken);
    tileInts.push_back(t.rows);
  }

  const DeviceBuffer dK = c.upload(cache.kBytes), dV = c.upload(cache.vBytes);
  const DeviceBuffer dKs = c.upload(cache.kScales),
                     dVs = c.upload(cache.vScales);
  const DeviceBuffer dTables = c.upload(batch.blockTables);
  const DeviceBuffer dQkv = c.upload(qkv);
  const DeviceBuffer dPos = c.upload(batch.positions);
  const DeviceBuffer dSeq = c.upload(batch.tokenSeq);
  const DeviceBuffer dTiles = c.upload(tileInts);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  AttentionProblem p{h.qHeads,
                     h.kvHeads,
                     hd,
                     blockSize,
                     batch.tokens,
                     batch.maxBlocks,
                     qkv,
                     {},
                     {},
                     batch.positions,
                     batch.tokenSeq,
                     batch.blockTables,
                     scale,
                     fc.window,
                     cache.kDeq,
                     cache.vDeq,
                     fc.softcap};
  const std::vector<double> ref = referenceAttention(p);

  const cuda::Kernel &kernel = c.kernels.kernel(spec.instance());
  kernel.setMaxDynamicSharedMemory(static_cast<int>(spec.sharedBytes()));
  const std::size_t outBytes =
      static_cast<std::size_t>(batch.tokens) * h.qHeads * hd * 2;
  DeviceBuffer dOut = c.poisoned(outBytes);
  const int numTiles = static_cast<int>(tiles.size());
  std::function<void(int)> launch = [&](int) {
    kernel.launch(spec.dims(numTiles), c.stream,
                  kernels::TiledAttentionArgs{.out = dOut.address(),
                                              .qkv = dQkv.address(),
                                              .kCache = dK.address(),
                                              .vCache = dV.address(),
                                              .kScales = dKs.address(),
                                              .vScales = dVs.address(),
                                              .positions = dPos.address(),
                                              .tokenSeq = dSeq.address(),
                                              .blockTables = dTables.address(),
                                              .tiles = dTiles.address(),
                                              .maxBlocks = batch.maxBlocks,
                                              .scale = scale,
                                              .slidingWindow = fc.window,
                                              .softcap = fc.softcap});
  };
  launch(0);
  const std::vector<Bf16> out = c.download<Bf16>(dOut);
  CheckRecord r =
      makeRecord(c, "prefill_attention_fp8",
                 sol::cat(shapeLabel(h, blockSize), " ", fc.label,
                          fc.softcap > 0.0f ? sol::cat(" softcap=", fc.softcap)
                                            : std::string(),
                          " T=", batch.tokens, " tiles=", numTiles),
                 spec.instance());
  judge(r, relativeL2(toFloat(out), ref), 1e-2, countPoison(out));
  if (fc.exactCodes) {
    // Window 1: each token's output is its own V row, e4m3 x scale, which
    // bf16 holds exactly (4 significant bits times a power of two).
    std::size_t mismatches = 0, compared = 0;
    for (int t = 0; t < batch.tokens; ++t) {
      const int seq = batch.tokenSeq[t];
      if (seq < 0)
        continue;
      const long long slot = batch.slot(seq, batch.positions[t]);
      for (int head = 0; head < h.qHeads; ++head) {
        const int g = head / (h.qHeads / h.kvHeads);
        const std::size_t row = static_cast<std::size_t>(slot) * h.kvHeads + g;
        for (int d = 0; d < hd; ++d) {
          const float want = cache.vDeq[row * hd + d];
          const Bf16 got =
              out[(static_cast<std::size_t>(t) * h.qHeads + head) * hd + d];
          mismatches += bf16ToFloat(got) != want; // -0 == +0
          ++compared;
        }
      }
    }
    if (mismatches) {
      r.passed = false;
      r.note += sol::cat(mismatches, " of ", compared,
                         " outputs are not exactly e4m3 x scale; ");
    }
  }
  r.bytes = 2.0 * batch.tokens * h.qHeads * hd * 2;
  r.flops = 4.0 * static_cast<double>(scorePairs) * h.qHeads * hd;
  c.finish(std::move(r), fc.timed ? &launch : nullptr);

  if (!fc.timed)
    return;
  // The same values in a bf16 cache on prefill_attention: what fp8 costs or
  // saves against it.
  const PrefillAttentionSpec bf16Spec{h.qHeads, h.kvHeads, hd, blockSize};
  std::vector<Bf16> kCache(cache.kDeq.size()), vCache(cache.vDeq.size());
  for (std::size_t i = 0; i < kCache.size(); ++i) {
    kCache[i] =
        std::isnan(cache.kDeq[i]) ? kPoisonBf16 : floatToBf16(cache.kDeq[i]);
    vCache[i] =
        std::isnan(cache.vDeq[i]) ? kPoisonBf16 : floatToBf16(cache.vDeq[i]);
  }
  const DeviceBuffer dK16 = c.upload(kCache), dV16 = c.upload(vCache);
  const cuda::Kernel &bf16Kernel = c.kernels.kernel(bf16Spec.instance());
  bf16Kernel.setMaxDynamicSharedMemory(
      static_cast<int>(bf16Spec.sharedBytes()));
  DeviceBuffer dBf16Out = c.poisoned(outBytes);
  std::function<void(int)> bf16Launch = [&](int) {
    bf16Kernel.launch(
        bf16Spec.dims(numTiles), c.stream,
        kernels::TiledAttentionArgs{.out = dBf16Out.address(),
                                    .qkv = dQkv.address(),
                                    .kCache = dK16.address(),
                                    .vCache = dV16.address(),
                                    .positions = dPos.address(),
                                    .tokenSeq = dSeq.address(),
                                    .blockTables = dTables.address(),
                                    .tiles = dTiles.address(),
                                    .maxBlocks = batch.maxBlocks,
                                    .scale = scale,
                                    .slidingWindow = fc.window});
  };
  bf16Launch(0);
  const std::vector<Bf16> bf16Out = c.download<Bf16>(dBf16Out);
  CheckRecord br =
      makeRecord(c, "prefill_attention_fp8",
                 sol::cat(shapeLabel(h, blockSize), " ", fc.label,
                          " prefill_attention, bf16 cache (baseline)"),
                 bf16Spec.instance());
  // The reference is float32 K/V; the bf16 cache rounds them once more.
  judge(br, relativeL2(toFloat(bf16Out), ref), 1e-2, countPoison(bf16Out));
  br.bytes = 2.0 * batch.tokens * h.qHeads * hd * 2;
  br.flops = 4.0 * static_cast<double>(scorePairs) * h.qHeads * hd;
  c.finish(std::move(br), &bf16Launch);

  // paged_attention_fp8 (one token per block, no split) on the same
  // problem: the baseline the tensor-core kernel replaces for prompt chunks.
  const PagedAttentionSpec paged{h.qHeads, h.kvHeads, hd, blockSize, true};
  const cuda::Kernel &pagedKernel = c.kernels.kernel(paged.instance());
  DeviceBuffer dPagedOut = c.poisoned(outBytes);
  std::function<void(int)> pagedLaunch = [&](int) {
    pagedKernel.launch(
        paged.dims(batch.tokens, 1), c.stream,
        kernels::PagedAttentionArgs{.out = dPagedOut.address(),
                                    .qkv = dQkv.address(),
                                    .kCache = dK.address(),
                                    .vCache = dV.address(),
                                    .kScales = dKs.address(),
                                    .vScales = dVs.address(),
                                    .positions = dPos.address(),
                                    .tokenSeq = dSeq.address(),
                                    .blockTables = dTables.address(),
                                    .maxBlocks = batch.maxBlocks,
                                    .scale = scale,
                                    .slidingWindow = fc.window,
                                    .tokens = batch.tokens});
  };
  pagedLaunch(0);
  const std::vector<Bf16> pagedOut = c.download<Bf16>(dPagedOut);
  CheckRecord pr = makeRecord(c, "prefill_attention_fp8",
                              sol::cat(shapeLabel(h, blockSize), " ", fc.label,
                                       " paged_attention_fp8 (baseline)"),
                              paged.instance());
  judge(pr, relativeL2(toFloat(pagedOut), ref), 1e-2, countPoison(pagedOut));
  pr.flops = 4.0 * static_cast<double>(scorePairs) * h.qHeads * hd;
  c.finish(std::move(pr), &pagedLaunch);
}

void checkPrefillAttentionFp8(Checker &c) {
  for (const HeadShape &h : kShapes) {
    const bool first = &h == &kShapes[0];
    for (int blockSize : kBlockSizes) {
      std::vector<Fp8Case> cases = {
          {"mixed",
           {{1, 1}, {37, 37}, {300, 300}, {500, 100}, {130, 70}, {2000, 1}},
           2,
           0,
           false},
          {"chunks after prefixes",
           {{64, 64}, {200, 65}, {1100, 128}, {77, 13}},
           1,
           0,
           false},
          {"exact codes, window=1", {{260, 260}, {90, 3}}, 1, 1, false, true},
      };
      if (first || h.headDim != 64) {
        cases.push_back(
            {"window=64", {{300, 300}, {1000, 1}, {64, 2}}, 1, 64, false});
        cases.push_back({"window=100", {{700, 400}, {45, 45}}, 0, 100, false});
      }
      if (blockSize == 16 && (first || isOtherHeadDim(h)))
        cases.push_back({"window=100",
                         {{700, 400}, {45, 45}},
                         0,
                         100,
                         false,
                         false,
                         kSoftcap});
      if (h.timed && blockSize == 16 && !c.options.quick)
        cases.push_back({"prompt 2048", {{2048, 2048}}, 0, 0, true});
      for (const Fp8Case &fc : cases)
        runFp8PrefillCase(c, h, blockSize, fc);
    }
  }
}

} // namespace

std::vector<CheckFamily> prefillAttentionFp8Checks() {
  return {
      {"prefill_attention_fp8",
       [](KernelLibrary &k) {
         for (const HeadShape &h : kShapes)
           for (int blockSize : kBlockSizes) {
             k.require(PrefillAttentionSpec{h.qHeads, h.kvHeads, h.headDim,
                                            blockSize, true}
                           .instance());
             if (blockSize == 16 && (&h == &kShapes[0] || isOtherHeadDim(h)))
               k.require(PrefillAttentionSpec{h.qHeads, h.kvHeads, h.headDim,
                                              blockSize, true, true}
                             .instance());
             if (h.timed && blockSize == 16) {
               k.require(PrefillAttentionSpec{h.qHeads, h.kvHeads, h.headDim,
                                              blockSize}
                             .instance());
               k.require(PagedAttentionSpec{h.qHeads, h.kvHeads, h.headDim,
                                            blockSize, true}
                             .instance());
             }
           }
       },
       checkPrefillAttentionFp8}};
}

} // namespace sol::check
