// RUN: solc-opt %s --split-input-file --sol-raise-linear | FileCheck %s
// RUN: solc-opt %s --split-input-file --sol-raise-linear 2>&1 >/dev/null | FileCheck %s --check-prefix=NOTE

// com.microsoft MatMulNBits: 4-bit codes with integer zero points (or none)
// and K a multiple of block_size are Sol's int4 linear, repacked by
// sol.unpack_nbits; the bias Add after it is the linear's bias.

// CHECK-LABEL: func.func @int4
// CHECK: %[[C:.*]]:3 = sol.unpack_nbits %{{.*}}, %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 32 : i64} : (tensor<96x2x16xui8>, tensor<96x2xf32>, tensor<96x1xui8>) -> (tensor<96x64xi4>, tensor<96x2xf32>, tensor<96x2xui8>)
// CHECK: sol.linear %arg0, %[[C]]#0, %{{.*}} scales %[[C]]#1 zeros %[[C]]#2 {group_size = 32 : i64, quant = #sol<quant int4>}
// CHECK-NOT: "MatMulNBits"
func.func @int4(%h: tensor<?x64xbf16>) -> tensor<1x?x96xf32> {
  %q = sol.weight @"qkv.weight_Q4" : tensor<96x2x16xui8>
  %s = sol.weight @"qkv.weight_scales" : tensor<96x2xf32>
  %z = sol.weight @"qkv.weight_zero_points" : tensor<96x1xui8>
  %b = sol.weight @"qkv.bias" : tensor<96xf32>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %y = sol.onnx "MatMulNBits"(%x, %q, %s, %z) {domain = "com.microsoft", K = 64 : i64, N = 96 : i64, bits = 4 : i64, block_size = 32 : i64, accuracy_level = 4 : i64} : (tensor<1x?x64xf32>, tensor<96x2x16xui8>, tensor<96x2xf32>, tensor<96x1xui8>) -> tensor<1x?x96xf32>
  %yb = sol.onnx "Add"(%y, %b) : (tensor<1x?x96xf32>, tensor<96xf32>) -> tensor<1x?x96xf32>
  return %yb : tensor<1x?x96xf32>
}

// -----

// 8-bit codes: dequantized to bf16, noted once.
// NOTE: remark: MatMulNBits weights of 8 bits (or with float zero points) are dequantized to bf16
// CHECK-LABEL: func.func @int8
// CHECK: %[[W:.*]] = sol.unpack_nbits %{{.*}}, %{{.*}} {bits = 8 : i64, block_size = 32 : i64} : (tensor<16x2x32xui8>, tensor<16x2xf32>) -> (tensor<16x64xbf16>)
// CHECK: sol.linear %arg0, %[[W]] : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
// CHECK-NOT: sol.nbits
func.func @int8(%h: tensor<?x64xbf16>) -> tensor<1x?x16xf32> {
  %q = sol.weight @"w.weight_Q8" : tensor<16x2x32xui8>
  %s = sol.weight @"w.weight_scales" : tensor<16x2xf32>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %y = sol.onnx "MatMulNBits"(%x, %q, %s) {domain = "com.microsoft", K = 64 : i64, N = 16 : i64, bits = 8 : i64, block_size = 32 : i64} : (tensor<1x?x64xf32>, tensor<16x2x32xui8>, tensor<16x2xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}

// -----

// Refused: weights prepacked for a GPU kernel.
// CHECK: reason = "weight_prepacked = 2: the weights are in a GPU kernel's prepacked layout; export them unpacked (onnxruntime-genai's matmulnbits_weights_prepacked=0)"
// CHECK-LABEL: func.func @prepacked
// CHECK: sol.onnx "MatMulNBits"
func.func @prepacked(%h: tensor<?x64xbf16>) -> tensor<1x?x16xf32> {
  %q = sol.weight @"w.weight_Q4" : tensor<16x2x16xui8>
  %s = sol.weight @"w.weight_scales" : tensor<16x2xf32>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %y = sol.onnx "MatMulNBits"(%x, %q, %s) {domain = "com.microsoft", K = 64 : i64, N = 16 : i64, bits = 4 : i64, block_size = 32 : i64, weight_prepacked = 2 : i64} : (tensor<1x?x64xf32>, tensor<16x2x16xui8>, tensor<16x2xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}

// -----

// Split of a raised value's last axis (a packed QKV): sol.split.
// CHECK-LABEL: func.func @split
// CHECK: %[[S:.*]]:3 = sol.split %arg0 : tensor<?x256xbf16> -> tensor<?x128xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>
// CHECK-NOT: "Split"
func.func @split(%qkv: tensor<?x256xbf16>) -> (tensor<1x?x128xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) {
  %x = sol.batch_view %qkv : tensor<?x256xbf16> -> tensor<1x?x256xf32>
  %sizes = sol.onnx_constant {value = dense<[128, 64, 64]> : tensor<3xi64>} : tensor<3xi64>
  %p:3 = sol.onnx "Split"(%x, %sizes) {axis = -1 : i64} : (tensor<1x?x256xf32>, tensor<3xi64>) -> (tensor<1x?x128xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>)
  return %p#0, %p#1, %p#2 : tensor<1x?x128xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// -----

// Act-order (g_idx, each input's block): the codes' columns sorted by
// block and the input gathered in that order; a g_idx of k / block_size is
// no reordering.
// CHECK-LABEL: func.func @act_order
// CHECK-DAG: %[[X:.*]] = sol.gather_columns %arg0 {columns = array<i32: 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63>} : (tensor<?x64xbf16>) -> tensor<?x64xbf16>
// CHECK-DAG: %[[C:.*]]:3 = sol.unpack_nbits %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 32 : i64, columns = array<i32: 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63>}
// CHECK: sol.linear %[[X]], %[[C]]#0
// CHECK-NOT: sol.gather_columns
// CHECK: sol.linear %arg0
func.func @act_order(%h: tensor<?x64xbf16>) -> (tensor<1x?x16xf32>, tensor<1x?x16xf32>) {
  %q = sol.weight @"w.weight_Q4" : tensor<16x2x16xui8>
  %s = sol.weight @"w.weight_scales" : tensor<16x2xf32>
  %none = sol.onnx_none
  %g = sol.onnx_constant {value = dense<[0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]> : tensor<64xi32>} : tensor<64xi32>
  %t = sol.onnx_constant {value = dense<[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]> : tensor<64xi32>} : tensor<64xi32>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %y = sol.onnx "MatMulNBits"(%x, %q, %s, %none, %g) {domain = "com.microsoft", K = 64 : i64, N = 16 : i64, bits = 4 : i64, block_size = 32 : i64} : (tensor<1x?x64xf32>, tensor<16x2x16xui8>, tensor<16x2xf32>, none, tensor<64xi32>) -> tensor<1x?x16xf32>
  %y2 = sol.onnx "MatMulNBits"(%x, %q, %s, %none, %t) {domain = "com.microsoft", K = 64 : i64, N = 16 : i64, bits = 4 : i64, block_size = 32 : i64} : (tensor<1x?x64xf32>, tensor<16x2x16xui8>, tensor<16x2xf32>, none, tensor<64xi32>) -> tensor<1x?x16xf32>
  return %y, %y2 : tensor<1x?x16xf32>, tensor<1x?x16xf32>
}

// -----

// Refused: g_idx with packed zero points (onnxruntime's CPU kernel then
// ignores the zero points); a g_idx whose blocks are not block_size each.
// CHECK-DAG: reason = "g_idx with packed zero points (onnxruntime's CPU kernel ignores such zero points when g_idx is given, so the graph means two things); re-export it without g_idx or with float zero points"
// CHECK-DAG: reason = "g_idx puts 64 inputs in group 0, but group size 32 needs exactly that many in each: g_idx and the group size disagree"
// CHECK-LABEL: func.func @act_order_refused
func.func @act_order_refused(%h: tensor<?x64xbf16>) -> (tensor<1x?x16xf32>, tensor<1x?x16xf32>) {
  %q = sol.weight @"w.weight_Q4" : tensor<16x2x16xui8>
  %s = sol.weight @"w.weight_scales" : tensor<16x2xf32>
  %z = sol.weight @"w.weight_zero_points" : tensor<16x1xui8>
  %none = sol.onnx_none
  %g = sol.onnx_constant {value = dense<[0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]> : tensor<64xi32>} : tensor<64xi32>
  %zero = sol.onnx_constant {value = dense<0> : tensor<64xi32>} : tensor<64xi32>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %y = sol.onnx "MatMulNBits"(%x, %q, %s, %z, %g) {domain = "com.microsoft", K = 64 : i64, N = 16 : i64, bits = 4 : i64, block_size = 32 : i64} : (tensor<1x?x64xf32>, tensor<16x2x16xui8>, tensor<16x2xf32>, tensor<16x1xui8>, tensor<64xi32>) -> tensor<1x?x16xf32>
  %y2 = sol.onnx "MatMulNBits"(%x, %q, %s, %none, %zero) {domain = "com.microsoft", K = 64 : i64, N = 16 : i64, bits = 4 : i64, block_size = 32 : i64} : (tensor<1x?x64xf32>, tensor<16x2x16xui8>, tensor<16x2xf32>, none, tensor<64xi32>) -> tensor<1x?x16xf32>
  return %y, %y2 : tensor<1x?x16xf32>, tensor<1x?x16xf32>
}

// -----

// A bias input that is not [N] is refused before anything is built.
// CHECK-LABEL: func.func @wrong_bias
// CHECK-NOT: sol.unpack_nbits
// CHECK: sol.onnx "MatMulNBits"
func.func @wrong_bias(%x: tensor<1x?x64xf32>) -> tensor<1x?x16xf32> {
  %q = sol.weight @"w.weight_Q4" : tensor<16x2x16xui8>
  %s = sol.weight @"w.weight_scales" : tensor<16x2xf32>
  %b = sol.weight @"w.bias" : tensor<8xf32>
  %none = sol.onnx_none
  %y = sol.onnx "MatMulNBits"(%x, %q, %s, %none, %none, %b) {domain = "com.microsoft", K = 64 : i64, N = 16 : i64, bits = 4 : i64, block_size = 32 : i64} : (tensor<1x?x64xf32>, tensor<16x2x16xui8>, tensor<16x2xf32>, none, none, tensor<8xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}
