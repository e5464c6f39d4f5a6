//===- KvFp8Checks.cpp - rope_kv_write_fp8 and paged_attention_fp8 --------===//
//
// The fp8 (E4M3) KV cache with per-(token, kv head) scales:
//  * rope_kv_write_fp8 must store exactly what the host rule
//    (runtime/reference/Fp8E4M3.h) gives for the kernel's own rotated bf16
//    k and for v: every byte and every scale bit; its rotated q and k are
//    held to the bf16 RoPE reference (Llama's table, partial rotary with
//    pass-through pairs and attention scaling != 1, LongRoPE switching
//    inside the tested positions);
//  * paged_attention_fp8 against a float32 reference computed from the
//    dequantized cache (e4m3 x scale), decode with splits and prefill, head
//    dims 64, 80, 96, 128 and 256, GQA groups of 1 to 8 (16 values per lane
//    for groups of at most 4 at head dims that are multiples of 32, else
//    8), blocks of 16 and 32, sliding windows and soft-capping.
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
using cuda::KernelInstance;
using cuda::PagedAttentionSpec;
using cuda::RopeKvWriteSpec;
using reference::e4m3ToFloat;
using reference::floatToE4M3;
using reference::kvRowScale;

struct KvShape {
  int qHeads, kvHeads, headDim;
};

const KvShape kShapes[] = {
    {32, 8, 64},  // Llama-3.2-1B: group 4, 16 fp8 per lane
    {28, 4, 128}, // Qwen2.5-7B: group 7, 8 fp8 per lane
    {32, 8, 128}, // Llama-3.1-8B
};
const int kBlockSizes[] = {16, 32};

// Head dims 80, 96 and 256 (blocks of 16 only).
const KvShape kMoreShapes[] = {
    {32, 32, 80}, // Phi-2: 8 fp8 per lane, 10 of 16 lanes
    {32, 8, 80},  // group 4, still 8 per lane (halves of 40)
    {32, 32, 96}, // Phi-3-mini: 16 per lane, 6 of 8 lanes
    {28, 4, 96},  // group 7: 8 per lane, 12 of 16 lanes
    {8, 4, 256},  // Gemma-2-2B
    {16, 2, 256}, // group 8
};
constexpr float kSoftcap = 50.0f;

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

void checkRopeFp8(Checker &c, const KvShape &h, int blockSize,
                  const RopeTable &table) {
  const RopeKvWriteSpec spec{h.qHeads, h.kvHeads, h.headDim, blockSize, true};
  const KernelInstance instance = spec.instance();
  const PagedBatch batch = makePagedBatch(
      c.rng, {{1, 1}, {40, 40}, {700, 2}, {70, 3}}, 2, blockSize);
  const int hd = h.headDim;
  const int rowElems = (h.qHeads + 2 * h.kvHeads) * hd;
  std::vector<Bf16> qkv = randomBf16(
      c.rng, static_cast<std::size_t>(batch.tokens) * rowElems, -2, 2);
  // One all-zero v row: its scale must be 1 and its bytes 0.
  for (int d = 0; d < hd; ++d)
    qkv[(h.qHeads + h.kvHeads) * hd + d] = floatToBf16(0.0f);
  const std::size_t rows =
      static_cast<std::size_t>(batch.numBlocks) * blockSize * h.kvHeads;
  DeviceBuffer dQkv = c.upload(qkv);
  DeviceBuffer dK = c.poisoned(rows * hd), dV = c.poisoned(rows * hd);
  DeviceBuffer dKs = c.poisoned(rows * 4), dVs = c.poisoned(rows * 4);
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
                                 .kScales = dKs.address(),
                                 .vScales = dVs.address(),
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
  // The rotated q and k against the bf16 RoPE reference.
  std::vector<float> rotGot;
  std::vector<double> rotRef;
  for (int t = 0; t < batch.tokens; ++t) {
    if (batch.tokenSeq[t] < 0)
      continue;
    const std::size_t row = static_cast<std::size_t>(t) * rowElems;
    for (int head = 0; head < h.qHeads + h.kvHeads; ++head) {
      const std::vector<float> expected = referenceRope(
          toFloat(std::span<const Bf16>(qkv.data() + row + head * hd, hd)),
          batch.positions[t], table);
      for (int d = 0; d < hd; ++d) {
        rotGot.push_back(bf16ToFloat(out[row + head * hd + d]));
        rotRef.push_back(expected[d]);
      }
    }
  }
  const std::vector<uint8_t> kBytes = c.download<uint8_t>(dK);
  const std::vector<uint8_t> vBytes = c.download<uint8_t>(dV);
  const std::vector<float> kScales = c.download<float>(dKs);
  const std::vector<float> vScales = c.download<float>(dVs);

  std::size_t mismatches = 0, rowsChecked = 0;
  std::vector<float> got;
  std::vector<double> ref;
  for (int t = 0; t < batch.tokens; ++t) {
    const int seq = batch.tokenSeq[t];
    if (seq < 0)
      continue;
    const std::size_t row = static_cast<std::size_t>(t) * rowElems;
    const long long slot = batch.slot(seq, batch.positions[t]);
    for (int g = 0; g < h.kvHeads; ++g) {
      const std::size_t cacheRow =
          static_cast<std::size_t>(slot) * h.kvHeads + g;
      for (int isV = 0; isV < 2; ++isV) {
        // k: the kernel's rotated k (left in qkv); v: as given.
        const std::vector<Bf16> &src = isV ? qkv : out;
        const std::size_t at = row + (h.qHeads + isV * h.kvHeads + g) * hd;
        const std::vector<float> x =
            toFloat(std::span<const Bf16>(src.data() + at, hd));
        const float scale = kvRowScale(x);
        const float gotScale = (isV ? vScales : kScales)[cacheRow];
        mismatches += bitsOf(scale) != bitsOf(gotScale);
        const std::vector<uint8_t> &bytes = isV ? vBytes : kBytes;
        for (int d = 0; d < hd; ++d) {
          const uint8_t b = bytes[cacheRow * hd + d];
          mismatches += b != floatToE4M3(x[d] / scale);
          got.push_back(e4m3ToFloat(b) * gotScale);
          ref.push_back(x[d]);
        }
        ++rowsChecked;
      }
    }
  }
  CheckRecord r =
      makeRecord(c, "rope_kv_write_fp8",
                 sol::cat(h.qHeads, "/", h.kvHeads, "x", hd, " BS=", blockSize,
                          " T=", batch.tokens, " ", table.label),
                 instance);
  // Dequantized rows sit within E4M3's rounding of the bf16 rows.
  judge(r, relativeL2(got, ref), 5e-2, 0);
  const double rotError = relativeL2(rotGot, rotRef);
  r.note += sol::cat("rope rel. error ", rotError, "; ");
  if (!(rotError <= 1e-2)) {
    r.passed = false;
    r.note += "the rotated q and k are off the RoPE reference; ";
  }
  if (mismatches) {
    r.passed = false;
    r.note += sol::cat(mismatches,
                       " bytes or scales differ from the host "
                       "rule over ",
                       rowsChecked, " rows; ");
  }
  r.bytes = 2.0 * batch.tokens * rowElems * 2;
  c.finish(std::move(r), &launch);
}

struct Fp8Case {
  std::string label;
  std::vector<SequenceSpec> seqs;
  int padding;
  std::vector<int> splits; // 0 = chooseSplits
  int window = 0;
  float softcap = 0.0f;
};

void runFp8Attention(Checker &c, const KvShape &h, int blockSize,
                     const Fp8Case &fc) {
  PagedAttentionSpec spec{h.qHeads, h.kvHeads, h.headDim, blockSize, true};
  spec.softcap = fc.softcap > 0.0f;
  const KernelInstance instance = spec.instance();
  const PagedBatch batch =
      makePagedBatch(c.rng, fc.seqs, fc.padding, blockSize);
  const int hd = h.headDim;
  const std::vector<Bf16> qkv =
      attentionQkv(c.rng, batch, h.qHeads, h.kvHeads, hd);
  // The cache: random rows of varied magnitude, quantized by the host rule;
  // rows no sequence attends to are NaN (byte 0x7F, scale NaN).
  const Fp8Cache cache = makeFp8Cache(c.rng, batch, h.kvHeads, hd, false);
  int maxContext = 0;
  for (int t = 0; t < batch.tokens; ++t)
    if (batch.tokenSeq[t] >= 0)
      maxContext = std::max(maxContext, batch.positions[t] + 1);
  DeviceBuffer dK = c.upload(cache.kBytes), dV = c.upload(cache.vBytes);
  DeviceBuffer dKs = c.upload(cache.kScales), dVs = c.upload(cache.vScales);
  const DeviceBuffer dTables = c.upload(batch.blockTables);
  const DeviceBuffer dQkv = c.upload(qkv);
  const DeviceBuffer dPos = c.upload(batch.positions);
  const DeviceBuffer dSeq = c.upload(batch.tokenSeq);
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

  const cuda::Kernel &attention = c.kernels.kernel(instance);
  for (const SplitRun &run :
       splitRuns(c, spec, batch.tokens, maxContext, fc.splits)) {
    const int splits = run.splits;
    const bool cluster = run.cluster;
    PagedAttentionSpec launchSpec = spec;
    launchSpec.clusterMerge = cluster;
    DeviceBuffer dOut =
        c.poisoned(static_cast<std::size_t>(batch.tokens) * h.qHeads * hd * 2);
    const SplitWorkspace work = splitWorkspace(c, spec, batch.tokens, splits);
    float *partials = work.partials();
    unsigned *arrivals = work.arrivals();
    std::function<void(int)> launch = [&](int) {
      attention.launch(
          launchSpec.dims(batch.tokens, splits, kClusterCheckSMs), c.stream,
          kernels::PagedAttentionArgs{.out = dOut.address(),
                                      .qkv = dQkv.address(),
                                      .kCache = dK.address(),
                                      .vCache = dV.address(),
                                      .kScales = dKs.address(),
                                      .vScales = dVs.address(),
                                      .positions = dPos.address(),
                                      .tokenSeq = dSeq.address(),
                                      .blockTables = dTables.address(),
                                      .partials = partials,
                                      .arrivals = arrivals,
                                      .maxBlocks = batch.maxBlocks,
                                      .scale = scale,
                                      .slidingWindow = fc.window,
                                      .tokens = batch.tokens,
                                      .softcap = fc.softcap});
    };
    launch(0);
    const std::vector<Bf16> out = c.download<Bf16>(dOut);
    // A second launch must give the same bits (arrival counters reset).
    bool repeatable = true;
    if (splits > 1) {
      dOut.fillBytes(0xff, c.stream);
      launch(0);
      repeatable = c.download<Bf16>(dOut) == out;
    }
    CheckRecord r = makeRecord(
        c, "attention_fp8",
        sol::cat(h.qHeads, "/", h.kvHeads, "x", hd, " BS=", blockSize, " ",
                 fc.label, " splits=", splits, cluster ? " cluster" : "",
                 fc.softcap > 0.0f ? sol::cat(" softcap=", fc.softcap)
                                   : std::string()),
        instance);
    // The reference reads the same dequantized values, so only the bf16
    // output and fp32 summation order differ: the bf16 cases' bound.
    judge(r, relativeL2(toFloat(out), ref), 1e-2, countPoison(out));
    if (!repeatable) {
      r.passed = false;
      r.note += "a second launch gave a different result; ";
    }
    c.finish(std::move(r), nullptr);
  }
}

void checkKvFp8(Checker &c) {
  for (const KvShape &h : kShapes)
    for (int blockSize : kBlockSizes) {
      checkRopeFp8(c, h, blockSize, llamaRopeTable(h.headDim));
      const Fp8Case cases[] = {
          {"prefill", {{1, 1}, {37, 37}, {300, 300}, {500, 100}}, 2, {1, 3}},
          {"decode",
           {{1, 1}, {15, 1}, {33, 1}, {100, 1}, {1000, 1}, {4096, 1}},
           1,
           {1, 0, 7}},
      };
      for (const Fp8Case &fc : cases)
        runFp8Attention(c, h, blockSize, fc);
    }
  checkRopeFp8(c, kShapes[1], 16, partialRopeTable(128, 1.19f));
  checkRopeFp8(c, kShapes[0], 32, longRopeTable(64, 20, 1.19f));
  for (const KvShape &h : kMoreShapes) {
    checkRopeFp8(c, h, 16, partialRopeTable(h.headDim, 1.19f));
    checkRopeFp8(c, h, 16, longRopeTable(h.headDim, 20, 1.19f));
    const Fp8Case cases[] = {
        {"prefill", {{1, 1}, {37, 37}, {300, 300}, {500, 100}}, 2, {1, 3}},
        {"decode",
         {{1, 1}, {15, 1}, {33, 1}, {100, 1}, {1000, 1}, {4096, 1}},
         1,
         {1, 0, 7}},
        {"prefill, window=64",
         {{300, 300}, {1000, 1}, {64, 2}},
         1,
         {1, 4},
         64,
         kSoftcap},
        {"decode", {{1, 1}, {100, 1}, {2500, 1}}, 1, {1, 0}, 0, kSoftcap},
    };
    for (const Fp8Case &fc : cases)
      runFp8Attention(c, h, 16, fc);
  }
  // The soft-capping variant at head dim 128, group 7 (8 values a lane).
  runFp8Attention(c, kShapes[1], 32,
                  {"decode, window=64",
                   {{1, 1}, {100, 1}, {1000, 1}, {64, 2}},
                   1,
                   {1, 0},
                   64,
                   kSoftcap});
}

} // namespace

std::vector<CheckFamily> kvFp8Checks() {
  return {
      {"kv_fp8",
       [](KernelLibrary &k) {
         for (const KvShape &h : kShapes)
           for (int blockSize : kBlockSizes) {
             k.require(RopeKvWriteSpec{h.qHeads, h.kvHeads, h.headDim,
                                       blockSize, true}
                           .instance());
             const PagedAttentionSpec spec{h.qHeads, h.kvHeads, h.headDim,
                                           blockSize, true};
             k.require(spec.instance());
           }
         PagedAttentionSpec capped{28, 4, 128, 32, true};
         capped.softcap = true;
         k.require(capped.instance());
         for (const KvShape &h : kMoreShapes) {
           k.require(RopeKvWriteSpec{h.qHeads, h.kvHeads, h.headDim, 16, true}
                         .instance());
           PagedAttentionSpec spec{h.qHeads, h.kvHeads, h.headDim, 16, true};
           k.require(spec.instance());
           spec.softcap = true;
           k.require(spec.instance());
         }
       },
       checkKvFp8}};
}

} // namespace sol::check
