//===- CompileKernels.cpp - NVRTC-compiles the kernels of a step ----------===//
#include "codegen/plan/CompileKernels.h"

#include "codegen/nvrtc/KernelSourceBuilder.h"
#include "codegen/nvrtc/NvrtcCompiler.h"
#include "runtime/cuda/KernelSelection.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace sol {

namespace {

/// The program's ops as kernel selection sees them.
std::vector<cuda::OpDesc> describeOps(const StepProgram &program,
                                      const KernelCompileOptions &options) {
  std::vector<cuda::OpDesc> descs;
  for (const PlanOp &op : program.ops) {
    cuda::OpDesc d;
    static_cast<PlanOp &>(d) = op;
    for (int32_t b : op.buffers)
      d.bufferWidths.push_back(program.buffers[b].width);
    d.outDtype = program.buffers[op.buffers.at(0)].dtype;
    d.outRows = program.buffers[op.buffers.at(0)].rows;
    for (int32_t w : op.weights)
      d.weightShapes.push_back(program.weights[w].shape);
    d.blockSize = options.kvCache.blockSize;
    d.kvDtype = options.kvCache.dtype;
    d.wgmma = cuda::targetHasWgmma(options.gpuArch);
    descs.push_back(std::move(d));
  }
  cuda::markAttentionReaders(descs);
  return descs;
}

cuda::StaticLowering chooseLowering(const StepProgram &program,
                                    const KernelCompileOptions &options,
                                    const std::vector<cuda::OpDesc> &descs) {
  std::vector<int> slots;
  for (const ProgramBuffer &b : program.buffers)
    slots.push_back(b.slot);
  return cuda::chooseStaticLowering(descs, slots, options.maxTokensPerStep);
}

} // namespace

cuda::StaticLowering chooseCudaLowering(const StepProgram &program,
                                        const KernelCompileOptions &options) {
  return chooseLowering(program, options, describeOps(program, options));
}

std::vector<CompiledModule>
compileKernels(const StepProgram &program,
               const KernelCompileOptions &options) {
  if (options.kvCache.blockSize <= 0)
    fail("internal error: compileKernels needs the KV-cache layout");
  std::vector<cuda::KernelInstance> instances;
  auto add = [&](const cuda::KernelInstance &k) {
    if (std::find(instances.begin(), instances.end(), k) == instances.end())
      instances.push_back(k);
  };
  const std::vector<cuda::OpDesc> descs = describeOps(program, options);
  // A weight the kernels would misread is a compiler bug: stop here rather
  // than write a plan whose GPU run is wrong.
  std::vector<fb::DType> dtypes;
  std::vector<std::string> names;
  for (const ProgramWeight &w : program.weights) {
    dtypes.push_back(w.dtype);
    names.push_back(w.name);
  }
  if (std::string why = cuda::weightDtypeProblem(descs, dtypes, names);
      !why.empty())
    fail("internal error: ", why,
         "; please report it. `solc --gpu none` compiles a plan for the CPU "
         "reference executor meanwhile");
  // The attention ops that absorb a head norm compile that variant, the
  // linears that absorb a residual norm theirs.
  const cuda::StaticLowering lowering = chooseLowering(program, options, descs);
  const std::vector<bool> headNorm = lowering.headNormFused(descs.size());
  const std::vector<cuda::GemvAddNorm> addNorm = lowering.addNormFused(descs);
  for (std::size_t i = 0; i < descs.size(); ++i)
    for (const cuda::KernelInstance &k :
         cuda::enumerateKernels(descs[i], options.maxTokensPerStep,
                                options.maxContext, headNorm[i], addNorm[i]))
      add(k);
  add(cuda::ArgmaxSpec{}.instance());
  add(cuda::SamplingSpec{}.instance());      // per-request sampling, logprobs
  add(cuda::RandomWeightsSpec{}.instance()); // --load-format dummy plans

  nvrtc::NvrtcOptions nvrtcOptions;
  nvrtcOptions.gpuArch = options.gpuArch;
  nvrtc::NvrtcCompiler compiler(nvrtcOptions);
  std::vector<nvrtc::KernelSource> sources =
      nvrtc::buildKernelSources(instances);
  const bool tty = options.progress && isatty(STDERR_FILENO);
  if (tty)
    std::fprintf(stderr,
                 "solc: compiling %zu kernels in %zu units with NVRTC...",
                 instances.size(), sources.size());
  std::vector<nvrtc::CompiledKernels> compiled = compiler.compileAll(sources);
  if (tty) {
    size_t cached = std::count_if(compiled.begin(), compiled.end(),
                                  [](const auto &c) { return c.fromCache; });
    std::fprintf(stderr, " done (%zu from cache)\n", cached);
  }

  std::vector<CompiledModule> modules;
  for (size_t i = 0; i < sources.size(); ++i) {
    CompiledModule m;
    m.arch = compiled[i].arch;
    m.cubin.resize(compiled[i].cubin.size());
    std::memcpy(m.cubin.data(), compiled[i].cubin.data(), m.cubin.size());
    m.ptx = compiled[i].ptx;
    for (const std::string &expr : sources[i].nameExpressions)
      m.kernels.push_back({expr, compiled[i].loweredNames.at(expr)});
    modules.push_back(std::move(m));
  }
  return modules;
}

} // namespace sol
