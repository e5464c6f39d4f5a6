//===- KernelCheck.cpp - sol-kernel-check: kernels on a real GPU ----------===//
//
// Compiles Sol's kernels through the NVRTC driver (the path solc uses),
// launches them through the driver layer on random inputs, checks every
// output element against CPU references, then times them. Prints a table and
// optionally writes JSON.
//
//   sol-kernel-check [--only a,b] [--json FILE] [--quick] [--no-timing]
//                    [--samples N] [--seed N] [--dump-cubins DIR] [--list]
//                    [--compile-only]
//
// --compile-only compiles the selected families' kernels with NVRTC and
// prints each one's registers and spills, without a GPU (and fills the
// kernel cache, $SOL_CACHE_DIR, for a later run).
//
// Exit status: 0 all checks passed, 1 a check failed, 2 bad usage or setup
// error, 77 no GPU (skipped).
//
//===----------------------------------------------------------------------===//

#include "Checks.h"

#include "codegen/nvrtc/NvrtcCompiler.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/support/Error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace {

using namespace sol;
using namespace sol::check;

struct Arguments {
  std::set<std::string> only;
  std::string jsonPath;
  std::string cubinDir;
  CheckOptions options;
  std::uint64_t seed = 20251130;
  bool list = false;
  bool compileOnly = false;
};

Arguments parse(int argc, char **argv) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        fail("option ", a, " needs a value");
      return argv[++i];
    };
    if (a == "--only") {
      std::stringstream list(value());
      for (std::string name; std::getline(list, name, ',');)
        args.only.insert(name);
    } else if (a == "--json") {
      args.jsonPath = value();
    } else if (a == "--dump-cubins") {
      args.cubinDir = value();
    } else if (a == "--quick") {
      args.options.quick = true;
      args.options.timing = false;
    } else if (a == "--no-timing") {
      args.options.timing = false;
    } else if (a == "--samples") {
      args.options.samples = std::stoi(value());
    } else if (a == "--seed") {
      args.seed = std::stoull(value());
    } else if (a == "--list") {
      args.list = true;
    } else if (a == "--compile-only") {
      args.compileOnly = true;
    } else {
      fail("unknown option ", a,
           "; usage: sol-kernel-check [--only a,b] [--json FILE] [--quick] "
           "[--no-timing] [--samples N] [--seed N] [--dump-cubins DIR] "
           "[--list] [--compile-only]");
    }
  }
  return args;
}

std::vector<CheckFamily> allFamilies() {
  std::vector<CheckFamily> all;
  for (auto group :
       {runtimeChecks(), elementwiseChecks(), normChecks(), attentionChecks(),
        kvFp8Checks(), fusedRopeChecks(), prefillAttentionChecks(),
        prefillAttentionFp8Checks(), chunkAttentionChecks(), linearChecks(),
        fusedLinearChecks(), skinnyChecks(), quantGemvChecks(),
        quantSkinnyChecks(), quantGemmChecks(), fp8GemmChecks(),
        samplingChecks(), moeChecks()})
    for (auto &family : group)
      all.push_back(std::move(family));
  return all;
}

// --compile-only: NVRTC and ptxas, no GPU. With --dump-cubins the cubins
// too: comparing them before and after a change of a kernel header that
// should not change code generation needs no GPU.
int compileOnly(const std::vector<CheckFamily> &families,
                const std::string &cubinDir) {
  nvrtc::NvrtcOptions nvrtcOptions;
  nvrtcOptions.ptxasVerbose = true;
  const nvrtc::NvrtcCompiler compiler(nvrtcOptions);
  KernelLibrary library(compiler);
  for (const CheckFamily &f : families)
    f.declare(library);
  library.compile();
  if (!cubinDir.empty())
    library.dumpCubins(cubinDir);
  bool spills = false;
  for (const KernelLibrary::CompiledInstance &k : library.compiledInstances()) {
    std::printf("%4d regs %4d/%4d spill  %s\n", k.registers,
                k.resources.spillStoreBytes, k.resources.spillLoadBytes,
                k.nameExpression.c_str());
    spills = spills || k.resources.spillStoreBytes > 0;
  }
  std::printf("compiled %zu sources (%zu from cache) in %.1f s%s\n",
              library.sourceCount(), library.cachedSourceCount(),
              library.compileSeconds(), spills ? "; some kernels spill" : "");
  return 0;
}

int run(int argc, char **argv) {
  const Arguments args = parse(argc, argv);
  std::vector<CheckFamily> families = allFamilies();
  if (args.list) {
    for (const CheckFamily &f : families)
      std::printf("%s\n", f.name.c_str());
    return 0;
  }
  for (const std::string &name : args.only)
    if (std::none_of(families.begin(), families.end(),
                     [&](const CheckFamily &f) { return f.name == name; }))
      fail("--only: no check family named '", name, "' (see --list)");
  if (!args.only.empty())
    std::erase_if(families, [&](const CheckFamily &f) {
      return !args.only.count(f.name);
    });
  if (args.compileOnly)
    return compileOnly(families, args.cubinDir);

  if (!cuda::cudaAvailable()) {
    std::printf("sol-kernel-check: skipped, no usable GPU: %s\n",
                cuda::cudaUnavailableReason().c_str());
    return 77;
  }
  cuda::CudaContext context(0);
  const cuda::DeviceMemoryInfo memory = context.memoryInfo();
  std::printf("device: %s (%s), %d SMs, L2 %d MiB, %zu MiB free of %zu, "
              "driver %d\n",
              context.name().c_str(), context.smArch().c_str(),
              context.multiprocessorCount(), context.l2CacheBytes() >> 20,
              memory.freeBytes >> 20, memory.totalBytes >> 20,
              cuda::driverApi().driverVersion);

  nvrtc::NvrtcOptions nvrtcOptions;
  nvrtcOptions.ptxasVerbose = true;
  const nvrtc::NvrtcCompiler compiler(nvrtcOptions);
  std::printf("nvrtc %s, include %s, cache %s\n",
              compiler.nvrtcVersion().c_str(),
              compiler.cudaIncludeDir().c_str(),
              compiler.cacheDir().empty() ? compiler.cacheProblem().c_str()
                                          : compiler.cacheDir().c_str());
  KernelLibrary library(compiler);
  for (const CheckFamily &f : families)
    f.declare(library);
  library.build();
  if (!args.cubinDir.empty())
    library.dumpCubins(args.cubinDir);
  std::printf("compiled %zu kernels in %zu sources (%zu from cache) in "
              "%.1f s\n",
              library.kernelCount(), library.sourceCount(),
              library.cachedSourceCount(), library.compileSeconds());

  cuda::Stream stream;
  Report report;
  Checker checker{context, stream,       library,
                  report,  args.options, Rng(args.seed)};
  for (const CheckFamily &f : families) {
    std::printf("== %s\n", f.name.c_str());
    std::fflush(stdout);
    try {
      f.run(checker);
    } catch (const std::exception &e) {
      CheckRecord r;
      r.family = f.name;
      r.name = "(aborted)";
      r.passed = false;
      r.checked = true;
      r.note = e.what();
      std::printf("  %s aborted: %s\n", f.name.c_str(), e.what());
      report.add(std::move(r));
    }
  }

  report.printTable();
  if (!args.jsonPath.empty()) {
    std::ofstream out(args.jsonPath);
    out << report.json(context.name()) << "\n";
    if (!out)
      fail("cannot write ", args.jsonPath);
  }
  const bool ok = report.allPassed();
  std::printf("\n%s\n", ok ? "ALL CHECKS PASSED" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "sol-kernel-check: %s\n", e.what());
    return 2;
  }
}
