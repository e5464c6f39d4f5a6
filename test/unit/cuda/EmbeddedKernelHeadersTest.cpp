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

// NVCC's front end (NVRTC included) mis-scopes a discarded `if constexpr`
// whose statement starts with `#pragma unroll`: the loop after that
// statement is dropped too (linear_skinny_quant's int8 instances lost their
// row-scale multiply that way, while the host-compiled emulation kept it).
// Such a branch must be braced.
TEST(EmbeddedKernelHeaders, NoPragmaRightAfterAnUnbracedIfConstexpr) {
  for (const nvrtc::HeaderFile &header : nvrtc::embeddedKernelHeaders()) {
    std::istringstream in{std::string(header.text)};
    std::string line, previous;
    for (int number = 1; std::getline(in, line); ++number) {
      const auto first = line.find_first_not_of(' ');
      const bool pragma =
          first != std::string::npos && line.compare(first, 7, "#pragma") == 0;
      const auto last = previous.find_last_not_of(' ');
      const bool openBranch =
          last != std::string::npos && previous[last] != '{' &&
          (previous.find("if constexpr") != std::string::npos ||
           previous.substr(previous.find_first_not_of(' ')) == "else");
      EXPECT_FALSE(pragma && openBranch)
          << header.name << ":" << number
          << ": brace the `if constexpr` branch before this #pragma";
      previous = line;
    }
  }
}

} // namespace
} // namespace sol::test
