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
#include "ir/SolInterfaces.cpp.inc"

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
std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape, os,
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

std::string shapeString(RankedTensorType type) {
  return shapeString(type.getShape());
}

/// The float types weights are stored in before quantization.
bool isFloatElement(Type t) { return t.isBF16() || t.isF16() || t.isF32(); }

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
                               APFloat betaSlow, APFloat attentionFactor,
                               int64_t rotaryDim, DenseF64ArrayAttr shortFactor,
                               DenseF64ArrayAttr longFactor, bool truncate) {
  double theta = thetaF.convertToDouble(), factor = factorF.convertToDouble();
  if (!truncate && kind != RopeScalingKind::Yarn)
    return emitError() << "rope truncate = false goes with yarn scaling only";
  if (rotaryDim < 0 || rotaryDim % 2 != 0)
    return emitError() << "rope rotary_dim must be even and >= 0, got "
                       << rotaryDim;
  if (bool(shortFactor) != (kind == RopeScalingKind::LongRope) ||
      bool(longFactor) != (kind == RopeScalingKind::LongRope))
    return emitError() << "short_factor and long_factor go with longrope "
                          "scaling, and only with it";
  if (shortFactor && shortFactor.size() != longFactor.size())
    return emitError() << "longrope needs as many short factors as long ones, "
                       << "got " << shortFactor.size() << " and "
                       << longFactor.size();
  if (shortFactor)
    for (DenseF64ArrayAttr list : {shortFactor, longFactor})
      for (double f : list.asArrayRef())
        if (!(f > 0) || !std::isfinite(f))
          return emitError() << "longrope factors must be positive, got " << f;
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
  if ((kind == RopeScalingKind::Yarn || kind == RopeScalingKind::LongRope) &&
      originalMaxPosition <= 0)
    return emitError() << stringifyRopeScalingKind(kind)
                       << " rope scaling needs original_max_position > 0";
  return success();
}

int64_t KvCacheLayoutAttr::elementBytes() const {
  return getDtype() == KvCacheDType::FP8 ? 1 : 2;
}

bool KvCacheLayoutAttr::fp8SupportsHeadDim(int64_t headDim) {
  return headDim >= 16 && headDim <= 256 && headDim % 16 == 0;
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
      return emitError() << "the fp8 KV cache supports head dims that are "
                         << "multiples of 16 up to 256, got " << headDim;
    if (scales != KvScales::PerTokenHead)
      return emitError() << "an fp8 KV cache needs scales = per_token_head";
  } else if (scales != KvScales::None) {
    return emitError() << "a bf16 KV cache has no scales (scales = none)";
  }
  return success();
}

LogicalResult ModelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringRef architecture, int64_t vocabSize,
                                int64_t hiddenSize, int64_t numLayers,
                                int64_t maxPositionEmbeddings,
                                int64_t positionLimit) {
  if (architecture.empty())
    return emitError() << "sol.model needs an architecture name";
  if (vocabSize <= 0 || hiddenSize <= 0 || numLayers <= 0 ||
      maxPositionEmbeddings <= 0)
    return emitError() << "sol.model needs positive vocab_size, hidden_size, "
                       << "num_layers and max_position_embeddings, got "
                       << vocabSize << ", " << hiddenSize << ", " << numLayers
                       << ", " << maxPositionEmbeddings;
  if (positionLimit < 0)
    return emitError() << "sol.model's position_limit must be >= 0 (0: none), "
                       << "got " << positionLimit;
  return success();
}

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

bool sol::isWeight(Value v) {
  Operation *def = v.getDefiningOp();
  return def && (isa<WeightOp>(def) || def->hasTrait<sol::WeightTransform>());
}

LogicalResult WeightOp::verify() {
  auto type = getResult().getType();
  if (!type.hasStaticShape())
    return emitOpError() << "weight @" << getName()
                         << " must have a static shape, but has "
                         << shapeString(type);
  return success();
}

LogicalResult ConcatWeightsOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  auto first = tensorType(getInputs().front());
  if (first.getRank() < 1)
    return emitOpError() << "inputs must have at least one dimension";
  int64_t rows = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    auto type = tensorType(input);
    if (type.getElementType() != first.getElementType() ||
        type.getShape().drop_front() != first.getShape().drop_front())
      return emitOpError() << "input #" << i << " has shape "
                           << shapeString(type) << " of "
                           << type.getElementType()
                           << ", but stacking needs the element type and "
                           << "trailing dimensions of input #0 "
                           << shapeString(first) << " of "
                           << first.getElementType();
    rows += type.getDimSize(0);
  }
  SmallVector<int64_t> shape(first.getShape());
  shape[0] = rows;
  auto result = getResult().getType();
  if (result.getShape() != ArrayRef<int64_t>(shape) ||
      result.getElementType() != first.getElementType())
    return emitOpError() << "result must have shape [" << rows
                         << ", ...] of the inputs' element type, but has "
                         << shapeString(result) << " of "
                         << result.getElementType();
  return success();
}

LogicalResult InterleaveRowsOp::verify() {
  auto in = getFirst().getType();
  if (in.getRank() < 1)
    return emitOpError() << "inputs must have at least one dimension";
  SmallVector<int64_t> shape(in.getShape());
  shape[0] *= 2;
  auto result = getResult().getType();
  if (result.getShape() != ArrayRef<int64_t>(shape) ||
      result.getElementType() != in.getElementType())
    return emitOpError() << "result must have twice the rows of the inputs ("
                         << shape[0] << ") of their element type "
                         << in.getElementType() << ", but has shape "
                         << shapeString(result) << " of "
                         << result.getElementType();
  return success();
}

LogicalResult ConvertWeightOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getShape() != out.getShape())
    return emitOpError() << "result shape " << shapeString(out)
                         << " must equal the input's " << shapeString(in);
  if (!isFloatElement(in.getElementType()) ||
      !isFloatElement(out.getElementType()))
    return emitOpError() << "converts between f32, f16 and bf16, not "
                         << in.getElementType() << " to "
                         << out.getElementType();
  return success();
}

namespace {

/// The element type of a scheme's codes.
Type quantCodeType(MLIRContext *ctx, QuantScheme scheme) {
  switch (scheme) {
  case QuantScheme::Int8:
    return IntegerType::get(ctx, 8);
  case QuantScheme::Fp8:
    return Float8E4M3FNType::get(ctx);
  case QuantScheme::Int4:
    return IntegerType::get(ctx, 4);
  case QuantScheme::None:
    break;
  }
  return {};
}

/// Checks a quantized weight [n, k] of `scheme`: codes' element type, the
/// scales' (and zeros') shapes, the group size. `what` names the op's
/// operands in messages.
LogicalResult verifyQuantized(Operation *op, QuantScheme scheme,
                              int64_t groupSize, RankedTensorType codes,
                              Value scales, Value zeros) {
  MLIRContext *ctx = op->getContext();
  const int64_t n = codes.getDimSize(0), k = codes.getDimSize(1);
  if (codes.getElementType() != quantCodeType(ctx, scheme))
    return op->emitOpError()
           << stringifyQuantScheme(scheme) << " weights must have "
           << quantCodeType(ctx, scheme) << " elements, not "
           << codes.getElementType();
  if (!scales)
    return op->emitOpError() << "an " << stringifyQuantScheme(scheme)
                             << " weight needs its scales";
  SmallVector<int64_t> scaleShape{n};
  if (scheme == QuantScheme::Int4) {
    if (groupSize <= 0 || k % groupSize != 0 || groupSize % 2 != 0)
      return op->emitOpError()
             << "int4 needs an even group_size that divides the " << k
             << " input features, got " << groupSize;
    scaleShape.push_back(k / groupSize);
  } else if (groupSize != 0) {
    return op->emitOpError() << stringifyQuantScheme(scheme)
                             << " scales are per output row: group_size must "
                             << "be 0, got " << groupSize;
  }
  auto scaleType = tensorType(scales);
  if (scaleType.getShape() != ArrayRef<int64_t>(scaleShape) ||
      !scaleType.getElementType().isF32())
    return op->emitOpError()
           << "scales must be f32 of shape " << shapeString(scaleShape)
           << ", but are " << scaleType;
  if (bool(zeros) != (scheme == QuantScheme::Int4))
    return op->emitOpError() << "zero points go with int4 weights, and only "
                             << "with them";
  if (zeros) {
    auto zeroType = tensorType(zeros);
    if (zeroType.getShape() != ArrayRef<int64_t>(scaleShape) ||
        !zeroType.getElementType().isUnsignedInteger(8))
      return op->emitOpError()
             << "zeros must be ui8 of shape " << shapeString(scaleShape)
             << ", but are " << zeroType;
  }
  return success();
}

} // namespace

LogicalResult QuantizeWeightOp::verify() {
  auto in = getInput().getType();
  if (in.getRank() != 2 || !isFloatElement(in.getElementType()))
    return emitOpError() << "quantizes a 2-D float weight [out, in], not "
                         << in;
  if (getScheme() == QuantScheme::None)
    return emitOpError() << "needs a scheme (int8, fp8 or int4)";
  auto codes = getCodes().getType();
  if (codes.getShape() != in.getShape())
    return emitOpError() << "codes must have the input's shape "
                         << shapeString(in) << ", but have "
                         << shapeString(codes);
  if (getClipSearch() && getScheme() != QuantScheme::Int4)
    return emitOpError() << "clip_search applies to int4 only";
  return verifyQuantized(*this, getScheme(), getGroupSize(), codes, getScales(),
                         getZeros());
}

bool sol::dequantizeScalesFit(ArrayRef<int64_t> codeShape,
                              ArrayRef<int64_t> scaleShape, int64_t axis,
                              int64_t block) {
  if (codeShape.size() != 2 || (axis != 0 && axis != 1) || block < 0 ||
      (block == 0 && scaleShape.size() > 1))
    return false;
  int64_t count = 1;
  for (int64_t d : scaleShape)
    count *= d;
  const int64_t along = codeShape[axis];
  const int64_t wanted =
      block > 0 ? (along + block - 1) / block * codeShape[1 - axis] : along;
  return count == 1 || count == wanted;
}

bool sol::dequantizesToInt8(Type element, int64_t scaleCount, int64_t axis,
                            int64_t block) {
  return element.isInteger(8) && !element.isUnsignedInteger() && block == 0 &&
         (scaleCount == 1 || axis == 1);
}

bool sol::dequantizesToInt4(Type element, int64_t rows, int64_t axis,
                            int64_t block) {
  return element.isInteger(4) && axis == 0 && block > 0 && rows % block == 0 &&
         rows % 2 == 0;
}

LogicalResult DequantizeWeightOp::verify() {
  auto codes = getCodes().getType();
  Type element = codes.getElementType();
  if (codes.getRank() != 2 || !(element.isInteger(8) || element.isInteger(4)))
    return emitOpError() << "dequantizes 2-D 8- or 4-bit integer codes, not "
                         << shapeString(codes);
  const int64_t axis = getAxis(), block = getBlockSize();
  if (axis != 0 && axis != 1)
    return emitOpError() << "axis must be 0 or 1, not " << axis;
  if (block < 0)
    return emitOpError() << "block_size must not be negative";
  auto scales = getScales().getType();
  const int64_t rows = codes.getDimSize(0), cols = codes.getDimSize(1);
  if (!isFloatElement(scales.getElementType()) ||
      !dequantizeScalesFit(codes.getShape(), scales.getShape(), axis, block))
    return emitOpError() << "scales must be one float, or one per index (or "
                         << "block) of axis " << axis << ", not "
                         << shapeString(scales);
  if (Value zeros = getZeroPoints()) {
    auto type = cast<RankedTensorType>(zeros.getType());
    if (type.getShape() != scales.getShape() ||
        type.getElementType() != element)
      return emitOpError() << "zero points must have the scales' shape and "
                           << "the codes' type, not " << shapeString(type);
  }
  auto outs = getOutputs();
  auto type = [&](unsigned i) {
    return cast<RankedTensorType>(outs[i].getType());
  };
  Builder b(getContext());
  if (outs.size() == 1) {
    if (type(0).getShape() != codes.getShape() ||
        !type(0).getElementType().isBF16())
      return emitOpError() << "result must be bf16 of the codes' shape "
                           << shapeString(codes);
    return success();
  }
  if (outs.size() == 2) {
    if (!dequantizesToInt8(element, scales.getNumElements(), axis, block))
      return emitOpError() << "gives Sol's int8 only for signed 8-bit codes "
                           << "scaled per tensor or per column";
    if (type(0) != RankedTensorType::get({cols, rows}, b.getIntegerType(8)) ||
        type(1) != RankedTensorType::get({cols}, b.getF32Type()))
      return emitOpError() << "int8 results must be [" << cols << ", " << rows
                           << "] i8 codes and [" << cols << "] f32 scales";
    return success();
  }
  if (outs.size() == 3) {
    if (!dequantizesToInt4(element, rows, axis, block))
      return emitOpError() << "gives Sol's int4 only for 4-bit codes in "
                           << "blocks along axis 0 that divide it";
    const int64_t groups = rows / block;
    if (type(0) != RankedTensorType::get({cols, rows}, b.getIntegerType(4)) ||
        type(1) != RankedTensorType::get({cols, groups}, b.getF32Type()) ||
        type(2) !=
            RankedTensorType::get({cols, groups}, b.getIntegerType(8, false)))
      return emitOpError() << "int4 results must be [" << cols << ", " << rows
                           << "] i4 codes, [" << cols << ", " << groups
                           << "] f32 scales and ui8 zeros";
    return success();
  }
  return emitOpError() << "has 1, 2 or 3 results, not " << outs.size();
}

LogicalResult UnpackNBitsOp::verify() {
  auto packed = getPacked().getType();
  const int64_t bits = getBits(), block = getBlockSize();
  if (!(bits == 2 || bits == 4 || bits == 8))
    return emitOpError() << "unpacks 2, 4 or 8-bit codes, not " << bits;
  const bool wholeRow = packed.getRank() == 3 && packed.getDimSize(1) == 1;
  if (block < 16 || ((block & (block - 1)) != 0 && !wholeRow))
    return emitOpError() << "needs a power-of-two block size of at least 16 "
                         << "(or one block a row), not " << block;
  if (packed.getRank() != 3 || !packed.getElementType().isUnsignedInteger(8) ||
      packed.getDimSize(2) != block * bits / 8)
    return emitOpError() << "packed codes must be ui8 [N, blocks, "
                         << block * bits / 8 << "], not "
                         << shapeString(packed);
  const int64_t n = packed.getDimSize(0), blocks = packed.getDimSize(1);
  std::optional<ArrayRef<int32_t>> columns = getColumns();
  if (columns && !getOutputs().empty()) {
    const int64_t k =
        cast<RankedTensorType>(getOutputs()[0].getType()).getDimSize(1);
    std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(k, 0)));
    bool permutation = static_cast<int64_t>(columns->size()) == k;
    for (int32_t c : *columns) {
      permutation = permutation && c >= 0 && c < k && !seen[size_t(c)];
      if (permutation)
        seen[size_t(c)] = true;
    }
    if (!permutation)
      return emitOpError() << "columns must be a permutation of the " << k
                           << " inputs";
  }
  auto scales = getScales().getType();
  if (!isFloatElement(scales.getElementType()) ||
      scales.getNumElements() != n * blocks)
    return emitOpError() << "scales must be " << n * blocks
                         << " floats (one per row and block), not "
                         << shapeString(scales);
  if (Value zeros = getZeroPoints()) {
    auto type = cast<RankedTensorType>(zeros.getType());
    const int64_t perByte = 8 / bits;
    const bool packedZeros =
        type.getElementType().isUnsignedInteger(8) &&
        type.getNumElements() == n * ((blocks + perByte - 1) / perByte);
    const bool floatZeros = isFloatElement(type.getElementType()) &&
                            type.getNumElements() == n * blocks;
    if (!packedZeros && !floatZeros)
      return emitOpError() << "zero points must be packed ui8 codes or one "
                           << "float per row and block, not "
                           << shapeString(type);
  }
  auto outputs = getOutputs();
  if (outputs.size() == 1) {
    auto w = cast<RankedTensorType>(outputs[0].getType());
    if (w.getRank() != 2 || w.getDimSize(0) != n ||
        w.getDimSize(1) > blocks * block || w.getDimSize(1) <= 0 ||
        !w.getElementType().isBF16())
      return emitOpError() << "dequantizes to a bf16 [" << n
                           << ", K <= " << blocks * block << "] weight, not "
                           << shapeString(w);
    return success();
  }
  if (outputs.size() != 3 || bits != 4)
    return emitOpError() << "has one result (bf16) or three (Sol's int4, "
                         << "from 4-bit codes)";
  auto codes = cast<RankedTensorType>(outputs[0].getType());
  if (codes.getRank() != 2 || codes.getDimSize(0) != n ||
      codes.getDimSize(1) != blocks * block ||
      !codes.getElementType().isInteger(4))
    return emitOpError() << "int4 codes must be [" << n << ", "
                         << blocks * block << "] i4, not "
                         << shapeString(codes);
  if (Value zeros = getZeroPoints();
      zeros && !cast<RankedTensorType>(zeros.getType())
                    .getElementType()
                    .isUnsignedInteger(8))
    return emitOpError() << "Sol's int4 takes integer zero points only";
  return verifyQuantized(*this, QuantScheme::Int4, block, codes, outputs[1],
                         outputs[2]);
}

OpFoldResult ConcatWeightsOp::fold(FoldAdaptor) {
  Value source;
  int64_t next = 0;
  for (Value input : getInputs()) {
    auto slice = input.getDefiningOp<SliceRowsOp>();
    if (!slice || slice.getStride() != 1 ||
        (source && slice.getInput() != source) ||
        static_cast<int64_t>(slice.getOffset()) != next)
      return {};
    source = slice.getInput();
    next += slice.getType().getDimSize(0);
  }
  if (source && source.getType() == getType())
    return source;
  return {};
}

LogicalResult SliceRowsOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  const int64_t offset = getOffset();
  if (in.getRank() < 1 || in.getRank() > 2 || out.getRank() != in.getRank() ||
      out.getElementType() != in.getElementType() ||
      (in.getRank() == 2 && out.getDimSize(1) != in.getDimSize(1)))
    return emitOpError() << "slices rows of a 1-D or 2-D weight into one of "
                         << "the same element type and row size; input "
                         << shapeString(in) << ", result " << shapeString(out);
  const int64_t stride = getStride();
  if (stride < 1)
    return emitOpError() << "stride must be positive, got " << stride;
  const int64_t last = offset + (out.getDimSize(0) - 1) * stride;
  if (offset < 0 || out.getDimSize(0) <= 0 || last >= in.getDimSize(0)) {
    if (stride == 1)
      return emitOpError() << "rows [" << offset << ", " << last + 1
                           << ") must lie within the input's "
                           << in.getDimSize(0);
    return emitOpError() << "rows " << offset << ".." << last << " (stride "
                         << stride << ") must lie within the input's "
                         << in.getDimSize(0);
  }
  return success();
}

LogicalResult ReshapeWeightOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType() ||
      in.getNumElements() != out.getNumElements())
    return emitOpError() << "keeps the element type and count; input " << in
                         << ", result " << out;
  return success();
}

LogicalResult DequantizeMxfp4Op::verify() {
  auto blocks = getBlocks().getType(), scales = getScales().getType();
  auto out = getResult().getType();
  if (!blocks.getElementType().isUnsignedInteger(8) ||
      !scales.getElementType().isUnsignedInteger(8) || blocks.getRank() < 2 ||
      blocks.getShape().back() != 16 ||
      scales.getShape() != blocks.getShape().drop_back())
    return emitOpError() << "needs ui8 blocks [..., G, 16] and ui8 scales "
                         << "[..., G], got " << shapeString(blocks) << " and "
                         << shapeString(scales);
  const int64_t groups = blocks.getDimSize(blocks.getRank() - 2);
  const int64_t rows = blocks.getNumElements() / (groups * 16);
  if (!out.getElementType().isBF16() || out.getRank() != 2 ||
      out.getDimSize(0) != rows || out.getDimSize(1) != groups * 32)
    return emitOpError() << "result must be [" << rows << ", " << groups * 32
                         << "] bf16, but is " << out;
  return success();
}

LogicalResult DequantizeFp8BlocksOp::verify() {
  auto codes = getCodes().getType(), scales = getScales().getType();
  auto out = getResult().getType();
  const int64_t blockRows = getBlockRows(), blockCols = getBlockCols();
  if (blockRows <= 0 || blockCols <= 0)
    return emitOpError() << "needs positive block sizes, got " << blockRows
                         << " x " << blockCols;
  if (!isa<Float8E4M3FNType>(codes.getElementType()) || codes.getRank() != 2)
    return emitOpError() << "needs [N, K] f8E4M3FN codes, got " << codes;
  const int64_t n = codes.getDimSize(0), k = codes.getDimSize(1);
  const int64_t rows = (n + blockRows - 1) / blockRows,
                cols = (k + blockCols - 1) / blockCols;
  if (!scales.getElementType().isF32() || scales.getRank() != 2 ||
      scales.getDimSize(0) != rows || scales.getDimSize(1) != cols)
    return emitOpError() << "needs [" << rows << ", " << cols
                         << "] f32 scales (one a block of " << blockRows
                         << " x " << blockCols << " codes of [" << n << ", "
                         << k << "]), got " << scales;
  if (!out.getElementType().isBF16() || out.getShape() != codes.getShape())
    return emitOpError() << "result must be [" << n << ", " << k
                         << "] bf16, but is " << out;
  return success();
}

LogicalResult PermuteHeadDimsOp::verify() {
  auto in = getInput().getType();
  const int64_t headDim = getHeadDim(), rotary = getRotaryDim();
  if (headDim <= 0 || headDim % 2 != 0 || rotary <= 0 || rotary % 2 != 0 ||
      rotary > headDim || (headDim - rotary) % 2 != 0)
    return emitOpError() << "needs an even head_dim and an even rotary_dim "
                         << "up to it, got " << headDim << " and " << rotary;
  if (in.getRank() < 1 || in.getRank() > 2 || in.getDimSize(0) % headDim != 0)
    return emitOpError() << "permutes the rows of 1-D or 2-D weights made of "
                         << "heads of " << headDim << " rows, but the input "
                         << "has shape " << shapeString(in);
  return success();
}

LogicalResult ShardWeightOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  const int64_t axis = getAxis(), groups = getGroups(), shards = getShards(),
                ranks = getRanks();
  if (in.getRank() < 1 || in.getRank() > 2 || axis < 0 || axis >= in.getRank())
    return emitOpError() << "shards a 1-D or 2-D weight along one of its "
                         << "axes; input " << shapeString(in) << ", axis "
                         << axis;
  if (ranks < 1 || shards < 1 || ranks % shards != 0 || groups < 1)
    return emitOpError() << "needs ranks a multiple of shards and at least "
                         << "one group, got ranks " << ranks << ", shards "
                         << shards << ", groups " << groups;
  if (axis == 1 && groups != 1)
    return emitOpError() << "groups only the rows (axis 0)";
  const int64_t size = in.getDimSize(axis);
  if (size % (groups * shards) != 0)
    return emitOpError() << "cannot cut dimension " << axis << " of "
                         << shapeString(in) << " into " << groups
                         << " group(s) of " << shards << " equal blocks";
  SmallVector<int64_t> expected(in.getShape());
  expected[axis] = size / shards;
  if (out.getElementType() != in.getElementType() ||
      out.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result must be " << shapeString(in)
                         << " with dimension " << axis << " divided by "
                         << shards << " and the same element type, but is "
                         << out;
  if (in.getElementType().isInteger(4) && in.getRank() == 2 && axis == 1 &&
      (expected[1] % 2 != 0))
    return emitOpError() << "cannot cut packed 4-bit rows into blocks of an "
                         << "odd number of columns";
  return success();
}

LogicalResult OffsetWeightOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (!isFloatElement(in.getElementType()) || !out.getElementType().isF32() ||
      out.getShape() != in.getShape())
    return emitOpError() << "adds to a float weight, giving f32 of its shape; "
                         << "input " << in << ", result " << out;
  if (!std::isfinite(getOffset().convertToDouble()))
    return emitOpError() << "offset must be finite";
  return success();
}

LogicalResult SoftcapOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)))
    return failure();
  const double cap = getCap().convertToDouble();
  if (!(cap > 0) || !std::isfinite(cap))
    return emitOpError() << "cap must be positive, got " << cap;
  return success();
}

LogicalResult TransposeWeightOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getRank() != 2 && in.getRank() != 3)
    return emitOpError() << "transposes 2-D weights (or each matrix of a "
                         << "3-D one), but the input has shape "
                         << shapeString(in);
  // [K, N] -> [N, K]; [E, K, N] -> [E * N, K].
  const int64_t batch = in.getRank() == 3 ? in.getDimSize(0) : 1;
  const int64_t k = in.getDimSize(in.getRank() - 2),
                n = in.getDimSize(in.getRank() - 1);
  if (out.getRank() != 2 || out.getDimSize(0) != batch * n ||
      out.getDimSize(1) != k || out.getElementType() != in.getElementType())
    return emitOpError() << "result must have shape [" << batch * n << ", " << k
                         << "] of the input's element type, but has "
                         << shapeString(out);
  return success();
}

LogicalResult ScaleWeightOp::verify() {
  auto in = getInput().getType(), scales = getScales().getType();
  if (!isFloatElement(in.getElementType()))
    return emitOpError() << "scales f32, f16 or bf16 weights, not "
                         << in.getElementType();
  if (in.getRank() < 1 || in.getRank() > 2)
    return emitOpError() << "scales 1-D or 2-D weights, but the input has "
                         << "shape " << shapeString(in);
  const int64_t axis = getAxis();
  if (axis < 0 || axis >= in.getRank())
    return emitOpError() << "axis " << axis << " is not a dimension of "
                         << shapeString(in);
  // [B, K] scales of an [N, K] weight's columns: one row of scales for each
  // of B equal blocks of rows (a mixture's stacked experts).
  if (scales.getRank() == 2 && in.getRank() == 2 && axis == 1 &&
      scales.getElementType().isF32() && scales.getDimSize(0) > 0 &&
      in.getDimSize(0) % scales.getDimSize(0) == 0 &&
      scales.getDimSize(1) == in.getDimSize(1))
    return success();
  if (scales.getRank() != 1 || !scales.getElementType().isF32() ||
      scales.getDimSize(0) != in.getDimSize(axis))
    return emitOpError() << "scales must be tensor<" << in.getDimSize(axis)
                         << "xf32> (dimension " << axis << " of "
                         << shapeString(in) << "), or tensor<Bx"
                         << in.getDimSize(1)
                         << "xf32> for B blocks of rows with axis 1, not "
                         << shapeString(scales) << " of "
                         << scales.getElementType();
  return success();
}

LogicalResult ClampWeightOp::verify() {
  auto in = getInput().getType(), ratios = getRatios().getType();
  if (!isFloatElement(in.getElementType()) || in.getRank() != 2)
    return emitOpError() << "clamps 2-D float weights, not " << shapeString(in)
                         << " of " << in.getElementType();
  const int64_t g = getGroupSize();
  if (g <= 0 || in.getDimSize(1) % g != 0)
    return emitOpError() << "group size " << g << " must divide the "
                         << in.getDimSize(1) << " inputs";
  if (ratios.getRank() != 2 || !ratios.getElementType().isF32() ||
      ratios.getDimSize(0) != in.getDimSize(0) ||
      ratios.getDimSize(1) != in.getDimSize(1) / g)
    return emitOpError() << "ratios must be tensor<" << in.getDimSize(0) << "x"
                         << in.getDimSize(1) / g << "xf32>, not "
                         << shapeString(ratios) << " of "
                         << ratios.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

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
  if (std::optional<APFloat> scale = getScale();
      scale && (!(scale->convertToDouble() > 0) ||
                !std::isfinite(scale->convertToDouble())))
    return emitOpError() << "scale must be positive, got "
                         << scale->convertToDouble();
  return success();
}

namespace {

/// The checks sol.linear and sol.norm_linear share: input, weight, bias,
/// epilogue, residual and the result's shape and element type.
LogicalResult verifyLinear(Operation *op, Value inputValue, Value weightValue,
                           Value bias, Value residual, LinearEpilogue epilogue,
                           RankedTensorType result, QuantScheme quant,
                           int64_t groupSize, Value scales, Value zeros) {
  if (failed(checkActivation(op, inputValue, "operand #0 (input)", 2)))
    return failure();
  auto input = tensorType(inputValue);
  auto weight = tensorType(weightValue);
  if (weight.getRank() != 2)
    return op->emitOpError() << "weight must be 2-D [out, in], but has shape "
                             << shapeString(weight);
  int64_t k = input.getDimSize(1), n = weight.getDimSize(0);
  if (weight.getDimSize(1) != k)
    return op->emitOpError() << "weight has " << weight.getDimSize(1)
                             << " input features but operand #0 (input) has "
                             << k << " (weight shape " << shapeString(weight)
                             << ", input shape " << shapeString(input) << ")";
  if (bias && failed(checkWeightShape(op, bias, "bias", {n})))
    return failure();
  if (quant == QuantScheme::None) {
    if (scales || zeros || groupSize != 0)
      return op->emitOpError() << "scales, zeros and group_size go with a "
                               << "quantized weight (quant = int8, fp8, int4)";
    if (bias && tensorType(bias).getElementType() != weight.getElementType())
      return op->emitOpError()
             << "bias element type " << tensorType(bias).getElementType()
             << " must be the weight's, " << weight.getElementType();
  } else {
    if (failed(verifyQuantized(op, quant, groupSize, weight, scales, zeros)))
      return failure();
    if (bias && tensorType(bias).getElementType() !=
                    tensorType(inputValue).getElementType())
      return op->emitOpError()
             << "the bias of a quantized weight has the input's element type "
             << tensorType(inputValue).getElementType() << ", not "
             << tensorType(bias).getElementType();
  }
  int64_t outN = n;
  if (isGated(epilogue)) {
    if (n % 2 != 0)
      return op->emitOpError() << "the " << stringifyLinearEpilogue(epilogue)
                               << " epilogue needs an even number "
                               << "of output features, weight has " << n;
    outN = n / 2;
  }
  if (result.getRank() != 2 || result.getDimSize(1) != outN)
    return op->emitOpError() << "result must have shape [?, " << outN
                             << "], but has shape " << shapeString(result);
  if (bool(residual) != (epilogue == LinearEpilogue::Residual))
    return op->emitOpError()
           << "the residual operand goes with the residual epilogue, and "
           << "only with it";
  if (residual && tensorType(residual) != result)
    return op->emitOpError() << "residual must have the result type " << result
                             << ", but has " << residual.getType();
  Type in = input.getElementType(), out = result.getElementType();
  if (out != in && !(out.isF32() && epilogue == LinearEpilogue::None))
    return op->emitOpError()
           << "result element type " << out << " must be the input's (" << in
           << "), or f32 without an epilogue (logits)";
  return success();
}

} // namespace

LogicalResult LinearOp::verify() {
  return verifyLinear(*this, getInput(), getWeight(), getBias(), getResidual(),
                      getEpilogue(), getResult().getType(), getQuant(),
                      getGroupSize(), getWeightScales(), getWeightZeros());
}

LogicalResult NormLinearOp::verify() {
  if (failed(verifyLinear(*this, getInput(), getWeight(), getBias(),
                          getResidual(), getEpilogue(), getResult().getType(),
                          getQuant(), getGroupSize(), getWeightScales(),
                          getWeightZeros())))
    return failure();
  int64_t k = getInput().getType().getDimSize(1);
  if (failed(checkWeightShape(*this, getNormWeight(), "norm_weight", {k})))
    return failure();
  if (getEpsilon().convertToFloat() <= 0.0f)
    return emitOpError() << "epsilon must be positive";
  return success();
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

LogicalResult AddRmsNormOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)))
    return failure();
  auto type = getInput().getType();
  if (getResidual().getType() != type || getNormed().getType() != type ||
      getSum().getType() != type)
    return emitOpError() << "input, residual and both results must have one "
                         << "type, " << type;
  if (failed(checkWeightShape(*this, getWeight(), "operand #2 (weight)",
                              {type.getDimSize(1)})))
    return failure();
  if (getEpsilon().convertToFloat() <= 0.0f)
    return emitOpError() << "epsilon must be positive";
  if (bool(getInputWeight()) != getInputEpsilon().has_value())
    return emitOpError() << "input_weight and input_epsilon come together";
  if (getInputWeight()) {
    if (failed(checkWeightShape(*this, getInputWeight(), "input_weight",
                                {type.getDimSize(1)})))
      return failure();
    if (getInputEpsilon()->convertToFloat() <= 0.0f)
      return emitOpError() << "input_epsilon must be positive";
  }
  return success();
}

LogicalResult HeadRmsNormOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)))
    return failure();
  auto weight = getWeight().getType();
  if (weight.getRank() != 1)
    return emitOpError() << "operand #1 (weight) must be 1-D (one head), but "
                         << "has shape " << shapeString(weight);
  int64_t n = getInput().getType().getDimSize(1);
  int64_t column = getColumn(), heads = getNumHeads();
  const int64_t second = getSecondHeads();
  if (bool(getSecondWeight()) != (second != 0))
    return emitOpError() << "second_weight and a nonzero second_heads come "
                         << "together";
  if (second < 0)
    return emitOpError() << "second_heads must not be negative";
  if (getSecondWeight() && getSecondWeight().getType() != weight)
    return emitOpError() << "second_weight must have the weight's type "
                         << weight;
  if (column < 0 || heads <= 0 ||
      column + (heads + second) * weight.getDimSize(0) > n)
    return emitOpError() << "columns [" << column << ", "
                         << column + (heads + second) * weight.getDimSize(0)
                         << ") must lie within the input's " << n;
  if (getEpsilon().convertToFloat() <= 0.0f)
    return emitOpError() << "epsilon must be positive";
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

namespace {

/// Heads, kv heads, head dim, layer and window of the attention ops.
LogicalResult verifyAttentionShape(Operation *op, int64_t heads,
                                   int64_t kvHeads, int64_t headDim,
                                   int64_t layer,
                                   std::optional<uint64_t> window) {
  if (heads <= 0 || kvHeads <= 0 || headDim <= 0)
    return op->emitOpError() << "num_heads, num_kv_heads and head_dim must be "
                             << "positive";
  if (heads % kvHeads != 0)
    return op->emitOpError()
           << "num_heads (" << heads << ") must be a multiple of num_kv_heads ("
           << kvHeads << ")";
  if (layer < 0)
    return op->emitOpError() << "layer must be non-negative";
  if (window && static_cast<int64_t>(*window) <= 0)
    return op->emitOpError() << "sliding_window must be positive when set";
  return success();
}

/// A packed [q heads | k heads | v heads] operand and the step inputs.
LogicalResult verifyPackedQkv(Operation *op, Value qkv, Value positions,
                              Value tokenSeq, int64_t heads, int64_t kvHeads,
                              int64_t headDim) {
  if (failed(checkActivation(op, qkv, "operand #0 (qkv)", 2)))
    return failure();
  int64_t n = tensorType(qkv).getDimSize(1);
  if (n != (heads + 2 * kvHeads) * headDim)
    return op->emitOpError()
           << "operand #0 (qkv) has " << n << " features per token, expected "
           << "(num_heads + 2 × num_kv_heads) × head_dim = "
           << (heads + 2 * kvHeads) * headDim;
  if (failed(checkTokenCount(op, positions, "operand #1 (positions)")) ||
      failed(checkTokenCount(op, tokenSeq, "operand #2 (token_seq)")))
    return failure();
  return success();
}

} // namespace

namespace {

/// A soft cap (attention scores, logits) must be a positive finite number.
LogicalResult checkSoftcap(Operation *op, std::optional<APFloat> cap) {
  if (cap &&
      (!(cap->convertToDouble() > 0) || !std::isfinite(cap->convertToDouble())))
    return op->emitOpError()
           << "softcap must be positive, got " << cap->convertToDouble();
  return success();
}

} // namespace

namespace {

/// Attention sinks, when given, are one float per query head.
LogicalResult checkSinks(Operation *op, Value sinks, int64_t heads) {
  if (!sinks)
    return success();
  auto t = cast<RankedTensorType>(sinks.getType());
  if (t.getRank() != 1 || t.getDimSize(0) != heads ||
      !isFloatElement(t.getElementType()))
    return op->emitOpError() << "sinks must be a [" << heads
                             << "] bf16, f16 or f32 weight (one per query "
                             << "head), but has type " << t;
  return success();
}

} // namespace

LogicalResult AttentionOp::verify() {
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads(),
          headDim = getHeadDim();
  if (failed(checkSoftcap(*this, getSoftcap())) ||
      failed(checkSinks(*this, getSinks(), heads)))
    return failure();
  if (failed(verifyAttentionShape(*this, heads, kvHeads, headDim,
                                  static_cast<int64_t>(getLayer()),
                                  getSlidingWindow())))
    return failure();
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

LogicalResult RopeKvWriteOp::verify() {
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads(),
          headDim = getHeadDim();
  if (failed(verifyAttentionShape(*this, heads, kvHeads, headDim,
                                  static_cast<int64_t>(getLayer()),
                                  std::nullopt)))
    return failure();
  if (headDim % 2 != 0)
    return emitOpError() << "rope needs an even head_dim, got " << headDim;
  return verifyPackedQkv(*this, getQkv(), getPositions(), getTokenSeq(), heads,
                         kvHeads, headDim);
}

LogicalResult KvAttentionOp::verify() {
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads(),
          headDim = getHeadDim();
  if (failed(checkSoftcap(*this, getSoftcap())) ||
      failed(checkSinks(*this, getSinks(), heads)))
    return failure();
  if (failed(verifyAttentionShape(*this, heads, kvHeads, headDim,
                                  static_cast<int64_t>(getLayer()),
                                  getSlidingWindow())) ||
      failed(verifyPackedQkv(*this, getQkv(), getPositions(), getTokenSeq(),
                             heads, kvHeads, headDim)))
    return failure();
  auto result = getResult().getType();
  if (result.getRank() != 2 || result.getDimSize(1) != heads * headDim ||
      result.getElementType() != getQkv().getType().getElementType())
    return emitOpError() << "result must have shape [?, " << heads * headDim
                         << "] of the qkv's element type, but has "
                         << shapeString(result);
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
  if (getActivation() == GateActivation::ClampedSilu)
    return emitOpError() << "clamped_silu is an activation of sol.moe only";
  return checkSameElementType(*this, getGate(), "operand #0 (gate)", result);
}

LogicalResult MoeOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)))
    return failure();
  const int64_t hidden = getInput().getType().getDimSize(1);
  // MXFP4 experts: ui8 codes, two values a byte, and their scales;
  // sol-quantize's: i8, f8E4M3FN or i4 codes of the float shapes.
  const bool mxfp4 = isMxfp4();
  const QuantScheme quant = getExpertQuant();
  const int64_t packing = mxfp4 ? 2 : 1;
  Type codeType = getGate().getType().getElementType();
  auto expertWeight = [&](Value v, const char *what) -> LogicalResult {
    auto t = cast<RankedTensorType>(v.getType());
    const bool ok = mxfp4 || quant != QuantScheme::None
                        ? t.getElementType() == codeType
                        : isa<FloatType>(t.getElementType()) &&
                              !isa<Float8E4M3FNType>(t.getElementType());
    if (t.getRank() != 2 || !ok)
      return emitOpError() << what << " must be a 2-D bf16, f16 or f32 "
                           << "weight, or ui8 MXFP4, i8, f8E4M3FN or i4 codes "
                           << "of gate's type, but has type " << t;
    return success();
  };
  auto router = getRouter().getType();
  if (router.getRank() != 2 || !isFloatElement(router.getElementType()))
    return emitOpError() << "router must be a 2-D float weight, but has type "
                         << router;
  if (failed(expertWeight(getGate(), "gate")) ||
      failed(expertWeight(getUp(), "up")) ||
      failed(expertWeight(getDown(), "down")))
    return failure();
  const int64_t experts = getNumExperts();
  auto gate = getGate().getType();
  if (experts <= 0 || router.getDimSize(1) != hidden)
    return emitOpError() << "router must have shape [experts, " << hidden
                         << "], but has shape " << shapeString(router);
  if (gate.getDimSize(1) * packing != hidden ||
      gate.getDimSize(0) % experts != 0 || gate.getDimSize(0) == 0)
    return emitOpError() << "gate must have shape [" << experts
                         << " * intermediate, " << hidden / packing
                         << "], but has shape " << shapeString(gate);
  if (getUp().getType().getShape() != gate.getShape())
    return emitOpError() << "up must have gate's shape " << shapeString(gate)
                         << ", but has shape "
                         << shapeString(getUp().getType());
  const int64_t width = getExpertWidth();
  auto down = getDown().getType();
  if (down.getDimSize(0) != experts * hidden ||
      down.getDimSize(1) * packing != width)
    return emitOpError() << "down must have shape [" << experts * hidden << ", "
                         << width / packing << "], but has shape "
                         << shapeString(down);
  static const char *const projections[] = {"gate", "up", "down"};
  const int64_t rows[] = {experts * width, experts * width, experts * hidden};
  // Checks `values` (three: gate's, up's, down's) against `element` and the
  // shapes [rows] or, with `groups`, [rows, groups].
  auto perRow = [&](ValueRange values, const char *what, Type element,
                    ArrayRef<int64_t> groups) -> LogicalResult {
    for (auto [i, v] : llvm::enumerate(values)) {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t, 2> shape{rows[i]};
      if (!groups.empty())
        shape.push_back(groups[i]);
      if (t.getElementType() != element || t.getShape() != ArrayRef(shape)) {
        std::string name;
        llvm::raw_string_ostream os(name);
        os << element; // unquoted, as in "ui8 [256, 1]"
        return emitOpError()
               << "the " << projections[i] << " " << what << " must be " << name
               << " " << shapeString(ArrayRef<int64_t>(shape))
               << ", but have type " << t;
      }
    }
    return success();
  };
  const size_t scaleCount = mxfp4 || quant != QuantScheme::None ? 3 : 0;
  const size_t zeroCount = quant == QuantScheme::Int4 ? 3 : 0;
  if (getScales().size() != scaleCount || getZeros().size() != zeroCount)
    return emitOpError() << "takes " << scaleCount << " scales and "
                         << zeroCount << " zero points for its experts ("
                         << (mxfp4 ? "MXFP4"
                                   : stringifyQuantScheme(quant).str())
                         << "), got " << getScales().size() << " and "
                         << getZeros().size();
  if (mxfp4) {
    if (hidden % 32 != 0 || width % 32 != 0)
      return emitOpError() << "MXFP4 experts need the hidden size (" << hidden
                           << ") and the experts' width (" << width
                           << ") to be multiples of 32";
    const int64_t groups[] = {hidden / 32, hidden / 32, width / 32};
    if (failed(perRow(getScales(), "scales",
                      IntegerType::get(getContext(), 8, IntegerType::Unsigned),
                      groups)))
      return failure();
  } else if (quant == QuantScheme::Int4) {
    auto first = cast<RankedTensorType>(getScales()[0].getType());
    const int64_t group = getExpertGroupSize();
    if (first.getRank() != 2 || group <= 0 || group % 2 != 0 ||
        hidden % group != 0 || width % group != 0)
      return emitOpError() << "int4 experts need an even group size that "
                           << "divides the hidden size (" << hidden
                           << ") and the experts' width (" << width
                           << "), but the gate scales have type " << first;
    const int64_t groups[] = {hidden / group, hidden / group, width / group};
    if (failed(perRow(getScales(), "scales", Float32Type::get(getContext()),
                      groups)) ||
        failed(perRow(getZeros(), "zero points",
                      IntegerType::get(getContext(), 8, IntegerType::Unsigned),
                      groups)))
      return failure();
  } else if (quant != QuantScheme::None) {
    if (failed(
            perRow(getScales(), "scales", Float32Type::get(getContext()), {})))
      return failure();
  }
  if (getTopK() < 1 || getTopK() > experts)
    return emitOpError() << "top_k must be in [1, " << experts << "], got "
                         << getTopK();
  if (!getBiases().empty()) {
    if (getBiases().size() != 4)
      return emitOpError() << "takes four biases (router, gate, up, down) or "
                           << "none, got " << getBiases().size();
    const int64_t sizes[] = {experts, experts * width, experts * width,
                             experts * hidden};
    static const char *const names[] = {"router", "gate", "up", "down"};
    for (auto [i, bias] : llvm::enumerate(getBiases())) {
      auto t = cast<RankedTensorType>(bias.getType());
      if (t.getRank() != 1 || t.getDimSize(0) != sizes[i] ||
          !isFloatElement(t.getElementType()))
        return emitOpError()
               << "the " << names[i] << " bias must be a [" << sizes[i]
               << "] float weight, but has type " << t;
    }
  }
  const bool clamped = getActivation() == GateActivation::ClampedSilu;
  if (clamped != getActivationLimit().has_value())
    return emitOpError() << "activation_limit goes with clamped_silu, and "
                         << "only with it";
  if (clamped && !(getActivationLimit()->convertToDouble() > 0))
    return emitOpError() << "activation_limit must be positive, got "
                         << getActivationLimit()->convertToDouble();
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result must have the input's type "
                         << getInput().getType() << ", but has "
                         << getResult().getType();
  return success();
}

LogicalResult SigmoidGateOp::verify() {
  if (failed(checkActivation(*this, getValue(), "operand #0 (value)", 2)) ||
      failed(checkActivation(*this, getInput(), "operand #1 (input)", 2)))
    return failure();
  const int64_t hidden = getInput().getType().getDimSize(1);
  auto w = getWeight().getType();
  if (w.getRank() != 2 || w.getDimSize(0) != 1 || w.getDimSize(1) != hidden ||
      !isFloatElement(w.getElementType()))
    return emitOpError() << "weight must be a [1, " << hidden
                         << "] float weight, but has type " << w;
  return success();
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

LogicalResult ConcatColumnsOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  int64_t total = 0;
  Type element;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    if (failed(checkActivation(*this, input, "an input", 2)))
      return failure();
    auto type = tensorType(input);
    if (!element)
      element = type.getElementType();
    else if (type.getElementType() != element)
      return emitOpError() << "input #" << i << " has element type "
                           << type.getElementType() << ", input #0 " << element;
    total += type.getDimSize(1);
  }
  auto result = getResult().getType();
  if (result.getRank() != 2 || result.getDimSize(1) != total ||
      result.getElementType() != element)
    return emitOpError() << "result must have shape [?, " << total
                         << "] of the inputs' element type, but has "
                         << shapeString(result);
  return success();
}

LogicalResult GatherColumnsOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)))
    return failure();
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result must have the input's type "
                         << getInput().getType() << ", but has "
                         << getResult().getType();
  // A permutation: each column exactly once.
  const int64_t width = getInput().getType().getDimSize(1);
  ArrayRef<int32_t> columns = getColumns();
  if (static_cast<int64_t>(columns.size()) != width)
    return emitOpError() << "columns must name each of the " << width
                         << " input columns once, but has " << columns.size()
                         << " entries";
  std::vector<bool> seen(static_cast<size_t>(width), false);
  for (auto [j, c] : llvm::enumerate(columns)) {
    if (c < 0 || c >= width || seen[static_cast<size_t>(c)])
      return emitOpError() << "columns[" << j << "] = " << c
                           << (c < 0 || c >= width
                                   ? " is outside [0, "
                                   : " repeats a column of [0, ")
                           << width << ")";
    seen[static_cast<size_t>(c)] = true;
  }
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)))
    return failure();
  if (getRanks() < 2)
    return emitOpError() << "needs at least 2 ranks, got " << getRanks();
  return success();
}

LogicalResult FirstRankWeightOp::verify() {
  if (getRanks() < 2)
    return emitOpError() << "needs at least 2 ranks, got " << getRanks();
  return success();
}

LogicalResult AllGatherOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)))
    return failure();
  if (getRanks() < 2)
    return emitOpError() << "needs at least 2 ranks, got " << getRanks();
  auto in = getInput().getType(), out = getResult().getType();
  if (out.getRank() != 2 || out.getElementType() != in.getElementType() ||
      out.getDimSize(1) != in.getDimSize(1) * getRanks())
    return emitOpError() << "result must be " << getRanks()
                         << " inputs side by side, [?, "
                         << in.getDimSize(1) * getRanks() << "] of "
                         << in.getElementType() << ", but is " << out;
  return success();
}

LogicalResult GatherRowsOp::verify() {
  if (failed(checkActivation(*this, getInput(), "operand #0 (input)", 2)) ||
      failed(checkTokenCount(*this, getRows(), "operand #1 (rows)")))
    return failure();
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result type must equal the input type "
                         << getInput().getType();
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
  if (failed(checkSoftcap(*this, getSoftcap())))
    return failure();
  auto result = getResult().getType();
  if (result.getRank() != 2 || result.getDimSize(1) != head.getDimSize(0))
    return emitOpError() << "result must have shape [?, " << head.getDimSize(0)
                         << "] (one row of vocabulary logits per selected "
                         << "row), but has shape " << shapeString(result);
  return success();
}

//===----------------------------------------------------------------------===//
// Storage rules of kernel-level ops
//===----------------------------------------------------------------------===//

Value sol::storageRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    Value next;
    if (auto split = dyn_cast<SplitOp>(def))
      next = split.getInput();
    else if (auto norm = dyn_cast<HeadRmsNormOp>(def))
      next = norm.getInput();
    else if (auto rope = dyn_cast<RopeKvWriteOp>(def))
      next = rope.getQkv();
    else if (auto addNorm = dyn_cast<AddRmsNormOp>(def))
      next = v == addNorm.getSum() ? addNorm.getResidual() : Value();
    else if (auto linear = dyn_cast<LinearOp>(def))
      next = linear.getResidual();
    else if (auto linear = dyn_cast<NormLinearOp>(def))
      next = linear.getResidual();
    else if (auto sum = dyn_cast<AllReduceOp>(def))
      next = sum.getInput();
    if (!next)
      break;
    v = next;
  }
  return v;
}

bool sol::unusedAfter(Value v, Operation *op) {
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    return user == op ||
           (user->getBlock() == op->getBlock() && user->isBeforeInBlock(op));
  });
}

RopeParameters sol::ropeParameters(RopeAttr attr) {
  RopeParameters p;
  p.theta = attr.getTheta().convertToDouble();
  switch (attr.getKind()) {
  case RopeScalingKind::None:
    p.scaling = RopeScaling::None;
    break;
  case RopeScalingKind::Linear:
    p.scaling = RopeScaling::Linear;
    break;
  case RopeScalingKind::Llama3:
    p.scaling = RopeScaling::Llama3;
    break;
  case RopeScalingKind::Yarn:
    p.scaling = RopeScaling::Yarn;
    break;
  case RopeScalingKind::LongRope:
    p.scaling = RopeScaling::LongRope;
    p.shortFactor.assign(attr.getShortFactor().asArrayRef().begin(),
                         attr.getShortFactor().asArrayRef().end());
    p.longFactor.assign(attr.getLongFactor().asArrayRef().begin(),
                        attr.getLongFactor().asArrayRef().end());
    break;
  }
  p.rotaryDim = attr.getRotaryDim();
  p.factor = attr.getFactor().convertToDouble();
  p.lowFreqFactor = attr.getLowFreqFactor().convertToDouble();
  p.highFreqFactor = attr.getHighFreqFactor().convertToDouble();
  p.originalMaxPosition = attr.getOriginalMaxPosition();
  p.betaFast = attr.getBetaFast().convertToDouble();
  p.betaSlow = attr.getBetaSlow().convertToDouble();
  p.attentionFactor = attr.getAttentionFactor().convertToDouble();
  p.truncate = attr.getTruncate();
  return p;
}

RopeAttr sol::ropeAttr(MLIRContext *ctx, const RopeParameters &p) {
  RopeScalingKind kind = RopeScalingKind::None;
  switch (p.scaling) {
  case RopeScaling::None:
    break;
  case RopeScaling::Linear:
    kind = RopeScalingKind::Linear;
    break;
  case RopeScaling::Llama3:
    kind = RopeScalingKind::Llama3;
    break;
  case RopeScaling::Yarn:
    kind = RopeScalingKind::Yarn;
    break;
  case RopeScaling::LongRope:
    kind = RopeScalingKind::LongRope;
    break;
  }
  const bool longRope = kind == RopeScalingKind::LongRope;
  return RopeAttr::get(
      ctx, APFloat(p.theta), kind, APFloat(p.factor), APFloat(p.lowFreqFactor),
      APFloat(p.highFreqFactor), p.originalMaxPosition, APFloat(p.betaFast),
      APFloat(p.betaSlow),
      APFloat(kind == RopeScalingKind::Yarn || longRope ? p.attentionFactor
                                                        : 0.0),
      p.rotaryDim,
      longRope ? DenseF64ArrayAttr::get(ctx, p.shortFactor)
               : DenseF64ArrayAttr(),
      longRope ? DenseF64ArrayAttr::get(ctx, p.longFactor)
               : DenseF64ArrayAttr(),
      kind == RopeScalingKind::Yarn ? p.truncate : true);
}

//===----------------------------------------------------------------------===//
// ONNX nodes before raising
//===----------------------------------------------------------------------===//

std::string OnnxOp::qualifiedType() {
  if (getDomain().empty())
    return getOpType().str();
  return (getDomain() + "." + getOpType()).str();
}

LogicalResult OnnxConstantOp::verify() {
  if (cast<ShapedType>(getValue().getType()) != getType())
    return emitOpError() << "value of type " << getValue().getType()
                         << " does not match the result type " << getType();
  return success();
}

OpFoldResult BatchViewOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<BatchViewOp>())
    if (inner.getInput().getType() == getType())
      return inner.getInput();
  // An ONNX Reshape keeps the elements' order, so a view of reshapes of a
  // view is a view too.
  Value v = getInput();
  while (auto reshape = v.getDefiningOp<OnnxOp>()) {
    if (!reshape.getDomain().empty() || reshape.getOpType() != "Reshape")
      break;
    v = reshape.getInputs()[0];
  }
  if (v != getInput())
    if (auto inner = v.getDefiningOp<BatchViewOp>())
      if (inner.getInput().getType() == getType())
        return inner.getInput();
  return {};
}
