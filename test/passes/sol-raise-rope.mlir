// RUN: solc-opt %s --split-input-file --sol-raise-rope | FileCheck %s

// sol-raise-rope: x * cos + rotate_half(x) * sin on the head view of a
// raised projection becomes sol.rope. cos and sin are evaluated for a few
// positions; the frequencies here are theta 10000's for head_dim 16.

// CHECK-LABEL: func.func @forward
// CHECK: %[[R:.*]] = sol.rope %arg4, %arg1 {head_dim = 16 : i64, num_heads = 2 : i64, rope = #sol.rope<theta = 1.000000e+04>} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
// CHECK: %[[V:.*]] = sol.batch_view %[[R]] : tensor<?x32xbf16> -> tensor<1x?x2x16xf32>
// CHECK: %[[T:.*]] = sol.onnx "Transpose"(%[[V]]) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x16xf32>) -> tensor<*xf32>
// CHECK: return %[[T]]
module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @forward(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"}, %q: tensor<?x32xbf16>) -> tensor<*xf32> {
  %pid = sol.batch_view %pos : tensor<?xi32> -> tensor<1x?xi64>
  %inv = sol.onnx_constant {value = dense<[[[1.0], [0.316227766], [0.1], [0.0316227766], [0.01], [0.00316227766], [0.001], [0.000316227766]]]> : tensor<1x8x1xf32>} : tensor<1x8x1xf32>
  %one = sol.onnx_constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %pu = sol.onnx "Unsqueeze"(%pid, %one) : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1x1x?xi64>
  %pf = sol.onnx "Cast"(%pu) {to = 1 : i64} : (tensor<1x1x?xi64>) -> tensor<1x1x?xf32>
  %f = sol.onnx "MatMul"(%inv, %pf) : (tensor<1x8x1xf32>, tensor<1x1x?xf32>) -> tensor<1x8x?xf32>
  %ft = sol.onnx "Transpose"(%f) {perm = array<i64: 0, 2, 1>} : (tensor<1x8x?xf32>) -> tensor<1x?x8xf32>
  %e = sol.onnx "Concat"(%ft, %ft) {axis = -1 : i64} : (tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x16xf32>
  %c = sol.onnx "Cos"(%e) : (tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %s = sol.onnx "Sin"(%e) : (tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %cu = sol.onnx "Unsqueeze"(%c, %one) : (tensor<1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x?x16xf32>
  %su = sol.onnx "Unsqueeze"(%s, %one) : (tensor<1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x?x16xf32>
  %qv = sol.batch_view %q : tensor<?x32xbf16> -> tensor<1x?x2x16xf32>
  %qt = sol.onnx "Transpose"(%qv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x16xf32>) -> tensor<1x2x?x16xf32>
  %i0 = sol.onnx_constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %i8 = sol.onnx_constant {value = dense<8> : tensor<1xi64>} : tensor<1xi64>
  %big = sol.onnx_constant {value = dense<9223372036854775807> : tensor<1xi64>} : tensor<1xi64>
  %last = sol.onnx_constant {value = dense<-1> : tensor<1xi64>} : tensor<1xi64>
  %x1 = sol.onnx "Slice"(%qt, %i0, %i8, %last) : (tensor<1x2x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x?x8xf32>
  %x2 = sol.onnx "Slice"(%qt, %i8, %big, %last) : (tensor<1x2x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x?x8xf32>
  %nx2 = sol.onnx "Neg"(%x2) : (tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %rh = sol.onnx "Concat"(%nx2, %x1) {axis = -1 : i64} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x16xf32>
  %a = sol.onnx "Mul"(%qt, %cu) : (tensor<1x2x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x2x?x16xf32>
  %b = sol.onnx "Mul"(%rh, %su) : (tensor<1x2x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x2x?x16xf32>
  %r = sol.onnx "Add"(%a, %b) : (tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}
}

// -----

// Near miss: the halves of rotate_half the wrong way round.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: sol.rope
module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @forward(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"}, %q: tensor<?x32xbf16>) -> tensor<*xf32> {
  %pid = sol.batch_view %pos : tensor<?xi32> -> tensor<1x?xi64>
  %inv = sol.onnx_constant {value = dense<[[[1.0], [0.316227766], [0.1], [0.0316227766], [0.01], [0.00316227766], [0.001], [0.000316227766]]]> : tensor<1x8x1xf32>} : tensor<1x8x1xf32>
  %one = sol.onnx_constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %pu = sol.onnx "Unsqueeze"(%pid, %one) : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1x1x?xi64>
  %pf = sol.onnx "Cast"(%pu) {to = 1 : i64} : (tensor<1x1x?xi64>) -> tensor<1x1x?xf32>
  %f = sol.onnx "MatMul"(%inv, %pf) : (tensor<1x8x1xf32>, tensor<1x1x?xf32>) -> tensor<1x8x?xf32>
  %ft = sol.onnx "Transpose"(%f) {perm = array<i64: 0, 2, 1>} : (tensor<1x8x?xf32>) -> tensor<1x?x8xf32>
  %e = sol.onnx "Concat"(%ft, %ft) {axis = -1 : i64} : (tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x16xf32>
  %c = sol.onnx "Cos"(%e) : (tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %s = sol.onnx "Sin"(%e) : (tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %cu = sol.onnx "Unsqueeze"(%c, %one) : (tensor<1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x?x16xf32>
  %su = sol.onnx "Unsqueeze"(%s, %one) : (tensor<1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x?x16xf32>
  %qv = sol.batch_view %q : tensor<?x32xbf16> -> tensor<1x?x2x16xf32>
  %qt = sol.onnx "Transpose"(%qv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x16xf32>) -> tensor<1x2x?x16xf32>
  %i0 = sol.onnx_constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %i8 = sol.onnx_constant {value = dense<8> : tensor<1xi64>} : tensor<1xi64>
  %big = sol.onnx_constant {value = dense<9223372036854775807> : tensor<1xi64>} : tensor<1xi64>
  %last = sol.onnx_constant {value = dense<-1> : tensor<1xi64>} : tensor<1xi64>
  %x1 = sol.onnx "Slice"(%qt, %i0, %i8, %last) : (tensor<1x2x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x?x8xf32>
  %x2 = sol.onnx "Slice"(%qt, %i8, %big, %last) : (tensor<1x2x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x?x8xf32>
  %nx2 = sol.onnx "Neg"(%x2) : (tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %rh = sol.onnx "Concat"(%x1, %nx2) {axis = -1 : i64} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x16xf32>
  %a = sol.onnx "Mul"(%qt, %cu) : (tensor<1x2x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x2x?x16xf32>
  %b = sol.onnx "Mul"(%rh, %su) : (tensor<1x2x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x2x?x16xf32>
  %r = sol.onnx "Add"(%a, %b) : (tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}
}

// -----

// Near miss: cos and sin swapped: not the rotation by position x inv_freq.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: sol.rope
module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @forward(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"}, %q: tensor<?x32xbf16>) -> tensor<*xf32> {
  %pid = sol.batch_view %pos : tensor<?xi32> -> tensor<1x?xi64>
  %inv = sol.onnx_constant {value = dense<[[[1.0], [0.316227766], [0.1], [0.0316227766], [0.01], [0.00316227766], [0.001], [0.000316227766]]]> : tensor<1x8x1xf32>} : tensor<1x8x1xf32>
  %one = sol.onnx_constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %pu = sol.onnx "Unsqueeze"(%pid, %one) : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1x1x?xi64>
  %pf = sol.onnx "Cast"(%pu) {to = 1 : i64} : (tensor<1x1x?xi64>) -> tensor<1x1x?xf32>
  %f = sol.onnx "MatMul"(%inv, %pf) : (tensor<1x8x1xf32>, tensor<1x1x?xf32>) -> tensor<1x8x?xf32>
  %ft = sol.onnx "Transpose"(%f) {perm = array<i64: 0, 2, 1>} : (tensor<1x8x?xf32>) -> tensor<1x?x8xf32>
  %e = sol.onnx "Concat"(%ft, %ft) {axis = -1 : i64} : (tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x16xf32>
  %c = sol.onnx "Cos"(%e) : (tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %s = sol.onnx "Sin"(%e) : (tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %cu = sol.onnx "Unsqueeze"(%c, %one) : (tensor<1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x?x16xf32>
  %su = sol.onnx "Unsqueeze"(%s, %one) : (tensor<1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x?x16xf32>
  %qv = sol.batch_view %q : tensor<?x32xbf16> -> tensor<1x?x2x16xf32>
  %qt = sol.onnx "Transpose"(%qv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x16xf32>) -> tensor<1x2x?x16xf32>
  %i0 = sol.onnx_constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %i8 = sol.onnx_constant {value = dense<8> : tensor<1xi64>} : tensor<1xi64>
  %big = sol.onnx_constant {value = dense<9223372036854775807> : tensor<1xi64>} : tensor<1xi64>
  %last = sol.onnx_constant {value = dense<-1> : tensor<1xi64>} : tensor<1xi64>
  %x1 = sol.onnx "Slice"(%qt, %i0, %i8, %last) : (tensor<1x2x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x?x8xf32>
  %x2 = sol.onnx "Slice"(%qt, %i8, %big, %last) : (tensor<1x2x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x?x8xf32>
  %nx2 = sol.onnx "Neg"(%x2) : (tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %rh = sol.onnx "Concat"(%nx2, %x1) {axis = -1 : i64} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x16xf32>
  %a = sol.onnx "Mul"(%qt, %su) : (tensor<1x2x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x2x?x16xf32>
  %b = sol.onnx "Mul"(%rh, %cu) : (tensor<1x2x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x2x?x16xf32>
  %r = sol.onnx "Add"(%a, %b) : (tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}
}
