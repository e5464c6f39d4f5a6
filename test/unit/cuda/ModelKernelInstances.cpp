//===- ModelKernelInstances.cpp - Kernels real models instantiate ---------===//

#include "ModelKernelInstances.h"

#include "codegen/kernels/LaunchArgs.h"

#include <algorithm>
#include <map>
#include <string_view>

namespace sol::test {

bool takesItsLaunchArgs(const std::string &nameExpression,
                        const std::string &lowered) {
  using namespace kernels;
  // Kernel function -> the struct CudaExecutor.cpp launches it with.
  static const std::map<std::string, std::string_view, std::less<>> kArgs = {
      {"embedding", LaunchArgsName<EmbeddingArgs>::kMangled.view()},
      {"rms_norm", LaunchArgsName<RmsNormArgs>::kMangled.view()},
      {"linear_gemv", LaunchArgsName<LinearArgs>::kMangled.view()},
      {"linear_skinny", LaunchArgsName<LinearArgs>::kMangled.view()},
      {"linear_gemm", LaunchArgsName<LinearArgs>::kMangled.view()},
      {"linear_splitk_finalize",
       LaunchArgsName<SplitKFinalizeArgs>::kMangled.view()},
      {"rope_kv_write", LaunchArgsName<RopeKvWriteArgs>::kMangled.view()},
      {"rope_kv_write_fp8", LaunchArgsName<RopeKvWriteArgs>::kMangled.view()},
      {"paged_attention", LaunchArgsName<PagedAttentionArgs>::kMangled.view()},
      {"paged_attention_fp8",
       LaunchArgsName<PagedAttentionArgs>::kMangled.view()},
      {"prefill_attention",
       LaunchArgsName<TiledAttentionArgs>::kMangled.view()},
      {"prefill_attention_fp8",
       LaunchArgsName<TiledAttentionArgs>::kMangled.view()},
      {"chunk_attention", LaunchArgsName<TiledAttentionArgs>::kMangled.view()},
      {"chunk_attention_fp8",
       LaunchArgsName<TiledAttentionArgs>::kMangled.view()},
      {"swiglu", LaunchArgsName<SwigluArgs>::kMangled.view()},
      {"swiglu_pairs", LaunchArgsName<SwigluArgs>::kMangled.view()},
      {"quantize_rows_fp8", LaunchArgsName<QuantizeRowsArgs>::kMangled.view()},
      {"rms_norm_quantize_fp8",
       LaunchArgsName<NormQuantizeRowsArgs>::kMangled.view()},
      {"repeat_scales", LaunchArgsName<RepeatScalesArgs>::kMangled.view()},
      {"linear_wgmma_fp8", LaunchArgsName<Fp8GemmArgs>::kMangled.view()},
      {"add", LaunchArgsName<AddArgs>::kMangled.view()},
      {"sigmoid_gate", LaunchArgsName<SigmoidGateArgs>::kMangled.view()},
      {"gather_rows", LaunchArgsName<GatherRowsArgs>::kMangled.view()},
      {"argmax", LaunchArgsName<ArgmaxArgs>::kMangled.view()},
      {"sample_rows", LaunchArgsName<SamplingArgs>::kMangled.view()},
      {"moe_route", LaunchArgsName<MoeRouteArgs>::kMangled.view()},
      {"moe_gate_up", LaunchArgsName<MoeGateUpArgs>::kMangled.view()},
      {"moe_down", LaunchArgsName<MoeDownArgs>::kMangled.view()},
      {"moe_combine", LaunchArgsName<MoeCombineArgs>::kMangled.view()},
      {"moe_gate_up_row", LaunchArgsName<MoeGateUpRowArgs>::kMangled.view()},
      {"moe_down_row", LaunchArgsName<MoeDownRowArgs>::kMangled.view()},
      {"moe_sort", LaunchArgsName<MoeSortArgs>::kMangled.view()},
      {"moe_grouped_gemm", LaunchArgsName<MoeGroupedGemmArgs>::kMangled.view()},
  };
  const std::string_view prefix = "sol::kernels::";
  std::string_view name = nameExpression;
  if (!name.starts_with(prefix))
    return false;
  name.remove_prefix(prefix.size());
  name = name.substr(0, name.find('<'));
  const auto it = kArgs.find(name);
  return it != kArgs.end() && std::string_view(lowered).ends_with(it->second);
}

const std::vector<ModelShape> &supportedModelShapes() {
  static const std::vector<ModelShape> shapes = {
      {"Llama-3.2-1B", 2048, 8192, 32, 8, 64, 128256, false, false},
      {"Llama-3.1-8B", 4096, 14336, 32, 8, 128, 128256, false, false},
      {"Qwen2.5-0.5B", 896, 4864, 14, 2, 64, 151936, true, false},
      {"Qwen2.5-1.5B", 1536, 8960, 12, 2, 128, 151936, true, false},
      {"Qwen2.5-7B", 3584, 18944, 28, 4, 128, 152064, true, false},
      {"Qwen3-0.6B", 1024, 3072, 16, 8, 128, 151936, false, true},
      {"Mistral-7B", 4096, 14336, 32, 8, 128, 32768, false, false},
      // Its attention: 8 query heads of 64 per kv head, q wider than hidden.
      {"gpt-oss-20b", 2880, 2880, 64, 8, 64, 201088, true, false},
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
      // How the fused plan runs it (codegen/lower/LowerToSchedule.cpp): the
      // norm in front of qkv, gate_up and the LM head becomes the GEMV's
      // prologue (NormLinear), o and down add into the residual stream, and
      // gate_up applies SwiGLU to its interleaved rows.
      LinearEpilogue epilogue;
      bool norm;
    };
    const Linear linears[] = {
        {qkv, m.hidden, LinearOutput::Bf16, m.qkvBias, LinearEpilogue::None,
         true},
        {m.hidden, attnOut, LinearOutput::Bf16, false, LinearEpilogue::Residual,
         false},
        {2 * m.intermediate, m.hidden, LinearOutput::Bf16, false,
         LinearEpilogue::Swiglu, true},
        {m.hidden, m.intermediate, LinearOutput::Bf16, false,
         LinearEpilogue::Residual, false},
        {m.vocab, m.hidden, LinearOutput::Fp32, false, LinearEpilogue::None,
         true},
    };
    for (const Linear &l : linears) {
      // Unfused (plain Linear ops, e.g. a norm with several users), then
      // fused; for more than 16 rows (8 without linear_skinny) a NormLinear
      // runs rms_norm and the GEMM. 16 rows: batched decode.
      for (int rows : {1, 2, 4, 8}) {
        add(GemvSpec::choose(l.n, l.k, rows, l.output, l.bias).instance());
        add(GemvSpec::choose(l.n, l.k, rows, l.output, l.bias, l.epilogue,
                             l.norm)
                .instance());
      }
      // 2..16 rows: linear_skinny, fused as the plan runs it (its 8- and
      // 16-row instances cover every count), and unfused.
      for (int rows : {2, 16}) {
        const SkinnySpec fused = SkinnySpec::choose(l.n, l.k, rows, l.output,
                                                    l.bias, l.epilogue, l.norm);
        if (fused.fits())
          add(fused.instance());
      }
      add(SkinnySpec::choose(l.n, l.k, 16, l.output, l.bias).instance());
      for (int rows : {16, 64, 4096}) {
        add(GemmSpec::choose(rows, l.n, l.output, l.bias).instance());
        // As selectKernels chooses (K known): few rows may split K, and
        // the finalize kernel then applies bias and epilogue.
        const GemmSpec fused =
            GemmSpec::choose(rows, l.n, l.output, l.bias, l.epilogue, 132, l.k);
        add(fused.instance());
        if (fused.splitK > 1)
          add(fused.finalizeInstance());
      }
    }
    // The residual epilogue behind a norm prologue: no decoder layer has
    // one, but the kernel supports it; two shapes compile it.
    if (m.name == "Llama-3.2-1B" || m.name == "Qwen2.5-1.5B")
      for (int rows : {1, 8})
        add(GemvSpec::choose(m.hidden, attnOut, rows, LinearOutput::Bf16, false,
                             LinearEpilogue::Residual, true)
                .instance());
    add(EmbeddingSpec{m.hidden}.instance());
    add(RmsNormSpec{m.hidden}.instance());
    if (m.qkNorm)
      add(RmsNormSpec{m.headDim}.instance());
    add(SwigluSpec{m.intermediate}.instance());
    add(GatherRowsSpec{m.hidden}.instance());
    add(RopeKvWriteSpec{m.qHeads, m.kvHeads, m.headDim}.instance());
    // Each attention also in its fused-rope variant (decode steps).
    for (bool fused : {false, true}) {
      add(PagedAttentionSpec{m.qHeads, m.kvHeads, m.headDim, 16, false, fused}
              .instance());
      // Other KV-cache layouts sol-plan-kv-cache may choose: bf16 in
      // blocks of 32, fp8 (E4M3, per-token scales) in blocks of 16 and 32.
      add(PagedAttentionSpec{m.qHeads, m.kvHeads, m.headDim, 32, false, fused}
              .instance());
      for (int blockSize : {16, 32})
        add(PagedAttentionSpec{m.qHeads, m.kvHeads, m.headDim, blockSize, true,
                               fused}
                .instance());
    }
    // Decode attention that also does the q/k head norm (Qwen3), and its
    // preloading variant (batch-1 grids), over both cache dtypes.
    if (m.qkNorm)
      for (bool fp8 : {false, true})
        for (bool preload : {false, true}) {
          PagedAttentionSpec spec{m.qHeads, m.kvHeads, m.headDim,
                                  16,       fp8,       true};
          spec.preloadWalk = preload;
          spec.qkNorm = true;
          add(spec.instance());
        }
    // Batch-1 decode of a large group (gpt-oss): its heads over blocks.
    {
      PagedAttentionSpec spec{m.qHeads, m.kvHeads, m.headDim, 16, false, true};
      spec.preloadWalk = true;
      spec.headSplit = spec.chooseHeadSplit(1, 1, 132);
      if (spec.headSplit > 1)
        add(spec.instance());
    }
    add(RopeKvWriteSpec{m.qHeads, m.kvHeads, m.headDim, 32}.instance());
    for (int blockSize : {16, 32})
      add(RopeKvWriteSpec{m.qHeads, m.kvHeads, m.headDim, blockSize, true}
              .instance());
  }
  // The mixtures' expert chains (the router is a linear above): one row,
  // decode and grouped, Qwen3-30B-A3B's in every expert format sol-quantize
  // writes, gpt-oss-20b's bf16 and MXFP4 experts.
  using F = fb::ExpertFormat;
  const MoeSpec mixtures[] = {
      {128, 8, 2048, 768},         {128, 8, 2048, 768, F::Int8},
      {128, 8, 2048, 768, F::Fp8}, {128, 8, 2048, 768, F::Int4, 128},
      {32, 4, 2880, 2880},         {32, 4, 2880, 2880, F::Mxfp4},
  };
  for (const MoeSpec &m : mixtures) {
    for (const KernelInstance &instance :
         {m.gateUpRow(), m.downRow(), m.route(), m.gateUp(), m.down(),
          m.combine()})
      add(instance);
    for (int tileRows : m.groupedTileSizes(8192))
      for (const KernelInstance &instance :
           {m.sort(tileRows), m.groupedGateUp(tileRows),
            m.groupedDown(tileRows)})
        add(instance);
  }
  add(ArgmaxSpec{}.instance());
  add(SamplingSpec{}.instance());
  // Gemma's one-row QKV and gate/up (GeGLU) projections with the residual
  // add and norms before them in their prologue (StaticLowering's
  // linearAddNorm): Gemma-3-4B and Gemma-2-9B.
  struct AddNormLinear {
    int n, k;
    LinearEpilogue epilogue;
  };
  for (const AddNormLinear &l :
       {AddNormLinear{4096, 2560, LinearEpilogue::None},
        AddNormLinear{20480, 2560, LinearEpilogue::Geglu},
        AddNormLinear{8192, 3584, LinearEpilogue::None},
        AddNormLinear{28672, 3584, LinearEpilogue::Geglu}}) {
    GemvSpec spec = GemvSpec::choose(l.n, l.k, 1, LinearOutput::Bf16, false,
                                     l.epilogue, true);
    spec.addNorm = GemvAddNorm::InputNorm;
    add(spec.instance());
  }
  return out;
}

} // namespace sol::test
