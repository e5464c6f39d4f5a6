//===- OnnxMatch.h - What the sol-raise-* patterns share --------*- C++ -*-===//
//
// Reading an imported ONNX graph (sol.onnx ops) while raising it: finding a
// value's producer by op type, reading constants, seeing through the casts
// and reshapes exporters put around an idiom, and crossing between the
// graph's [batch, sequence, N] values and Sol's token-major [?, N] ones
// (sol.batch_view).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/SolDialect.h"
#include "ir/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace sol::raise {

/// A raise pattern that recognised the start of its idiom but not the rest:
/// notifies the rewriter and, with SOL_RAISE_DEBUG=1 in the environment,
/// prints the reason and the op's location to stderr.
mlir::LogicalResult nearMiss(mlir::PatternRewriter &rewriter,
                             mlir::Operation *op, const llvm::Twine &reason);

/// A remark a pass makes once per run however many ops it concerns (the
/// patterns are made for each run): "these weights are dequantized to bf16".
class RemarkOnce {
public:
  void emit(mlir::Location loc, const llvm::Twine &message) {
    if (done)
      return;
    done = true;
    mlir::emitRemark(loc) << message;
  }

private:
  bool done = false;
};

/// Runs a raise pass's patterns over `module` to a fixpoint, recording the
/// near misses they report (nearMiss) on the module
/// (`sol.raise_near_misses`), so that sol-raise-check can say, for a node
/// left unraised, which pattern came close and why it stopped.
mlir::LogicalResult applyRaisePatterns(mlir::ModuleOp module,
                                       mlir::RewritePatternSet &&patterns,
                                       llvm::StringRef pass);
/// The module attribute applyRaisePatterns writes: an array of
/// {pass, at (location), reason} dictionaries.
inline constexpr llvm::StringLiteral kNearMissesAttr = "sol.raise_near_misses";

/// Erases the ops of `fn` without side effects whose results nothing reads
/// (what raising left behind: shape arithmetic, casts, constants), last
/// first.
void eraseDeadOps(mlir::Operation *fn);

/// The sol.onnx op of ai.onnx type `opType` that defines `v`, or null.
OnnxOp producer(mlir::Value v, llvm::StringRef opType);

/// `v` with any Casts between float types skipped (the precision changes
/// exporters put around norms and softmax).
mlir::Value skipFloatCasts(mlir::Value v);

/// The elements of a constant (sol.onnx_constant, through float casts) as
/// doubles, or nullopt.
std::optional<llvm::SmallVector<double>> constantValues(mlir::Value v);
/// The one value every element of a constant holds, or nullopt.
std::optional<double> splatValue(mlir::Value v);
/// The elements of an integer constant, or nullopt.
std::optional<llvm::SmallVector<int64_t>> intValues(mlir::Value v);

/// An integer attribute of an ONNX op, or `fallback` when absent.
int64_t intAttr(OnnxOp op, llvm::StringRef name, int64_t fallback);
/// The `axes` of a reduction or (Un)squeeze: the attribute (older opsets) or
/// the constant second input (newer ones); nullopt when neither is known.
std::optional<llvm::SmallVector<int64_t>> axesOf(OnnxOp op);

/// The weight `v` stands for (sol.weight, a sol.onnx_constant held by the
/// store, a Cast of either), in bf16, or null. Weights of other float types
/// are converted (sol.convert_weight).
mlir::Value weightOf(mlir::PatternRewriter &rewriter, mlir::Value v);
/// The weight of a norm `v` stands for: bf16 and f32 as stored, other
/// float types converted to f32, so that a norm weight the exporter stored
/// in f32 or f16 (Gemma's 1 + w) loses nothing on the reference executor
/// (the CUDA executor rounds norm weights to bf16 when it uploads them);
/// null when `v` is no float weight.
mlir::Value normWeightOf(mlir::PatternRewriter &rewriter, mlir::Value v);
/// The weight `v` stands for as the store holds it (no conversion), or
/// null.
mlir::Value storedWeight(mlir::PatternRewriter &rewriter, mlir::Value v);
/// The dimensions of the weight `v` stands for, or nullopt.
std::optional<llvm::SmallVector<int64_t>> weightShape(mlir::Value v);

/// The float weight of a raised linear, for ops that read one (the LM
/// head, a mixture's router): its own, or an imported MatMulNBits int4
/// weight dequantized to bf16 (a second sol.unpack_nbits of the same
/// codes); null for other quantized weights and for act-order ones (the
/// linear's input is gathered to match them).
mlir::Value floatLinearWeight(mlir::OpBuilder &b, LinearOp linear);

/// Sol's activation type: tensor<?xwidthxbf16>.
mlir::RankedTensorType activationType(mlir::MLIRContext *ctx, int64_t width);

/// `v` as Sol's token-major tensor<?xwidthxelement>: the Sol value `v` is a
/// view of, or `v` itself when it is one, or a new view of `v`. The caller
/// checks that `v`'s elements are in token-major order (not a transposed
/// [batch, heads, sequence, dim] value).
mlir::Value tokenMajor(mlir::PatternRewriter &rewriter, mlir::Value v,
                       int64_t width, mlir::Type element = {});
/// The Sol value `v` is a view of (after raising; through Reshapes, which
/// keep the order of the elements), or null.
mlir::Value viewedSolValue(mlir::Value v);
/// The argument of `op`'s function called `name` (its sol.name), or null.
mlir::Value solArgument(mlir::Operation *op, llvm::StringRef name);
/// A new sol.onnx op of one result (a Transpose to put back what a raised
/// op replaced).
OnnxOp createOnnx(mlir::PatternRewriter &rewriter, mlir::Location loc,
                  llvm::StringRef opType, mlir::Type result,
                  mlir::ValueRange inputs,
                  llvm::ArrayRef<mlir::NamedAttribute> attrs = {});
/// True when `op` (a Transpose) has exactly the permutation `perm`.
bool isPermutation(OnnxOp op, llvm::ArrayRef<int64_t> perm);

/// Replaces the result of `root` (all of its uses) by a view of the Sol
/// value `sol`. An unranked result gets `shape` (or its first ranked
/// activation input's shape with the last dimension `sol`'s width) so that
/// Shape ops reading it stay evaluable.
void replaceWithView(
    mlir::PatternRewriter &rewriter, mlir::Operation *root, mlir::Value sol,
    std::optional<llvm::SmallVector<int64_t>> shape = std::nullopt);

/// The #sol.rope whose tables are the cos/sin caches `cos` and `sin`
/// ([positions, dim/2]: row p holds cos and sin of p·inv_freq, as
/// com.microsoft's RotaryEmbedding and GroupQueryAttention take them), read
/// through `store`; nullopt with `why` set when they fit no rope Sol knows.
std::optional<RopeAttr> ropeFromCaches(mlir::Operation *at, mlir::Value cos,
                                       mlir::Value sin, int64_t dim,
                                       const WeightStore *store,
                                       std::string &why);

} // namespace sol::raise
