//===- ElementwiseChecks.cpp - embedding, gather_rows, swiglu, argmax -----===//

#include "Checks.h"
#include "ReferenceKernels.h"

#include <cmath>
#include <cstring>
#include <map>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;
using cuda::KernelInstance;

constexpr int kHidden = 2048;
constexpr int kVocab = 32000;
constexpr int kIntermediate = 8192;
constexpr int kLogitsVocab = 128256;

void checkEmbedding(Checker &c) {
  const cuda::EmbeddingSpec spec{kHidden};
  const KernelInstance instance = spec.instance();
  const std::vector<Bf16> table =
      randomBf16(c.rng, static_cast<std::size_t>(kVocab) * kHidden, -1, 1);
  const DeviceBuffer dTable = c.upload(table);
  const cuda::Kernel &kernel = c.kernels.kernel(instance);
  // Plain ids, then chained ones: every third token names a row of the
  // previous step's ids (-1 - row), or one token names the previous step's
  // fused argmax key: read in place and cleared (one-token steps), or read
  // from a copy that stays.
  enum class Chain { None, Ids, Key, KeyCopy };
  struct Case {
    int tokens;
    Chain chain;
  };
  for (const Case &cs :
       {Case{1, Chain::None}, Case{333, Chain::None}, Case{4096, Chain::None},
        Case{333, Chain::Ids}, Case{1, Chain::Ids}, Case{1, Chain::Key},
        Case{333, Chain::KeyCopy}}) {
    const int tokens = cs.tokens;
    std::vector<int> ids(tokens), resolved(tokens);
    for (int &id : ids)
      id = c.rng.uniformInt(0, kVocab - 1);
    ids.front() = kVocab - 1;
    ids.back() = 0;
    const int previousRows = 64;
    std::vector<int> previous(previousRows);
    for (int &id : previous)
      id = c.rng.uniformInt(0, kVocab - 1);
    resolved = ids;
    if (cs.chain == Chain::Ids)
      for (int t = 0; t < tokens; t += 3) {
        const int row = c.rng.uniformInt(0, previousRows - 1);
        ids[t] = -1 - row;
        resolved[t] = previous[row];
      }
    // A key as the LM head leaves it: value bits high, 0xffffffff - index
    // low.
    const int keyIndex = c.rng.uniformInt(0, kVocab - 1);
    std::vector<unsigned long long> key = {
        (0xc0ffee00ull << 32) | (0xffffffffull - unsigned(keyIndex))};
    if (cs.chain == Chain::Key || cs.chain == Chain::KeyCopy) {
      const int t = cs.chain == Chain::Key ? 0 : tokens / 2;
      ids[t] = -1;
      resolved[t] = keyIndex;
    }
    const DeviceBuffer dIds = c.upload(ids);
    const DeviceBuffer dPrevious = c.upload(previous);
    DeviceBuffer dKey = c.upload(key);
    DeviceBuffer dOut =
        c.poisoned(static_cast<std::size_t>(tokens) * kHidden * 2);
    const cuda::LaunchDims dims =
        cs.chain == Chain::Key ? spec.keyChainedDims() : spec.dims(tokens);
    const bool keyed = cs.chain == Chain::Key || cs.chain == Chain::KeyCopy;
    const int clearKey = cs.chain == Chain::Key ? 1 : 0;
    std::function<void(int)> launch = [&](int) {
      const CUdeviceptr null = 0;
      kernel.launch(dims, c.stream,
                    kernels::EmbeddingArgs{
                        .out = dOut.address(),
                        .table = dTable.address(),
                        .ids = dIds.address(),
                        .previousIds =
                            cs.chain == Chain::Ids ? dPrevious.address() : null,
                        .previousKey = keyed ? dKey.address() : null,
                        .tokens = tokens,
                        .clearKey = clearKey});
    };
    launch(0);
    const std::vector<Bf16> out = c.download<Bf16>(dOut);
    std::vector<double> ref(out.size());
    for (int t = 0; t < tokens; ++t)
      for (int d = 0; d < kHidden; ++d)
        ref[static_cast<std::size_t>(t) * kHidden + d] = bf16ToFloat(
            table[static_cast<std::size_t>(resolved[t]) * kHidden + d]);
    const char *chain = cs.chain == Chain::None  ? ""
                        : cs.chain == Chain::Ids ? " chained ids"
                        : cs.chain == Chain::Key ? " chained key"
                                                 : " chained key copy";
    CheckRecord r = makeRecord(c, "embedding",
                               sol::cat("D=2048 T=", tokens, chain), instance);
    judge(r, relativeL2(toFloat(out), ref), 0.0, countPoison(out));
    if (keyed) {
      // In place, the kernel clears the key for the step's own LM head; a
      // copy stays as it was.
      const unsigned long long after =
          c.download<unsigned long long>(dKey).at(0);
      const unsigned long long want = clearKey ? 0ull : key[0];
      if (after != want) {
        r.passed = false;
        r.note +=
            sol::cat("key ", after, " after the launch, expected ", want, "; ");
      }
    }
    r.bytes = 2.0 * tokens * kHidden * 2;
    // Timing reruns would read a cleared key: the key case runs once.
    c.finish(std::move(r), cs.chain == Chain::Key ? nullptr : &launch);
  }
}

void checkGatherRows(Checker &c) {
  const cuda::GatherRowsSpec spec{kHidden};
  const KernelInstance instance = spec.instance();
  const int tokens = 4096;
  const std::vector<Bf16> in =
      randomBf16(c.rng, static_cast<std::size_t>(tokens) * kHidden, -1, 1);
  const DeviceBuffer dIn = c.upload(in);
  for (int n : {5, 64}) {
    std::vector<int> rows(n);
    for (int &row : rows)
      row = c.rng.uniformInt(0, tokens - 1);
    rows[0] = tokens - 1;
    const DeviceBuffer dRows = c.upload(rows);
    DeviceBuffer dOut = c.poisoned(static_cast<std::size_t>(n) * kHidden * 2);
    const cuda::Kernel &kernel = c.kernels.kernel(instance);
    std::function<void(int)> launch = [&](int) {
      kernel.launch(spec.dims(n), c.stream,
                    kernels::GatherRowsArgs{.out = dOut.address(),
                                            .in = dIn.address(),
                                            .indices = dRows.address(),
                                            .rows = n});
    };
    launch(0);
    const std::vector<Bf16> out = c.download<Bf16>(dOut);
    std::vector<double> ref(out.size());
    for (int i = 0; i < n; ++i)
      for (int d = 0; d < kHidden; ++d)
        ref[static_cast<std::size_t>(i) * kHidden + d] =
            bf16ToFloat(in[static_cast<std::size_t>(rows[i]) * kHidden + d]);
    CheckRecord r =
        makeRecord(c, "gather_rows", sol::cat("D=2048 n=", n), instance);
    judge(r, relativeL2(toFloat(out), ref), 0.0, countPoison(out));
    r.bytes = 2.0 * n * kHidden * 2;
    c.finish(std::move(r), &launch);
  }
}

void checkSwiglu(Checker &c) {
  const cuda::SwigluSpec spec{kIntermediate};
  const KernelInstance instance = spec.instance();
  for (int tokens : {1, 100, 4096}) {
    const std::vector<Bf16> gateUp = randomBf16(
        c.rng, static_cast<std::size_t>(tokens) * 2 * kIntermediate, -6, 6);
    const DeviceBuffer dIn = c.upload(gateUp);
    DeviceBuffer dOut =
        c.poisoned(static_cast<std::size_t>(tokens) * kIntermediate * 2);
    const cuda::Kernel &kernel = c.kernels.kernel(instance);
    std::function<void(int)> launch = [&](int) {
      kernel.launch(spec.dims(tokens), c.stream,
                    kernels::SwigluArgs{.out = dOut.address(),
                                        .gateUp = dIn.address(),
                                        .tokens = tokens});
    };
    launch(0);
    const std::vector<Bf16> out = c.download<Bf16>(dOut);
    CheckRecord r =
        makeRecord(c, "swiglu", sol::cat("I=8192 T=", tokens), instance);
    judge(r,
          relativeL2(toFloat(out),
                     referenceSwiglu(gateUp, tokens, kIntermediate)),
          1e-2, countPoison(out));
    r.bytes = 3.0 * tokens * kIntermediate * 2;
    c.finish(std::move(r), &launch);
  }
}

void checkArgmax(Checker &c) {
  const KernelInstance instance = cuda::ArgmaxSpec{}.instance();
  struct Case {
    int rows, vocab;
  };
  // One workspace per vocabulary for up to 64 rows, shared by launches of
  // fewer rows after more (as the executor's steps share one): each launch
  // must find its arrival counters at zero whatever the last one wrote.
  constexpr int kCapacity = 64;
  std::map<int, DeviceBuffer> workspaces;
  for (const Case &cs :
       {Case{64, kLogitsVocab}, Case{8, kLogitsVocab}, Case{4, kLogitsVocab},
        Case{1, kLogitsVocab}, Case{9, 1001}}) {
    std::vector<float> logits(static_cast<std::size_t>(cs.rows) * cs.vocab);
    for (float &v : logits)
      v = c.rng.uniform(-10.0f, 10.0f);
    for (int row = 0; row < cs.rows; ++row) {
      float *l = logits.data() + static_cast<std::size_t>(row) * cs.vocab;
      const int a = c.rng.uniformInt(0, cs.vocab - 2);
      const int b = c.rng.uniformInt(a + 1, cs.vocab - 1);
      if (row % 3 == 1) { // a tie: the lower index must win
        l[a] = 20.0f;
        l[b] = 20.0f;
      } else if (row % 3 == 2) { // NaN counts as the maximum
        l[b] = 25.0f;
        l[a] = NAN;
      } else {
        l[b] = 20.0f + row;
      }
    }
    const cuda::ArgmaxSpec spec{cs.vocab};
    const DeviceBuffer dLogits = c.upload(logits);
    DeviceBuffer dOut = c.poisoned(static_cast<std::size_t>(cs.rows) * 4);
    // The arrival counters start at zero; partials may hold anything.
    auto [it, fresh] = workspaces.try_emplace(cs.vocab);
    if (fresh) {
      it->second = c.poisoned(spec.workspaceBytes(kCapacity));
      it->second.fillBytes(0, c.stream);
    }
    const DeviceBuffer &workspace = it->second;
    const cuda::Kernel &kernel = c.kernels.kernel(instance);
    std::function<void(int)> launch = [&](int) {
      const CUdeviceptr w = workspace.address();
      kernel.launch(
          spec.dims(cs.rows), c.stream,
          kernels::ArgmaxArgs{.out = dOut.address(),
                              .logits = dLogits.address(),
                              .partialValue = w,
                              .partialIndex = w + spec.indexOffset(kCapacity),
                              .arrivals = w + spec.arrivalOffset(kCapacity),
                              .rows = cs.rows,
                              .vocab = cs.vocab});
    };
    // Twice, re-poisoning the output: the second launch shows the first
    // left the arrival counters at zero.
    std::vector<int> out;
    int wrong = 0, unwritten = 0;
    for (int pass = 0; pass < 2; ++pass) {
      dOut.fillBytes(0xff, c.stream);
      launch(0);
      out = c.download<int>(dOut);
      for (int row = 0; row < cs.rows; ++row) {
        const std::span<const float> l(
            logits.data() + static_cast<std::size_t>(row) * cs.vocab, cs.vocab);
        unwritten += out[row] == -1;
        wrong += out[row] != referenceArgmax(l);
      }
    }
    CheckRecord r = makeRecord(
        c, "argmax", sol::cat("rows=", cs.rows, " V=", cs.vocab), instance);
    judge(r, static_cast<double>(wrong) / (2 * cs.rows), 0.0, unwritten);
    if (wrong)
      r.note = sol::cat(wrong, " rows with a wrong index");
    r.bytes = 4.0 * cs.rows * cs.vocab;
    c.finish(std::move(r), &launch);
  }
}

} // namespace

CheckRecord makeRecord(Checker &checker, const std::string &family,
                       const std::string &name,
                       const cuda::KernelInstance &instance) {
  CheckRecord r;
  r.family = family;
  r.name = name;
  r.kernel = instance.nameExpression;
  r.resources = checker.kernels.resources(instance);
  return r;
}

void judge(CheckRecord &record, double relError, double tolerance,
           std::size_t unwritten) {
  record.checked = true;
  record.relError = relError;
  record.tolerance = tolerance;
  record.unwritten = unwritten;
  record.passed = relError <= tolerance && unwritten == 0;
  if (unwritten)
    record.note += sol::cat(unwritten, " output elements never written; ");
  if (!std::isfinite(relError))
    record.note += "NaN/Inf in the output; ";
}

std::vector<CheckFamily> elementwiseChecks() {
  return {
      {"embedding",
       [](KernelLibrary &k) {
         k.require(cuda::EmbeddingSpec{kHidden}.instance());
       },
       checkEmbedding},
      {"gather_rows",
       [](KernelLibrary &k) {
         k.require(cuda::GatherRowsSpec{kHidden}.instance());
       },
       checkGatherRows},
      {"swiglu",
       [](KernelLibrary &k) {
         k.require(cuda::SwigluSpec{kIntermediate}.instance());
       },
       checkSwiglu},
      {"argmax",
       [](KernelLibrary &k) { k.require(cuda::ArgmaxSpec{}.instance()); },
       checkArgmax},
  };
}

} // namespace sol::check
