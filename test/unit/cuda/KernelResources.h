//===- KernelResources.h - Registers and occupancy from ptxas -*- C++ -*---===//
//
// What ptxas gave each kernel (registers, stack frame, spills, from the
// report NVRTC logs with -Xptxas=-v), the blocks of it an sm_90
// multiprocessor holds at once by registers and threads, and the committed
// table (kernel-resources.txt) that KernelCompileTest compares them with:
// register allocation moves with small source changes, and a kernel that
// loses a block per SM is slower without being wrong.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace sol::test {

struct KernelResources {
  int threads = 0;    // .maxntid of the entry (its launch bound)
  int registers = 0;  // per thread
  int stackBytes = 0; // stack frame per thread
  int spillBytes = 0; // spill stores + loads
  int blocksPerSm = 0;
};

/// Per lowered (mangled) entry name, from a ptxas verbose report.
std::map<std::string, KernelResources> parsePtxasReport(const std::string &log);

/// The entry's .maxntid x in `ptx`, or 0 when it declares none.
int maxThreadsPerBlock(const std::string &ptx, const std::string &lowered);

/// Blocks of `threads` threads using `registers` each that one sm_90
/// multiprocessor holds: 64K registers allocated per warp in units of 256,
/// at most 64 warps and 32 blocks. Shared memory is not counted (dynamic
/// shared memory depends on the launch).
int blocksPerSm(int registers, int threads);

/// name expression -> resources; the file has a line per kernel:
/// name expression, threads, registers, blocks per SM, stack bytes
/// (tab-separated; '#' starts a comment).
std::map<std::string, KernelResources>
readResourceTable(const std::filesystem::path &path);
void writeResourceTable(const std::filesystem::path &path,
                        const std::map<std::string, KernelResources> &table);

} // namespace sol::test
