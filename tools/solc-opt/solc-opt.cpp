//===- solc-opt.cpp - mlir-opt for the sol dialect -----------------------===//
//
// Parses, verifies, transforms and prints sol IR. lit tests drive it.
//
//===----------------------------------------------------------------------===//
#include "ir/SolDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<sol::SolDialect, mlir::func::FuncDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  sol::registerSolPasses();
  sol::registerSolPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Sol optimizer driver\n", registry));
}
