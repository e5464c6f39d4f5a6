//===- OnnxMatch.cpp - What the sol-raise-* patterns share ----------------===//
#include "passes/OnnxMatch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseSet.h"

#include <cstdlib>
#include <string_view>

using namespace mlir;

namespace sol::raise {

LogicalResult nearMiss(PatternRewriter &rewriter, Operation *op,
                       const Twine &reason) {
  static const bool debug = [] {
    const char *env = std::getenv("SOL_RAISE_DEBUG");
    return env && *env && std::string_view(env) != "0";
  }();
  if (debug)
    llvm::errs() << "sol-raise: " << op->getLoc() << ": " << reason << "\n";
  return rewriter.notifyMatchFailure(op, reason);
}

namespace {
/// Collects the reasons patterns give for not applying.
struct NearMissCollector : RewriterBase::Listener {
  void
  notifyMatchFailure(Location loc,
                     function_ref<void(Diagnostic &)> reasonCallback) override {
    Diagnostic diagnostic(loc, DiagnosticSeverity::Remark);
    reasonCallback(diagnostic);
    notes.emplace_back(loc, diagnostic.str());
  }
  std::vector<std::pair<Location, std::string>> notes;
};
} // namespace

LogicalResult applyRaisePatterns(ModuleOp module, RewritePatternSet &&patterns,
                                 StringRef pass) {
  NearMissCollector collector;
  GreedyRewriteConfig config;
  config.listener = &collector;
  LogicalResult result =
      applyPatternsAndFoldGreedily(module, std::move(patterns), config);
  if (collector.notes.empty())
    return result;
  Builder b(module.getContext());
  SmallVector<Attribute> notes;
  if (auto old = module->getAttrOfType<ArrayAttr>(kNearMissesAttr))
    notes.append(old.begin(), old.end());
  llvm::DenseSet<Attribute> seen(notes.begin(), notes.end());
  for (auto &[loc, reason] : collector.notes) {
    Attribute note = b.getDictionaryAttr(
        {b.getNamedAttr("pass", b.getStringAttr(pass)),
         b.getNamedAttr("at", LocationAttr(loc)),
         b.getNamedAttr("reason", b.getStringAttr(reason))});
    if (seen.insert(note).second)
      notes.push_back(note);
  }
  module->setAttr(kNearMissesAttr, b.getArrayAttr(notes));
  return result;
}

void eraseDeadOps(Operation *fn) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Region &region : fn->getRegions())
      for (Block &block : region)
        for (Operation &op :
             llvm::make_early_inc_range(llvm::reverse(block.getOperations())))
          if (isOpTriviallyDead(&op)) {
            op.erase();
            changed = true;
          }
  }
}

OnnxOp producer(Value v, StringRef opType) {
  auto op = v ? v.getDefiningOp<OnnxOp>() : OnnxOp();
  if (!op || !op.getDomain().empty() || op.getOpType() != opType)
    return {};
  return op;
}

namespace {
bool isFloatTensor(Value v) {
  auto type = dyn_cast<ShapedType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}
} // namespace

Value skipFloatCasts(Value v) {
  while (OnnxOp cast = producer(v, "Cast")) {
    if (!isFloatTensor(cast.getInputs()[0]) || !isFloatTensor(v))
      break;
    v = cast.getInputs()[0];
  }
  return v;
}

std::optional<SmallVector<double>> constantValues(Value v) {
  v = skipFloatCasts(v);
  auto c = v.getDefiningOp<OnnxConstantOp>();
  if (!c)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense)
    return std::nullopt;
  SmallVector<double> out;
  Type element = dense.getElementType();
  if (isa<FloatType>(element)) {
    for (APFloat f : dense.getValues<APFloat>())
      out.push_back(f.convertToDouble());
  } else if (auto integer = dyn_cast<IntegerType>(element)) {
    for (APInt i : dense.getValues<APInt>())
      out.push_back(integer.isUnsigned() || integer.getWidth() == 1
                        ? double(i.getZExtValue())
                        : double(i.getSExtValue()));
  } else {
    return std::nullopt;
  }
  return out;
}

std::optional<double> splatValue(Value v) {
  std::optional<SmallVector<double>> values = constantValues(v);
  if (!values || values->empty())
    return std::nullopt;
  for (double x : *values)
    if (x != values->front())
      return std::nullopt;
  return values->front();
}

std::optional<SmallVector<int64_t>> intValues(Value v) {
  auto c = v.getDefiningOp<OnnxConstantOp>();
  if (!c)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !isa<IntegerType>(dense.getElementType()))
    return std::nullopt;
  SmallVector<int64_t> out;
  for (APInt i : dense.getValues<APInt>())
    out.push_back(i.getSExtValue());
  return out;
}

int64_t intAttr(OnnxOp op, StringRef name, int64_t fallback) {
  if (auto attr = dyn_cast_or_null<IntegerAttr>(op.getOnnxAttr(name)))
    return attr.getInt();
  return fallback;
}

std::optional<SmallVector<int64_t>> axesOf(OnnxOp op) {
  if (auto attr = dyn_cast_or_null<DenseI64ArrayAttr>(op.getOnnxAttr("axes")))
    return SmallVector<int64_t>(attr.asArrayRef());
  if (op.getInputs().size() > 1)
    return intValues(op.getInputs()[1]);
  return std::nullopt;
}

std::optional<SmallVector<int64_t>> weightShape(Value v) {
  v = skipFloatCasts(v);
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return std::nullopt;
  if (isa<WeightOp>(op) ||
      (isa<OnnxConstantOp>(op) && cast<OnnxConstantOp>(op).getWeight()))
    return SmallVector<int64_t>(type.getShape());
  return std::nullopt;
}

Value storedWeight(PatternRewriter &rewriter, Value v) {
  if (auto weight = v.getDefiningOp<WeightOp>())
    return weight;
  if (auto c = v.getDefiningOp<OnnxConstantOp>(); c && c.getWeight())
    return rewriter.create<WeightOp>(c.getLoc(), c.getType(),
                                     c.getWeightAttr());
  return {};
}

Value weightOf(PatternRewriter &rewriter, Value v) {
  v = skipFloatCasts(v);
  Value w = storedWeight(rewriter, v);
  if (!w)
    return {};
  auto type = cast<RankedTensorType>(w.getType());
  if (type.getElementType().isBF16())
    return w;
  if (!isa<FloatType>(type.getElementType()))
    return {};
  return rewriter.create<ConvertWeightOp>(
      w.getLoc(),
      RankedTensorType::get(type.getShape(), rewriter.getBF16Type()), w);
}

Value normWeightOf(PatternRewriter &rewriter, Value v) {
  Value w = storedWeight(rewriter, skipFloatCasts(v));
  if (!w)
    return {};
  auto type = cast<RankedTensorType>(w.getType());
  Type element = type.getElementType();
  if (element.isBF16() || element.isF32())
    return w;
  if (!isa<FloatType>(element))
    return {};
  return rewriter.create<ConvertWeightOp>(
      w.getLoc(), RankedTensorType::get(type.getShape(), rewriter.getF32Type()),
      w);
}

Value floatLinearWeight(OpBuilder &b, LinearOp linear) {
  if (linear.getQuant() == QuantScheme::None)
    return linear.getWeight();
  auto unpack = linear.getWeight().getDefiningOp<UnpackNBitsOp>();
  if (!unpack || unpack.getColumns())
    return {};
  auto codes = cast<RankedTensorType>(unpack.getOutputs()[0].getType());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(unpack);
  return b
      .create<UnpackNBitsOp>(
          unpack.getLoc(),
          TypeRange{RankedTensorType::get(codes.getShape(), b.getBF16Type())},
          unpack.getPacked(), unpack.getScales(), unpack.getZeroPoints(),
          unpack.getBitsAttr(), unpack.getBlockSizeAttr(),
          /*columns=*/DenseI32ArrayAttr())
      .getResult(0);
}

RankedTensorType activationType(MLIRContext *ctx, int64_t width) {
  return RankedTensorType::get({ShapedType::kDynamic, width},
                               BFloat16Type::get(ctx));
}

Value viewedSolValue(Value v) {
  if (auto view = v.getDefiningOp<BatchViewOp>())
    return view.getInput();
  // A Reshape keeps the elements' order: a reshaped view is a view too.
  while (OnnxOp reshape = producer(v, "Reshape")) {
    v = reshape.getInputs()[0];
    if (auto view = v.getDefiningOp<BatchViewOp>())
      return view.getInput();
  }
  return {};
}

Value tokenMajor(PatternRewriter &rewriter, Value v, int64_t width,
                 Type element) {
  if (!element)
    element = rewriter.getBF16Type();
  auto type = RankedTensorType::get({ShapedType::kDynamic, width}, element);
  if (v.getType() == type)
    return v;
  if (Value sol = viewedSolValue(v); sol && sol.getType() == type)
    return sol;
  return rewriter.create<BatchViewOp>(v.getLoc(), type, v);
}

Value solArgument(Operation *op, StringRef name) {
  auto fn = op->getParentOfType<func::FuncOp>();
  if (!fn)
    return {};
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto attr = fn.getArgAttrOfType<StringAttr>(i, "sol.name");
        attr && attr.getValue() == name)
      return fn.getArgument(i);
  return {};
}

OnnxOp createOnnx(PatternRewriter &rewriter, Location loc, StringRef opType,
                  Type result, ValueRange inputs,
                  ArrayRef<NamedAttribute> attrs) {
  SmallVector<NamedAttribute> all(attrs.begin(), attrs.end());
  all.push_back(
      rewriter.getNamedAttr("op_type", rewriter.getStringAttr(opType)));
  return rewriter.create<OnnxOp>(loc, TypeRange{result}, inputs, all);
}

bool isPermutation(OnnxOp op, ArrayRef<int64_t> perm) {
  auto attr = dyn_cast_or_null<DenseI64ArrayAttr>(op.getOnnxAttr("perm"));
  return attr && attr.asArrayRef() == perm;
}

void replaceWithView(PatternRewriter &rewriter, Operation *root, Value sol,
                     std::optional<SmallVector<int64_t>> shape) {
  Value onnx = root->getResult(0);
  Type type = onnx.getType();
  // Where the graph declared no shape, give the view one (the replaced
  // value's: its first ranked activation input's, last dimension the
  // raised width), so that Shape ops reading it can be evaluated.
  auto unranked = dyn_cast<UnrankedTensorType>(type);
  bool returned = llvm::any_of(onnx.getUsers(), [](Operation *user) {
    return isa<func::ReturnOp>(user);
  });
  if (unranked && !returned) {
    const int64_t width = cast<RankedTensorType>(sol.getType()).getDimSize(1);
    if (!shape)
      for (Value input : root->getOperands()) {
        auto ranked = dyn_cast<RankedTensorType>(input.getType());
        if (!ranked || ranked.getRank() < 2 || weightShape(input) ||
            input.getDefiningOp<OnnxConstantOp>())
          continue;
        shape = SmallVector<int64_t>(ranked.getShape().drop_back());
        shape->push_back(width);
        break;
      }
    if (shape)
      type = RankedTensorType::get(*shape, unranked.getElementType());
  }
  Value view =
      type == sol.getType()
          ? sol
          : rewriter.create<BatchViewOp>(root->getLoc(), type, sol).getResult();
  rewriter.replaceAllUsesWith(onnx, view);
  if (root->use_empty())
    rewriter.eraseOp(root);
}

} // namespace sol::raise
