// RUN: not solc-opt %s --sol-raise-check 2>&1 | FileCheck %s

// sol-raise-check refuses a graph with ONNX nodes left, in one report: every
// kind of node left (domain and type, count, first node names), the graph
// inputs still read, and the views between raised and unraised parts.
// CHECK: error: the ONNX graph was not raised completely into Sol's ops; Sol compiles only graphs it can raise whole
// CHECK-NEXT: ONNX nodes left (domain op_type: count, first nodes):
// CHECK-NEXT: ai.onnx Cast: 1 (mask/Cast)
// CHECK-NEXT: ai.onnx Softmax: 2 (attn.0/Softmax, attn.1/Softmax)
// CHECK-NEXT: com.microsoft GroupQueryAttention: 1 (gqa)
// CHECK-NEXT: graph inputs still read by ONNX nodes: attention_mask
// CHECK-NEXT: 1 values where raised ops meet ONNX nodes that are not raised
// CHECK-NEXT: compile the model's Hugging Face checkpoint directory instead, or export it again
func.func @forward(%x: tensor<?x64xbf16> {sol.name = "tokens"}, %mask: tensor<?x?xi64> {sol.name = "attention_mask"}) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %v = sol.batch_view %x : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %a = sol.onnx "Softmax"(%v) {axis = -1 : i64} : (tensor<1x?x64xf32>) -> tensor<*xf32> loc("attn.0/Softmax")
  %b = sol.onnx "Softmax"(%v) {axis = -1 : i64} : (tensor<1x?x64xf32>) -> tensor<*xf32> loc("attn.1/Softmax")
  %m = sol.onnx "Cast"(%mask) {to = 1 : i64} : (tensor<?x?xi64>) -> tensor<*xf32> loc("mask/Cast")
  %g = sol.onnx "GroupQueryAttention"(%m) {domain = "com.microsoft"} : (tensor<*xf32>) -> tensor<*xf32> loc("gqa")
  return %a, %b, %g : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}
