// RUN: solc-opt %s --split-input-file --sol-raise-linear | FileCheck %s

// Int8 weights as onnxruntime's quantizers store them: the linear of the
// dequantized weight, (codes - zero) · scale per output column.

// onnxruntime's dynamic quantization (quantize_dynamic, MatMulConstBOnly).
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[D:.*]] = sol.dequantize_weight %{{.*}}, %{{.*}}, %{{.*}} : (tensor<64x16xi8>, tensor<16xf32>, tensor<16xi8>) -> tensor<64x16xbf16>
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
// CHECK: %[[D:.*]] = sol.dequantize_weight %{{.*}}, %{{.*}}, %{{.*}} : (tensor<64x16xi8>, tensor<16xf32>, tensor<16xi8>) -> tensor<64x16xbf16>
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
