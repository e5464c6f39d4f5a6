//===- SolDialect.h - The sol dialect ---------------------------*- C++ -*-===//
//
// Declarations generated from SolDialect.td, SolAttrs.td and SolOps.td.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ir/RopeTable.h"

#include "ir/SolDialect.h.inc"
#include "ir/SolEnums.h.inc"

namespace sol {
/// The module attribute saying over how many tensor-parallel ranks
/// sol-shard-tensor-parallel split the program (absent: one).
inline constexpr llvm::StringLiteral kTensorParallelSizeAttr =
    "sol.tensor_parallel_size";
/// Marks the weight transforms (sol.concat_weights, ...): every operand is a
/// weight, i.e. produced by sol.weight or another transform.
template <typename ConcreteType>
class WeightTransform
    : public mlir::OpTrait::TraitBase<ConcreteType, WeightTransform> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op);
};
/// True when `v` is a weight: the result of sol.weight or a weight transform.
bool isWeight(mlir::Value v);
/// The value whose storage `v` shares under code generation's rules: split
/// results are views of their input, and the in-place results (a
/// sol.head_rms_norm, a sol.rope_kv_write, the sum of sol.add_rms_norm, a
/// linear with the residual epilogue, a sol.all_reduce) live in their
/// operand's buffer. Other values are their own root.
mlir::Value storageRoot(mlir::Value v);
/// True when no user of `v` comes after `op` (users are `op` itself or
/// earlier ops of its block): `v`'s buffer may take `op`'s result.
bool unusedAfter(mlir::Value v, mlir::Operation *op);
/// True for the epilogues that pair interleaved (gate, up) rows into one
/// output (SwiGLU, GeGLU).
inline bool isGated(LinearEpilogue e) {
  return e == LinearEpilogue::Swiglu || e == LinearEpilogue::Geglu;
}
} // namespace sol

#include "ir/SolInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/SolAttrs.h.inc"

#define GET_OP_CLASSES
#include "ir/SolOps.h.inc"

namespace sol {
template <typename ConcreteType>
mlir::LogicalResult
WeightTransform<ConcreteType>::verifyTrait(mlir::Operation *op) {
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (!isWeight(operand))
      return op->emitOpError()
             << "operand #" << i
             << " must be a weight (sol.weight or a weight transform)";
  return mlir::success();
}
} // namespace sol

namespace sol {
/// The rope table parameters a #sol.rope attribute stands for.
RopeParameters ropeParameters(RopeAttr attr);
/// The #sol.rope attribute of `params` (the inverse of ropeParameters; yarn's
/// attention factor kept only under yarn).
RopeAttr ropeAttr(mlir::MLIRContext *ctx, const RopeParameters &params);

/// sol.dequantize_weight's rules, for its verifier and the patterns that
/// build one. Codes are [rows, cols] of 8- or 4-bit integers (`element`);
/// `scaleShape` must hold one value, one per index of `axis`, or (block > 0)
/// one per block of `block` along it.
bool dequantizeScalesFit(llvm::ArrayRef<int64_t> codeShape,
                         llvm::ArrayRef<int64_t> scaleShape, int64_t axis,
                         int64_t block);
/// Whether the transposed weight is Sol's int8 as it is (zero points aside,
/// which only their values can tell): signed 8-bit codes, no blocks, scales
/// per tensor or per column.
bool dequantizesToInt8(mlir::Type element, int64_t scaleCount, int64_t axis,
                       int64_t block);
/// Whether the transposed weight is Sol's int4 as it is: 4-bit codes in
/// blocks along axis 0 that divide the (even) row count.
bool dequantizesToInt4(mlir::Type element, int64_t rows, int64_t axis,
                       int64_t block);
} // namespace sol
