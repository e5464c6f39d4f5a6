//===- KernelCacheTest.cpp - The on-disk kernel cache ---------------------===//

#include "codegen/nvrtc/KernelCache.h"
#include "NvrtcTestSupport.h"

#include <gtest/gtest.h>

#include <fstream>

namespace sol::test {
namespace {

using nvrtc::KernelSource;

KernelSource tinySource() {
  KernelSource source;
  source.name = "tiny.cu";
  source.code = "extern \"C\" __global__ void tiny(float *x) { x[0] = 2; }\n";
  source.nameExpressions = {"tiny"};
  return source;
}

TEST(KernelCache, KeyDependsOnEverythingThatChangesTheOutput) {
  const KernelSource base = tinySource();
  const std::vector<std::string> options = {"-arch=sm_90"};
  const std::string key = nvrtc::kernelCacheKey(base, options, "13.0");
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key, nvrtc::kernelCacheKey(base, options, "13.0"));

  KernelSource changed = base;
  changed.code += " ";
  EXPECT_NE(key, nvrtc::kernelCacheKey(changed, options, "13.0"));
  changed = base;
  changed.headers.push_back({"a.cuh", "int x;"});
  EXPECT_NE(key, nvrtc::kernelCacheKey(changed, options, "13.0"));
  changed = base;
  changed.nameExpressions.push_back("other");
  EXPECT_NE(key, nvrtc::kernelCacheKey(changed, options, "13.0"));
  changed = base;
  changed.options.push_back("-DX=1");
  EXPECT_NE(key, nvrtc::kernelCacheKey(changed, options, "13.0"));
  EXPECT_NE(key, nvrtc::kernelCacheKey(base, {"-arch=sm_100"}, "13.0"));
  EXPECT_NE(key, nvrtc::kernelCacheKey(base, options, "13.1"));
  // Field boundaries matter: ("ab", "c") is not ("a", "bc").
  KernelSource a = base, b = base;
  a.headers = {{"ab", "c"}};
  b.headers = {{"a", "bc"}};
  EXPECT_NE(nvrtc::kernelCacheKey(a, options, "13.0"),
            nvrtc::kernelCacheKey(b, options, "13.0"));
}

TEST(KernelCache, StoresAndLoadsAnEntry) {
  TempDir dir("sol-kcache");
  const nvrtc::KernelCache cache(dir.path());
  nvrtc::CompiledKernels kernels;
  kernels.cubin = {0x7f, 'E', 'L', 'F', 0, 1, 2, 255};
  kernels.ptx = ".version 9.0\n.target sm_90\n";
  kernels.log = "ptxas info: 8 registers";
  kernels.loweredNames = {{"tiny", "tiny"}};
  const KernelSource source = tinySource();
  EXPECT_FALSE(cache.load("0123", source).has_value());
  cache.store("0123", kernels);
  auto loaded = cache.load("0123", source);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(loaded->fromCache);
  EXPECT_EQ(loaded->cubin, kernels.cubin);
  EXPECT_EQ(loaded->ptx, kernels.ptx);
  EXPECT_EQ(loaded->log, kernels.log);
  EXPECT_EQ(loaded->loweredNames, kernels.loweredNames);

  // An entry lacking one of the source's name expressions is a miss.
  KernelSource more = source;
  more.nameExpressions.push_back("other");
  EXPECT_FALSE(cache.load("0123", more).has_value());
}

TEST(KernelCache, DamagedEntriesReadAsMisses) {
  TempDir dir("sol-kcache");
  const nvrtc::KernelCache cache(dir.path());
  nvrtc::CompiledKernels kernels;
  kernels.cubin = std::vector<std::uint8_t>(300, 7);
  kernels.ptx = "ptx text";
  kernels.loweredNames = {{"tiny", "tiny"}};
  cache.store("abcd", kernels);
  const auto path = cache.entryPath("abcd");
  const auto size = std::filesystem::file_size(path);

  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put('\x55');
  }
  EXPECT_FALSE(cache.load("abcd", tinySource()).has_value());

  cache.store("abcd", kernels);
  std::filesystem::resize_file(path, size - 5);
  EXPECT_FALSE(cache.load("abcd", tinySource()).has_value());

  { std::ofstream(path, std::ios::trunc) << "garbage"; }
  EXPECT_FALSE(cache.load("abcd", tinySource()).has_value());
}

TEST(KernelCache, CompilerReusesCachedKernelsAndRecoversFromDamage) {
  TempDir dir("sol-kcache");
  nvrtc::NvrtcOptions options;
  options.cacheDir = dir.path();
  std::string reason;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  EXPECT_EQ(compiler->cacheDir(), dir.path());

  const KernelSource source = tinySource();
  const nvrtc::CompiledKernels first = compiler->compile(source);
  EXPECT_FALSE(first.fromCache);
  const nvrtc::CompiledKernels second = compiler->compile(source);
  EXPECT_TRUE(second.fromCache);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.ptx, first.ptx);

  // Damage every entry: the next compile must compile again, not fail.
  for (const auto &entry : std::filesystem::directory_iterator(dir.path()))
    std::ofstream(entry.path(), std::ios::trunc) << "junk";
  const nvrtc::CompiledKernels third = compiler->compile(source);
  EXPECT_FALSE(third.fromCache);
  EXPECT_EQ(third.cubin, first.cubin);
  EXPECT_TRUE(compiler->compile(source).fromCache);
}

TEST(KernelCache, UnusableCacheDirectoryDisablesTheCacheOnly) {
  TempDir dir("sol-kcache");
  const auto blocker = dir.path() / "file";
  std::ofstream(blocker) << "not a directory";
  nvrtc::NvrtcOptions options;
  options.cacheDir = blocker / "sub";
  std::string reason;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  EXPECT_TRUE(compiler->cacheDir().empty());
  EXPECT_NE(compiler->cacheProblem().find("cannot create"), std::string::npos)
      << compiler->cacheProblem();
  EXPECT_FALSE(compiler->compile(tinySource()).cubin.empty());
}

TEST(KernelCache, DefaultDirectoryHonoursSolCacheDir) {
  const char *old = std::getenv("SOL_CACHE_DIR");
  const std::string saved = old ? old : "";
  setenv("SOL_CACHE_DIR", "/tmp/sol-cache-test-dir", 1);
  EXPECT_EQ(nvrtc::defaultKernelCacheDir(), "/tmp/sol-cache-test-dir");
  unsetenv("SOL_CACHE_DIR");
  if (const char *home = std::getenv("HOME"); home && *home) {
    EXPECT_EQ(nvrtc::defaultKernelCacheDir(),
              std::filesystem::path(home) / ".cache/sol/kernels");
  }
  if (old)
    setenv("SOL_CACHE_DIR", saved.c_str(), 1);
}

} // namespace
} // namespace sol::test
