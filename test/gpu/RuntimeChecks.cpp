//===- RuntimeChecks.cpp - The driver layer on a real GPU -----------------===//
//
// Module loading with the PTX fallback, graph capture and replay, pinned
// memory and error reporting: the parts of runtime/cuda the kernel checks do
// not exercise on their own.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"

#include "runtime/cuda/Graph.h"
#include "runtime/cuda/PinnedBuffer.h"

#include <cmath>
#include <cstring>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;

const cuda::SwigluSpec kSwiglu{2048};

std::vector<double> expectedCopy(const std::vector<Bf16> &v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = bf16ToFloat(v[i]);
  return out;
}

void checkPtxFallback(Checker &c) {
  const cuda::KernelInstance instance = cuda::GatherRowsSpec{2048}.instance();
  const nvrtc::CompiledKernels &compiled = c.kernels.compiledFor(instance);
  const std::string lowered = compiled.loweredNames.at(instance.nameExpression);
  // A cubin the driver must reject: the ELF header is destroyed.
  std::vector<std::uint8_t> broken = compiled.cubin;
  std::memset(broken.data(), 0, std::min<std::size_t>(64, broken.size()));
  CheckRecord r =
      makeRecord(c, "runtime", "module falls back to PTX", instance);
  r.checked = true;
  try {
    cuda::Module module(broken, compiled.ptx, "broken-cubin");
    const cuda::Kernel kernel = module.kernel(lowered);
    const int n = 3;
    const std::vector<Bf16> in = randomBf16(c.rng, 8 * 2048, -1, 1);
    const std::vector<int> rows = {7, 0, 3};
    const DeviceBuffer dIn = c.upload(in), dRows = c.upload(rows);
    DeviceBuffer dOut = c.poisoned(n * 2048 * 2);
    kernel.launch(cuda::GatherRowsSpec{2048}.dims(n), c.stream,
                  kernels::GatherRowsArgs{.out = dOut.address(),
                                          .in = dIn.address(),
                                          .indices = dRows.address(),
                                          .rows = n});
    const std::vector<Bf16> out = c.download<Bf16>(dOut);
    std::vector<Bf16> expected;
    for (int row : rows)
      expected.insert(expected.end(), in.begin() + row * 2048,
                      in.begin() + (row + 1) * 2048);
    judge(r, relativeL2(toFloat(out), expectedCopy(expected)), 0.0,
          countPoison(out));
    if (!module.loadedFromPtx()) {
      r.passed = false;
      r.note = "the broken cubin loaded?";
    }
  } catch (const std::exception &e) {
    r.passed = false;
    r.note = e.what();
  }
  c.finish(std::move(r));

  // Without PTX the same cubin is an error that names the call.
  CheckRecord e =
      makeRecord(c, "runtime", "broken cubin without PTX fails", instance);
  e.checked = true;
  try {
    cuda::Module module(broken, "", "broken-cubin");
    e.passed = false;
    e.note = "a broken cubin loaded without error";
  } catch (const sol::Error &error) {
    e.passed =
        std::string(error.what()).find("cuModuleLoadData") != std::string::npos;
    e.note = error.what();
  }
  c.finish(std::move(e));
}

void checkGraphReplay(Checker &c) {
  const cuda::KernelInstance instance = kSwiglu.instance();
  const cuda::Kernel &kernel = c.kernels.kernel(instance);
  const int tokens = 4;
  std::vector<Bf16> gateUp =
      randomBf16(c.rng, static_cast<std::size_t>(tokens) * 4096, -4, 4);
  DeviceBuffer dIn = c.upload(gateUp);
  DeviceBuffer dOut = c.poisoned(static_cast<std::size_t>(tokens) * 2048 * 2);
  c.stream.beginCapture();
  kernel.launch(kSwiglu.dims(tokens), c.stream,
                kernels::SwigluArgs{.out = dOut.address(),
                                    .gateUp = dIn.address(),
                                    .tokens = tokens});
  const cuda::Graph graph = c.stream.endCapture();
  const cuda::GraphExec exec = graph.instantiate();
  // Capturing ran nothing: the output is still poison.
  const std::size_t untouched = countPoison(c.download<Bf16>(dOut));
  // New inputs, then replay: the graph reads the buffers at replay time.
  gateUp = randomBf16(c.rng, gateUp.size(), -4, 4);
  dIn.copyFromHost(gateUp.data(), gateUp.size() * 2, c.stream);
  exec.launch(c.stream);
  cuda::PinnedBuffer pinned(static_cast<std::size_t>(tokens) * 2048 * 2);
  dOut.copyToHost(pinned.data(), pinned.size(), c.stream);
  c.stream.synchronize();
  const std::span<Bf16> out = pinned.as<Bf16>();
  std::vector<double> ref(out.size());
  for (int t = 0; t < tokens; ++t)
    for (int i = 0; i < 2048; ++i) {
      const double g = bf16ToFloat(gateUp[t * 4096 + i]);
      const double u = bf16ToFloat(gateUp[t * 4096 + 2048 + i]);
      ref[t * 2048 + i] =
          roundBf16(static_cast<float>(g / (1.0 + std::exp(-g)))) * u;
    }
  CheckRecord r = makeRecord(c, "runtime", "graph capture + replay", instance);
  judge(r, relativeL2(toFloat(std::vector<Bf16>(out.begin(), out.end())), ref),
        1e-2, countPoison(std::span<const Bf16>(out.data(), out.size())));
  if (untouched != out.size()) {
    r.passed = false;
    r.note = "capture executed the kernel";
  }
  c.finish(std::move(r));
}

void checkErrors(Checker &c) {
  const cuda::KernelInstance instance = kSwiglu.instance();
  CheckRecord r =
      makeRecord(c, "runtime", "unknown kernel name fails", instance);
  r.checked = true;
  try {
    const nvrtc::CompiledKernels &compiled = c.kernels.compiledFor(instance);
    cuda::Module module(compiled.cubin, compiled.ptx, "swiglu");
    module.kernel("no_such_kernel");
    r.passed = false;
  } catch (const sol::Error &e) {
    r.passed =
        std::string(e.what()).find("no_such_kernel") != std::string::npos;
    r.note = e.what();
  }
  c.finish(std::move(r));

  CheckRecord m =
      makeRecord(c, "runtime", "memory info and huge alloc", instance);
  m.checked = true;
  const cuda::DeviceMemoryInfo info = c.context.memoryInfo();
  m.passed = info.totalBytes > 0 && info.freeBytes <= info.totalBytes;
  try {
    DeviceBuffer tooBig(info.totalBytes * 4);
    m.passed = false;
    m.note = "allocated 4x the GPU's memory?";
  } catch (const sol::Error &e) {
    m.passed = m.passed &&
               std::string(e.what()).find("cuMemAlloc") != std::string::npos;
    m.note = e.what();
  }
  c.finish(std::move(m));
}

void checkRuntime(Checker &c) {
  checkPtxFallback(c);
  checkGraphReplay(c);
  checkErrors(c);
}

} // namespace

std::vector<CheckFamily> runtimeChecks() {
  return {{"runtime",
           [](KernelLibrary &k) {
             k.require(cuda::GatherRowsSpec{2048}.instance());
             k.require(kSwiglu.instance());
           },
           checkRuntime}};
}

} // namespace sol::check
