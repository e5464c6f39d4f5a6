// RUN: solc-opt %s --split-input-file --sol-raise-embedding | FileCheck %s

// sol-raise-embedding: a Gather of a 2-D weight's rows by token ids.

// CHECK-LABEL: func.func @embedding
// CHECK: %[[T:.*]] = sol.weight @embed_tokens.weight : tensor<256x64xf16>
// CHECK: %[[TB:.*]] = sol.convert_weight %[[T]]
// CHECK: %[[IDS:.*]] = sol.batch_view %arg0 : tensor<?x?xi64> -> tensor<?xi32>
// CHECK: %[[H:.*]] = sol.embedding %[[IDS]], %[[TB]] : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
// CHECK: sol.batch_view %[[H]] : tensor<?x64xbf16> -> tensor<?x?x64xf16>
func.func @embedding(%ids: tensor<?x?xi64>) -> tensor<?x?x64xf16> {
  %t = sol.weight @embed_tokens.weight : tensor<256x64xf16>
  %h = sol.onnx "Gather"(%t, %ids) : (tensor<256x64xf16>, tensor<?x?xi64>) -> tensor<?x?x64xf16>
  return %h : tensor<?x?x64xf16>
}

// -----

// Gathers that are not lookups: of a shape (a 1-D value), along axis 1.
// CHECK-LABEL: func.func @not_embedding
// CHECK-NOT: sol.embedding
func.func @not_embedding(%x: tensor<?x?x64xf32>, %ids: tensor<?x?xi64>) -> (tensor<*xi64>, tensor<*xf16>) {
  %s = sol.onnx "Shape"(%x) : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %i = sol.onnx_constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %b = sol.onnx "Gather"(%s, %i) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<*xi64>
  %t = sol.weight @table : tensor<256x64xf16>
  %c = sol.onnx "Gather"(%t, %ids) {axis = 1 : i64} : (tensor<256x64xf16>, tensor<?x?xi64>) -> tensor<*xf16>
  return %b, %c : tensor<*xi64>, tensor<*xf16>
}
