//===- EmbeddedKernelHeadersTest.cpp - Embedded headers match the sources -===//

#include "codegen/nvrtc/EmbeddedKernelHeaders.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace sol::test {
namespace {

std::filesystem::path kernelDir() {
  const char *root = std::getenv("SOL_SOURCE_DIR");
  return std::filesystem::path(root ? root : ".") / "codegen" / "kernels";
}

TEST(EmbeddedKernelHeaders, MatchTheFilesInCodegenKernels) {
  const auto dir = kernelDir();
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::set<std::string> onDisk;
  for (const auto &entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".cuh" && entry.path().extension() != ".h")
      continue;
    const std::string name = entry.path().filename().string();
    onDisk.insert(name);
    const nvrtc::HeaderFile *embedded = nvrtc::findEmbeddedKernelHeader(name);
    ASSERT_NE(embedded, nullptr) << name << " is not embedded";
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(embedded->text, text.str()) << name << " differs";
  }
  EXPECT_GE(onDisk.size(), 9u);
  EXPECT_EQ(nvrtc::embeddedKernelHeaders().size(), onDisk.size());
  EXPECT_EQ(nvrtc::findEmbeddedKernelHeader("NoSuch.cuh"), nullptr);
}

} // namespace
} // namespace sol::test
