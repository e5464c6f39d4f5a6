//===- FusedRopeChecks.cpp - paged_attention with the rope fused in -------===//
//
// Decode steps skip rope_kv_write and run paged_attention<..., true>, which
// rotates q and k and appends k and v (fp8 with their scales) itself. Both
// paths must give the same bits: on the same unrotated qkv and caches, the
// fused kernel's output and caches (and those of its PreloadWalk variant,
// which small grids run) are compared exactly with those of
// rope_kv_write(_fp8) followed by the unfused kernel, at several split
// counts (the in-kernel split merge included), for bf16 and fp8 caches,
// block sizes 16 and 32, GQA groups 1 to 8, head dims 64, 80, 96, 128 and
// 256, and sequences whose new position starts a block, ends one or sits
// inside. Rope tables: Llama's, partial rotary ones with pass-through pairs
// and attention scaling != 1, and LongRoPE ones whose switch falls between
// the tested positions; some cases are windowed and soft-capped. Every
// output is also held to the float64 reference: the host's RoPE of q and
// k, the new k and v appended to the cache (quantised by the host rule for
// fp8), attention over that. Batch-1 and 64-sequence decode are timed fused
// and unfused. The QkNorm variants (Qwen3's and Gemma 3's q/k head norms)
// are compared the same way with the per-head rms_norm before
// rope_kv_write, and with the host's norm in the reference. Groups of more
// than 4 query heads also run the preloading variant with its heads spread
// over 2 and 4 blocks (HeadSplit), bit for bit the same.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "PagedBatch.h"
#include "ReferenceKernels.h"
#include "runtime/reference/Fp8E4M3.h"

#include <cmath>
#include <cstring>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;
using cuda::PagedAttentionSpec;
using cuda::RopeKvWriteSpec;

struct Shape {
  int qHeads, kvHeads, headDim;
};

const Shape kShapes[] = {
    {32, 8, 64},  // Llama-3.2-1B
    {14, 2, 64},  // Qwen2.5-0.5B: group 7 (fp8: 8 values per lane)
    {28, 4, 128}, // Qwen2.5-7B
    {32, 8, 128}, // Llama-3.1-8B
};

// Shapes with q/k head norms (Qwen3, Gemma 3), and padded lanes (80, 96).
const Shape kQkNormShapes[] = {
    {32, 4, 128}, // Qwen3-30B-A3B: group 8
    {32, 8, 128}, // Qwen3-8B
    {8, 4, 256},  // Gemma-3-4B (fp8: 16 values a lane)
    {4, 1, 256},  // Gemma-3-1B
    {32, 8, 80},  // 10 of 16 lanes
    {32, 32, 96}, // fp8: 16 values a lane, 6 of 8
};

// The head splits a shape's preloading variant is checked with: its group
// over 2 and 4 blocks where they divide it and leave more than one head.
std::vector<int> headSplits(const Shape &h) {
  std::vector<int> out;
  const int group = h.qHeads / h.kvHeads;
  for (int s = 2; s <= PagedAttentionSpec::kMaxHeadSplit; s *= 2)
    if (group % s == 0 && group / s > 1)
      out.push_back(s);
  return out;
}

constexpr float kNormEps = 1e-6f;

// Head dims 80, 96, 256 (blocks of 16).
const Shape kMoreShapes[] = {
    {32, 32, 96}, // Phi-3-mini: group 1 (fp8: 16 values a lane, 6 of 8)
    {32, 8, 80},  // group 4 (10 of 16 lanes)
    {28, 4, 96},  // group 7 (12 of 16 lanes)
    {8, 4, 256},  // Gemma-2-2B
    {4, 1, 256},  // Gemma-3-1B
    {64, 8, 64},  // gpt-oss-20b: group 8 (heads split over 2 and 4 blocks)
};

constexpr float kSoftcap = 50.0f;

struct FusedCase {
  std::string label;
  std::vector<SequenceSpec> seqs;
  int padding;
  std::vector<int> splits; // 0 = chooseSplits
  bool timed;
  int window = 0;
  float softcap = 0.0f;
  bool qkNorm = false;
};

template <typename T>
std::size_t mismatches(const std::vector<T> &a, const std::vector<T> &b) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    n += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
  return n + (a.size() > b.size() ? a.size() - b.size() : b.size() - a.size());
}

// The float64 reference of a fused step: q and k rotated by the host, the
// new k and v rows appended to the (dequantised) cache, attention over it.
std::vector<double> fusedReference(const Shape &h, int blockSize, bool fp8,
                                   const FusedCase &fc, const PagedBatch &batch,
                                   const RopeTable &table,
                                   const std::vector<Bf16> &qkv,
                                   const std::vector<uint8_t> &kInit,
                                   const std::vector<uint8_t> &vInit,
                                   const std::vector<float> &ksInit,
                                   const std::vector<float> &vsInit) {
  const int hd = h.headDim;
  const std::size_t rowElems =
      static_cast<std::size_t>(h.qHeads + 2 * h.kvHeads) * hd;
  const std::size_t rows = ksInit.size();
  std::vector<float> kF(rows * hd), vF(rows * hd);
  for (int isV = 0; isV < 2; ++isV) {
    const std::vector<uint8_t> &bytes = isV ? vInit : kInit;
    const std::vector<float> &scales = isV ? vsInit : ksInit;
    std::vector<float> &f = isV ? vF : kF;
    for (std::size_t i = 0; i < rows * hd; ++i) {
      if (fp8) {
        f[i] = reference::e4m3ToFloat(bytes[i]) * scales[i / hd];
      } else {
        Bf16 b;
        std::memcpy(&b, bytes.data() + 2 * i, 2);
        f[i] = bf16ToFloat(b);
      }
    }
  }
  std::vector<Bf16> rotated = qkv;
  for (int t = 0; t < batch.tokens; ++t) {
    const int seq = batch.tokenSeq[t];
    if (seq < 0)
      continue;
    const int pos = batch.positions[t];
    Bf16 *row = rotated.data() + static_cast<std::size_t>(t) * rowElems;
    for (int head = 0; head < h.qHeads + h.kvHeads; ++head) {
      const std::vector<float> x = referenceRope(
          toFloat(std::span<const Bf16>(row + head * hd, hd)), pos, table);
      for (int d = 0; d < hd; ++d)
        row[head * hd + d] = floatToBf16(x[d]);
    }
    const long long slot = batch.slot(seq, pos);
    for (int g = 0; g < h.kvHeads; ++g)
      for (int isV = 0; isV < 2; ++isV) {
        std::vector<float> x = toFloat(std::span<const Bf16>(
            row + (h.qHeads + isV * h.kvHeads + g) * hd, hd));
        if (fp8) {
          const float scale = reference::kvRowScale(x);
          for (float &v : x)
            v = reference::e4m3ToFloat(reference::floatToE4M3(v / scale)) *
                scale;
        }
        std::vector<float> &f = isV ? vF : kF;
        std::copy(x.begin(), x.end(),
                  f.begin() +
                      (static_cast<std::size_t>(slot) * h.kvHeads + g) * hd);
      }
  }
  AttentionProblem p{h.qHeads,
                     h.kvHeads,
                     hd,
                     blockSize,
                     batch.tokens,
                     batch.maxBlocks,
                     rotated,
                     {},
                     {},
                     batch.positions,
                     batch.tokenSeq,
                     batch.blockTables,
                     1.0f / std::sqrt(static_cast<float>(hd)),
                     fc.window,
                     kF,
                     vF,
                     fc.softcap};
  return referenceAttention(p);
}

void runFusedCase(Checker &c, const Shape &h, int blockSize, bool fp8,
                  const FusedCase &fc, const RopeTable &table) {
  PagedAttentionSpec unfused{h.qHeads,  h.kvHeads, h.headDim,
                             blockSize, fp8,       false};
  unfused.softcap = fc.softcap > 0.0f;
  PagedAttentionSpec fused = unfused;
  fused.fusedRope = true;
  fused.qkNorm = fc.qkNorm;
  PagedAttentionSpec preload = fused; // small grids' variant
  preload.preloadWalk = true;
  const RopeKvWriteSpec rope{h.qHeads, h.kvHeads, h.headDim, blockSize, fp8};
  const PagedBatch batch =
      makePagedBatch(c.rng, fc.seqs, fc.padding, blockSize);
  const int hd = h.headDim;
  const int rowElems = (h.qHeads + 2 * h.kvHeads) * hd;
  std::vector<Bf16> qkv = randomBf16(
      c.rng, static_cast<std::size_t>(batch.tokens) * rowElems, -2, 2);
  // QkNorm: the norm weights, and qkv as the head norm leaves it (what the
  // reference rotates).
  const std::vector<Bf16> qNormW = randomBf16(c.rng, hd, 0.5f, 1.5f);
  const std::vector<Bf16> kNormW = randomBf16(c.rng, hd, 0.5f, 1.5f);
  std::vector<Bf16> normed = qkv;
  if (fc.qkNorm)
    for (int t = 0; t < batch.tokens; ++t)
      for (int head = 0; head < h.qHeads + h.kvHeads; ++head) {
        Bf16 *x = normed.data() + static_cast<std::size_t>(t) * rowElems +
                  static_cast<std::size_t>(head) * hd;
        const std::vector<Bf16> y = referenceNormRows(
            std::span<const Bf16>(x, hd), head < h.qHeads ? qNormW : kNormW, 1,
            hd, kNormEps);
        std::copy(y.begin(), y.end(), x);
      }
  const std::size_t rows =
      static_cast<std::size_t>(batch.numBlocks) * blockSize * h.kvHeads;
  const std::size_t valueBytes = fp8 ? 1 : 2;
  // Caches of valid random values (fp8: finite E4M3 bytes and scales).
  std::vector<uint8_t> kInit(rows * hd * valueBytes),
      vInit(rows * hd * valueBytes);
  std::vector<float> ksInit(rows), vsInit(rows);
  for (std::vector<uint8_t> *cache : {&kInit, &vInit}) {
    if (fp8) {
      for (uint8_t &b : *cache)
        b = reference::floatToE4M3(c.rng.uniform(-400.0f, 400.0f));
    } else {
      const std::vector<Bf16> values = randomBf16(c.rng, rows * hd, -1, 1);
      std::memcpy(cache->data(), values.data(), cache->size());
    }
  }
  for (float &s : ksInit)
    s = c.rng.uniform(0.001f, 0.01f);
  for (float &s : vsInit)
    s = c.rng.uniform(0.001f, 0.01f);
  int maxContext = 0;
  for (int t = 0; t < batch.tokens; ++t)
    if (batch.tokenSeq[t] >= 0)
      maxContext = std::max(maxContext, batch.positions[t] + 1);

  const std::vector<double> ref =
      fusedReference(h, blockSize, fp8, fc, batch, table, normed, kInit, vInit,
                     ksInit, vsInit);
  const DeviceBuffer dQNormW = c.upload(qNormW), dKNormW = c.upload(kNormW);
  const cuda::RmsNormSpec headNorm{hd};
  const DeviceBuffer dFreq = c.upload(table.invFreq);
  const DeviceBuffer dPos = c.upload(batch.positions);
  const DeviceBuffer dSeq = c.upload(batch.tokenSeq);
  const DeviceBuffer dTables = c.upload(batch.blockTables);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const float scaling = table.attentionScaling;
  const cuda::Kernel &ropeKernel = c.kernels.kernel(rope.instance());
  const cuda::Kernel &plainKernel = c.kernels.kernel(unfused.instance());
  const cuda::Kernel &fusedKernel = c.kernels.kernel(fused.instance());
  const cuda::Kernel &preloadKernel = c.kernels.kernel(preload.instance());
  std::vector<PagedAttentionSpec> split; // preload with its heads spread
  for (int s : headSplits(h)) {
    split.push_back(preload);
    split.back().headSplit = s;
  }

  struct Side {
    DeviceBuffer qkv, k, v, ks, vs, out;
  };
  auto makeSide = [&] {
    return Side{
        c.upload(qkv),
        c.upload(kInit),
        c.upload(vInit),
        c.upload(ksInit),
        c.upload(vsInit),
        c.poisoned(static_cast<std::size_t>(batch.tokens) * h.qHeads * hd * 2)};
  };

  for (const SplitRun &run :
       splitRuns(c, unfused, batch.tokens, maxContext, fc.splits)) {
    const int splits = run.splits;
    const bool cluster = run.cluster;
    PagedAttentionSpec plainSpec = unfused, fusedSpec = fused,
                       preloadSpec = preload;
    plainSpec.clusterMerge = fusedSpec.clusterMerge = preloadSpec.clusterMerge =
        cluster;
    PagedAttentionSpec sized = unfused; // arrivals for the head splits too
    sized.headSplit = PagedAttentionSpec::kMaxHeadSplit;
    const SplitWorkspace work = splitWorkspace(c, sized, batch.tokens, splits);
    float *partials = work.partials();
    unsigned *arrivals = work.arrivals();
    Side a = makeSide(), b = makeSide(), p = makeSide();
    // The fp8 cache's scales; null for a bf16 cache.
    auto scales = [&](const DeviceBuffer &b) -> CUdeviceptr {
      return fp8 ? b.address() : 0;
    };
    auto attend = [&](const cuda::Kernel &k, const PagedAttentionSpec &spec,
                      Side &s, CUdeviceptr invFreq) {
      k.launch(spec.dims(batch.tokens, splits, kClusterCheckSMs), c.stream,
               kernels::PagedAttentionArgs{.out = s.out.address(),
                                           .qkv = s.qkv.address(),
                                           .kCache = s.k.address(),
                                           .vCache = s.v.address(),
                                           .kScales = scales(s.ks),
                                           .vScales = scales(s.vs),
                                           .positions = dPos.address(),
                                           .tokenSeq = dSeq.address(),
                                           .blockTables = dTables.address(),
                                           .partials = partials,
                                           .arrivals = arrivals,
                                           .invFreq = invFreq,
                                           .maxBlocks = batch.maxBlocks,
                                           .scale = scale,
                                           .slidingWindow = fc.window,
                                           .tokens = batch.tokens,
                                           .attentionScaling = scaling,
                                           .softcap = fc.softcap,
                                           .ropeLongFrom = table.longFrom,
                                           .qNormWeight = dQNormW.address(),
                                           .kNormWeight = dKNormW.address(),
                                           .normEps = kNormEps});
    };
    std::function<void(int)> unfusedLaunch = [&](int) {
      if (fc.qkNorm) // in place, q heads then k heads, as the executor does
        c.kernels.kernel(headNorm.instance())
            .launch(headNorm.dims(batch.tokens * (h.qHeads + h.kvHeads)),
                    c.stream,
                    kernels::RmsNormArgs{.out = a.qkv.address(),
                                         .x = a.qkv.address(),
                                         .weight = dQNormW.address(),
                                         .eps = kNormEps,
                                         .rows = batch.tokens *
                                                 (h.qHeads + h.kvHeads),
                                         .xStride = rowElems,
                                         .outStride = rowElems,
                                         .rowGroup = h.qHeads + h.kvHeads,
                                         .secondWeight = dKNormW.address(),
                                         .secondFrom = h.qHeads});
      ropeKernel.launch(
          rope.dims(batch.tokens), c.stream,
          kernels::RopeKvWriteArgs{.qkv = a.qkv.address(),
                                   .kCache = a.k.address(),
                                   .vCache = a.v.address(),
                                   .kScales = scales(a.ks),
                                   .vScales = scales(a.vs),
                                   .invFreq = dFreq.address(),
                                   .positions = dPos.address(),
                                   .tokenSeq = dSeq.address(),
                                   .blockTables = dTables.address(),
                                   .attentionScaling = scaling,
                                   .maxBlocks = batch.maxBlocks,
                                   .tokens = batch.tokens,
                                   .ropeLongFrom = table.longFrom});
      attend(plainKernel, plainSpec, a, 0);
    };
    std::function<void(int)> fusedLaunch = [&](int) {
      attend(fusedKernel, fusedSpec, b, dFreq.address());
    };
    std::function<void(int)> preloadLaunch = [&](int) {
      attend(preloadKernel, preloadSpec, p, dFreq.address());
    };
    unfusedLaunch(0);
    fusedLaunch(0);
    preloadLaunch(0);
    const std::vector<Bf16> outA = c.download<Bf16>(a.out);
    const std::vector<uint8_t> kA = c.download<uint8_t>(a.k),
                               vA = c.download<uint8_t>(a.v);
    const std::string name = sol::cat(
        h.qHeads, "/", h.kvHeads, "x", hd, fp8 ? " fp8" : " bf16",
        " BS=", blockSize, " ", fc.label, " splits=", splits,
        cluster ? " cluster" : "",
        table.label == "llama" ? std::string() : " " + table.label,
        fc.window > 0 ? sol::cat(" window=", fc.window) : std::string(),
        fc.softcap > 0.0f ? sol::cat(" softcap=", fc.softcap) : std::string(),
        fc.qkNorm ? " qk_norm" : "");
    // Both fused variants against rope_kv_write + the unfused kernel, bit
    // for bit: output, caches (and fp8 scales).
    auto check = [&](Side &s, const PagedAttentionSpec &spec,
                     const std::string &label, std::function<void(int)> *run) {
      const std::vector<Bf16> out = c.download<Bf16>(s.out);
      std::size_t differ = mismatches(outA, out);
      differ += mismatches(kA, c.download<uint8_t>(s.k));
      differ += mismatches(vA, c.download<uint8_t>(s.v));
      if (fp8) {
        differ += mismatches(c.download<float>(a.ks), c.download<float>(s.ks));
        differ += mismatches(c.download<float>(a.vs), c.download<float>(s.vs));
      }
      // The unfused kernel still sees q, k rotated once: a fused one must
      // leave qkv as it found it.
      differ += mismatches(c.download<Bf16>(s.qkv), qkv);
      CheckRecord r = makeRecord(c, "fused_rope", label, spec.instance());
      // Against the float64 reference; then bit for bit.
      judge(r, relativeL2(toFloat(out), ref), 1e-2, countPoison(out));
      r.passed = r.passed && differ == 0;
      if (differ)
        r.note += sol::cat(differ, " values differ from rope_kv_write + "
                                   "paged_attention; ");
      c.finish(std::move(r), fc.timed ? run : nullptr);
    };
    check(b, fused, name, &fusedLaunch);
    check(p, preload, name + " preload", &preloadLaunch);
    for (PagedAttentionSpec spec : split) {
      spec.clusterMerge = cluster;
      Side side = makeSide();
      const cuda::Kernel &k = c.kernels.kernel(spec.instance());
      std::function<void(int)> launch = [&](int) {
        attend(k, spec, side, dFreq.address());
      };
      launch(0);
      check(side, spec, sol::cat(name, " preload heads/", spec.headSplit),
            &launch);
    }
    if (fc.timed) {
      CheckRecord base = makeRecord(
          c, "fused_rope",
          name + (fc.qkNorm ? " head rms_norm + rope_kv_write + unfused"
                            : " rope_kv_write + unfused"),
          unfused.instance());
      c.finish(std::move(base), &unfusedLaunch);
    }
  }
}

void checkFusedRope(Checker &c) {
  const std::vector<SequenceSpec> decodes = {{1, 1},    {16, 1},  {17, 1},
                                             {32, 1},   {33, 1},  {100, 1},
                                             {1000, 1}, {4096, 1}};
  for (const Shape &h : kShapes)
    for (bool fp8 : {false, true})
      for (int blockSize : {16, 32}) {
        const bool first = &h == &kShapes[0] && blockSize == 16;
        // New positions at a block's first slot (context 17 or 33), its last
        // (16, 32), inside, and deep into long contexts; padding tokens.
        std::vector<FusedCase> cases = {
            {"decode",
             {{1, 1},
              {16, 1},
              {17, 1},
              {32, 1},
              {33, 1},
              {100, 1},
              {1000, 1},
              {4096, 1}},
             2,
             {1, 0, 7},
             false},
        };
        if (first && !c.options.quick) {
          // Batch-1 decode at the chosen split count (0) and around it.
          cases.push_back(
              {"decode T=1 ctx=256", {{256, 1}}, 0, {1, 2, 4, 0, 16}, true});
          cases.push_back(
              {"decode T=1 ctx=1024", {{1024, 1}}, 0, {4, 8, 16, 0}, true});
          cases.push_back({"decode T=64 ctx=512",
                           std::vector<SequenceSpec>(64, {512, 1}),
                           0,
                           {0},
                           true});
        }
        for (const FusedCase &fc : cases)
          runFusedCase(c, h, blockSize, fp8, fc, llamaRopeTable(h.headDim));
        // Partial rotary, LongRoPE switching between the positions,
        // windowed and soft-capped.
        if (blockSize == 16 && (&h == &kShapes[0] || &h == &kShapes[2])) {
          runFusedCase(c, h, blockSize, fp8,
                       {"decode", decodes, 2, {1, 0}, false},
                       longRopeTable(h.headDim, 64, 1.19f));
          runFusedCase(c, h, blockSize, fp8,
                       {"decode", decodes, 2, {1, 0}, false, 64, kSoftcap},
                       partialRopeTable(h.headDim, 0.8f));
        }
      }
  // The q/k head norm: decodes at several split counts, windowed, and
  // batch-1 decode timed against the three kernels it replaces.
  for (const Shape &h : kQkNormShapes)
    for (bool fp8 : {false, true}) {
      runFusedCase(c, h, 16, fp8,
                   {"decode", decodes, 2, {1, 0, 7}, false, 0, 0.0f, true},
                   llamaRopeTable(h.headDim));
      runFusedCase(c, h, 16, fp8,
                   {"decode", decodes, 2, {1, 0}, false, 64, 0.0f, true},
                   partialRopeTable(h.headDim, 1.19f));
      // Long contexts: more splits, or fewer with the heads split.
      if (!c.options.quick && &h == &kQkNormShapes[0] && !fp8)
        runFusedCase(c, h, 16, fp8,
                     {"decode T=1 ctx=2048",
                      {{2048, 1}},
                      0,
                      {8, 16, 0},
                      true,
                      0,
                      0.0f,
                      true},
                     llamaRopeTable(h.headDim));
      if (!c.options.quick)
        runFusedCase(
            c, h, 16, fp8,
            {"decode T=1 ctx=256", {{256, 1}}, 0, {0}, true, 0, 0.0f, true},
            llamaRopeTable(h.headDim));
    }
  for (const Shape &h : kMoreShapes)
    for (bool fp8 : {false, true}) {
      runFusedCase(c, h, 16, fp8, {"decode", decodes, 2, {1, 0, 7}, false},
                   longRopeTable(h.headDim, 64, 1.19f));
      runFusedCase(c, h, 16, fp8,
                   {"decode", decodes, 2, {1, 0}, false, 64, kSoftcap},
                   partialRopeTable(h.headDim, 1.19f));
      if (!c.options.quick) {
        runFusedCase(c, h, 16, fp8,
                     {"decode T=1 ctx=1024", {{1024, 1}}, 0, {0}, true},
                     llamaRopeTable(h.headDim));
        // Batch-1 decode of the decode benchmarks' contexts, split counts
        // around the chosen one.
        runFusedCase(
            c, h, 16, fp8,
            {"decode T=1 ctx=200", {{200, 1}}, 0, {1, 2, 4, 8, 16, 0}, true},
            llamaRopeTable(h.headDim));
      }
    }
}

} // namespace

std::vector<CheckFamily> fusedRopeChecks() {
  return {{"fused_rope",
           [](KernelLibrary &k) {
             auto require = [&](const Shape &h, int blockSize, bool fp8,
                                bool softcap, bool qkNorm = false) {
               k.require(RopeKvWriteSpec{h.qHeads, h.kvHeads, h.headDim,
                                         blockSize, fp8}
                             .instance());
               PagedAttentionSpec spec{h.qHeads, h.kvHeads, h.headDim,
                                       blockSize, fp8};
               spec.softcap = softcap;
               k.require(spec.instance());
               spec.fusedRope = true;
               spec.qkNorm = qkNorm;
               k.require(spec.instance());
               spec.preloadWalk = true;
               k.require(spec.instance());
               for (int split : headSplits(h)) {
                 spec.headSplit = split;
                 k.require(spec.instance());
               }
               if (qkNorm)
                 k.require(cuda::RmsNormSpec{h.headDim}.instance());
             };
             for (const Shape &h : kQkNormShapes)
               for (bool fp8 : {false, true})
                 require(h, 16, fp8, false, true);
             for (const Shape &h : kShapes)
               for (bool fp8 : {false, true}) {
                 for (int blockSize : {16, 32})
                   require(h, blockSize, fp8, false);
                 if (&h == &kShapes[0] || &h == &kShapes[2])
                   require(h, 16, fp8, true);
               }
             for (const Shape &h : kMoreShapes)
               for (bool fp8 : {false, true})
                 for (bool softcap : {false, true})
                   require(h, 16, fp8, softcap);
           },
           checkFusedRope}};
}

} // namespace sol::check
