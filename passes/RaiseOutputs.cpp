//===- RaiseOutputs.cpp - sol-raise-outputs -------------------------------===//
//
// The last rewrite of an ONNX graph: its outputs become Sol's. The logits
// (the LM head's linear of the final norm, for every token) become
// sol.logits of the rows Sol asks for; the present key/value outputs (the
// past inputs concatenated with the new tokens) go, since Sol's attention
// keeps the cache itself; the ONNX inputs nothing reads any more go with
// them (input_ids, position_ids, attention_mask, past_key_values). Then the
// module says what the model is (sol.model), as the checkpoint importer
// writes it.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace sol {
#define GEN_PASS_DEF_SOLRAISEOUTPUTS
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

/// `x` and c when `v` is Mul(Tanh(Div(x, c)), c) for one positive scalar
/// constant c (either Mul operand order, float casts between).
std::optional<std::pair<Value, double>> logitSoftcap(Value v) {
  OnnxOp mul = raise::producer(v, "Mul");
  if (!mul || mul.getInputs().size() != 2)
    return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    OnnxOp tanh =
        raise::producer(raise::skipFloatCasts(mul.getInputs()[i]), "Tanh");
    std::optional<double> outer = raise::splatValue(mul.getInputs()[1 - i]);
    if (!tanh || !outer || !(*outer > 0))
      continue;
    OnnxOp div =
        raise::producer(raise::skipFloatCasts(tanh.getInputs()[0]), "Div");
    if (!div || div.getInputs().size() != 2)
      continue;
    std::optional<double> inner = raise::splatValue(div.getInputs()[1]);
    if (inner && *inner == *outer)
      return std::make_pair(raise::skipFloatCasts(div.getInputs()[0]), *outer);
  }
  return std::nullopt;
}

/// The config beside the graph must describe the graph: its sizes against
/// the raised module's (a config.json of another model, or of another size
/// of the same family, is a user error worth naming).
LogicalResult checkSizes(ModuleOp module, DictionaryAttr source,
                         func::FuncOp fn, LogitsOp logits) {
  auto sizes = dyn_cast_or_null<DictionaryAttr>(source.get("sizes"));
  if (!sizes)
    return success();
  auto from = dyn_cast_or_null<StringAttr>(source.get("sizes_from"));
  AttentionOp first;
  int64_t layers = 0;
  fn.walk([&](AttentionOp op) {
    if (!first)
      first = op;
    ++layers;
  });
  llvm::StringMap<int64_t> graph;
  graph["hidden_size"] =
      cast<RankedTensorType>(logits.getHidden().getType()).getDimSize(1);
  graph["vocab_size"] = cast<RankedTensorType>(logits.getType()).getDimSize(1);
  graph["num_layers"] = layers;
  if (first) {
    graph["num_heads"] = first.getNumHeads();
    graph["num_kv_heads"] = first.getNumKvHeads();
    graph["head_dim"] = first.getHeadDim();
  }
  for (NamedAttribute entry : sizes) {
    auto it = graph.find(entry.getName().getValue());
    auto stated = dyn_cast<IntegerAttr>(entry.getValue());
    if (it == graph.end() || !stated || stated.getInt() == it->second)
      continue;
    return module.emitError()
           << (from ? from.getValue() : "the config")
           << " beside the graph states " << entry.getName().getValue() << " = "
           << stated.getInt() << ", but the graph has " << it->second
           << ": the config is not this graph's (put the config.json or "
              "genai_config.json the graph was exported with beside it)";
  }
  return success();
}

/// A present output of a graph without past inputs (Optimum's
/// decoder_model.onnx): the new keys or values of a raised attention, in
/// their [batch, heads, seq, dim] view.
bool isFreshPresent(Value value) {
  OnnxOp transpose = raise::producer(raise::skipFloatCasts(value), "Transpose");
  if (!transpose || !raise::isPermutation(transpose, {0, 2, 1, 3}))
    return false;
  Value sol = raise::viewedSolValue(transpose.getInputs()[0]);
  if (!sol)
    return false;
  return llvm::any_of(sol.getUsers(), [&](Operation *user) {
    auto attn = dyn_cast<AttentionOp>(user);
    return attn && (attn.getKey() == sol || attn.getValue() == sol);
  });
}

struct SolRaiseOutputsPass
    : sol::impl::SolRaiseOutputsBase<SolRaiseOutputsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto source = module->getAttrOfType<DictionaryAttr>("sol.onnx_source");
    if (!source)
      return;
    for (auto fn : module.getOps<func::FuncOp>())
      raiseOutputs(module, source, fn);
  }

  void raiseOutputs(ModuleOp module, DictionaryAttr source, func::FuncOp fn) {
    Value logitRows =
        raise::solArgument(&fn.getBody().front().front(), "logit_rows");
    if (!logitRows)
      return;
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    OpBuilder b(ret);
    SmallVector<Value> results;
    SmallVector<DictionaryAttr> resultAttrs;
    LogitsOp logits;
    bool complete = true;
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      // A present output: the past input and the new tokens (cropped to
      // a sliding window's last tokens by a Slice, in transformers 5).
      Value present = raise::skipFloatCasts(value);
      if (auto crop = raise::producer(present, "Slice"))
        present = crop.getInputs()[0];
      if (auto concat = raise::producer(present, "Concat");
          concat && concat.getInputs().size() == 2 &&
          isa<BlockArgument>(raise::skipFloatCasts(concat.getInputs()[0])))
        continue;
      if (isFreshPresent(value))
        continue;
      // A present output of a raised com.microsoft GroupQueryAttention or
      // of an Attention op with the cache inside (whose attention output
      // nothing reads any more).
      if (auto attn = raise::skipFloatCasts(value).getDefiningOp<OnnxOp>();
          attn &&
          ((attn.getOpType() == "GroupQueryAttention" &&
            attn.getDomain() == "com.microsoft") ||
           (attn.getOpType() == "Attention" && attn.getDomain().empty())) &&
          attn->getResult(0).use_empty() &&
          raise::skipFloatCasts(value) != attn->getResult(0))
        continue;
      // The logits: the LM head's linear of the final norm, soft-capped
      // as c · tanh(x / c) where the graph does so (Gemma 2).
      FloatAttr softcap;
      Value capped = raise::skipFloatCasts(value);
      if (std::optional<std::pair<Value, double>> cap = logitSoftcap(capped)) {
        capped = cap->first;
        softcap = b.getF32FloatAttr(float(cap->second));
      }
      if (Value head = raise::viewedSolValue(capped))
        if (auto linear = head.getDefiningOp<LinearOp>();
            linear && !linear.getBias() && !logits)
          if (auto norm = linear.getInput().getDefiningOp<RmsNormOp>()) {
            Value headWeight = raise::floatLinearWeight(b, linear);
            auto normWeight =
                cast<RankedTensorType>(norm.getWeight().getType());
            auto headType = headWeight
                                ? cast<RankedTensorType>(headWeight.getType())
                                : RankedTensorType();
            if (headWeight &&
                normWeight.getDimSize(0) == headType.getDimSize(1)) {
              auto type = RankedTensorType::get(
                  {ShapedType::kDynamic, headType.getDimSize(0)},
                  b.getF32Type());
              logits = b.create<LogitsOp>(
                  linear.getLoc(), type, norm.getInput(), norm.getWeight(),
                  headWeight, logitRows, norm.getEpsilonAttr(), softcap);
              results.push_back(logits);
              resultAttrs.push_back(b.getDictionaryAttr({}));
              continue;
            }
          }
      // Anything else stays, for sol-raise-check to report.
      complete = false;
      results.push_back(value);
      resultAttrs.push_back(fn.getResultAttrDict(i));
    }
    if (!complete || !logits)
      return;
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    fn.setType(FunctionType::get(fn.getContext(), fn.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
    fn.setAllResultAttrs(resultAttrs);
    raise::eraseDeadOps(fn);

    // The ONNX inputs nothing reads any more.
    llvm::BitVector unused(fn.getNumArguments());
    for (unsigned i = 4; i < fn.getNumArguments(); ++i)
      if (fn.getArgument(i).use_empty())
        unused.set(i);
    fn.eraseArguments(unused);

    // What the model is, as the checkpoint importer records it.
    int64_t layers = 0, hidden = 0;
    fn.walk([&](AttentionOp) { ++layers; });
    hidden = cast<RankedTensorType>(logits.getHidden().getType()).getDimSize(1);
    auto maxPositions =
        dyn_cast_or_null<IntegerAttr>(source.get("max_position_embeddings"));
    if (!maxPositions) {
      module.emitError(
          "the ONNX graph says nothing of its context length: put the "
          "model's config.json (max_position_embeddings) or "
          "genai_config.json (context_length) beside it");
      return signalPassFailure();
    }
    // Sizes are compared once everything is raised (what is left,
    // sol-raise-check reports).
    bool raised = true;
    fn.walk([&](OnnxOp) { raised = false; });
    if (raised && failed(checkSizes(module, source, fn, logits)))
      return signalPassFailure();
    auto architecture =
        dyn_cast_or_null<StringAttr>(source.get("architecture"));
    module->setAttr(
        ModelAttr::kAttrName,
        ModelAttr::get(&getContext(),
                       architecture ? architecture.getValue() : "onnx",
                       cast<RankedTensorType>(logits.getType()).getDimSize(1),
                       hidden, layers, maxPositions.getInt(),
                       /*position_limit=*/0));
    // What the importer said of the source was for raising; the module is
    // now the checkpoint importer's.
    module->removeAttr("sol.onnx_source");
  }
};

} // namespace
