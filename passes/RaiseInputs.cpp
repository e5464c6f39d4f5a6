//===- RaiseInputs.cpp - sol-raise-inputs ---------------------------------===//
//
// An ONNX decoder graph takes one batch of equal-length sequences
// (input_ids, position_ids [batch, sequence]); Sol's function takes a flat
// batch of tokens from many sequences (tokens, positions, token_seq,
// logit_rows). Raising first adds Sol's arguments and makes the graph read
// its ids and positions from them, as a batch of one sequence (views), so
// that the patterns after it can refer to Sol's positions and token_seq.
// sol-raise-outputs removes the ONNX arguments once nothing reads them.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

namespace sol {
#define GEN_PASS_DEF_SOLRAISEINPUTS
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

struct SolRaiseInputsPass : sol::impl::SolRaiseInputsBase<SolRaiseInputsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Only an imported ONNX graph is rewritten.
    if (!module->hasAttr("sol.onnx_source"))
      return;
    for (auto fn : module.getOps<func::FuncOp>())
      if (failed(addSolArguments(fn)))
        return signalPassFailure();
  }

  static LogicalResult addSolArguments(func::FuncOp fn) {
    if (raise::solArgument(&fn.getBody().front().front(), "tokens"))
      return success();
    OpBuilder b(fn.getContext());
    auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
    static const char *const names[] = {"tokens", "positions", "token_seq",
                                        "logit_rows"};
    for (unsigned i = 0; i < 4; ++i)
      fn.insertArgument(i, ids,
                        b.getDictionaryAttr({b.getNamedAttr(
                            "sol.name", b.getStringAttr(names[i]))}),
                        fn.getLoc());
    Block &entry = fn.getBody().front();
    b.setInsertionPointToStart(&entry);
    // input_ids and position_ids: the same values, one sequence.
    for (unsigned i = 4; i < fn.getNumArguments(); ++i) {
      auto name = fn.getArgAttrOfType<StringAttr>(i, "sol.name");
      if (!name)
        continue;
      Value sol;
      if (name.getValue() == "input_ids")
        sol = fn.getArgument(0);
      else if (name.getValue() == "position_ids")
        sol = fn.getArgument(1);
      if (!sol)
        continue;
      Value arg = fn.getArgument(i);
      auto view = b.create<BatchViewOp>(fn.getLoc(), arg.getType(), sol);
      arg.replaceAllUsesWith(view);
    }
    return success();
  }
};

} // namespace
