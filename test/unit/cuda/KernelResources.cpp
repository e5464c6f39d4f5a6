//===- KernelResources.cpp - Registers and occupancy from ptxas -----------===//

#include "KernelResources.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

namespace sol::test {

std::map<std::string, KernelResources>
parsePtxasReport(const std::string &log) {
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex properties(R"(Function properties for (\S+))");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  std::map<std::string, KernelResources> out;
  std::string current, described;
  std::istringstream lines(log);
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, entry)) {
      current = m[1];
    } else if (std::regex_search(line, m, properties)) {
      described = m[1];
    } else if (std::regex_search(line, m, frame)) {
      // Non-inlined device functions have properties too; only entries count.
      if (!described.empty() && described == current) {
        out[current].stackBytes = std::stoi(m[1]);
        out[current].spillBytes = std::stoi(m[2]) + std::stoi(m[3]);
      }
    } else if (std::regex_search(line, m, used) && !current.empty()) {
      out[current].registers = std::stoi(m[1]);
    }
  }
  return out;
}

int maxThreadsPerBlock(const std::string &ptx, const std::string &lowered) {
  const std::size_t at = ptx.find(".entry " + lowered + "(");
  if (at == std::string::npos)
    return 0;
  const std::size_t body = ptx.find('{', at);
  const std::size_t bound = ptx.find(".maxntid", at);
  if (bound == std::string::npos || bound > body)
    return 0;
  return std::atoi(ptx.c_str() + bound + 8);
}

int blocksPerSm(int registers, int threads) {
  constexpr int kRegistersPerSm = 65536, kAllocationUnit = 256;
  constexpr int kMaxWarps = 64, kMaxBlocks = 32;
  if (threads <= 0)
    return 0;
  const int warps = (threads + 31) / 32;
  const int perWarp = (std::max(registers, 1) * 32 + kAllocationUnit - 1) /
                      kAllocationUnit * kAllocationUnit;
  return std::min(
      {kMaxBlocks, kMaxWarps / warps, kRegistersPerSm / (perWarp * warps)});
}

std::map<std::string, KernelResources>
readResourceTable(const std::filesystem::path &path) {
  std::ifstream in(path);
  if (!in)
    fail("cannot read the kernel resource table ", path.string());
  std::map<std::string, KernelResources> table;
  int lineNumber = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNumber;
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream fields(line);
    std::string name;
    KernelResources r;
    if (!std::getline(fields, name, '\t') ||
        !(fields >> r.threads >> r.registers >> r.blocksPerSm >> r.stackBytes))
      fail(path.string(), ":", lineNumber,
           ": expected name<TAB>threads registers blocks stack");
    table[name] = r;
  }
  return table;
}

void writeResourceTable(const std::filesystem::path &path,
                        const std::map<std::string, KernelResources> &table) {
  std::ofstream out(path);
  out << "# What ptxas (NVRTC, sm_90) gives every kernel instance of the "
         "supported model shapes:\n"
         "# name expression, threads per block, registers per thread, "
         "blocks per SM by registers\n"
         "# and threads, stack frame bytes. KernelCompileTest fails when an "
         "instance holds fewer\n"
         "# blocks per SM or needs more stack; rewrite with "
         "SOL_WRITE_KERNEL_RESOURCES=<this file>\n"
         "# build/unittests/sol_nvrtc_tests "
         "--gtest_filter=KernelCompile.EveryModelInstanceCompilesForSm90\n";
  for (const auto &[name, r] : table)
    out << name << '\t' << r.threads << '\t' << r.registers << '\t'
        << r.blocksPerSm << '\t' << r.stackBytes << '\n';
  if (!out)
    fail("cannot write ", path.string());
}

} // namespace sol::test
