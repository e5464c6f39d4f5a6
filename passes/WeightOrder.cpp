//===- WeightOrder.cpp - Where weights sit among the ops of a step --------===//
#include "passes/WeightOrder.h"

using namespace mlir;

namespace sol {

namespace {
bool isWeightOp(Operation *op) {
  return isa<WeightOp>(op) || op->hasTrait<WeightTransform>();
}
} // namespace

bool onlyWeightsBetween(Operation *first, Operation *last) {
  if (first->getBlock() != last->getBlock() || !first->isBeforeInBlock(last))
    return false;
  for (Operation *o = first->getNextNode(); o && o != last;
       o = o->getNextNode())
    if (!isWeightOp(o))
      return false;
  return true;
}

void hoistWeightBefore(RewriterBase &rewriter, Value w, Operation *point) {
  Operation *def = w.getDefiningOp();
  if (!def || def->getBlock() != point->getBlock() ||
      def->isBeforeInBlock(point))
    return;
  // Operands first, so that they stay ahead of their users.
  for (Value operand : def->getOperands())
    hoistWeightBefore(rewriter, operand, point);
  rewriter.moveOpBefore(def, point);
}

} // namespace sol
