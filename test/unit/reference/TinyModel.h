//===- TinyModel.h - A small Llama/Qwen-style plan and its dense twin -*- C++
//-*-===//
//
// A two-layer decoder with random bf16 weights that uses every plan op:
// grouped-query attention with a qkv bias and Qwen3 q/k norms, a sliding
// window on layer 1, SwiGLU, fused residual norms and a tied LM head. Beside
// the plan it keeps the weights so naiveLogits() can recompute the model
// densely in double precision (no paging, full causal attention loops): an
// implementation independent of the reference executor's.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "TestPlan.h"

#include <cstdint>
#include <vector>

namespace sol::test {

struct TinyModelConfig {
  int64_t vocab = 29;
  int64_t hidden = 16;
  int64_t heads = 4;
  int64_t kvHeads = 2;
  int64_t headDim = 4;
  int64_t intermediate = 24;
  int64_t layers = 2;
  int32_t blockSize = 4;
  bool fp8Kv = false; // an fp8 (E4M3) KV cache with per-token scales
  std::vector<int64_t> slidingWindow = {0, 3}; // per layer
  float eps = 1e-6f;
  double ropeTheta = 10000.0;
  uint32_t seed = 1;
};

class TinyModel {
public:
  explicit TinyModel(TinyModelConfig config = {});

  const TinyModelConfig &config() const { return config_; }
  /// The plan (fields public: tests may still change it before write()).
  TestPlan plan;

  /// Logits of every token of one sequence that starts at position 0,
  /// [tokens.size() x vocab], computed densely in double.
  std::vector<double> naiveLogits(const std::vector<int32_t> &tokens) const;

private:
  struct Layer {
    std::vector<float> inputNorm, wqkv, bqkv, qNorm, kNorm, wo, postNorm, wgu,
        wdown;
  };
  std::vector<float> randomWeight(const std::string &name,
                                  std::vector<int64_t> shape, float lo,
                                  float hi, int *index);

  TinyModelConfig config_;
  std::vector<float> embed_, finalNorm_, invFreq_;
  std::vector<Layer> layers_;
  uint32_t rngState_ = 0;
};

} // namespace sol::test
