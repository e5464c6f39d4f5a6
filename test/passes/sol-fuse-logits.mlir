// RUN: solc-opt %s --sol-fuse-logits | FileCheck %s

// sol-fuse-logits: sol.logits as a gather of the wanted rows and the LM head
// with the final norm in its prologue.

// The rows whose logits are wanted are gathered first; the final norm runs
// in the LM head's prologue, with f32 results.
// CHECK-LABEL: func.func @plain
// CHECK-DAG: %[[NW:.*]] = sol.weight @model.norm.weight
// CHECK-DAG: %[[HEAD:.*]] = sol.weight @lm_head.weight
// CHECK: %[[G:.*]] = sol.gather_rows %arg0, %arg1 : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
// CHECK: %[[L:.*]] = sol.norm_linear %[[G]], %[[NW]], %[[HEAD]] {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
// CHECK-NOT: sol.logits
// CHECK: return %[[L]]
func.func @plain(%h: tensor<?x64xbf16>, %rows: tensor<?xi32>) -> tensor<?x256xf32> {
  %nw = sol.weight @model.norm.weight : tensor<64xbf16>
  %head = sol.weight @lm_head.weight : tensor<256x64xbf16>
  %l = sol.logits %h, %nw, %head, %rows {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
  return %l : tensor<?x256xf32>
}

// A last residual add that is still separate runs on the gathered rows:
// both addends are gathered and summed by add_rms_norm (the left one as
// the residual), then the LM head is a plain linear.
// CHECK-LABEL: func.func @add
// CHECK-DAG: %[[NW:.*]] = sol.weight @model.norm.weight
// CHECK-DAG: %[[HEAD:.*]] = sol.weight @lm_head.weight
// CHECK-NOT: sol.add %
// CHECK: %[[GR:.*]] = sol.gather_rows %arg0, %arg2
// CHECK: %[[GX:.*]] = sol.gather_rows %arg1, %arg2
// CHECK: %[[N:.*]], %{{.*}} = sol.add_rms_norm %[[GX]], %[[GR]], %[[NW]] {epsilon = 9.99999974E-6 : f32}
// CHECK: %[[L:.*]] = sol.linear %[[N]], %[[HEAD]] : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
// CHECK-NOT: sol.add %
// CHECK: return %[[L]]
func.func @add(%r: tensor<?x64xbf16>, %x: tensor<?x64xbf16>, %rows: tensor<?xi32>) -> tensor<?x256xf32> {
  %s = sol.add %r, %x : tensor<?x64xbf16>
  %nw = sol.weight @model.norm.weight : tensor<64xbf16>
  %head = sol.weight @lm_head.weight : tensor<256x64xbf16>
  %l = sol.logits %s, %nw, %head, %rows {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
  return %l : tensor<?x256xf32>
}

// An add with another user stays; its sum is gathered as a plain hidden state.
// CHECK-LABEL: func.func @add_two_uses
// CHECK: %[[S:.*]] = sol.add %arg0, %arg1
// CHECK: %[[G:.*]] = sol.gather_rows %[[S]], %arg2
// CHECK: %[[L:.*]] = sol.norm_linear %[[G]],
// CHECK: return %[[L]], %[[S]]
func.func @add_two_uses(%r: tensor<?x64xbf16>, %x: tensor<?x64xbf16>, %rows: tensor<?xi32>) -> (tensor<?x256xf32>, tensor<?x64xbf16>) {
  %s = sol.add %r, %x : tensor<?x64xbf16>
  %nw = sol.weight @model.norm.weight : tensor<64xbf16>
  %head = sol.weight @lm_head.weight : tensor<256x64xbf16>
  %l = sol.logits %s, %nw, %head, %rows {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
  return %l, %s : tensor<?x256xf32>, tensor<?x64xbf16>
}
