//===- SolDialect.h - The sol dialect ---------------------------*- C++ -*-===//
//
// Declarations generated from SolDialect.td, SolAttrs.td and SolOps.td.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ir/SolDialect.h.inc"
#include "ir/SolEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/SolAttrs.h.inc"

#define GET_OP_CLASSES
#include "ir/SolOps.h.inc"
