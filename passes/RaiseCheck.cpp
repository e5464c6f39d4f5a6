//===- RaiseCheck.cpp - sol-raise-check -----------------------------------===//
//
// The last raise pass: what raising left unused goes, and a graph with any
// ONNX node left is refused with one report of everything that is, so a
// user sees the whole gap at once rather than one op per attempt.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseSet.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <map>
#include <string>
#include <vector>

namespace sol {
#define GEN_PASS_DEF_SOLRAISECHECK
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

/// How many node names a report line lists before "...".
constexpr size_t kNamesPerLine = 3;

std::string nodeName(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().str();
  std::string s;
  llvm::raw_string_ostream os(s);
  op->getLoc().print(os);
  return s;
}

struct SolRaiseCheckPass : sol::impl::SolRaiseCheckBase<SolRaiseCheckPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto fn : module.getOps<func::FuncOp>())
      raise::eraseDeadOps(fn);

    struct Kind {
      int64_t count = 0;
      std::vector<std::string> names;
    };
    std::map<std::string, Kind> unraised;
    int64_t views = 0;
    llvm::DenseSet<Location> left;
    auto nearMisses = module->getAttrOfType<ArrayAttr>(raise::kNearMissesAttr);
    module->removeAttr(raise::kNearMissesAttr);
    module.walk([&](Operation *op) {
      if (auto onnx = dyn_cast<OnnxOp>(op)) {
        left.insert(op->getLoc());
        std::string domain =
            onnx.getDomain().empty() ? "ai.onnx" : onnx.getDomain().str();
        Kind &k = unraised[domain + " " + onnx.getOpType().str()];
        ++k.count;
        if (k.names.size() < kNamesPerLine)
          k.names.push_back(nodeName(op));
      } else if (isa<BatchViewOp>(op)) {
        ++views;
      }
    });
    if (unraised.empty() && views == 0)
      return;

    std::string report;
    llvm::raw_string_ostream os(report);
    os << "the ONNX graph was not raised completely into Sol's ops; Sol "
          "compiles only graphs it can raise whole";
    if (!unraised.empty()) {
      os << "\n  ONNX nodes left (domain op_type: count, first nodes):";
      for (const auto &[type, kind] : unraised) {
        os << "\n    " << type << ": " << kind.count << " (";
        llvm::interleaveComma(kind.names, os);
        if (kind.count > static_cast<int64_t>(kind.names.size()))
          os << ", ...";
        os << ")";
      }
    }
    for (auto fn : module.getOps<func::FuncOp>()) {
      std::vector<std::string> args, results;
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        if (auto name = fn.getArgAttrOfType<StringAttr>(i, "sol.name");
            name && !fn.getArgument(i).use_empty() &&
            !llvm::is_contained(
                {"tokens", "positions", "token_seq", "logit_rows"},
                name.getValue()))
          args.push_back(name.str());
      if (!args.empty()) {
        os << "\n  graph inputs still read by ONNX nodes: ";
        llvm::interleaveComma(args, os);
      }
    }
    if (views > 0)
      os << "\n  " << views
         << " values where raised ops meet ONNX nodes that are not raised";
    // The patterns that recognised part of an idiom at a node still there.
    bool first = true;
    for (Attribute a :
         nearMisses ? nearMisses.getValue() : ArrayRef<Attribute>{}) {
      auto note = cast<DictionaryAttr>(a);
      auto at = cast<LocationAttr>(note.get("at"));
      if (!left.contains(Location(at)))
        continue;
      if (first)
        os << "\n  patterns that recognised part of an idiom, and why they "
              "stopped:";
      first = false;
      os << "\n    " << cast<StringAttr>(note.get("pass")).getValue() << " at ";
      if (auto name = dyn_cast<NameLoc>(at))
        os << name.getName().getValue();
      else
        at.print(os);
      os << ": " << cast<StringAttr>(note.get("reason")).getValue();
    }
    os << "\n  compile the model's Hugging Face checkpoint directory instead, "
          "or "
          "export it again (torch.onnx.export(..., dynamo=True), or "
          "optimum-cli export onnx --task text-generation-with-past); "
          "SOL_RAISE_DEBUG=1 prints every near miss";
    module.emitError(report);
    signalPassFailure();
  }
};

} // namespace
