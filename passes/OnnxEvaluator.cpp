//===- OnnxEvaluator.cpp - Small ONNX subgraphs computed at compile time --===//
#include "passes/OnnxEvaluator.h"

#include "passes/OnnxMatch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

using namespace mlir;

namespace sol::raise {

namespace {

/// Larger intermediate values are not a mask or a rope table of the small
/// sizes the patterns evaluate: give up rather than spend memory.
constexpr int64_t kMaxElements = int64_t(1) << 22;
constexpr int kMaxDepth = 512;

int64_t product(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                         std::multiplies<>());
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Numpy broadcasting of several shapes; nullopt when they do not fit.
std::optional<std::vector<int64_t>>
broadcastShape(const std::vector<const EvalTensor *> &ins) {
  size_t rank = 0;
  for (const EvalTensor *t : ins)
    rank = std::max(rank, t->shape.size());
  std::vector<int64_t> out(rank, 1);
  for (const EvalTensor *t : ins)
    for (size_t i = 0; i < t->shape.size(); ++i) {
      int64_t d = t->shape[t->shape.size() - 1 - i];
      int64_t &o = out[rank - 1 - i];
      if (d == o || d == 1)
        continue;
      if (o != 1)
        return std::nullopt;
      o = d;
    }
  return out;
}

/// Applies `fn` elementwise over broadcast inputs.
std::optional<EvalTensor>
broadcastApply(const std::vector<const EvalTensor *> &ins, bool isInteger,
               const std::function<double(const std::vector<double> &)> &fn) {
  std::optional<std::vector<int64_t>> shape = broadcastShape(ins);
  if (!shape)
    return std::nullopt;
  EvalTensor out;
  out.shape = *shape;
  out.isInteger = isInteger;
  const int64_t n = product(out.shape);
  if (n > kMaxElements)
    return std::nullopt;
  out.data.resize(n);
  const size_t rank = out.shape.size();
  std::vector<std::vector<int64_t>> inStrides;
  for (const EvalTensor *t : ins) {
    std::vector<int64_t> s = stridesOf(t->shape), full(rank, 0);
    for (size_t i = 0; i < t->shape.size(); ++i)
      if (t->shape[i] != 1)
        full[rank - t->shape.size() + i] = s[i];
    inStrides.push_back(full);
  }
  std::vector<int64_t> index(rank, 0);
  std::vector<double> args(ins.size());
  for (int64_t flat = 0; flat < n; ++flat) {
    for (size_t k = 0; k < ins.size(); ++k) {
      int64_t offset = 0;
      for (size_t d = 0; d < rank; ++d)
        offset += index[d] * inStrides[k][d];
      args[k] = ins[k]->data[offset];
    }
    out.data[flat] = fn(args);
    for (int64_t d = int64_t(rank) - 1; d >= 0; --d) {
      if (++index[d] < out.shape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

int64_t normAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

bool isIntegerType(Type t) { return isa<IntegerType>(getElementTypeOrSelf(t)); }

/// The tensor of a dense attribute.
std::optional<EvalTensor> fromAttr(DenseElementsAttr dense) {
  EvalTensor t;
  auto type = cast<ShapedType>(dense.getType());
  t.shape.assign(type.getShape().begin(), type.getShape().end());
  Type element = type.getElementType();
  if (isa<FloatType>(element)) {
    for (APFloat f : dense.getValues<APFloat>())
      t.data.push_back(f.convertToDouble());
  } else if (auto integer = dyn_cast<IntegerType>(element)) {
    t.isInteger = true;
    for (APInt i : dense.getValues<APInt>())
      t.data.push_back(integer.isUnsigned() || integer.getWidth() == 1
                           ? double(i.getZExtValue())
                           : double(i.getSExtValue()));
  } else {
    return std::nullopt;
  }
  return t;
}

/// Integers held as doubles; the int64 limits exporters use for "to the
/// end" (which round to ±2^63 as doubles) saturate.
std::vector<int64_t> asInts(const EvalTensor &t) {
  std::vector<int64_t> out;
  for (double d : t.data) {
    if (d >= 9.2e18)
      out.push_back(std::numeric_limits<int64_t>::max());
    else if (d <= -9.2e18)
      out.push_back(std::numeric_limits<int64_t>::min());
    else
      out.push_back(static_cast<int64_t>(d));
  }
  return out;
}

} // namespace

int64_t EvalTensor::size() const { return product(shape); }

EvalTensor EvalTensor::filled(std::vector<int64_t> shape, double value,
                              bool isInteger) {
  EvalTensor t;
  t.data.assign(product(shape), value);
  t.shape = std::move(shape);
  t.isInteger = isInteger;
  return t;
}

std::optional<EvalTensor> OnnxEvaluator::fail(const std::string &why) {
  if (reason_.empty())
    reason_ = why;
  return std::nullopt;
}

std::optional<EvalTensor> OnnxEvaluator::evaluate(Value v) {
  if (auto it = values_.find(v); it != values_.end())
    return it->second;
  if (++depth_ > kMaxDepth) {
    --depth_;
    return fail("the subgraph is too deep to evaluate");
  }
  std::optional<EvalTensor> t = compute(v);
  --depth_;
  if (t)
    values_[v] = *t;
  return t;
}

bool bindStep(OnnxEvaluator &eval, Operation *op, int64_t past,
              const std::vector<int64_t> &positions) {
  auto fn = dyn_cast<func::FuncOp>(op);
  if (!fn)
    return false;
  const int64_t n = positions.size();
  eval.setStepTokens(n);
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto name = fn.getArgAttrOfType<StringAttr>(i, "sol.name");
    Value arg = fn.getArgument(i);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!name || !type)
      continue;
    StringRef s = name.getValue();
    if (s == "tokens" || s == "token_seq") {
      eval.bind(arg, EvalTensor::filled({n}, 0, true));
    } else if (s == "positions") {
      EvalTensor t = EvalTensor::filled({n}, 0, true);
      for (int64_t k = 0; k < n; ++k)
        t.data[k] = double(positions[k]);
      eval.bind(arg, t);
    } else if (s == "logit_rows") {
      eval.bind(arg, EvalTensor::filled({1}, double(n - 1), true));
    } else if (s == "attention_mask" && type.getRank() == 2) {
      eval.bind(arg, EvalTensor::filled({1, past + n}, 1, true));
    } else if (type.getRank() == 4 && s.starts_with("past")) {
      // Sizes the graph leaves open (onnxruntime-genai's kv_cache_dim):
      // unbound, so what reads the input cannot be evaluated.
      if (type.isDynamicDim(1) || type.isDynamicDim(3))
        continue;
      eval.bind(arg, EvalTensor::filled(
                         {1, type.getDimSize(1), past, type.getDimSize(3)}, 0,
                         false));
    }
  }
  return true;
}

std::optional<EvalTensor> OnnxEvaluator::compute(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return fail("it reads a graph input the pattern did not set");
  if (isa<OnnxConstantOp, WeightOp>(def) && store_) {
    auto c = dyn_cast<OnnxConstantOp>(def);
    FlatSymbolRefAttr name =
        c ? c.getWeightAttr() : cast<WeightOp>(def).getNameAttr();
    auto type = cast<RankedTensorType>(v.getType());
    if (name && isa<FloatType>(type.getElementType())) {
      EvalTensor out;
      out.shape.assign(type.getShape().begin(), type.getShape().end());
      try {
        std::vector<float> values = store_->readFloat(name.getValue());
        out.data.assign(values.begin(), values.end());
      } catch (const std::exception &e) {
        return fail(std::string("cannot read weight: ") + e.what());
      }
      if (int64_t(out.data.size()) != out.size())
        return fail("a weight of another size than its type");
      return out;
    }
  }
  if (auto c = dyn_cast<OnnxConstantOp>(def)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense)
      return fail("a constant of an unsupported kind");
    return fromAttr(dense);
  }
  if (auto view = dyn_cast<BatchViewOp>(def)) {
    // A view of a raised activation: its shape follows from the step's
    // token count; its values are not known here.
    std::optional<EvalTensor> in;
    Operation *source = view.getInput().getDefiningOp();
    auto solType = dyn_cast<RankedTensorType>(view.getInput().getType());
    if (!values_.count(view.getInput()) &&
        (!source || !isa<OnnxOp, OnnxConstantOp, BatchViewOp>(source)) &&
        solType && solType.getRank() == 2 && solType.isDynamicDim(0) &&
        stepTokens_ >= 0) {
      in = EvalTensor();
      in->shape = {stepTokens_, solType.getDimSize(1)};
      in->shapeOnly = true;
    } else {
      in = evaluate(view.getInput());
    }
    auto type = dyn_cast<RankedTensorType>(view.getType());
    if (!in || !type)
      return fail("a view of an unknown shape");
    // A batch of one: the leading unknown dimensions are 1, the last one
    // takes what is left.
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    int64_t known = 1, last = -1;
    for (size_t i = 0; i < shape.size(); ++i)
      if (ShapedType::isDynamic(shape[i]))
        last = i;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (ShapedType::isDynamic(shape[i]) && int64_t(i) != last)
        shape[i] = 1;
      if (int64_t(i) != last)
        known *= shape[i];
    }
    if (last >= 0)
      shape[last] = known ? in->size() / known : 0;
    if (product(shape) != in->size())
      return fail("a view whose sizes do not match");
    EvalTensor out = *in;
    out.shape = shape;
    out.isInteger = isIntegerType(type);
    return out;
  }
  auto onnxOp = dyn_cast<OnnxOp>(def);
  if (onnxOp && onnxOp.getDomain().empty() && onnxOp.getOpType() == "Shape") {
    // Needs the input's shape only.
    std::optional<EvalTensor> in = evaluate(onnxOp.getInputs()[0]);
    if (!in)
      return std::nullopt;
    const int64_t rank = in->shape.size();
    int64_t start = normAxis(intAttr(onnxOp, "start", 0), rank);
    int64_t end = normAxis(intAttr(onnxOp, "end", rank), rank);
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    EvalTensor out;
    out.isInteger = true;
    for (int64_t i = start; i < end; ++i)
      out.data.push_back(double(in->shape[i]));
    out.shape = {end - start};
    return out;
  }
  auto op = onnxOp;
  if (!op)
    return fail("it depends on '" + def->getName().getStringRef().str() + "'");
  if (!op.getDomain().empty())
    return fail("it depends on " + op.qualifiedType());
  StringRef type = op.getOpType();
  const bool intResult = isIntegerType(v.getType());
  std::vector<EvalTensor> in;
  bool tainted = false;
  for (Value operand : op.getInputs()) {
    if (isa<NoneType>(operand.getType())) {
      in.emplace_back();
      continue;
    }
    std::optional<EvalTensor> t = evaluate(operand);
    if (!t)
      return std::nullopt;
    // A raised activation's stand-in: zeros of its shape, and whatever is
    // computed from them is marked as known by shape only (Shape and Size
    // of it are exact).
    if (t->shapeOnly) {
      if (t->size() > kMaxElements)
        return fail("a raised activation too large to stand in for");
      t->data.assign(t->size(), 0.0);
      tainted = true;
    }
    in.push_back(std::move(*t));
  }
  std::optional<EvalTensor> result = computeOp(op, v, in);
  // Size is exact even of a stand-in; anything else computed from one is
  // known by shape only.
  if (result && tainted && type != "Size")
    result->shapeOnly = true;
  return result;
}

std::optional<EvalTensor>
OnnxEvaluator::computeOp(OnnxOp op, Value v, std::vector<EvalTensor> &in) {
  StringRef type = op.getOpType();
  const bool intResult = isIntegerType(v.getType());
  auto needInputs = [&](size_t n) { return in.size() >= n; };
  auto unary =
      [&](const std::function<double(double)> &f) -> std::optional<EvalTensor> {
    if (!needInputs(1))
      return fail(type.str() + " without an input");
    EvalTensor out = in[0];
    out.isInteger = intResult;
    for (double &d : out.data)
      d = f(d);
    return out;
  };
  auto binary = [&](const std::function<double(double, double)> &f)
      -> std::optional<EvalTensor> {
    if (!needInputs(2))
      return fail(type.str() + " needs two inputs");
    auto r = broadcastApply(
        {&in[0], &in[1]}, intResult,
        [&](const std::vector<double> &a) { return f(a[0], a[1]); });
    if (!r)
      return fail(type.str() + " of shapes that do not broadcast");
    return r;
  };

  if (type == "Identity")
    return in.at(0);
  if (type == "Add")
    return binary([](double a, double b) { return a + b; });
  if (type == "Sub")
    return binary([](double a, double b) { return a - b; });
  if (type == "Mul")
    return binary([](double a, double b) { return a * b; });
  if (type == "Div")
    return binary([intResult](double a, double b) {
      return intResult ? std::trunc(a / b) : a / b;
    });
  if (type == "Pow")
    return binary([](double a, double b) { return std::pow(a, b); });
  if (type == "Min")
    return binary([](double a, double b) { return std::min(a, b); });
  if (type == "Max")
    return binary([](double a, double b) { return std::max(a, b); });
  if (type == "Equal")
    return binary([](double a, double b) { return double(a == b); });
  if (type == "Less")
    return binary([](double a, double b) { return double(a < b); });
  if (type == "LessOrEqual")
    return binary([](double a, double b) { return double(a <= b); });
  if (type == "Greater")
    return binary([](double a, double b) { return double(a > b); });
  if (type == "GreaterOrEqual")
    return binary([](double a, double b) { return double(a >= b); });
  if (type == "And")
    return binary([](double a, double b) { return double(a && b); });
  if (type == "Or")
    return binary([](double a, double b) { return double(a || b); });
  if (type == "Xor")
    return binary(
        [](double a, double b) { return double(bool(a) != bool(b)); });
  if (type == "Neg")
    return unary([](double a) { return -a; });
  if (type == "Not")
    return unary([](double a) { return double(!a); });
  if (type == "Abs")
    return unary([](double a) { return std::fabs(a); });
  if (type == "Cos")
    return unary([](double a) { return std::cos(a); });
  if (type == "Sin")
    return unary([](double a) { return std::sin(a); });
  if (type == "Sqrt")
    return unary([](double a) { return std::sqrt(a); });
  if (type == "Exp")
    return unary([](double a) { return std::exp(a); });
  if (type == "Reciprocal")
    return unary([](double a) { return 1.0 / a; });
  if (type == "Floor")
    return unary([](double a) { return std::floor(a); });
  if (type == "Ceil")
    return unary([](double a) { return std::ceil(a); });
  if (type == "IsNaN")
    return unary([](double a) { return double(std::isnan(a)); });
  if (type == "IsInf")
    return unary([](double a) { return double(std::isinf(a)); });
  if (type == "Cast") {
    Type to = getElementTypeOrSelf(v.getType());
    return unary([to](double a) {
      if (to.isInteger(1))
        return double(a != 0);
      if (isa<IntegerType>(to))
        return std::trunc(a);
      if (to.isF32())
        return double(float(a));
      return a;
    });
  }
  if (type == "Where") {
    if (!needInputs(3))
      return fail("Where needs three inputs");
    auto r = broadcastApply(
        {&in[0], &in[1], &in[2]}, intResult,
        [](const std::vector<double> &a) { return a[0] ? a[1] : a[2]; });
    if (!r)
      return fail("Where of shapes that do not broadcast");
    return r;
  }
  if (type == "Size")
    return EvalTensor::filled({}, double(in.at(0).size()), true);
  if (type == "ConstantOfShape") {
    double value = 0;
    if (auto dense =
            dyn_cast_or_null<DenseElementsAttr>(op.getOnnxAttr("value")))
      if (std::optional<EvalTensor> t = fromAttr(dense); t && t->size() == 1)
        value = t->data[0];
    std::vector<int64_t> shape = asInts(in.at(0));
    if (product(shape) > kMaxElements)
      return fail("ConstantOfShape too large");
    return EvalTensor::filled(shape, value, intResult);
  }
  if (type == "Range") {
    if (!needInputs(3))
      return fail("Range needs three inputs");
    double start = in[0].data.at(0), limit = in[1].data.at(0),
           delta = in[2].data.at(0);
    if (delta == 0)
      return fail("Range with delta 0");
    int64_t n =
        std::max<int64_t>(0, int64_t(std::ceil((limit - start) / delta)));
    if (n > kMaxElements)
      return fail("Range too long");
    EvalTensor out;
    out.isInteger = intResult;
    out.shape = {n};
    for (int64_t i = 0; i < n; ++i)
      out.data.push_back(start + double(i) * delta);
    return out;
  }
  if (type == "Unsqueeze" || type == "Squeeze") {
    std::vector<int64_t> axes;
    if (auto attr = dyn_cast_or_null<DenseI64ArrayAttr>(op.getOnnxAttr("axes")))
      axes.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
    else if (in.size() > 1 && !in[1].data.empty())
      axes = asInts(in[1]);
    EvalTensor out = in.at(0);
    if (type == "Unsqueeze") {
      const int64_t rank = out.shape.size() + axes.size();
      for (int64_t &a : axes)
        a = normAxis(a, rank);
      std::sort(axes.begin(), axes.end());
      for (int64_t a : axes)
        out.shape.insert(
            out.shape.begin() + std::min<int64_t>(a, out.shape.size()), 1);
    } else {
      const int64_t rank = out.shape.size();
      std::vector<int64_t> shape;
      for (int64_t i = 0; i < rank; ++i) {
        bool drop = axes.empty() ? out.shape[i] == 1
                                 : llvm::any_of(axes, [&](int64_t a) {
                                     return normAxis(a, rank) == i;
                                   });
        if (!drop)
          shape.push_back(out.shape[i]);
      }
      out.shape = shape;
    }
    return out;
  }
  if (type == "Reshape") {
    std::vector<int64_t> shape = asInts(in.at(1));
    const bool allowZero = intAttr(op, "allowzero", 0) != 0;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && !allowZero && i < in[0].shape.size())
        shape[i] = in[0].shape[i];
      if (shape[i] == -1)
        infer = i;
      else
        known *= shape[i];
    }
    if (infer >= 0)
      shape[infer] = known ? in[0].size() / known : 0;
    if (product(shape) != in[0].size())
      return fail("a Reshape whose sizes do not match");
    EvalTensor out = in[0];
    out.shape = shape;
    return out;
  }
  if (type == "Expand") {
    EvalTensor target = EvalTensor::filled(asInts(in.at(1)), 0, false);
    auto r = broadcastApply({&in[0], &target}, intResult,
                            [](const std::vector<double> &a) { return a[0]; });
    if (!r)
      return fail("an Expand to a shape that does not broadcast");
    return r;
  }
  if (type == "Concat") {
    const int64_t rank = in.at(0).shape.size();
    const int64_t axis = normAxis(intAttr(op, "axis", 0), rank);
    std::vector<int64_t> shape = in[0].shape;
    shape[axis] = 0;
    for (const EvalTensor &t : in) {
      if (int64_t(t.shape.size()) != rank)
        return fail("a Concat of different ranks");
      shape[axis] += t.shape[axis];
    }
    EvalTensor out;
    out.shape = shape;
    out.isInteger = intResult;
    const int64_t outer =
        product(std::vector<int64_t>(shape.begin(), shape.begin() + axis));
    for (int64_t o = 0; o < outer; ++o)
      for (const EvalTensor &t : in) {
        const int64_t chunk = product(
            std::vector<int64_t>(t.shape.begin() + axis, t.shape.end()));
        out.data.insert(out.data.end(), t.data.begin() + o * chunk,
                        t.data.begin() + (o + 1) * chunk);
      }
    return out;
  }
  if (type == "Gather") {
    const EvalTensor &data = in.at(0);
    const int64_t rank = data.shape.size();
    const int64_t axis = normAxis(intAttr(op, "axis", 0), rank);
    const EvalTensor &idx = in.at(1);
    std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
    shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
    shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
    const int64_t outer = product(
        std::vector<int64_t>(data.shape.begin(), data.shape.begin() + axis));
    const int64_t inner = product(
        std::vector<int64_t>(data.shape.begin() + axis + 1, data.shape.end()));
    const int64_t dim = data.shape[axis];
    EvalTensor out;
    out.shape = shape;
    out.isInteger = intResult;
    for (int64_t o = 0; o < outer; ++o)
      for (double d : idx.data) {
        int64_t i = int64_t(d);
        if (i < 0)
          i += dim;
        if (i < 0 || i >= dim)
          return fail("a Gather index out of range");
        const int64_t base = (o * dim + i) * inner;
        out.data.insert(out.data.end(), data.data.begin() + base,
                        data.data.begin() + base + inner);
      }
    return out;
  }
  if (type == "GatherND") {
    const EvalTensor &data = in.at(0), &idx = in.at(1);
    const int64_t b = intAttr(op, "batch_dims", 0);
    if (idx.shape.empty())
      return fail("a GatherND with scalar indices");
    const int64_t k = idx.shape.back();
    const int64_t rank = data.shape.size();
    if (b < 0 || b + k > rank)
      return fail("a GatherND whose indices do not fit the data");
    // Batch dims shared; each index tuple of k picks a slice of the rest.
    const int64_t batches = product(
        std::vector<int64_t>(data.shape.begin(), data.shape.begin() + b));
    const int64_t tuples = product(
        std::vector<int64_t>(idx.shape.begin() + b, idx.shape.end() - 1));
    const int64_t slice = product(
        std::vector<int64_t>(data.shape.begin() + b + k, data.shape.end()));
    const std::vector<int64_t> strides = stridesOf(data.shape);
    const int64_t batchStride = b ? strides[b - 1] : 0;
    EvalTensor out;
    out.shape.assign(idx.shape.begin(), idx.shape.end() - 1);
    out.shape.insert(out.shape.end(), data.shape.begin() + b + k,
                     data.shape.end());
    out.isInteger = intResult;
    for (int64_t bi = 0; bi < batches; ++bi)
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t offset = bi * batchStride;
        for (int64_t j = 0; j < k; ++j) {
          int64_t i = int64_t(idx.data[(bi * tuples + t) * k + j]);
          const int64_t dim = data.shape[b + j];
          if (i < 0)
            i += dim;
          if (i < 0 || i >= dim)
            return fail("a GatherND index out of range");
          offset += i * strides[b + j];
        }
        out.data.insert(out.data.end(), data.data.begin() + offset,
                        data.data.begin() + offset + slice);
      }
    return out;
  }
  if (type == "Slice") {
    const EvalTensor &data = in.at(0);
    const int64_t rank = data.shape.size();
    std::vector<int64_t> starts = asInts(in.at(1)), ends = asInts(in.at(2));
    std::vector<int64_t> axes, steps;
    if (in.size() > 3 && !in[3].data.empty())
      axes = asInts(in[3]);
    else
      for (size_t i = 0; i < starts.size(); ++i)
        axes.push_back(i);
    if (in.size() > 4 && !in[4].data.empty())
      steps = asInts(in[4]);
    else
      steps.assign(starts.size(), 1);
    std::vector<int64_t> begin(rank, 0), step(rank, 1), count = data.shape;
    for (size_t k = 0; k < axes.size(); ++k) {
      const int64_t a = normAxis(axes[k], rank), dim = data.shape[a];
      int64_t s = starts[k], e = ends[k], st = steps[k];
      if (st == 0)
        return fail("a Slice with step 0");
      if (s < 0)
        s += dim;
      if (e < 0)
        e += dim;
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        count[a] = std::max<int64_t>(0, (e - s + st - 1) / st);
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        count[a] = std::max<int64_t>(0, (s - e + (-st) - 1) / (-st));
      }
      begin[a] = s;
      step[a] = st;
    }
    EvalTensor out;
    out.shape = count;
    out.isInteger = intResult;
    const std::vector<int64_t> strides = stridesOf(data.shape);
    std::vector<int64_t> index(rank, 0);
    const int64_t n = product(count);
    for (int64_t flat = 0; flat < n; ++flat) {
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d)
        offset += (begin[d] + index[d] * step[d]) * strides[d];
      out.data.push_back(data.data[offset]);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[d] < count[d])
          break;
        index[d] = 0;
      }
    }
    return out;
  }
  if (type == "Transpose") {
    const EvalTensor &data = in.at(0);
    const int64_t rank = data.shape.size();
    std::vector<int64_t> perm;
    if (auto attr = dyn_cast_or_null<DenseI64ArrayAttr>(op.getOnnxAttr("perm")))
      perm.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
    else
      for (int64_t i = rank - 1; i >= 0; --i)
        perm.push_back(i);
    if (int64_t(perm.size()) != rank)
      return fail("a Transpose whose perm does not match the rank");
    EvalTensor out;
    out.isInteger = intResult;
    for (int64_t p : perm)
      out.shape.push_back(data.shape[p]);
    const std::vector<int64_t> strides = stridesOf(data.shape);
    std::vector<int64_t> index(rank, 0);
    const int64_t n = data.size();
    for (int64_t flat = 0; flat < n; ++flat) {
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d)
        offset += index[d] * strides[perm[d]];
      out.data.push_back(data.data[offset]);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[d] < out.shape[d])
          break;
        index[d] = 0;
      }
    }
    return out;
  }
  if (type == "MatMul") {
    EvalTensor a = in.at(0), b = in.at(1);
    if (a.shape.empty() || b.shape.empty())
      return fail("a MatMul of scalars");
    const bool aVec = a.shape.size() == 1, bVec = b.shape.size() == 1;
    if (aVec)
      a.shape.insert(a.shape.begin(), 1);
    if (bVec)
      b.shape.push_back(1);
    const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(),
                  n = b.shape.back();
    if (b.shape[b.shape.size() - 2] != k)
      return fail("a MatMul of mismatched sizes");
    EvalTensor aBatch, bBatch;
    aBatch.shape.assign(a.shape.begin(), a.shape.end() - 2);
    bBatch.shape.assign(b.shape.begin(), b.shape.end() - 2);
    std::optional<std::vector<int64_t>> batch =
        broadcastShape({&aBatch, &bBatch});
    if (!batch)
      return fail("a MatMul whose batches do not broadcast");
    const int64_t batches = product(*batch);
    if (batches * m * n > kMaxElements)
      return fail("a MatMul too large to evaluate");
    // Batch offsets of each operand under broadcasting.
    auto offsets = [&](const std::vector<int64_t> &shape) {
      EvalTensor idx;
      idx.shape = shape;
      for (int64_t i = 0; i < product(shape); ++i)
        idx.data.push_back(double(i));
      EvalTensor target = EvalTensor::filled(*batch, 0, false);
      return broadcastApply({&idx, &target}, true,
                            [](const std::vector<double> &x) { return x[0]; })
          ->data;
    };
    std::vector<double> aOff = offsets(aBatch.shape),
                        bOff = offsets(bBatch.shape);
    EvalTensor out;
    out.shape = *batch;
    if (!aVec)
      out.shape.push_back(m);
    if (!bVec)
      out.shape.push_back(n);
    out.isInteger = intResult;
    out.data.assign(batches * m * n, 0.0);
    for (int64_t bi = 0; bi < batches; ++bi) {
      const double *pa = a.data.data() + int64_t(aOff[bi]) * m * k;
      const double *pb = b.data.data() + int64_t(bOff[bi]) * k * n;
      double *po = out.data.data() + bi * m * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t kk = 0; kk < k; ++kk)
          for (int64_t j = 0; j < n; ++j)
            po[i * n + j] += pa[i * k + kk] * pb[kk * n + j];
    }
    return out;
  }
  if (type == "Trilu") {
    EvalTensor out = in.at(0);
    const int64_t k =
        in.size() > 1 && !in[1].data.empty() ? int64_t(in[1].data[0]) : 0;
    const bool upper = intAttr(op, "upper", 1) != 0;
    const int64_t rows = out.shape[out.shape.size() - 2],
                  cols = out.shape.back();
    for (int64_t base = 0; base < out.size(); base += rows * cols)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          if (upper ? j - i < k : j - i > k)
            out.data[base + i * cols + j] = 0;
    return out;
  }
  if (type == "ReduceSum" || type == "ReduceMax" || type == "ReduceMin" ||
      type == "ReduceMean") {
    // Axes from the attribute (older opsets) or the second input; none
    // means all, unless noop_with_empty_axes.
    const EvalTensor &x = in.at(0);
    const int64_t rank = x.shape.size();
    std::vector<int64_t> axes;
    if (auto attr = dyn_cast_or_null<DenseI64ArrayAttr>(op.getOnnxAttr("axes")))
      axes.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
    else if (in.size() > 1 && !in[1].data.empty())
      axes = asInts(in[1]);
    if (axes.empty() && intAttr(op, "noop_with_empty_axes", 0) != 0)
      return x;
    std::vector<bool> reduced(rank, axes.empty());
    for (int64_t a : axes) {
      a = normAxis(a, rank);
      if (a < 0 || a >= rank)
        return fail(type.str() + " over an axis out of range");
      reduced[a] = true;
    }
    const bool keep = intAttr(op, "keepdims", 1) != 0;
    EvalTensor out;
    out.isInteger = x.isInteger;
    std::vector<int64_t> outShape; // with the reduced axes as 1
    for (int64_t i = 0; i < rank; ++i)
      outShape.push_back(reduced[i] ? 1 : x.shape[i]);
    const int64_t outSize = product(outShape);
    const bool sum = type == "ReduceSum" || type == "ReduceMean";
    out.data.assign(outSize,
                    sum ? 0.0
                        : (type == "ReduceMax"
                               ? -std::numeric_limits<double>::infinity()
                               : std::numeric_limits<double>::infinity()));
    std::vector<int64_t> counts(outSize, 0);
    std::vector<int64_t> index(rank, 0);
    for (int64_t flat = 0; flat < x.size(); ++flat) {
      int64_t o = 0;
      for (int64_t i = 0; i < rank; ++i)
        o = o * outShape[i] + (reduced[i] ? 0 : index[i]);
      const double v = x.data[flat];
      double &acc = out.data[o];
      acc = sum ? acc + v
                : (type == "ReduceMax" ? std::max(acc, v) : std::min(acc, v));
      ++counts[o];
      for (int64_t i = rank - 1; i >= 0; --i) {
        if (++index[i] < x.shape[i])
          break;
        index[i] = 0;
      }
    }
    if (type == "ReduceMean")
      for (int64_t o = 0; o < outSize; ++o)
        out.data[o] = counts[o] ? out.data[o] / double(counts[o]) : 0.0;
    for (int64_t i = 0; i < rank; ++i)
      if (keep || !reduced[i])
        out.shape.push_back(outShape[i]);
    return out;
  }
  return fail("it uses " + type.str() + ", which the evaluator does not know");
}

} // namespace sol::raise
