// RUN: solc-opt %s --split-input-file --sol-raise-rms-norm | FileCheck %s

// onnxruntime's norms as onnxruntime-genai writes them:
// SimplifiedLayerNormalization (default domain) is sol.rms_norm;
// com.microsoft SkipSimplifiedLayerNormalization is the residual sum
// (output 3) and its norm (output 0).

// CHECK-LABEL: func.func @norms
// CHECK: %[[N0:.*]] = sol.rms_norm %arg0, {{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<?x64xbf16>, tensor<64xf32>) -> tensor<?x64xbf16>
// CHECK: %[[V0:.*]] = sol.batch_view %[[N0]]
// CHECK: %[[SUM:.*]] = sol.add %arg0, %arg1 : tensor<?x64xbf16>
// CHECK: %[[N1:.*]] = sol.rms_norm %[[SUM]], {{.*}} {epsilon = 9.99999997E-7 : f32}
// CHECK: %[[V3:.*]] = sol.batch_view %[[SUM]] : tensor<?x64xbf16> -> tensor<1x?x64xf32>
// CHECK: %[[V1:.*]] = sol.batch_view %[[N1]]
// CHECK: return %[[V0]], %[[V1]], %[[V3]]
func.func @norms(%h: tensor<?x64xbf16>, %attn: tensor<?x64xbf16>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) {
  %w0 = sol.weight @"model.layers.0.input_layernorm.weight" : tensor<64xf32>
  %w1 = sol.weight @"model.layers.0.post_attention_layernorm.weight" : tensor<64xf32>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %a = sol.batch_view %attn : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %n0 = sol.onnx "SimplifiedLayerNormalization"(%x, %w0) {axis = -1 : i64, epsilon = 9.99999997E-7 : f32, stash_type = 1 : i64} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %skip:4 = sol.onnx "SkipSimplifiedLayerNormalization"(%x, %a, %w1) {domain = "com.microsoft", epsilon = 9.99999997E-7 : f32} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, none, none, tensor<1x?x64xf32>)
  return %n0, %skip#0, %skip#3 : tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// -----

// A near miss: a bias input.
// CHECK: reason = "a bias input is not supported"
// CHECK-LABEL: func.func @bias
// CHECK: sol.onnx "SkipSimplifiedLayerNormalization"
func.func @bias(%h: tensor<?x64xbf16>, %attn: tensor<?x64xbf16>) -> tensor<1x?x64xf32> {
  %w1 = sol.weight @"w" : tensor<64xf32>
  %b = sol.weight @"b" : tensor<64xf32>
  %x = sol.batch_view %h : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %a = sol.batch_view %attn : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %skip:4 = sol.onnx "SkipSimplifiedLayerNormalization"(%x, %a, %w1, %b) {domain = "com.microsoft", epsilon = 9.99999997E-7 : f32} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, none, none, tensor<1x?x64xf32>)
  return %skip#0 : tensor<1x?x64xf32>
}
