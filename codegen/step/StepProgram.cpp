//===- StepProgram.cpp - Arena planning for the step's buffers ------------===//
#include "codegen/step/StepProgram.h"

#include "runtime/plan/PlanDType.h"

#include <algorithm>

namespace sol {

void StepProgram::assignArenaSlots() {
  const int n = static_cast<int>(buffers.size());
  std::vector<int> first(n, -1), last(n, -1);
  for (int i = 0; i < static_cast<int>(ops.size()); ++i)
    for (int32_t b : ops[i].buffers) {
      if (first[b] < 0)
        first[b] = i;
      last[b] = i;
    }
  // The logits are read by the executor after the last op.
  if (logitsBuffer >= 0)
    last[logitsBuffer] = static_cast<int>(ops.size());
  // The CUDA executor skips a gather of the logits rows in steps whose rows
  // are already in place (decode), its readers reading its input instead:
  // the input lives as long as the output.
  for (const PlanOp &op : ops)
    if (op.kind == OpKind::GatherRows) {
      const int32_t out = op.buffers.at(0), in = op.buffers.at(1);
      last[in] = std::max(last[in], last[out]);
    }
  // One-row CUDA steps may run an RmsNorm with a residual in the prologue of
  // the Linear after it (cuda::StaticLowering::linearAddNorm): every block
  // of the linear reads the norm's input and residual while others write
  // its output, so they live through the linear.
  for (std::size_t i = 1; i < ops.size(); ++i) {
    const PlanOp &norm = ops[i - 1], &linear = ops[i];
    if (norm.kind == OpKind::RmsNorm && norm.hasResidual() &&
        linear.kind == OpKind::Linear && linear.buffers.size() >= 2 &&
        linear.buffers[1] == norm.buffers[0])
      for (int32_t b : {norm.buffers[1], norm.buffers[2]})
        last[b] = std::max(last[b], static_cast<int>(i));
  }

  // Greedy interval colouring in order of first use: a slot is free again
  // once the last reader of its previous buffer has run.
  std::vector<int> order;
  for (int b = kNumInputs; b < n; ++b)
    if (first[b] >= 0)
      order.push_back(b);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return first[a] < first[b]; });
  std::vector<int> slotFreeAfter; // op index after which the slot is free
  arenaSlots.clear();
  for (int b : order) {
    int64_t bytes = buffers[b].width * dtypeBits(toDType(buffers[b].dtype)) / 8;
    int chosen = -1;
    for (int s = 0; s < static_cast<int>(slotFreeAfter.size()); ++s)
      if (slotFreeAfter[s] < first[b]) {
        // Prefer the free slot closest in size.
        if (chosen < 0 || std::abs(arenaSlots[s] - bytes) <
                              std::abs(arenaSlots[chosen] - bytes))
          chosen = s;
      }
    if (chosen < 0) {
      chosen = static_cast<int>(arenaSlots.size());
      arenaSlots.push_back(0);
      slotFreeAfter.push_back(-1);
    }
    arenaSlots[chosen] = std::max(arenaSlots[chosen], bytes);
    slotFreeAfter[chosen] = last[b];
    buffers[b].slot = chosen;
  }
}

} // namespace sol
