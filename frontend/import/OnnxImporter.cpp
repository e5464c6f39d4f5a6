//===- OnnxImporter.cpp - ONNX graph -> sol dialect -----------------------===//
#include "frontend/import/OnnxImporter.h"

#include "frontend/hf/JsonFields.h"
#include "frontend/hf/ModelConfig.h"
#include "frontend/import/HfImporter.h"
#include "frontend/import/SideFiles.h"
#include "frontend/onnx/OnnxModel.h"
#include "ir/SolDialect.h"
#include "runtime/chat/TokenizerConfigFile.h"
#include "runtime/support/Error.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <algorithm>
#include <map>
#include <set>

using namespace mlir;

namespace sol {

namespace {

/// Initializers with at most this many elements are inlined as
/// sol.onnx_constant so that patterns can read them (epsilons, shape pieces,
/// rope frequencies); larger ones stay in the weight store.
constexpr int64_t kInlineElements = 256;

/// The MLIR element type of an ONNX one, or null where MLIR has none.
Type elementType(MLIRContext *ctx, onnx::ElemType type) {
  Builder b(ctx);
  using E = onnx::ElemType;
  switch (type) {
  case E::Float:
    return b.getF32Type();
  case E::Float16:
    return b.getF16Type();
  case E::BFloat16:
    return b.getBF16Type();
  case E::Double:
    return b.getF64Type();
  case E::Int8:
    return b.getIntegerType(8);
  case E::Int16:
    return b.getIntegerType(16);
  case E::Int32:
    return b.getIntegerType(32);
  case E::Int64:
    return b.getIntegerType(64);
  case E::Uint8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case E::Uint16:
    return b.getIntegerType(16, false);
  case E::Uint32:
    return b.getIntegerType(32, false);
  case E::Uint64:
    return b.getIntegerType(64, false);
  case E::Bool:
    return b.getI1Type();
  case E::Float8E4M3FN:
    return b.getFloat8E4M3FNType();
  case E::Float8E5M2:
    return b.getFloat8E5M2Type();
  case E::Int4:
    return b.getIntegerType(4);
  case E::Uint4:
    return b.getIntegerType(4, false);
  default:
    return {};
  }
}

/// The dense value of a tensor (not 4-bit, whose MLIR storage differs).
DenseElementsAttr denseValue(RankedTensorType type, const onnx::Tensor &t) {
  if (type.getElementType().isInteger(1)) {
    std::vector<char> bits(t.bytes.size());
    std::transform(t.bytes.begin(), t.bytes.end(), bits.begin(),
                   [](std::byte v) { return v != std::byte{0}; });
    return DenseElementsAttr::get(
        type, ArrayRef<bool>(reinterpret_cast<const bool *>(bits.data()),
                             bits.size()));
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(reinterpret_cast<const char *>(t.bytes.data()),
                           t.bytes.size()));
}

/// The store's dtype for an initializer's bytes: its Sol dtype, or I4 for
/// uint4 codes (the same packing; the IR type keeps the signedness).
std::optional<DType> storeDType(onnx::ElemType type) {
  if (type == onnx::ElemType::Uint4)
    return DType::I4;
  return onnx::toDType(type);
}

/// Weight element types of the dialect (Sol_WeightTensor).
bool isWeightElement(Type t) {
  return t.isBF16() || t.isF16() || t.isF32() || t.isFloat8E4M3FN() ||
         t.isInteger(8) || t.isInteger(4);
}

class GraphImporter {
public:
  GraphImporter(MLIRContext &ctx, const onnx::Model &model, WeightStore &store)
      : ctx(ctx), model(model), graph(model.graph()), store(store), b(&ctx) {}

  OwningOpRef<ModuleOp> run();

private:
  [[noreturn]] void failAt(const onnx::Node &node, const std::string &what) {
    fail(model.path().string(), ": node '", node.name, "' (", node.opType,
         "): ", what);
  }
  Type declaredType(const onnx::ValueInfo &info, const std::string &where);
  Type inferredType(const onnx::Node &node, unsigned output,
                    ArrayRef<Value> inputs);
  Value lookup(const onnx::Node &node, const std::string &name);
  Value initializer(const onnx::Tensor &t);
  Value constant(const onnx::Node &node);
  Attribute convertAttribute(const onnx::Node &node,
                             const onnx::Attribute &attr);
  void importNode(const onnx::Node &node);
  void addInitializer(const onnx::Tensor &t);
  bool isCacheBranchIf(const onnx::Node &node) const;
  void inlineBranch(const onnx::Node &node, const onnx::Graph &branch);
  bool isConstantChoiceIf(const onnx::Node &node) const;
  void importConstantChoice(const onnx::Node &node);

  MLIRContext &ctx;
  const onnx::Model &model;
  const onnx::Graph &graph;
  WeightStore &store;
  OpBuilder b;
  std::map<std::string, Value, std::less<>> values;
  std::map<std::string, const onnx::Tensor *, std::less<>> initializers;
  std::map<std::string, const onnx::ValueInfo *, std::less<>> infos;
};

Type GraphImporter::declaredType(const onnx::ValueInfo &info,
                                 const std::string &where) {
  Type element = elementType(&ctx, info.elemType);
  if (!element)
    fail(model.path().string(), ": ", where, " '", info.name, "' has type ",
         onnx::elemTypeName(info.elemType),
         ", which Sol cannot represent (expected a tensor of numbers)");
  if (!info.shape)
    return UnrankedTensorType::get(element);
  SmallVector<int64_t> dims;
  for (const onnx::Dim &d : *info.shape)
    dims.push_back(d.value ? *d.value : ShapedType::kDynamic);
  return RankedTensorType::get(dims, element);
}

/// The element type of a node's output when the graph declares none:
/// comparisons give i1, Shape i64, Cast its `to`, the rest their first
/// input's type.
Type GraphImporter::inferredType(const onnx::Node &node, unsigned output,
                                 ArrayRef<Value> inputs) {
  static const std::set<std::string, std::less<>> boolOps = {
      "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not",
      "And",   "Or",   "Xor",     "IsNaN",       "IsInf"};
  static const std::set<std::string, std::less<>> int64Ops = {
      "Shape", "Size", "ArgMax", "ArgMin", "NonZero"};
  Type element;
  if (node.domain.empty() && boolOps.count(node.opType))
    element = b.getI1Type();
  else if (node.domain.empty() && int64Ops.count(node.opType))
    element = b.getIntegerType(64);
  else if (node.domain.empty() && node.opType == "TopK" && output == 1)
    element = b.getIntegerType(64);
  else if (node.opType == "Cast") {
    const onnx::Attribute *to = node.attribute("to");
    if (!to)
      failAt(node, "Cast without a 'to' attribute");
    element = elementType(&ctx, static_cast<onnx::ElemType>(to->i));
    if (!element)
      failAt(node, "casts to " +
                       onnx::elemTypeName(static_cast<onnx::ElemType>(to->i)) +
                       ", which Sol cannot represent");
  } else if (node.opType == "ConstantOfShape") {
    const onnx::Attribute *value = node.attribute("value");
    element = value && value->t ? elementType(&ctx, value->t->elemType)
                                : b.getF32Type();
  } else if (node.opType == "Where" && inputs.size() > 1) {
    element = getElementTypeOrSelf(inputs[1].getType());
  } else if (node.opType == "MatMulInteger") {
    element = b.getIntegerType(32);
  } else {
    for (Value v : inputs)
      if (auto shaped = dyn_cast<ShapedType>(v.getType())) {
        element = shaped.getElementType();
        break;
      }
  }
  if (!element)
    element = b.getF32Type();
  return UnrankedTensorType::get(element);
}

Value GraphImporter::initializer(const onnx::Tensor &t) {
  Type element = elementType(&ctx, t.elemType);
  if (!element)
    fail(model.path().string(), ": initializer '", t.name, "' has type ",
         onnx::elemTypeName(t.elemType), ", which Sol cannot represent");
  auto type = RankedTensorType::get(t.dims, element);
  bool inStore = store.contains(t.name);
  if (inStore && isWeightElement(element) &&
      (t.numElements() > kInlineElements || element.isInteger(4)))
    return b.create<WeightOp>(NameLoc::get(b.getStringAttr(t.name)), type,
                              FlatSymbolRefAttr::get(&ctx, t.name));
  if (element.isInteger(4))
    fail(model.path().string(), ": initializer '", t.name,
         "' is a 4-bit tensor Sol cannot hold");
  return b.create<OnnxConstantOp>(
      NameLoc::get(b.getStringAttr(t.name)), type, denseValue(type, t),
      inStore ? FlatSymbolRefAttr::get(&ctx, t.name) : FlatSymbolRefAttr());
}

Value GraphImporter::lookup(const onnx::Node &node, const std::string &name) {
  if (name.empty())
    return b.create<OnnxNoneOp>(b.getUnknownLoc(), b.getNoneType());
  if (auto it = values.find(name); it != values.end())
    return it->second;
  if (auto it = initializers.find(name); it != initializers.end())
    return values[name] = initializer(*it->second);
  failAt(node, "input '" + name +
                   "' is produced by no earlier node, initializer or graph "
                   "input (the graph is not in topological order, or is "
                   "missing a node)");
}

Attribute GraphImporter::convertAttribute(const onnx::Node &node,
                                          const onnx::Attribute &attr) {
  using T = onnx::Attribute::Type;
  switch (attr.type) {
  case T::Float:
    return b.getF32FloatAttr(attr.f);
  case T::Int:
    return b.getI64IntegerAttr(attr.i);
  case T::String:
    return b.getStringAttr(attr.s);
  case T::Floats:
    return b.getDenseF32ArrayAttr(attr.floats);
  case T::Ints:
    return b.getDenseI64ArrayAttr(attr.ints);
  case T::Strings: {
    SmallVector<Attribute> strings;
    for (const std::string &s : attr.strings)
      strings.push_back(b.getStringAttr(s));
    return b.getArrayAttr(strings);
  }
  case T::Tensor: {
    Type element = elementType(&ctx, attr.t->elemType);
    if (!element || element.isInteger(4))
      failAt(node, "attribute '" + attr.name + "' is a tensor of type " +
                       onnx::elemTypeName(attr.t->elemType) +
                       ", which Sol cannot represent");
    return denseValue(RankedTensorType::get(attr.t->dims, element), *attr.t);
  }
  case T::Graph:
    // Kept as a marker: no raise pattern reads subgraphs, so the node is
    // reported as unsupported with the rest.
    return b.getStringAttr("subgraph '" + attr.g->name + "' of " +
                           std::to_string(attr.g->nodes.size()) + " nodes");
  default:
    failAt(node, "attribute '" + attr.name + "' is of type " +
                     onnx::attributeTypeName(attr.type) +
                     ", which Sol does not read");
  }
}

/// A Constant node's value, from whichever attribute carries it.
Value GraphImporter::constant(const onnx::Node &node) {
  if (node.attributes.size() != 1 || node.outputs.size() != 1)
    failAt(node, "a Constant needs exactly one value attribute and one "
                 "output");
  const onnx::Attribute &attr = node.attributes.front();
  Location loc = NameLoc::get(b.getStringAttr(node.outputs[0]));
  auto scalarOrList = [&](Type element, auto values) {
    SmallVector<int64_t> dims;
    if (attr.name.ends_with("s"))
      dims.push_back(static_cast<int64_t>(values.size()));
    return DenseElementsAttr::get(RankedTensorType::get(dims, element),
                                  ArrayRef(values));
  };
  DenseElementsAttr value;
  if (attr.name == "value") {
    const onnx::Tensor &t = *attr.t;
    Type element = elementType(&ctx, t.elemType);
    if (!element || element.isInteger(4))
      failAt(node, "its value has type " + onnx::elemTypeName(t.elemType) +
                       ", which Sol cannot represent");
    auto type = RankedTensorType::get(t.dims, element);
    // A large constant (a tensor the exporter folded) is a weight like an
    // initializer, held by the store under its output's name.
    if (t.numElements() > kInlineElements && isWeightElement(element)) {
      store.addView(node.outputs[0], *toDType(t.elemType), t.dims, t.bytes);
      return b.create<WeightOp>(loc, type,
                                FlatSymbolRefAttr::get(&ctx, node.outputs[0]));
    }
    value = denseValue(type, t);
  } else if (attr.name == "value_float") {
    value = scalarOrList(b.getF32Type(), std::vector<float>{attr.f});
  } else if (attr.name == "value_floats") {
    value = scalarOrList(b.getF32Type(), attr.floats);
  } else if (attr.name == "value_int") {
    value = scalarOrList(b.getIntegerType(64), std::vector<int64_t>{attr.i});
  } else if (attr.name == "value_ints") {
    value = scalarOrList(b.getIntegerType(64), attr.ints);
  } else {
    failAt(node, "a Constant whose value is given as '" + attr.name +
                     "', which Sol does not read");
  }
  return b.create<OnnxConstantOp>(loc, value.getType(), value,
                                  FlatSymbolRefAttr());
}

/// Makes `t` an initializer the nodes can read, held by the store when Sol
/// has a dtype for it.
void GraphImporter::addInitializer(const onnx::Tensor &t) {
  initializers[t.name] = &t;
  if (std::optional<DType> dtype = storeDType(t.elemType))
    store.addView(t.name, *dtype, t.dims, t.bytes);
}

/// Optimum's merged decoders (decoder_model_merged.onnx): an If on the
/// boolean graph input `use_cache_branch` (`use_cache` in older Optimum)
/// choosing between the decoder with past (then_branch) and the one without
/// (else_branch). Sol keeps its own cache, for which the decoder with past
/// is the whole story.
bool GraphImporter::isCacheBranchIf(const onnx::Node &node) const {
  if (node.opType != "If" || !node.domain.empty() || node.inputs.size() != 1 ||
      (node.inputs[0] != "use_cache_branch" && node.inputs[0] != "use_cache"))
    return false;
  return std::any_of(
      graph.inputs.begin(), graph.inputs.end(), [&](const onnx::ValueInfo &v) {
        return v.name == node.inputs[0] && v.elemType == onnx::ElemType::Bool;
      });
}

/// Imports the nodes of `branch` (a subgraph reading the enclosing graph's
/// values) in place of `node`, whose outputs become the branch's.
void GraphImporter::inlineBranch(const onnx::Node &node,
                                 const onnx::Graph &branch) {
  if (branch.outputs.size() != node.outputs.size())
    failAt(node, "its branch '" + branch.name + "' has " +
                     std::to_string(branch.outputs.size()) +
                     " outputs for the node's " +
                     std::to_string(node.outputs.size()));
  if (branch.sparseInitializerCount > 0)
    failAt(node, "its branch '" + branch.name +
                     "' has sparse initializers, which Sol does not read");
  for (const onnx::Tensor &t : branch.initializers) {
    // A branch's own constants (Optimum keeps scalars there); one that
    // shadows an enclosing name would need scopes Sol does not keep.
    if (initializers.count(t.name) || values.count(t.name))
      failAt(node, "its branch '" + branch.name + "' redefines '" + t.name +
                       "', a name the enclosing graph already has, which Sol "
                       "does not scope; compile the decoder with past "
                       "(decoder_with_past_model.onnx) instead of the merged "
                       "graph");
    addInitializer(t);
  }
  for (const onnx::ValueInfo &v : branch.valueInfo)
    infos[v.name] = &v;
  for (const onnx::Node &inner : branch.nodes)
    importNode(inner);
  for (auto [i, out] : llvm::enumerate(branch.outputs)) {
    Value v = lookup(node, out.name);
    if (!node.outputs[i].empty())
      values[node.outputs[i]] = v;
  }
}

/// An If whose branches only hold constants (onnxruntime-genai's choice of
/// the long or the short rope caches of a longrope model by the total
/// length): both branches' values are imported, and the If becomes a
/// sol.onnx "If" of the condition, the then values and the else values
/// (`then_outputs` of each), for the raise patterns to read.
bool GraphImporter::isConstantChoiceIf(const onnx::Node &node) const {
  if (node.opType != "If" || !node.domain.empty() || node.inputs.size() != 1)
    return false;
  for (const char *name : {"then_branch", "else_branch"}) {
    const onnx::Attribute *a = node.attribute(name);
    if (!a || a->type != onnx::Attribute::Type::Graph || !a->g)
      return false;
    const onnx::Graph &branch = *a->g;
    if (branch.outputs.size() != node.outputs.size() ||
        !branch.inputs.empty() || branch.sparseInitializerCount > 0)
      return false;
    for (const onnx::Node &inner : branch.nodes)
      if (inner.opType != "Constant" || !inner.domain.empty())
        return false;
  }
  return true;
}

void GraphImporter::importConstantChoice(const onnx::Node &node) {
  SmallVector<Value> inputs{lookup(node, node.inputs[0])};
  SmallVector<Value> branchValues[2];
  static const char *const names[] = {"then_branch", "else_branch"};
  for (int i = 0; i < 2; ++i) {
    const onnx::Graph &branch = *node.attribute(names[i])->g;
    for (const onnx::Tensor &t : branch.initializers) {
      if (initializers.count(t.name) || values.count(t.name))
        failAt(node, "its branch '" + branch.name + "' redefines '" + t.name +
                         "', a name the enclosing graph already has, which "
                         "Sol does not scope");
      addInitializer(t);
    }
    for (const onnx::Node &inner : branch.nodes) {
      if (values.count(inner.outputs[0]))
        failAt(node, "its branch '" + branch.name + "' redefines '" +
                         inner.outputs[0] +
                         "', a name the enclosing graph already has, which "
                         "Sol does not scope");
      importNode(inner);
    }
    for (const onnx::ValueInfo &out : branch.outputs)
      branchValues[i].push_back(lookup(node, out.name));
  }
  inputs.append(branchValues[0]);
  inputs.append(branchValues[1]);
  // Each output has the type both branches agree on (a dimension they
  // differ in is dynamic: caches of different lengths).
  SmallVector<Type> types;
  for (auto [a, b2] : llvm::zip(branchValues[0], branchValues[1])) {
    auto ta = dyn_cast<RankedTensorType>(a.getType());
    auto tb = dyn_cast<RankedTensorType>(b2.getType());
    if (!ta || !tb || ta.getElementType() != tb.getElementType() ||
        ta.getRank() != tb.getRank())
      failAt(node, "its branches give values of different types");
    SmallVector<int64_t> dims;
    for (auto [x, y] : llvm::zip(ta.getShape(), tb.getShape()))
      dims.push_back(x == y ? x : ShapedType::kDynamic);
    types.push_back(RankedTensorType::get(dims, ta.getElementType()));
  }
  SmallVector<NamedAttribute> attrs{
      b.getNamedAttr("op_type", b.getStringAttr("If")),
      b.getNamedAttr("then_outputs",
                     b.getI64IntegerAttr(int64_t(node.outputs.size())))};
  auto op = b.create<OnnxOp>(
      NameLoc::get(b.getStringAttr(node.name.empty() ? "If" : node.name)),
      types, inputs, attrs);
  for (auto [i, output] : llvm::enumerate(node.outputs))
    if (!output.empty())
      values[output] = op.getResult(i);
}

void GraphImporter::importNode(const onnx::Node &node) {
  if (node.opType == "Constant" && node.domain.empty()) {
    values[node.outputs[0]] = constant(node);
    return;
  }
  if (isConstantChoiceIf(node)) {
    importConstantChoice(node);
    return;
  }
  if (isCacheBranchIf(node)) {
    const onnx::Attribute *then = node.attribute("then_branch");
    if (!then || then->type != onnx::Attribute::Type::Graph || !then->g)
      failAt(node, "an If without a then_branch graph (the file is "
                   "malformed); export the model again");
    inlineBranch(node, *then->g);
    return;
  }
  SmallVector<Value> inputs;
  for (const std::string &name : node.inputs)
    inputs.push_back(lookup(node, name));
  SmallVector<Type> types;
  for (auto [i, name] : llvm::enumerate(node.outputs)) {
    auto it = infos.find(name);
    types.push_back(it != infos.end() &&
                            it->second->elemType != onnx::ElemType::Undefined
                        ? declaredType(*it->second, "value")
                        : inferredType(node, i, inputs));
  }
  SmallVector<NamedAttribute> attrs;
  attrs.push_back(b.getNamedAttr("op_type", b.getStringAttr(node.opType)));
  if (!node.domain.empty() && node.domain != "ai.onnx")
    attrs.push_back(b.getNamedAttr("domain", b.getStringAttr(node.domain)));
  for (const onnx::Attribute &attr : node.attributes) {
    if (attr.name == "op_type" || attr.name == "domain")
      failAt(node, "has an attribute called '" + attr.name +
                       "', a name Sol reserves");
    attrs.push_back(b.getNamedAttr(attr.name, convertAttribute(node, attr)));
  }
  std::string name = node.name.empty()
                         ? node.opType + "#" + std::to_string(values.size())
                         : node.name;
  auto op = b.create<OnnxOp>(NameLoc::get(b.getStringAttr(name)), types, inputs,
                             attrs);
  for (auto [i, output] : llvm::enumerate(node.outputs))
    if (!output.empty())
      values[output] = op.getResult(i);
}

OwningOpRef<ModuleOp> GraphImporter::run() {
  ctx.loadDialect<SolDialect, func::FuncDialect>();
  if (graph.sparseInitializerCount > 0)
    fail(model.path().string(), ": the graph has ",
         graph.sparseInitializerCount,
         " sparse initializers, which Sol does not read");
  if (model.functionCount() > 0)
    fail(model.path().string(), ": the model defines ", model.functionCount(),
         " local functions, which Sol does not inline; export it with "
         "functions inlined");

  for (const onnx::Tensor &t : graph.initializers)
    addInitializer(t);
  for (const onnx::ValueInfo &v : graph.valueInfo)
    infos[v.name] = &v;
  for (const onnx::ValueInfo &v : graph.outputs)
    infos[v.name] = &v;

  Location loc =
      NameLoc::get(b.getStringAttr(model.path().filename().string()));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());

  // Graph inputs that are also initializers (IR version < 4) are weights.
  std::vector<const onnx::ValueInfo *> inputs;
  for (const onnx::ValueInfo &v : graph.inputs)
    if (!initializers.count(v.name))
      inputs.push_back(&v);
  SmallVector<Type> argTypes;
  for (const onnx::ValueInfo *v : inputs)
    argTypes.push_back(declaredType(*v, "graph input"));
  auto fn =
      b.create<func::FuncOp>(loc, "forward", b.getFunctionType(argTypes, {}));
  Block *entry = fn.addEntryBlock();
  for (auto [i, v] : llvm::enumerate(inputs)) {
    fn.setArgAttr(i, "sol.name", b.getStringAttr(v->name));
    values[v->name] = entry->getArgument(i);
  }
  b.setInsertionPointToStart(entry);
  for (const onnx::Node &node : graph.nodes)
    importNode(node);

  SmallVector<Value> results;
  for (const onnx::ValueInfo &v : graph.outputs) {
    auto it = values.find(v.name);
    if (it == values.end()) {
      if (initializers.count(v.name))
        results.push_back(values[v.name] = initializer(*initializers[v.name]));
      else
        fail(model.path().string(), ": graph output '", v.name,
             "' is produced by no node");
    } else {
      results.push_back(it->second);
    }
  }
  b.create<func::ReturnOp>(loc, results);
  fn.setFunctionType(
      b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, v] : llvm::enumerate(graph.outputs))
    fn.setResultAttr(i, "sol.name", b.getStringAttr(v.name));
  return module;
}

/// What config.json (or genai_config.json) beside the graph says of the
/// model: recorded on the module for sol-raise-interface, and the plan's
/// generation defaults.
struct SourceConfig {
  std::string text;
  /// config.json parsed as Sol reads checkpoints, when it parses (a
  /// supported architecture): its rope parameters are a hint the rope
  /// pattern checks against the graph's frequencies.
  std::optional<hf::ModelConfig> model;
  std::string architecture;
  std::optional<int64_t> maxPositions;
  std::vector<int64_t> eosTokenIds;
  std::optional<int64_t> bosTokenId;
  /// genai_config.json's search defaults, for a graph without a
  /// generation_config.json.
  std::optional<hf::GenerationConfig> genaiSearch;
  /// The model's sizes as the config states them (Sol's names:
  /// hidden_size, num_layers, vocab_size, num_heads, num_kv_heads,
  /// head_dim), for sol-raise-outputs to check against the graph.
  std::vector<std::pair<std::string, int64_t>> sizes;
  std::string sizesSource;
  /// The first execution provider genai_config.json's session options name
  /// ("cuda", "dml", ...; empty for the CPU): the builder lays out some
  /// weights for it (CUTLASS-prepacked QMoE experts for CUDA).
  std::string executionProvider;
};

/// The sizes `fields` states under `keys` (config key -> Sol's name).
void readSizes(
    const hf::detail::JsonFields &fields,
    std::initializer_list<std::pair<const char *, const char *>> keys,
    SourceConfig &config) {
  for (auto [key, name] : keys)
    if (std::optional<int64_t> v = fields.optInt(key))
      config.sizes.push_back({name, *v});
}

/// onnxruntime-genai's search section as generation defaults (the names
/// of generation_config.json).
hf::GenerationConfig genaiSearchDefaults(const nlohmann::json &json,
                                         const std::string &source) {
  if (!json.contains("search") || !json["search"].is_object())
    return {};
  return hf::generationConfigFrom(
      hf::detail::JsonFields(json["search"], source, "search."));
}

/// model.decoder.session_options.provider_options[0]'s one key, or "".
std::string genaiProvider(const nlohmann::json &json) {
  const nlohmann::json *at = &json;
  for (const char *key : {"model", "decoder", "session_options"}) {
    if (!at->is_object() || !at->contains(key))
      return {};
    at = &(*at)[key];
  }
  if (!at->is_object() || !at->contains("provider_options"))
    return {};
  const nlohmann::json &providers = (*at)["provider_options"];
  if (!providers.is_array() || providers.empty() || !providers[0].is_object() ||
      providers[0].size() != 1)
    return {};
  return providers[0].begin().key();
}

SourceConfig readSourceConfig(const std::filesystem::path &dir) {
  SourceConfig config;
  if (std::filesystem::exists(dir / "config.json")) {
    std::string source = (dir / "config.json").string();
    config.text = readText(dir / "config.json");
    nlohmann::json json = hf::detail::parseJsonObject(config.text, source);
    hf::detail::JsonFields fields(json, source);
    if (fields.has("architectures") && json["architectures"].is_array() &&
        !json["architectures"].empty() && json["architectures"][0].is_string())
      config.architecture = json["architectures"][0].get<std::string>();
    config.maxPositions = fields.optInt("max_position_embeddings");
    config.eosTokenIds =
        fields.optIntOrList("eos_token_id").value_or(std::vector<int64_t>{});
    config.bosTokenId = fields.optInt("bos_token_id");
    readSizes(fields,
              {{"hidden_size", "hidden_size"},
               {"num_hidden_layers", "num_layers"},
               {"vocab_size", "vocab_size"},
               {"num_attention_heads", "num_heads"},
               {"num_key_value_heads", "num_kv_heads"},
               {"head_dim", "head_dim"}},
              config);
    config.sizesSource = "config.json";
    try {
      config.model = hf::parseModelConfig(config.text, source);
    } catch (const Error &) {
      // Not an architecture the checkpoint importer knows: no hint.
    }
  }
  if (std::filesystem::exists(dir / "genai_config.json")) {
    std::string source = (dir / "genai_config.json").string();
    std::string text = readText(dir / "genai_config.json");
    nlohmann::json json = hf::detail::parseJsonObject(text, source);
    config.genaiSearch = genaiSearchDefaults(json, source);
    config.executionProvider = genaiProvider(json);
    if (!config.text.empty())
      return config; // config.json says the rest.
    config.text = std::move(text);
    if (json.contains("model") && json["model"].is_object()) {
      hf::detail::JsonFields fields(json["model"], source, "model.");
      config.architecture = fields.optString("type").value_or("");
      config.maxPositions = fields.optInt("context_length");
      config.eosTokenIds =
          fields.optIntOrList("eos_token_id").value_or(std::vector<int64_t>{});
      config.bosTokenId = fields.optInt("bos_token_id");
      readSizes(fields, {{"vocab_size", "vocab_size"}}, config);
      if (json["model"].contains("decoder") &&
          json["model"]["decoder"].is_object())
        readSizes(hf::detail::JsonFields(json["model"]["decoder"], source,
                                         "model.decoder."),
                  {{"hidden_size", "hidden_size"},
                   {"num_hidden_layers", "num_layers"},
                   {"num_attention_heads", "num_heads"},
                   {"num_key_value_heads", "num_kv_heads"},
                   {"head_size", "head_dim"}},
                  config);
      config.sizesSource = "genai_config.json";
    }
  }
  return config;
}

} // namespace

std::optional<std::filesystem::path>
findOnnxModel(const std::filesystem::path &source) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(source))
    return source.extension() == ".onnx" ? std::optional(source) : std::nullopt;
  if (!fs::is_directory(source))
    return std::nullopt;
  // model.onnx, else Optimum's decoders (merged, else with past), which
  // older exports write beside the decoder without past.
  for (const char *name : {"model.onnx", "decoder_model_merged.onnx",
                           "decoder_with_past_model.onnx"})
    if (fs::is_regular_file(source / name))
      return source / name;
  std::vector<fs::path> found;
  for (const fs::directory_entry &e : fs::directory_iterator(source))
    if (e.is_regular_file() && e.path().extension() == ".onnx")
      found.push_back(e.path());
  if (found.empty())
    return std::nullopt;
  if (found.size() > 1) {
    std::sort(found.begin(), found.end());
    std::string names;
    for (const fs::path &p : found)
      names += (names.empty() ? "" : ", ") + p.filename().string();
    fail(source.string(), " holds several ONNX graphs (", names,
         ") and no model.onnx; name the one to compile, e.g. solc ",
         found.front().string());
  }
  return found.front();
}

ImportedModel importOnnxModel(MLIRContext &context,
                              const std::filesystem::path &path) {
  auto model = std::make_shared<const onnx::Model>(onnx::Model::open(path));
  ImportedModel imported;
  imported.module = GraphImporter(context, *model, imported.weights).run();
  imported.weights.retain(model->keepAlive());

  const std::filesystem::path dir = path.parent_path().empty()
                                        ? std::filesystem::path(".")
                                        : path.parent_path();
  SourceConfig config = readSourceConfig(dir);
  Builder b(&context);
  SmallVector<NamedAttribute> source;
  source.push_back(b.getNamedAttr("architecture",
                                  b.getStringAttr(config.architecture.empty()
                                                      ? std::string("onnx")
                                                      : config.architecture)));
  if (config.maxPositions)
    source.push_back(b.getNamedAttr("max_position_embeddings",
                                    b.getI64IntegerAttr(*config.maxPositions)));
  if (config.model)
    source.push_back(
        b.getNamedAttr("rope", ropeAttrOf(&context, *config.model)));
  // For graphs without a cache, whose masks are probed on shorter sequences
  // than such windows (only where every layer slides: the probe cannot
  // tell which layer a mask is for).
  if (config.model && config.model->slidingWindow &&
      std::all_of(config.model->slidingWindowLayers.begin(),
                  config.model->slidingWindowLayers.end(),
                  [](bool slides) { return slides; }))
    source.push_back(b.getNamedAttr(
        "sliding_window", b.getI64IntegerAttr(*config.model->slidingWindow)));
  if (!config.sizes.empty()) {
    SmallVector<NamedAttribute> sizes;
    for (auto &[name, value] : config.sizes)
      sizes.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(value)));
    source.push_back(b.getNamedAttr("sizes", b.getDictionaryAttr(sizes)));
    source.push_back(
        b.getNamedAttr("sizes_from", b.getStringAttr(config.sizesSource)));
  }
  if (!config.executionProvider.empty())
    source.push_back(b.getNamedAttr("execution_provider",
                                    b.getStringAttr(config.executionProvider)));
  (*imported.module)->setAttr("sol.onnx_source", b.getDictionaryAttr(source));

  ModelAssets &a = imported.assets;
  a.source = path.string();
  a.sourceConfig = config.text;
  if (std::filesystem::exists(dir / "tokenizer.json"))
    a.tokenizerJson = readText(dir / "tokenizer.json");
  a.tokenizerConfigJson = readTokenizerConfig(dir);
  std::optional<hf::GenerationConfig> generation =
      hf::loadGenerationConfig(dir);
  a.generation =
      generationDefaults(config.eosTokenIds, config.bosTokenId,
                         generation ? generation : config.genaiSearch);
  return imported;
}

} // namespace sol
