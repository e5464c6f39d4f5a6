// RUN: not solc-opt %s --sol-raise 2>&1 | FileCheck %s

// The refusal names the patterns that came close, where, and why they
// stopped: here an RMSNorm whose epsilon (0.5) is out of range.
// CHECK: error: the ONNX graph was not raised completely
// CHECK: ai.onnx Mul: 1 (layers.0/input_layernorm/Mul_1)
// CHECK: patterns that recognised part of an idiom, and why they stopped:
// CHECK-NEXT: sol-raise-rms-norm at layers.0/input_layernorm/Mul_1: epsilon out of range
module attributes {sol.onnx_source = {architecture = "X"}} {
func.func @forward(%x: tensor<?x?x64xf32> {sol.name = "hidden"}) -> tensor<*xf32> {
  %w = sol.weight @norm.weight : tensor<64xf32>
  %two = sol.onnx_constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %big = sol.onnx_constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %sq = sol.onnx "Pow"(%x, %two) : (tensor<?x?x64xf32>, tensor<f32>) -> tensor<*xf32>
  %m = sol.onnx "ReduceMean"(%sq) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %ab = sol.onnx "Add"(%m, %big) : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %sb = sol.onnx "Sqrt"(%ab) : (tensor<*xf32>) -> tensor<*xf32>
  %nb = sol.onnx "Div"(%x, %sb) : (tensor<?x?x64xf32>, tensor<*xf32>) -> tensor<*xf32>
  %yb = sol.onnx "Mul"(%w, %nb) : (tensor<64xf32>, tensor<*xf32>) -> tensor<*xf32> loc("layers.0/input_layernorm/Mul_1")
  return %yb : tensor<*xf32>
}
}
