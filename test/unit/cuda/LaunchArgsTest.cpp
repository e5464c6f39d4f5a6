//===- LaunchArgsTest.cpp - The launch-args structs on the host -----------===//
//
// codegen/kernels/LaunchArgs.h as host code sees it: device pointers are
// 64-bit addresses built from a CUdeviceptr or a typed pointer, omitted
// fields stay zero, and Kernel::takes recognises a kernel's parameter
// struct from its mangled name (what Kernel::launch checks before every
// launch; KernelCompileTest checks it against NVRTC's names of every model
// instance).
//
//===----------------------------------------------------------------------===//

#include "codegen/kernels/LaunchArgs.h"
#include "runtime/cuda/Module.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>

namespace sol::test {
namespace {

using namespace kernels;

TEST(LaunchArgs, DeviceAddressesComeFromCuDevicePointersOrPointers) {
  const CUdeviceptr base = 0x7f0000001000ull;
  float scratch = 0.0f;
  const LinearArgs args{.y = base,
                        .x = nullptr,
                        .w = base + 256,
                        .normWeight = &scratch,
                        .rows = 3,
                        .n = 64};
  EXPECT_EQ(args.y.value, base);
  EXPECT_EQ(args.x.value, 0u);
  EXPECT_EQ(args.w.value, base + 256);
  EXPECT_EQ(args.normWeight.value, reinterpret_cast<std::uintptr_t>(&scratch));
  // Fields a launch does not name are null or zero.
  EXPECT_EQ(args.bias.value, 0u);
  EXPECT_EQ(args.argmaxKey.value, 0u);
  EXPECT_EQ(args.k, 0);
  EXPECT_EQ(args.eps, 0.0f);
  // An int is not an address.
  static_assert(!std::is_convertible_v<int, DeviceAddress>);
  static_assert(std::is_convertible_v<CUdeviceptr, DeviceAddress>);
  static_assert(std::is_trivially_copyable_v<PagedAttentionArgs>);
}

TEST(LaunchArgs, DefaultsAreTheNeutralValues) {
  const PagedAttentionArgs paged{};
  EXPECT_EQ(paged.attentionScaling, 1.0f);
  EXPECT_EQ(paged.slidingWindow, 0);
  EXPECT_EQ(paged.invFreq.value, 0u);
  EXPECT_EQ(RmsNormArgs{}.rowGroup, 1);
}

TEST(LaunchArgs, MangledNamesEndWithTheStruct) {
  EXPECT_EQ(LaunchArgsName<AddArgs>::kMangled.view(), "7AddArgsE");
  EXPECT_EQ(LaunchArgsName<PagedAttentionArgs>::kMangled.view(),
            "18PagedAttentionArgsE");
  // A kernel is a function of its struct, whatever its template arguments.
  const cuda::Kernel norm(
      nullptr, "_ZN3sol7kernels8rms_normILi2048EEEvNS0_11RmsNormArgsE");
  EXPECT_TRUE(norm.takes(LaunchArgsName<RmsNormArgs>::kMangled.view()));
  EXPECT_FALSE(norm.takes(LaunchArgsName<AddArgs>::kMangled.view()));
  const cuda::Kernel head(
      nullptr, "_ZN3sol7kernels10HeadRmsNormEvNS0_15HeadRmsNormArgsE");
  EXPECT_FALSE(head.takes(LaunchArgsName<RmsNormArgs>::kMangled.view()));
}

} // namespace
} // namespace sol::test
