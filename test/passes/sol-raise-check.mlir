// RUN: solc-opt %s --sol-raise-check | FileCheck %s

// sol-raise-check: what raising left unused goes; a module without ONNX
// nodes passes.
// CHECK-LABEL: func.func @raised
// CHECK-NOT: sol.onnx
// CHECK-NOT: sol.batch_view
// CHECK: return %arg0
func.func @raised(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %v = sol.batch_view %x : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %s = sol.onnx "Shape"(%v) : (tensor<1x?x64xf32>) -> tensor<3xi64>
  %c = sol.onnx_constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  return %x : tensor<?x64xbf16>
}
