//===- SolDialect.cpp - The sol dialect: registration and verifiers -------===//
//
// All of the dialect's C++ lives in this one translation unit: generated code
// from ODS is heavy to compile, and CI builds on two cores.
//
//===----------------------------------------------------------------------===//
#include "ir/SolDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace sol;

namespace mlir {
/// Parses a floating-point attribute parameter (MLIR 19 has none built in).
template <> struct FieldParser<llvm::APFloat> {
  static FailureOr<llvm::APFloat> parse(AsmParser &parser) {
    double value = 0;
    if (parser.parseFloat(value))
      return failure();
    return llvm::APFloat(value);
  }
};
} // namespace mlir

#include "ir/SolDialect.cpp.inc"
#include "ir/SolEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/SolAttrs.cpp.inc"

#define GET_OP_CLASSES
#include "ir/SolOps.cpp.inc"

void SolDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/SolAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ir/SolOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Helpers for verifier messages
//===----------------------------------------------------------------------===//

namespace {

/// "[?, 128]" for tensor<?x128xbf16>.
std::string shapeString(RankedTensorType type) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      type.getShape(), os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << "?";
        else
          os << d;
      },
      ", ");
  os << "]";
  return s;
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Checks that `v` has rank `rank`, a dynamic (token) leading dimension when
/// `tokenMajor`, and static other dimensions.
LogicalResult checkActivation(Operation *op, Value v, StringRef what,
                              int64_t rank) {
  auto type = tensorType(v);
  if (type.getRank() != rank)
    return op->emitOpError()
           << what << " must have rank " << rank
           << " (tokens first), but has shape " << shapeString(type);
  for (int64_t i = 1; i < rank; ++i)
    if (type.isDynamicDim(i))
      return op->emitOpError()
             << what << " must have static dimensions after the token "
             << "dimension, but has shape " << shapeString(type);
  return success();
}

/// Checks that a weight has exactly `shape`.
LogicalResult checkWeightShape(Operation *op, Value v, StringRef what,
                               ArrayRef<int64_t> shape) {
  auto type = tensorType(v);
  if (type.getShape() != shape) {
    std::string expected = "[";
    llvm::raw_string_ostream os(expected);
    llvm::interleave(shape, os, ", ");
    os << "]";
    return op->emitOpError() << what << " must have shape " << expected
                             << ", but has shape " << shapeString(type);
  }
  return success();
}

LogicalResult checkTokenCount(Operation *op, Value v, StringRef what) {
  auto type = tensorType(v);
  if (type.getRank() != 1)
    return op->emitOpError()
           << what << " must be a 1-D tensor of i32 (one "
           << "entry per token), but has shape " << shapeString(type);
  return success();
}

/// Result element type must match the input's (activations keep their type).
LogicalResult checkSameElementType(Operation *op, Value input, StringRef what,
                                   Type resultType) {
  Type in = tensorType(input).getElementType();
  Type out = cast<RankedTensorType>(resultType).getElementType();
  if (in != out)
    return op->emitOpError()
           << "result element type " << out << " must match the element type "
           << in << " of " << what;
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult RopeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               APFloat thetaF, RopeScalingKind kind,
                               APFloat factorF, APFloat lowF, APFloat highF,
                               int64_t originalMaxPosition, APFloat betaFast,
                               APFloat betaSlow, APFloat attentionFactor) {
  double theta = thetaF.convertToDouble(), factor = factorF.convertToDouble();
  double lowFreqFactor = lowF.convertToDouble(),
         highFreqFactor = highF.convertToDouble();
  if (!(theta > 0) || !std::isfinite(theta))
    return emitError() << "rope theta must be positive, got " << theta;
  if (kind == RopeScalingKind::None)
    return success();
  if (!(factor > 0) || !std::isfinite(factor))
    return emitError() << "rope scaling factor must be positive, got "
                       << factor;
  if (kind == RopeScalingKind::Llama3) {
    if (originalMaxPosition <= 0)
      return emitError() << "llama3 rope scaling needs original_max_position "
                            "> 0";
    if (!(highFreqFactor > lowFreqFactor))
      return emitError() << "llama3 rope scaling needs high_freq_factor ("
                         << highFreqFactor << ") > low_freq_factor ("
                         << lowFreqFactor << ")";
  }
  if (kind == RopeScalingKind::Yarn && originalMaxPosition <= 0)
    return emitError() << "yarn rope scaling needs original_max_position > 0";
  return success();
}

int64_t KvCacheLayoutAttr::elementBytes() const {
  return getDtype() == KvCacheDType::FP8 ? 1 : 2;
}

bool KvCacheLayoutAttr::fp8SupportsHeadDim(int64_t headDim) {
  return headDim >= 16 && headDim <= 256 && llvm::isPowerOf2_64(headDim);
}

LogicalResult KvCacheLayoutAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t numLayers,
    int64_t numKvHeads, int64_t headDim, int64_t blockSize, KvCacheDType dtype,
    KvArrangement arrangement, int64_t alignment, KvScales scales) {
  if (numLayers <= 0 || numKvHeads <= 0 || headDim <= 0)
    return emitError() << "kv_cache_layout needs positive num_layers, "
                       << "num_kv_heads and head_dim, got " << numLayers << ", "
                       << numKvHeads << ", " << headDim;
  if (blockSize < kMinBlockSize || blockSize > kMaxBlockSize ||
      !llvm::isPowerOf2_64(blockSize))
    return emitError() << "kv_cache_layout block_size must be a power of two "
                       << "in [" << kMinBlockSize << ", " << kMaxBlockSize
                       << "], got " << blockSize;
  const int64_t rowBytes = headDim * (dtype == KvCacheDType::FP8 ? 1 : 2);
  if (alignment < 16 || !llvm::isPowerOf2_64(alignment) ||
      rowBytes % alignment != 0)
    return emitError() << "kv_cache_layout alignment must be a power of two "
                       << ">= 16 that divides a cache row (" << rowBytes
                       << " bytes), got " << alignment;
  if (dtype == KvCacheDType::FP8) {
    if (!fp8SupportsHeadDim(headDim))
      return emitError() << "the fp8 KV cache supports head dims 16, 32, 64, "
                         << "128 and 256, got " << headDim;
    if (scales != KvScales::PerTokenHead)
      return emitError() << "an fp8 KV cache needs scales = per_token_head";
  } else if (scales != KvScales::None) {
    return emitError() << "a bf16 KV cache has no scales (scales = none)";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  auto type = getResult().getType();
  if (!type.hasStaticShape())
    return emitOpError() << "weight @" << getName()
                         << " must have a static shape, but has "
                         << shapeString(type);
  return success();
}

LogicalResult EmbeddingOp::verify() {
  if (failed(checkTokenCount(*this, getIds(), "operand #0 (ids)")))
    return failure();
  auto table = getTable().getType();
  if (table.getRank() != 2)
    return emitOpError() << "operand #1 (table) must be 2-D [vocab, hidden], "
                         << "but has shape " << shapeString(table);
  auto result = getResult().getType();
  if (result.getRank() != 2 || result.getDimSize(1) != table.getDimSize(1))
    return emitOpError() << "result must have shape [?, " << table.getDimSize(1)
                         << "] to match the table, "
                         << "but has shape " << shapeString(result);
  if (table.getElementType() != result.getElementType())
    return emitOpError() << "result element type " << result.getElementType()
                         << " must match the table's "
                         << table.getElementType();
  return success();
}

LogicalResult LinearOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)))
    return failure();
  auto input = getInput().getType();
  auto weight = getWeight().getType();
  if (weight.getRank() != 2)
    return emitOpError() << "operand #1 (weight) must be 2-D [out, in], but "
                         << "has shape " << shapeString(weight);
  int64_t k = input.getDimSize(1), n = weight.getDimSize(0);
  if (weight.getDimSize(1) != k)
    return emitOpError() << "operand #1 (weight) has " << weight.getDimSize(1)
                         << " input features but operand #0 (input) has " << k
                         << " (weight shape " << shapeString(weight)
                         << ", input shape " << shapeString(input) << ")";
  if (getBias() &&
      failed(checkWeightShape(*this, getBias(), "operand #2 (bias)", {n})))
    return failure();
  int64_t outN = n;
  if (getEpilogue() == LinearEpilogue::SwiGLU) {
    if (n % 2 != 0)
      return emitOpError() << "the swiglu epilogue needs an even number of "
                           << "output features, weight has " << n;
    outN = n / 2;
  }
  auto result = getResult().getType();
  if (result.getRank() != 2 || result.getDimSize(1) != outN)
    return emitOpError() << "result must have shape [?, " << outN
                         << "], but has shape " << shapeString(result);
  return checkSameElementType(*this, getInput(), "operand #0 (input)", result);
}

LogicalResult RmsNormOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)))
    return failure();
  int64_t n = getInput().getType().getDimSize(1);
  auto weight = getWeight().getType();
  if (weight.getRank() != 1 || n % weight.getDimSize(0) != 0)
    return emitOpError() << "operand #1 (weight) must be 1-D with a size that "
                         << "divides the row size " << n << ", but has shape "
                         << shapeString(weight);
  if (getEpsilon().convertToFloat() <= 0.0f)
    return emitOpError() << "epsilon must be positive";
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result type must equal the input type "
                         << getInput().getType();
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)))
    return failure();
  int64_t n = getInput().getType().getDimSize(1);
  if (failed(checkWeightShape(*this, getWeight(), "operand #1 (weight)", {n})))
    return failure();
  if (getBias() &&
      failed(checkWeightShape(*this, getBias(), "operand #2 (bias)", {n})))
    return failure();
  if (getEpsilon().convertToFloat() <= 0.0f)
    return emitOpError() << "epsilon must be positive";
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result type must equal the input type "
                         << getInput().getType();
  return success();
}

LogicalResult RopeOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)) ||
      failed(checkTokenCount(*this, getPositions(), "operand #1 (positions)")))
    return failure();
  int64_t heads = getNumHeads(), headDim = getHeadDim();
  if (heads <= 0 || headDim <= 0 || headDim % 2 != 0)
    return emitOpError() << "num_heads must be positive and head_dim positive "
                         << "and even, got num_heads = " << heads
                         << ", head_dim = " << headDim;
  int64_t n = getInput().getType().getDimSize(1);
  if (n != heads * headDim)
    return emitOpError() << "operand #0 (input) has " << n
                         << " features per token, but num_heads × head_dim = "
                         << heads * headDim;
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result type must equal the input type "
                         << getInput().getType();
  return success();
}

LogicalResult AttentionOp::verify() {
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads(),
          headDim = getHeadDim();
  if (heads <= 0 || kvHeads <= 0 || headDim <= 0)
    return emitOpError() << "num_heads, num_kv_heads and head_dim must be "
                         << "positive";
  if (heads % kvHeads != 0)
    return emitOpError() << "num_heads (" << heads
                         << ") must be a multiple of num_kv_heads (" << kvHeads
                         << ")";
  if (static_cast<int64_t>(getLayer()) < 0)
    return emitOpError() << "layer must be non-negative";
  if (auto window = getSlidingWindow(); window && *window <= 0)
    return emitOpError() << "sliding_window must be positive when set";
  struct Operand {
    Value value;
    const char *name;
    int64_t features;
  } operands[] = {{getQuery(), "operand #0 (query)", heads * headDim},
                  {getKey(), "operand #1 (key)", kvHeads * headDim},
                  {getValue(), "operand #2 (value)", kvHeads * headDim}};
  for (const Operand &o : operands) {
    if (failed(checkActivation(*this, o.value, o.name, 2)))
      return failure();
    int64_t n = tensorType(o.value).getDimSize(1);
    if (n != o.features)
      return emitOpError() << o.name << " has " << n
                           << " features per token, expected " << o.features;
  }
  if (failed(
          checkTokenCount(*this, getPositions(), "operand #3 (positions)")) ||
      failed(checkTokenCount(*this, getTokenSeq(), "operand #4 (token_seq)")))
    return failure();
  if (getResult().getType() != getQuery().getType())
    return emitOpError() << "result type must equal the query type "
                         << getQuery().getType();
  return success();
}

LogicalResult SwigluOp::verify() {
  if (failed(checkActivation(*this, getGate(), "operand #0 (gate)", 2)))
    return failure();
  auto gate = getGate().getType();
  int64_t width = gate.getDimSize(1);
  if (getUp()) {
    if (getUp().getType() != gate)
      return emitOpError() << "operand #1 (up) must have the type of operand "
                           << "#0 (gate) " << gate << ", but has "
                           << getUp().getType();
  } else {
    if (width % 2 != 0)
      return emitOpError() << "the one-operand form needs an even number of "
                           << "columns (gate then up), got " << width;
    width /= 2;
  }
  auto result = getResult().getType();
  if (result.getRank() != 2 || result.getDimSize(1) != width)
    return emitOpError() << "result must have shape [?, " << width
                         << "], but has shape " << shapeString(result);
  return checkSameElementType(*this, getGate(), "operand #0 (gate)", result);
}

LogicalResult SplitOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)))
    return failure();
  if (getResults().empty())
    return emitOpError() << "must produce at least one part";
  int64_t total = 0;
  for (auto [i, result] : llvm::enumerate(getResults())) {
    auto type = cast<RankedTensorType>(result.getType());
    if (type.getRank() != 2 || type.isDynamicDim(1))
      return emitOpError() << "result #" << i << " must be 2-D with static "
                           << "columns, but has shape " << shapeString(type);
    if (failed(checkSameElementType(*this, getInput(), "operand #0 (input)",
                                    type)))
      return failure();
    total += type.getDimSize(1);
  }
  int64_t n = getInput().getType().getDimSize(1);
  if (total != n)
    return emitOpError() << "results have " << total
                         << " columns in all, but the input has " << n;
  return success();
}

LogicalResult LogitsOp::verify() {
  if (failed(checkActivation(*this, getHidden(), "operand #0 (hidden)", 2)))
    return failure();
  int64_t d = getHidden().getType().getDimSize(1);
  if (failed(checkWeightShape(*this, getNormWeight(),
                              "operand #1 (norm_weight)", {d})))
    return failure();
  auto head = getLmHead().getType();
  if (head.getRank() != 2 || head.getDimSize(1) != d)
    return emitOpError() << "operand #2 (lm_head) must have shape [vocab, " << d
                         << "], but has shape " << shapeString(head);
  if (failed(checkTokenCount(*this, getRows(), "operand #3 (rows)")))
    return failure();
  auto result = getResult().getType();
  if (result.getRank() != 2 || result.getDimSize(1) != head.getDimSize(0))
    return emitOpError() << "result must have shape [?, " << head.getDimSize(0)
                         << "] (one row of vocabulary logits per selected "
                         << "row), but has shape " << shapeString(result);
  return success();
}

LogicalResult FusedOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "region has " << body.getNumArguments()
                         << " arguments but the op has " << getInputs().size()
                         << " inputs";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(body.getArgumentTypes(), getInputs()))) {
    auto [argType, input] = pair;
    if (argType != input.getType())
      return emitOpError() << "region argument #" << i << " has type "
                           << argType << " but input #" << i << " has type "
                           << input.getType();
  }
  for (Operation &op : body.without_terminator()) {
    if (!op.hasTrait<OpTrait::Elementwise>() ||
        !isa<SolDialect>(op.getDialect()))
      return emitOpError() << "may hold only elementwise sol ops, but holds '"
                           << op.getName() << "'";
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "sol.yield produces " << yield.getValues().size()
                         << " values whose types must equal the results' types";
  return success();
}
