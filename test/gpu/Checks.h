//===- Checks.h - The families of GPU kernel checks -------------*- C++ -*-===//
#pragma once

#include "CheckSupport.h"
#include "runtime/support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace sol::check {

struct CheckFamily {
  std::string name;
  /// Requires every kernel instance the family launches.
  std::function<void(KernelLibrary &)> declare;
  std::function<void(Checker &)> run;
};

std::vector<CheckFamily> elementwiseChecks();
std::vector<CheckFamily> normChecks();
std::vector<CheckFamily> linearChecks();
std::vector<CheckFamily> fusedLinearChecks();
std::vector<CheckFamily> skinnyChecks();
std::vector<CheckFamily> quantGemvChecks();
std::vector<CheckFamily> quantSkinnyChecks();
std::vector<CheckFamily> quantGemmChecks();
std::vector<CheckFamily> fp8GemmChecks();
std::vector<CheckFamily> attentionChecks();
std::vector<CheckFamily> kvFp8Checks();
std::vector<CheckFamily> fusedRopeChecks();
std::vector<CheckFamily> prefillAttentionChecks();
std::vector<CheckFamily> prefillAttentionFp8Checks();
std::vector<CheckFamily> chunkAttentionChecks();
std::vector<CheckFamily> runtimeChecks();
std::vector<CheckFamily> samplingChecks();
std::vector<CheckFamily> moeChecks();

/// A record for `instance` with its resource report filled in.
CheckRecord makeRecord(Checker &checker, const std::string &family,
                       const std::string &name,
                       const cuda::KernelInstance &instance);

/// Marks the record checked; passes when err <= tol and nothing is unwritten.
void judge(CheckRecord &record, double relError, double tolerance,
           std::size_t unwritten);

} // namespace sol::check
