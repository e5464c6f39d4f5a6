//===- solc.cpp - The Sol compiler driver ---------------------------------===//
//
//   solc MODEL_DIR -o model.plan [-O0..3] [--gpu sm_90|none] compile to a plan
//   solc MODEL_DIR --emit=mlir [-O0..3]      print the kernel-level sol module
//   solc MODEL_DIR --emit=imported           print the module as imported
//   solc MODEL.onnx --emit=raised            print an ONNX graph raised
//   --kv-block-size N, --kv-cache-dtype bf16|fp8   the paged KV cache's layout
//   --quant int8|fp8|int4-rtn|int4-awq [--group-size N] [--quant-lm-head]
//                                           quantize the linears' weights
//   --calib FILE, --calib-tokens N          int4-awq's calibration text
//   --calib-device auto|cuda|cpu            where int4-awq calibrates
//   --draft DRAFT.plan                      pack a draft model's plan in
//   --timing                                time each phase and pass
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/KvCacheLayout.h"
#include "codegen/lower/TranslateToStep.h"
#include "codegen/plan/CompileKernels.h"
#include "codegen/plan/PlanEmitter.h"
#include "frontend/import/ImportedModel.h"
#include "passes/CudaCalibrationEvaluator.h"
#include "passes/Passes.h"
#include "runtime/plan/DraftPlan.h"
#include "runtime/support/Error.h"
#include "tools/solc/Calibration.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdlib>
#include <limits>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <iostream>
#include <optional>

#ifndef SOL_VERSION
#define SOL_VERSION "0.0.0"
#endif

namespace {

struct Options {
  std::string input;
  std::string output;
  std::string emit;
  unsigned optLevel = 2;
  std::string gpu = "sm_90";
  int64_t maxTokensPerStep = 2048;
  int64_t kvBlockSize = 0; // 0: sol-plan-kv-cache chooses
  std::string kvCacheDtype = "bf16";
  std::string quant; // empty: weights as the checkpoint has them
  std::string draft; // a draft plan to pack into the plan (empty: none)
  int64_t groupSize = 128;
  bool quantLmHead = false;
  std::string calib;                // empty: the built-in text
  int64_t calibTokens = 65536;      // 128 sequences of 512
  std::string calibDevice = "auto"; // auto: the GPU when there is one
  int64_t tensorParallelSize = 1;
  std::string loadFormat = "auto"; // dummy: no weights, random at load
  bool quiet = false;
  bool timing = false;
  std::string commandLine;
};

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

/// AWQ's scales and clipping (sol-awq-calibrate) on the imported module.
void calibrate(mlir::ModuleOp module, sol::ImportedModel &model,
               const Options &opts, mlir::TimingScope &timing) {
  auto start = std::chrono::steady_clock::now();
  // AWQ's sequences of 512 tokens, shorter where the model's context is.
  int64_t sequenceLength = 512;
  if (auto info = module->getAttrOfType<sol::ModelAttr>("sol.model"))
    sequenceLength =
        std::min<int64_t>(sequenceLength, info.getMaxPositionEmbeddings());
  std::vector<std::vector<int32_t>> sequences = sol::calibrationSequences(
      model.assets, opts.calib, opts.calibTokens, sequenceLength, opts.quiet);
  const size_t tokens = sequences.size() * sequences.front().size();
  sol::SolAwqCalibrateOptions options;
  options.groupSize = opts.groupSize;
  std::string device = "CPU";
  sol::CalibrationEvaluatorFactory factory;
  if (opts.calibDevice != "cpu")
    factory = [&](mlir::func::FuncOp fn, const sol::WeightStore &store,
                  std::span<const std::vector<int32_t>> sequences)
        -> std::unique_ptr<sol::CalibrationEvaluator> {
      std::string why;
      std::unique_ptr<sol::CalibrationEvaluator> gpu;
      try {
        gpu = sol::createCudaCalibrationEvaluator(fn, store, sequences, why);
      } catch (const sol::Error &e) {
        if (opts.calibDevice == "cuda")
          throw;
        why = e.what();
      }
      if (gpu) {
        device = gpu->device();
        return gpu;
      }
      if (opts.calibDevice == "cuda")
        sol::fail("--calib-device cuda: AWQ calibration cannot run on the "
                  "GPU: ",
                  why);
      if (!opts.quiet)
        std::cerr << "solc: note: AWQ calibration runs on the CPU (" << why
                  << "); a model of billions of parameters takes hours "
                     "there\n";
      return sol::createCpuCalibrationEvaluator(fn, store, sequences);
    };
  mlir::PassManager pm(module.getContext());
  pm.enableTiming(timing);
  pm.addPass(sol::createSolAwqCalibrate(model.weights, std::move(sequences),
                                        options, !opts.quiet,
                                        std::move(factory)));
  if (mlir::failed(pm.run(module)))
    sol::fail("AWQ calibration of ", opts.input, " failed (see above)");
  if (!opts.quiet)
    std::cerr << "solc: AWQ calibration on " << tokens << " tokens (" << device
              << ") in " << secondsSince(start) << " s\n";
}

int run(const Options &opts) {
  auto start = std::chrono::steady_clock::now();
  // --timing: a tree of phases and passes on stderr when run returns.
  mlir::DefaultTimingManager timingManager;
  timingManager.setEnabled(opts.timing);
  mlir::TimingScope timing = timingManager.getRootScope();
  mlir::MLIRContext context;
  // Diagnostics go to stderr with their locations (layer names).
  mlir::ScopedDiagnosticHandler diagnostics(&context, [](mlir::Diagnostic &d) {
    llvm::errs() << "solc: "
                 << (d.getSeverity() == mlir::DiagnosticSeverity::Error
                         ? "error: "
                     : d.getSeverity() == mlir::DiagnosticSeverity::Warning
                         ? "warning: "
                         : "note: ");
    if (!llvm::isa<mlir::UnknownLoc>(d.getLocation()))
      llvm::errs() << d.getLocation() << ": ";
    llvm::errs() << d.str() << "\n";
    return mlir::success();
  });

  const bool dummy = opts.loadFormat == "dummy";
  mlir::TimingScope importTiming = timing.nest("import");
  sol::ImportedModel model = sol::importModel(context, opts.input, dummy);
  importTiming.stop();
  mlir::ModuleOp module = *model.module;
  if (mlir::failed(mlir::verify(module)))
    sol::fail("internal error: the imported module of ", opts.input,
              " does not verify (please report this)");
  auto print = [&](mlir::ModuleOp m) {
    std::string error;
    auto out =
        mlir::openOutputFile(opts.output.empty() ? "-" : opts.output, &error);
    if (!out)
      sol::fail("cannot write ", opts.output, ": ", error);
    m.print(out->os());
    out->os() << "\n";
    out->keep();
  };
  if (opts.emit == "imported") {
    print(module);
    return 0;
  }
  if (opts.emit == "raised") {
    mlir::PassManager raise(&context);
    sol::buildSolRaisePipeline(raise, &model.weights);
    if (mlir::failed(raise.run(module)))
      sol::fail("cannot raise ", opts.input, " into Sol's ops (see above)");
    print(module);
    return 0;
  }

  if (opts.quant == "int4-awq") {
    mlir::TimingScope calibrationTiming = timing.nest("AWQ calibration");
    calibrate(module, model, opts, calibrationTiming);
  }

  mlir::PassManager pm(&context);
  mlir::TimingScope pipelineTiming = timing.nest("-O pipeline");
  pm.enableTiming(pipelineTiming);
  sol::SolPlanKvCacheOptions kvOptions;
  kvOptions.blockSize = opts.kvBlockSize;
  kvOptions.dtype = opts.kvCacheDtype;
  std::optional<sol::SolQuantizeOptions> quantOptions;
  if (!opts.quant.empty()) {
    quantOptions.emplace();
    quantOptions->scheme = opts.quant.starts_with("int4") ? "int4" : opts.quant;
    quantOptions->groupSize = opts.groupSize;
    quantOptions->lmHead = opts.quantLmHead;
  }
  sol::buildSolPipeline(pm, opts.optLevel, kvOptions,
                        quantOptions ? &*quantOptions : nullptr, &model.weights,
                        opts.tensorParallelSize);
  if (mlir::failed(pm.run(module)))
    sol::fail("the -O", opts.optLevel, " pipeline failed on ", opts.input,
              " (see above)");
  pipelineTiming.stop();
  if (opts.emit == "mlir") {
    print(module);
    return 0;
  }

  // Code generation: weights into their final bytes, then the step.
  mlir::PassManager weights(&context);
  mlir::TimingScope weightsTiming = timing.nest("weights");
  weights.enableTiming(weightsTiming);
  weights.addPass(sol::createSolMaterializeWeights(model.weights));
  if (mlir::failed(weights.run(module)))
    sol::fail("cannot lay out the weights of ", opts.input, " (see above)");
  weightsTiming.stop();
  mlir::TimingScope stepTiming = timing.nest("translate to a step");
  mlir::FailureOr<sol::StepProgram> program = sol::translateToStep(module);
  if (mlir::failed(program))
    sol::fail("cannot generate code for ", opts.input, " (see above)");
  mlir::FailureOr<sol::KvCachePlan> kvCache = sol::lowerKvCacheLayout(module);
  if (mlir::failed(kvCache))
    sol::fail("cannot plan the KV cache of ", opts.input, " (see above)");
  stepTiming.stop();

  std::vector<sol::CompiledModule> modules;
  sol::PlanOptions planOptions;
  if (!opts.draft.empty()) {
    // Checked now so that the packed draft needs no check at run time.
    sol::PlanFile draft = sol::PlanFile::open(opts.draft);
    const sol::fb::Plan &d = draft.plan();
    sol::DraftTarget target{"checkpoint " + opts.input,
                            program->model.vocabSize,
                            model.assets.tokenizerJson
                                ? std::string_view(*model.assets.tokenizerJson)
                                : std::string_view()};
    sol::checkDraftMatches("--draft", target, draft);
    const std::string draftTarget = d.target() ? d.target()->str() : "";
    if (draftTarget != opts.gpu)
      sol::fail("--draft: ", opts.draft, " was compiled for --gpu ",
                draftTarget.empty() ? "?" : draftTarget, " and this plan for ",
                opts.gpu, "; compile the draft with --gpu ", opts.gpu);
    if (d.draft_plan() && d.draft_plan()->size() > 0)
      sol::fail("--draft: ", opts.draft,
                " holds a draft plan itself; pack a plan without one");
    planOptions.draftPlan = opts.draft;
  }
  if (opts.gpu != "none") {
    sol::KernelCompileOptions kernelOptions;
    kernelOptions.gpuArch = opts.gpu;
    kernelOptions.maxTokensPerStep = static_cast<int>(opts.maxTokensPerStep);
    kernelOptions.maxContext =
        static_cast<int>(program->model.maxPositionEmbeddings);
    kernelOptions.kvCache = *kvCache;
    kernelOptions.progress = !opts.quiet;
    mlir::TimingScope kernelTiming = timing.nest("CUDA kernels");
    modules = sol::compileKernels(*program, kernelOptions);
    planOptions.cudaLowering = sol::chooseCudaLowering(*program, kernelOptions);
  }

  planOptions.compilerVersion = "solc " SOL_VERSION;
  planOptions.commandLine = opts.commandLine;
  planOptions.target = opts.gpu;
  planOptions.maxTokensPerStep = opts.maxTokensPerStep;
  planOptions.kvCache = *kvCache;
  planOptions.progress = !opts.quiet;
  planOptions.randomWeights = dummy;
  mlir::TimingScope planTiming = timing.nest("write the plan");
  sol::emitPlan(opts.output, *program, model.weights, model.assets, planOptions,
                modules);
  planTiming.stop();
  if (!opts.quiet)
    std::cerr << "solc: wrote " << opts.output << " (" << program->ops.size()
              << " ops, " << program->weights.size() << " weights"
              << (opts.tensorParallelSize > 1
                      ? ", split over " +
                            std::to_string(opts.tensorParallelSize) + " GPUs"
                      : std::string())
              << ") in " << secondsSince(start) << " s\n";
  return 0;
}

} // namespace

/// Weights pass through float buffers of hundreds of megabytes, one after
/// another (read, scaled, clamped, quantized, for each linear). glibc maps
/// each such buffer afresh and unmaps it when freed, so the kernel faults
/// in and zeroes every page again: on an 8B model that was most of writing
/// the plan. Taken from the heap and kept there when freed, the pages are
/// reused. (glibc still maps memory when the heap cannot grow.)
static void keepFreedMemory() {
#ifdef __GLIBC__
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}

int main(int argc, char **argv) {
  keepFreedMemory();
  CLI::App app{"solc: compile a Hugging Face checkpoint or an ONNX graph into "
               "a Sol plan"};
  Options opts;
  for (int i = 0; i < argc; ++i)
    opts.commandLine += (i ? " " : "") + std::string(argv[i]);
  app.add_option("input", opts.input,
                 "Hugging Face model directory (config.json + *.safetensors), "
                 "an ONNX file, or a directory holding model.onnx")
      ->required();
  app.add_option("-o,--output", opts.output,
                 "output file: the plan, or the IR with --emit=mlir ('-' for "
                 "stdout)");
  app.add_option("--emit", opts.emit,
                 "what to produce: plan (default with -o), mlir (the "
                 "kernel-level sol module after the -O pipeline; default "
                 "without -o), imported (the module as the importer made "
                 "it: an ONNX graph node for node) or raised (after the "
                 "sol-raise passes, before the -O pipeline)")
      ->check(CLI::IsMember({"plan", "mlir", "imported", "raised"}));
  app.add_option("-O", opts.optLevel, "optimisation level 0..3 (default 2)")
      ->check(CLI::Range(0u, 3u));
  app.add_option("--gpu", opts.gpu,
                 "target GPU architecture: sm_90 (default; H100, H200), or "
                 "none for a plan without CUDA kernels (CPU reference only)")
      ->check(CLI::IsMember({"sm_90", "none"}));
  app.add_option("--max-num-batched-tokens", opts.maxTokensPerStep,
                 "most tokens in one step; sizes the activation arena "
                 "(default 2048)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  app.add_option("--kv-block-size", opts.kvBlockSize,
                 "tokens per paged KV-cache block: a power of two in [8, 256] "
                 "(default: chosen from the head dim, 16 for 128)")
      ->check(CLI::Validator(
          [](const std::string &text) -> std::string {
            char *end = nullptr;
            const long long n = std::strtoll(text.c_str(), &end, 10);
            if (text.empty() || *end != '\0' || n < 8 || n > 256 ||
                (n & (n - 1)) != 0)
              return "must be a power of two in [8, 256], got " + text;
            return "";
          },
          "POW2 in [8,256]"));
  app.add_option("--kv-cache-dtype", opts.kvCacheDtype,
                 "KV-cache element type: bf16 (default) or fp8 (E4M3 with "
                 "per-token, per-head scales: half the memory)")
      ->check(CLI::IsMember({"bf16", "fp8"}));
  app.add_option("--quant", opts.quant,
                 "quantize the linears' weights: int8 (W8A16, per-row "
                 "scales), fp8 (W8A8 E4M3, per-row weight and per-token "
                 "activation scales), int4-rtn (W4A16, round to nearest, "
                 "scales and zero points per --group-size inputs) or "
                 "int4-awq (int4 after AWQ's activation-aware scaling and "
                 "clipping, calibrated on --calib text); embeddings, the LM "
                 "head and linears the checkpoint has quantized already "
                 "(AWQ, GPTQ, fp8) stay as they are")
      ->check(CLI::IsMember({"int8", "fp8", "int4-rtn", "int4-awq"}));
  app.add_option("--group-size", opts.groupSize,
                 "inputs per int4 scale and zero point (default 128; an even "
                 "divisor of every linear's input features, else that linear "
                 "keeps its weight)")
      ->check(CLI::Range(int64_t(2), int64_t(1) << 20));
  app.add_flag("--quant-lm-head", opts.quantLmHead,
               "with --quant, quantize the LM head as well");
  app.add_option("--calib", opts.calib,
                 "int4-awq: calibration text, plain or JSON Lines (.jsonl, "
                 "a \"text\" field per line); default: the Brown Corpus "
                 "excerpt built into solc");
  app.add_option("--calib-tokens", opts.calibTokens,
                 "int4-awq: calibration tokens, in sequences of 512 "
                 "(default 65536)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 26));
  app.add_option("--calib-device", opts.calibDevice,
                 "int4-awq: where calibration evaluates the model: auto "
                 "(default: the GPU when one is usable, else the CPU), "
                 "cuda, or cpu (the float32 reference evaluator)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  app.add_option("--draft", opts.draft,
                 "a draft model's plan (made by solc from a checkpoint with "
                 "the same tokenizer) to pack into the plan, for "
                 "--speculative-config '{\"method\": \"draft_model\", "
                 "\"num_speculative_tokens\": N}' without a second file");
  app.add_option("--tensor-parallel-size,--tp", opts.tensorParallelSize,
                 "GPUs to split the model over (tensor parallelism: "
                 "attention by heads, MLPs by rows then columns, the LM "
                 "head by vocabulary); the plan holds every GPU's weights "
                 "(default 1)")
      ->check(CLI::Range(int64_t(1), int64_t(64)));
  app.add_option("--load-format", opts.loadFormat,
                 "auto (default): the checkpoint's weights; dummy: a "
                 "Hugging Face directory's config.json alone, and a plan "
                 "without weights that solrun fills with seeded random "
                 "values (speed measurements of shapes whose weights are "
                 "not at hand, as vLLM's --load-format dummy)")
      ->check(CLI::IsMember({"auto", "dummy"}));
  app.add_flag("-q,--quiet", opts.quiet, "no progress or summary on stderr");
  app.add_flag("--timing", opts.timing,
               "print the wall time of each phase (import, AWQ calibration, "
               "the -O pipeline's passes, weights, kernels, the plan) to "
               "stderr at the end");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  if (opts.quant.empty() && (opts.quantLmHead || app.count("--group-size"))) {
    std::cerr << "solc: error: --group-size and --quant-lm-head go with "
                 "--quant\n";
    return 2;
  }
  if (app.count("--group-size") && !opts.quant.empty() &&
      !opts.quant.starts_with("int4")) {
    std::cerr << "solc: error: --group-size is for the int4 schemes "
                 "(int4-rtn, int4-awq); --quant "
              << opts.quant
              << " has one scale per output channel; drop --group-size or "
                 "choose --quant int4-rtn or int4-awq\n";
    return 2;
  }
  if (opts.loadFormat == "dummy" && opts.quant == "int4-awq") {
    std::cerr << "solc: error: --quant int4-awq calibrates on the model's "
                 "weights, which --load-format dummy does not read; choose "
                 "--quant int4-rtn for the same kernels\n";
    return 2;
  }
  if (opts.quant != "int4-awq" &&
      (app.count("--calib") || app.count("--calib-tokens") ||
       app.count("--calib-device"))) {
    std::cerr << "solc: error: --calib, --calib-tokens and --calib-device go "
                 "with --quant int4-awq\n";
    return 2;
  }
  if (opts.emit.empty())
    opts.emit = opts.output.empty() || opts.output == "-" ? "mlir" : "plan";
  if (opts.emit == "plan" && (opts.output.empty() || opts.output == "-")) {
    std::cerr << "solc: error: a plan needs an output file: -o model.plan\n";
    return 2;
  }
  try {
    return run(opts);
  } catch (const sol::Error &e) {
    std::cerr << "solc: error: " << e.what() << "\n";
    return 1;
  }
}
