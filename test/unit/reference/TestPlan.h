//===- TestPlan.h - Builds small plans for reference executor tests -*- C++
//-*-===//
//
// Tests describe a plan op by op (weights as float values, buffers by width
// and rows), then write it through PlanWriter to a temporary file and open
// it with PlanFile::open, exactly the path solrun takes. Fields stay public
// so tests can corrupt a plan before writing it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/executor/Executor.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/reference/ReferencePlan.h"
#include "runtime/support/DType.h"
#include "runtime/support/Error.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sol::test {

using reference::OpKind;
using reference::RowSpace;

struct TestWeight {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

struct TestBuffer {
  std::string name;
  DType dtype = DType::BF16;
  int64_t width = 1;
  RowSpace rows = RowSpace::Tokens;
};

/// An op as the plan stores it (tests change its fields to make a plan
/// malformed).
using TestOp = PlanOp;

struct TestRope {
  std::vector<float> invFreq;
  float attentionScaling = 1.0f;
};

class TestPlan {
public:
  /// Starts with the four step-input buffers (tokens, positions, token_seq,
  /// logit_rows).
  TestPlan();

  /// A weight from float values, stored as `dtype` (BF16/F16 round to
  /// nearest even).
  int weight(const std::string &name, std::vector<int64_t> shape,
             const std::vector<float> &values, DType dtype = DType::F32);
  int buffer(const std::string &name, int64_t width,
             RowSpace rows = RowSpace::Tokens, DType dtype = DType::BF16);
  int rope(std::vector<float> invFreq, float attentionScaling = 1.0f);
  /// The KV-cache layout; `fp8` makes it E4M3 with per-token scales.
  void kvCache(int32_t layers, int32_t kvHeads, int32_t headDim,
               int32_t blockSize, bool fp8 = false);
  /// An op from its operands in role order (runtime/plan/PlanOp.h) and its
  /// parameters in a short positional form:
  ///   RmsNorm        floats eps
  ///   HeadRmsNorm    ints column, heads, head_dim; floats eps
  ///   Linear         ints [epilogue]
  ///   NormLinear     ints epilogue; floats eps
  ///   RopeKvWrite    ints layer, heads, kv_heads, head_dim, rope
  ///   Attention      ints layer, heads, kv_heads, head_dim, window;
  ///                  floats scale
  ///   ConcatColumns  ints column_0, width_0, column_1, width_1, ...
  ///   Moe            ints top_k, normalize_top_k
  void op(OpKind kind, const std::string &name, std::vector<int32_t> buffers,
          std::vector<int32_t> weights = {}, std::vector<int64_t> ints = {},
          std::vector<float> floats = {});
  /// Ends the schedule with a GatherRows of `buffer` (rows logit_rows) into
  /// an F32 Outputs buffer: the step's logits are then rows of `buffer`.
  void observe(int buffer);

  /// Writes the plan through PlanWriter to `path`.
  void writeFile(const std::filesystem::path &path) const;
  /// Writes the plan to a fresh temporary file, opens it and removes the
  /// name (the mapping stays valid).
  PlanFile write() const;

  std::vector<TestWeight> weights;
  std::vector<TestBuffer> buffers;
  std::vector<TestOp> ops;
  std::vector<TestRope> ropes;
  std::optional<std::vector<int32_t>> kvLayout; // layers, kvHeads, hd, bs
  bool kvFp8 = false;
  int64_t vocabSize = 0;
  int64_t maxPositionEmbeddings = 4096;
  int64_t maxTokensPerStep = 64;
  /// Plan.tensor_parallel_size (weights stay replicated).
  int32_t tensorParallelSize = 1;
};

/// A fresh path under the temporary directory (removed at process exit is
/// not promised; names are unique per process and call).
std::filesystem::path tempPlanPath();

/// One step's inputs, owned; view() gives the executor's StepBatch.
struct TestStep {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;
  std::vector<int32_t> tokenSeq;
  std::vector<int32_t> logitRows;
  std::vector<int32_t> blockTables;
  int32_t numSeqs = 1;
  int32_t maxBlocksPerSeq = 0;

  /// One sequence: tokens at positions start, start+1, ...; block table
  /// 0, 1, ..., maxBlocks-1; logits for every token.
  static TestStep sequence(std::vector<int32_t> tokens, int32_t start,
                           int32_t maxBlocks);
  StepBatch view() const;
};

/// Runs `step` and returns its R x vocab logits (and argmax when asked).
std::vector<float> runStep(Executor &executor, const TestStep &step,
                           int64_t vocab,
                           std::vector<int32_t> *argmax = nullptr);

/// The sol::Error message of `body`, or "" when it does not throw.
template <typename Body> std::string errorOf(Body &&body) {
  try {
    body();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace sol::test
