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
      // A present output: the past input and the new tokens.
      if (auto concat = raise::producer(raise::skipFloatCasts(value), "Concat");
          concat && concat.getInputs().size() == 2 &&
          isa<BlockArgument>(raise::skipFloatCasts(concat.getInputs()[0])))
        continue;
      // The logits: the LM head's linear of the final norm.
      if (Value head = raise::viewedSolValue(raise::skipFloatCasts(value)))
        if (auto linear = head.getDefiningOp<LinearOp>();
            linear && !linear.getBias() &&
            linear.getQuant() == QuantScheme::None && !logits)
          if (auto norm = linear.getInput().getDefiningOp<RmsNormOp>()) {
            auto normWeight =
                cast<RankedTensorType>(norm.getWeight().getType());
            auto headType =
                cast<RankedTensorType>(linear.getWeight().getType());
            if (normWeight.getDimSize(0) == headType.getDimSize(1)) {
              auto type = RankedTensorType::get(
                  {ShapedType::kDynamic, headType.getDimSize(0)},
                  b.getF32Type());
              logits = b.create<LogitsOp>(
                  linear.getLoc(), type, norm.getInput(), norm.getWeight(),
                  linear.getWeight(), logitRows, norm.getEpsilonAttr());
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
    auto architecture =
        dyn_cast_or_null<StringAttr>(source.get("architecture"));
    module->setAttr(
        ModelAttr::kAttrName,
        ModelAttr::get(&getContext(),
                       architecture ? architecture.getValue() : "onnx",
                       cast<RankedTensorType>(logits.getType()).getDimSize(1),
                       hidden, layers, maxPositions.getInt()));
  }
};

} // namespace
