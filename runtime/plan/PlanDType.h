//===- PlanDType.h - Plan.fbs dtypes as sol::DType --------------*- C++ -*-===//
//
// Plan.fbs's DType enum mirrors sol::DType (runtime/support/DType.h), the one
// dtype table, value for value, so a conversion is a cast; the asserts keep
// the schema and the table in step.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/Plan_generated.h"
#include "runtime/support/DType.h"

namespace sol {

#define SOL_SAME_DTYPE(name)                                                   \
  static_assert(static_cast<int>(fb::DType::name) ==                           \
                static_cast<int>(DType::name))
SOL_SAME_DTYPE(BF16);
SOL_SAME_DTYPE(F16);
SOL_SAME_DTYPE(F32);
SOL_SAME_DTYPE(F64);
SOL_SAME_DTYPE(F8E4M3);
SOL_SAME_DTYPE(F8E5M2);
SOL_SAME_DTYPE(I8);
SOL_SAME_DTYPE(U8);
SOL_SAME_DTYPE(I16);
SOL_SAME_DTYPE(I32);
SOL_SAME_DTYPE(I64);
SOL_SAME_DTYPE(U16);
SOL_SAME_DTYPE(U32);
SOL_SAME_DTYPE(U64);
SOL_SAME_DTYPE(Bool);
SOL_SAME_DTYPE(I4);
#undef SOL_SAME_DTYPE

/// The dtype of a plan's buffer or weight. Values outside the enum must be
/// rejected before (flatbuffers does not check enum ranges).
inline DType toDType(fb::DType type) { return static_cast<DType>(type); }

} // namespace sol
