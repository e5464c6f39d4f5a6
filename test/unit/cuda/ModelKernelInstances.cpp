//===- ModelKernelInstances.cpp - Kernels real models instantiate ---------===//

#include "ModelKernelInstances.h"

#include <algorithm>

namespace sol::test {

const std::vector<ModelShape> &supportedModelShapes() {
  static const std::vector<ModelShape> shapes = {
      {"Llama-3.2-1B", 2048, 8192, 32, 8, 64, 128256, false, false},
      {"Llama-3.1-8B", 4096, 14336, 32, 8, 128, 128256, false, false},
      {"Qwen2.5-0.5B", 896, 4864, 14, 2, 64, 151936, true, false},
      {"Qwen2.5-7B", 3584, 18944, 28, 4, 128, 152064, true, false},
      {"Qwen3-0.6B", 1024, 3072, 16, 8, 128, 151936, false, true},
      {"Mistral-7B", 4096, 14336, 32, 8, 128, 32768, false, false},
  };
  return shapes;
}

std::vector<cuda::KernelInstance> modelKernelInstances() {
  using namespace cuda;
  std::vector<KernelInstance> out;
  auto add = [&out](const KernelInstance &instance) {
    if (std::find(out.begin(), out.end(), instance) == out.end())
      out.push_back(instance);
  };
  for (const ModelShape &m : supportedModelShapes()) {
    const int qkv = (m.qHeads + 2 * m.kvHeads) * m.headDim;
    const int attnOut = m.qHeads * m.headDim;
    struct Linear {
      int n, k;
      LinearOutput output;
      bool bias;
    };
    const Linear linears[] = {
        {qkv, m.hidden, LinearOutput::Bf16, m.qkvBias},
        {m.hidden, attnOut, LinearOutput::Bf16, false},
        {2 * m.intermediate, m.hidden, LinearOutput::Bf16, false},
        {m.hidden, m.intermediate, LinearOutput::Bf16, false},
        {m.vocab, m.hidden, LinearOutput::Fp32, false},
    };
    for (const Linear &l : linears) {
      for (int rows : {1, 2, 4, 8})
        add(GemvSpec::choose(l.n, l.k, rows, l.output, l.bias).instance());
      for (int rows : {64, 4096})
        add(GemmSpec::choose(rows, l.n, l.output, l.bias).instance());
    }
    add(EmbeddingSpec{m.hidden}.instance());
    add(RmsNormSpec{m.hidden}.instance());
    if (m.qkNorm)
      add(RmsNormSpec{m.headDim}.instance());
    add(SwigluSpec{m.intermediate}.instance());
    add(GatherRowsSpec{m.hidden}.instance());
    add(RopeKvWriteSpec{m.qHeads, m.kvHeads, m.headDim}.instance());
    const PagedAttentionSpec attention{m.qHeads, m.kvHeads, m.headDim};
    add(attention.instance());
    add(attention.combineInstance());
  }
  add(ArgmaxSpec{}.instance());
  return out;
}

} // namespace sol::test
