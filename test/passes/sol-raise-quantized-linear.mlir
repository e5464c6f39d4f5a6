// RUN: solc-opt %s --split-input-file --sol-raise-linear | FileCheck %s

// Int8 weights as onnxruntime's quantizers store them: the linear of the
// dequantized weight, (codes - zero) · scale per output column, where the
// zero points cannot be read (here, without a weight store) or are not 0;
// Sol's int8 where they are.

// onnxruntime's dynamic quantization (quantize_dynamic, MatMulConstBOnly).
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[D:.*]] = sol.dequantize_weight %{{.*}}, %{{.*}}, %{{.*}} : (tensor<64x16xi8>, tensor<16xf32>, tensor<16xi8>) -> (tensor<64x16xbf16>)
// CHECK: %[[T:.*]] = sol.transpose_weight %[[D]] : tensor<64x16xbf16> -> tensor<16x64xbf16>
// CHECK: sol.linear %arg0, %[[T]] : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
// CHECK-NOT: "MatMulInteger"
func.func @dynamic(%h: tensor<?x64xbf16>) -> tensor<1x?x16xf32> {
  %q = sol.weight @"w_quantized" : tensor<64x16xi8>
  %s = sol.weight @"w_scale" : tensor<16xf32>
  %z = sol.weight @"w_zero_point" : tensor<16xi8>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %xq:3 = sol.onnx "DynamicQuantizeLinear"(%x) : (tensor<1x?x64xf32>) -> (tensor<1x?x64xui8>, tensor<f32>, tensor<ui8>)
  %mm = sol.onnx "MatMulInteger"(%xq#0, %q, %xq#2, %z) : (tensor<1x?x64xui8>, tensor<64x16xi8>, tensor<ui8>, tensor<16xi8>) -> tensor<1x?x16xi32>
  %f = sol.onnx "Cast"(%mm) {to = 1 : i64} : (tensor<1x?x16xi32>) -> tensor<1x?x16xf32>
  %scales = sol.onnx "Mul"(%xq#1, %s) : (tensor<f32>, tensor<16xf32>) -> tensor<16xf32>
  %y = sol.onnx "Mul"(%f, %scales) : (tensor<1x?x16xf32>, tensor<16xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}

// -----

// A near miss: the output scale is not x_scale · W_scale.
// CHECK: reason = "the scale is not x_scale {{.*}} W_scale"
// CHECK-LABEL: func.func @other_scale
// CHECK: sol.onnx "MatMulInteger"
func.func @other_scale(%h: tensor<?x64xbf16>, %other: tensor<16xf32>) -> tensor<1x?x16xf32> {
  %q = sol.weight @"w_quantized" : tensor<64x16xi8>
  %z = sol.weight @"w_zero_point" : tensor<16xi8>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %xq:3 = sol.onnx "DynamicQuantizeLinear"(%x) : (tensor<1x?x64xf32>) -> (tensor<1x?x64xui8>, tensor<f32>, tensor<ui8>)
  %mm = sol.onnx "MatMulInteger"(%xq#0, %q, %xq#2, %z) : (tensor<1x?x64xui8>, tensor<64x16xi8>, tensor<ui8>, tensor<16xi8>) -> tensor<1x?x16xi32>
  %f = sol.onnx "Cast"(%mm) {to = 1 : i64} : (tensor<1x?x16xi32>) -> tensor<1x?x16xf32>
  %y = sol.onnx "Mul"(%f, %other) : (tensor<1x?x16xf32>, tensor<16xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}

// -----

// QDQ: MatMul by DequantizeLinear(codes, scale, zero, axis 1).
// CHECK-LABEL: func.func @qdq
// CHECK: %[[D:.*]] = sol.dequantize_weight %{{.*}}, %{{.*}}, %{{.*}} : (tensor<64x16xi8>, tensor<16xf32>, tensor<16xi8>) -> (tensor<64x16xbf16>)
// CHECK: %[[T:.*]] = sol.transpose_weight %[[D]]
// CHECK: sol.linear %arg0, %[[T]]
// CHECK-NOT: "DequantizeLinear"
func.func @qdq(%h: tensor<?x64xbf16>) -> tensor<1x?x16xf32> {
  %q = sol.weight @"w_quantized" : tensor<64x16xi8>
  %s = sol.weight @"w_scale" : tensor<16xf32>
  %z = sol.weight @"w_zero_point" : tensor<16xi8>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %w = sol.onnx "DequantizeLinear"(%q, %s, %z) {axis = 1 : i64} : (tensor<64x16xi8>, tensor<16xf32>, tensor<16xi8>) -> tensor<64x16xf32>
  %y = sol.onnx "MatMul"(%x, %w) : (tensor<1x?x64xf32>, tensor<64x16xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}

// -----

// Symmetric int8 codes per output column (no zero point, or zero points
// that are constant zeros) are Sol's int8 as they are: the codes transposed
// to the linear's [out, in], scales per output.
// CHECK-LABEL: func.func @qdq_int8
// CHECK: %[[C:.*]]:2 = sol.dequantize_weight %{{.*}}, %{{.*}}, %{{.*}} : (tensor<64x16xi8>, tensor<16xf32>, tensor<16xi8>) -> (tensor<16x64xi8>, tensor<16xf32>)
// CHECK: sol.linear %arg0, %[[C]]#0 scales %[[C]]#1 {quant = #sol<quant int8>}
// CHECK: %[[D:.*]]:2 = sol.dequantize_weight %{{.*}}, %{{.*}} : (tensor<64x16xi8>, tensor<f32>) -> (tensor<16x64xi8>, tensor<16xf32>)
// CHECK: sol.linear %{{.*}}, %[[D]]#0 scales %[[D]]#1 {quant = #sol<quant int8>}
func.func @qdq_int8(%h: tensor<?x64xbf16>) -> (tensor<1x?x16xf32>, tensor<1x?x16xf32>) {
  %q = sol.weight @"w_quantized" : tensor<64x16xi8>
  %s = sol.weight @"w_scale" : tensor<16xf32>
  %z = sol.onnx_constant @"w_zero_point" {value = dense<0> : tensor<16xi8>} : tensor<16xi8>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %w = sol.onnx "DequantizeLinear"(%q, %s, %z) {axis = 1 : i64} : (tensor<64x16xi8>, tensor<16xf32>, tensor<16xi8>) -> tensor<64x16xf32>
  %y = sol.onnx "MatMul"(%x, %w) : (tensor<1x?x64xf32>, tensor<64x16xf32>) -> tensor<1x?x16xf32>
  %q2 = sol.weight @"w2_quantized" : tensor<64x16xi8>
  %s2 = sol.onnx_constant @"w2_scale" {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %w2 = sol.onnx "DequantizeLinear"(%q2, %s2) : (tensor<64x16xi8>, tensor<f32>) -> tensor<64x16xf32>
  %y2 = sol.onnx "MatMul"(%x, %w2) : (tensor<1x?x64xf32>, tensor<64x16xf32>) -> tensor<1x?x16xf32>
  return %y, %y2 : tensor<1x?x16xf32>, tensor<1x?x16xf32>
}

// -----

// A zero point that is not 0 (or unsigned codes) is not Sol's int8: the
// weight is dequantized to bf16.
// CHECK-LABEL: func.func @qdq_shifted
// CHECK: %[[D:.*]] = sol.dequantize_weight %{{.*}}, %{{.*}}, %{{.*}} : (tensor<64x16xi8>, tensor<16xf32>, tensor<16xi8>) -> (tensor<64x16xbf16>)
// CHECK: sol.transpose_weight %[[D]]
func.func @qdq_shifted(%h: tensor<?x64xbf16>) -> tensor<1x?x16xf32> {
  %q = sol.weight @"w_quantized" : tensor<64x16xi8>
  %s = sol.weight @"w_scale" : tensor<16xf32>
  %z = sol.onnx_constant @"w_zero_point" {value = dense<3> : tensor<16xi8>} : tensor<16xi8>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %w = sol.onnx "DequantizeLinear"(%q, %s, %z) {axis = 1 : i64} : (tensor<64x16xi8>, tensor<16xf32>, tensor<16xi8>) -> tensor<64x16xf32>
  %y = sol.onnx "MatMul"(%x, %w) : (tensor<1x?x64xf32>, tensor<64x16xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}

// -----

// Opset 21's blocked QDQ: uint4 codes in blocks of 32 along the inputs
// (axis 0) are Sol's int4 with group 32.
// CHECK-LABEL: func.func @qdq_int4
// CHECK: %[[C:.*]]:3 = sol.dequantize_weight %{{.*}}, %{{.*}}, %{{.*}} {axis = 0 : i64, block_size = 32 : i64} : (tensor<64x16xui4>, tensor<2x16xf32>, tensor<2x16xui4>) -> (tensor<16x64xi4>, tensor<16x2xf32>, tensor<16x2xui8>)
// CHECK: sol.linear %arg0, %[[C]]#0 scales %[[C]]#1 zeros %[[C]]#2 {group_size = 32 : i64, quant = #sol<quant int4>}
func.func @qdq_int4(%h: tensor<?x64xbf16>) -> tensor<1x?x16xf32> {
  %q = sol.weight @"w_quantized" : tensor<64x16xui4>
  %s = sol.weight @"w_scale" : tensor<2x16xf32>
  %z = sol.weight @"w_zero_point" : tensor<2x16xui4>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %w = sol.onnx "DequantizeLinear"(%q, %s, %z) {axis = 0 : i64, block_size = 32 : i64} : (tensor<64x16xui4>, tensor<2x16xf32>, tensor<2x16xui4>) -> tensor<64x16xf32>
  %y = sol.onnx "MatMul"(%x, %w) : (tensor<1x?x64xf32>, tensor<64x16xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}
