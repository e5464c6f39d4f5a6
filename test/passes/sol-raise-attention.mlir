// RUN: solc-opt %s --split-input-file --sol-raise-attention | FileCheck %s

// sol-raise-attention: eager attention over a past input concatenated with
// the new tokens (GQA: 2 query heads per KV head) into sol.attention of the
// layer the past input names. The mask is evaluated: causal here, built from
// positions as a Range over the cached length and a comparison.

// CHECK-LABEL: func.func @forward
// CHECK: %[[A:.*]] = sol.attention %arg6, %arg7, %arg8, %arg1, %arg2 {head_dim = 16 : i64, layer = 3 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, scale = 2.500000e-01 : f32} : (tensor<?x32xbf16>, tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x32xbf16>
// CHECK: sol.batch_view %[[A]] : tensor<?x32xbf16> -> tensor<*xf32>
// CHECK-NOT: "Softmax"
module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @forward(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"},
                   %pk: tensor<?x1x?x16xf32> {sol.name = "past_key_values.3.key"}, %pv: tensor<?x1x?x16xf32> {sol.name = "past_key_values.3.value"},
                   %q: tensor<?x32xbf16>, %k: tensor<?x16xbf16>, %v: tensor<?x16xbf16>) -> (tensor<*xf32>, tensor<1x1x?x16xf32>) {
  %qv = sol.batch_view %q : tensor<?x32xbf16> -> tensor<1x?x2x16xf32>
  %qt = sol.onnx "Transpose"(%qv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x16xf32>) -> tensor<1x2x?x16xf32>
  %kv = sol.batch_view %k : tensor<?x16xbf16> -> tensor<1x?x1x16xf32>
  %kt = sol.onnx "Transpose"(%kv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x1x16xf32>) -> tensor<1x1x?x16xf32>
  %vv = sol.batch_view %v : tensor<?x16xbf16> -> tensor<1x?x1x16xf32>
  %vt = sol.onnx "Transpose"(%vv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x1x16xf32>) -> tensor<1x1x?x16xf32>
  %kc = sol.onnx "Concat"(%pk, %kt) {axis = 2 : i64} : (tensor<?x1x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32>
  %vc = sol.onnx "Concat"(%pv, %vt) {axis = -2 : i64} : (tensor<?x1x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32>
  %ax2 = sol.onnx_constant {value = dense<2> : tensor<1xi64>} : tensor<1xi64>
  %rep = sol.onnx_constant {value = dense<[1, 1, 2, 1, 16]> : tensor<5xi64>} : tensor<5xi64>
  %heads = sol.onnx_constant {value = dense<[1, 2, -1, 16]> : tensor<4xi64>} : tensor<4xi64>
  %ku = sol.onnx "Unsqueeze"(%kc, %ax2) : (tensor<1x1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x1x?x16xf32>
  %ke = sol.onnx "Expand"(%ku, %rep) : (tensor<1x1x1x?x16xf32>, tensor<5xi64>) -> tensor<1x1x2x?x16xf32>
  %kr = sol.onnx "Reshape"(%ke, %heads) : (tensor<1x1x2x?x16xf32>, tensor<4xi64>) -> tensor<1x2x?x16xf32>
  %vu = sol.onnx "Unsqueeze"(%vc, %ax2) : (tensor<1x1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x1x?x16xf32>
  %ve = sol.onnx "Expand"(%vu, %rep) : (tensor<1x1x1x?x16xf32>, tensor<5xi64>) -> tensor<1x1x2x?x16xf32>
  %vr = sol.onnx "Reshape"(%ve, %heads) : (tensor<1x1x2x?x16xf32>, tensor<4xi64>) -> tensor<1x2x?x16xf32>
  %ktt = sol.onnx "Transpose"(%kr) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x16xf32>) -> tensor<1x2x16x?xf32>
  %scores = sol.onnx "MatMul"(%qt, %ktt) : (tensor<1x2x?x16xf32>, tensor<1x2x16x?xf32>) -> tensor<1x2x?x?xf32>
  %sqrt = sol.onnx_constant {value = dense<4.0> : tensor<f32>} : tensor<f32>
  %scaled = sol.onnx "Div"(%scores, %sqrt) : (tensor<1x2x?x?xf32>, tensor<f32>) -> tensor<1x2x?x?xf32>
  %shape = sol.onnx "Shape"(%kc) : (tensor<1x1x?x16xf32>) -> tensor<4xi64>
  %i2 = sol.onnx_constant {value = dense<2> : tensor<i64>} : tensor<i64>
  %t = sol.onnx "Gather"(%shape, %i2) {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %zero = sol.onnx_constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %step = sol.onnx_constant {value = dense<1> : tensor<i64>} : tensor<i64>
  %kpos = sol.onnx "Range"(%zero, %t, %step) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %ax0 = sol.onnx_constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %ax1 = sol.onnx_constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %kpos2 = sol.onnx "Unsqueeze"(%kpos, %ax0) : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %pid = sol.batch_view %pos : tensor<?xi32> -> tensor<1x?xi64>
  %flat = sol.onnx_constant {value = dense<[-1, 1]> : tensor<2xi64>} : tensor<2xi64>
  %qpos2 = sol.onnx "Reshape"(%pid, %flat) : (tensor<1x?xi64>, tensor<2xi64>) -> tensor<?x1xi64>
  %allowed = sol.onnx "LessOrEqual"(%kpos2, %qpos2) : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %fzero = sol.onnx_constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %fmin = sol.onnx_constant {value = dense<-3.40282347E+38> : tensor<f32>} : tensor<f32>
  %m = sol.onnx "Where"(%allowed, %fzero, %fmin) : (tensor<?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32>
  %axes01 = sol.onnx_constant {value = dense<[0, 1]> : tensor<2xi64>} : tensor<2xi64>
  %mask = sol.onnx "Unsqueeze"(%m, %axes01) : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<1x1x?x?xf32>
  %sum = sol.onnx "Add"(%scaled, %mask) : (tensor<1x2x?x?xf32>, tensor<1x1x?x?xf32>) -> tensor<1x2x?x?xf32>
  %p = sol.onnx "Softmax"(%sum) {axis = -1 : i64} : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %o = sol.onnx "MatMul"(%p, %vr) : (tensor<1x2x?x?xf32>, tensor<1x2x?x16xf32>) -> tensor<1x2x?x16xf32>
  %ot = sol.onnx "Transpose"(%o) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x?x16xf32>) -> tensor<*xf32>
  return %ot, %kc : tensor<*xf32>, tensor<1x1x?x16xf32>
}
}

// -----

// A sliding window of 4 (keys newer than position - 4), recorded on the op.
// CHECK-LABEL: func.func @forward
// CHECK: sol.attention {{.*}}sliding_window = 4 : i64
module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @forward(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"},
                   %pk: tensor<?x1x?x16xf32> {sol.name = "past_key_values.3.key"}, %pv: tensor<?x1x?x16xf32> {sol.name = "past_key_values.3.value"},
                   %q: tensor<?x32xbf16>, %k: tensor<?x16xbf16>, %v: tensor<?x16xbf16>) -> (tensor<*xf32>, tensor<1x1x?x16xf32>) {
  %qv = sol.batch_view %q : tensor<?x32xbf16> -> tensor<1x?x2x16xf32>
  %qt = sol.onnx "Transpose"(%qv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x16xf32>) -> tensor<1x2x?x16xf32>
  %kv = sol.batch_view %k : tensor<?x16xbf16> -> tensor<1x?x1x16xf32>
  %kt = sol.onnx "Transpose"(%kv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x1x16xf32>) -> tensor<1x1x?x16xf32>
  %vv = sol.batch_view %v : tensor<?x16xbf16> -> tensor<1x?x1x16xf32>
  %vt = sol.onnx "Transpose"(%vv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x1x16xf32>) -> tensor<1x1x?x16xf32>
  %kc = sol.onnx "Concat"(%pk, %kt) {axis = 2 : i64} : (tensor<?x1x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32>
  %vc = sol.onnx "Concat"(%pv, %vt) {axis = -2 : i64} : (tensor<?x1x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32>
  %ax2 = sol.onnx_constant {value = dense<2> : tensor<1xi64>} : tensor<1xi64>
  %rep = sol.onnx_constant {value = dense<[1, 1, 2, 1, 16]> : tensor<5xi64>} : tensor<5xi64>
  %heads = sol.onnx_constant {value = dense<[1, 2, -1, 16]> : tensor<4xi64>} : tensor<4xi64>
  %ku = sol.onnx "Unsqueeze"(%kc, %ax2) : (tensor<1x1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x1x?x16xf32>
  %ke = sol.onnx "Expand"(%ku, %rep) : (tensor<1x1x1x?x16xf32>, tensor<5xi64>) -> tensor<1x1x2x?x16xf32>
  %kr = sol.onnx "Reshape"(%ke, %heads) : (tensor<1x1x2x?x16xf32>, tensor<4xi64>) -> tensor<1x2x?x16xf32>
  %vu = sol.onnx "Unsqueeze"(%vc, %ax2) : (tensor<1x1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x1x?x16xf32>
  %ve = sol.onnx "Expand"(%vu, %rep) : (tensor<1x1x1x?x16xf32>, tensor<5xi64>) -> tensor<1x1x2x?x16xf32>
  %vr = sol.onnx "Reshape"(%ve, %heads) : (tensor<1x1x2x?x16xf32>, tensor<4xi64>) -> tensor<1x2x?x16xf32>
  %ktt = sol.onnx "Transpose"(%kr) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x16xf32>) -> tensor<1x2x16x?xf32>
  %scores = sol.onnx "MatMul"(%qt, %ktt) : (tensor<1x2x?x16xf32>, tensor<1x2x16x?xf32>) -> tensor<1x2x?x?xf32>
  %sqrt = sol.onnx_constant {value = dense<4.0> : tensor<f32>} : tensor<f32>
  %scaled = sol.onnx "Div"(%scores, %sqrt) : (tensor<1x2x?x?xf32>, tensor<f32>) -> tensor<1x2x?x?xf32>
  %shape = sol.onnx "Shape"(%kc) : (tensor<1x1x?x16xf32>) -> tensor<4xi64>
  %i2 = sol.onnx_constant {value = dense<2> : tensor<i64>} : tensor<i64>
  %t = sol.onnx "Gather"(%shape, %i2) {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %zero = sol.onnx_constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %step = sol.onnx_constant {value = dense<1> : tensor<i64>} : tensor<i64>
  %kpos = sol.onnx "Range"(%zero, %t, %step) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %ax0 = sol.onnx_constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %ax1 = sol.onnx_constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %kpos2 = sol.onnx "Unsqueeze"(%kpos, %ax0) : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %pid = sol.batch_view %pos : tensor<?xi32> -> tensor<1x?xi64>
  %flat = sol.onnx_constant {value = dense<[-1, 1]> : tensor<2xi64>} : tensor<2xi64>
  %qpos2 = sol.onnx "Reshape"(%pid, %flat) : (tensor<1x?xi64>, tensor<2xi64>) -> tensor<?x1xi64>
  %causal = sol.onnx "LessOrEqual"(%kpos2, %qpos2) : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %w = sol.onnx_constant {value = dense<4> : tensor<i64>} : tensor<i64>
  %lo = sol.onnx "Sub"(%qpos2, %w) : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi64>
  %recent = sol.onnx "Greater"(%kpos2, %lo) : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %allowed = sol.onnx "And"(%causal, %recent) : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %fzero = sol.onnx_constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %fmin = sol.onnx_constant {value = dense<-3.40282347E+38> : tensor<f32>} : tensor<f32>
  %m = sol.onnx "Where"(%allowed, %fzero, %fmin) : (tensor<?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32>
  %axes01 = sol.onnx_constant {value = dense<[0, 1]> : tensor<2xi64>} : tensor<2xi64>
  %mask = sol.onnx "Unsqueeze"(%m, %axes01) : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<1x1x?x?xf32>
  %sum = sol.onnx "Add"(%scaled, %mask) : (tensor<1x2x?x?xf32>, tensor<1x1x?x?xf32>) -> tensor<1x2x?x?xf32>
  %p = sol.onnx "Softmax"(%sum) {axis = -1 : i64} : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %o = sol.onnx "MatMul"(%p, %vr) : (tensor<1x2x?x?xf32>, tensor<1x2x?x16xf32>) -> tensor<1x2x?x16xf32>
  %ot = sol.onnx "Transpose"(%o) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x?x16xf32>) -> tensor<*xf32>
  return %ot, %kc : tensor<*xf32>, tensor<1x1x?x16xf32>
}
}

// -----

// Near miss: the mask hides the query's own position (Less): not causal.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: sol.attention
// CHECK: "Softmax"
module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @forward(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"},
                   %pk: tensor<?x1x?x16xf32> {sol.name = "past_key_values.3.key"}, %pv: tensor<?x1x?x16xf32> {sol.name = "past_key_values.3.value"},
                   %q: tensor<?x32xbf16>, %k: tensor<?x16xbf16>, %v: tensor<?x16xbf16>) -> (tensor<*xf32>, tensor<1x1x?x16xf32>) {
  %qv = sol.batch_view %q : tensor<?x32xbf16> -> tensor<1x?x2x16xf32>
  %qt = sol.onnx "Transpose"(%qv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x16xf32>) -> tensor<1x2x?x16xf32>
  %kv = sol.batch_view %k : tensor<?x16xbf16> -> tensor<1x?x1x16xf32>
  %kt = sol.onnx "Transpose"(%kv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x1x16xf32>) -> tensor<1x1x?x16xf32>
  %vv = sol.batch_view %v : tensor<?x16xbf16> -> tensor<1x?x1x16xf32>
  %vt = sol.onnx "Transpose"(%vv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x1x16xf32>) -> tensor<1x1x?x16xf32>
  %kc = sol.onnx "Concat"(%pk, %kt) {axis = 2 : i64} : (tensor<?x1x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32>
  %vc = sol.onnx "Concat"(%pv, %vt) {axis = -2 : i64} : (tensor<?x1x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32>
  %ax2 = sol.onnx_constant {value = dense<2> : tensor<1xi64>} : tensor<1xi64>
  %rep = sol.onnx_constant {value = dense<[1, 1, 2, 1, 16]> : tensor<5xi64>} : tensor<5xi64>
  %heads = sol.onnx_constant {value = dense<[1, 2, -1, 16]> : tensor<4xi64>} : tensor<4xi64>
  %ku = sol.onnx "Unsqueeze"(%kc, %ax2) : (tensor<1x1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x1x?x16xf32>
  %ke = sol.onnx "Expand"(%ku, %rep) : (tensor<1x1x1x?x16xf32>, tensor<5xi64>) -> tensor<1x1x2x?x16xf32>
  %kr = sol.onnx "Reshape"(%ke, %heads) : (tensor<1x1x2x?x16xf32>, tensor<4xi64>) -> tensor<1x2x?x16xf32>
  %vu = sol.onnx "Unsqueeze"(%vc, %ax2) : (tensor<1x1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x1x?x16xf32>
  %ve = sol.onnx "Expand"(%vu, %rep) : (tensor<1x1x1x?x16xf32>, tensor<5xi64>) -> tensor<1x1x2x?x16xf32>
  %vr = sol.onnx "Reshape"(%ve, %heads) : (tensor<1x1x2x?x16xf32>, tensor<4xi64>) -> tensor<1x2x?x16xf32>
  %ktt = sol.onnx "Transpose"(%kr) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x16xf32>) -> tensor<1x2x16x?xf32>
  %scores = sol.onnx "MatMul"(%qt, %ktt) : (tensor<1x2x?x16xf32>, tensor<1x2x16x?xf32>) -> tensor<1x2x?x?xf32>
  %sqrt = sol.onnx_constant {value = dense<4.0> : tensor<f32>} : tensor<f32>
  %scaled = sol.onnx "Div"(%scores, %sqrt) : (tensor<1x2x?x?xf32>, tensor<f32>) -> tensor<1x2x?x?xf32>
  %shape = sol.onnx "Shape"(%kc) : (tensor<1x1x?x16xf32>) -> tensor<4xi64>
  %i2 = sol.onnx_constant {value = dense<2> : tensor<i64>} : tensor<i64>
  %t = sol.onnx "Gather"(%shape, %i2) {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %zero = sol.onnx_constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %step = sol.onnx_constant {value = dense<1> : tensor<i64>} : tensor<i64>
  %kpos = sol.onnx "Range"(%zero, %t, %step) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %ax0 = sol.onnx_constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %ax1 = sol.onnx_constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %kpos2 = sol.onnx "Unsqueeze"(%kpos, %ax0) : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %pid = sol.batch_view %pos : tensor<?xi32> -> tensor<1x?xi64>
  %flat = sol.onnx_constant {value = dense<[-1, 1]> : tensor<2xi64>} : tensor<2xi64>
  %qpos2 = sol.onnx "Reshape"(%pid, %flat) : (tensor<1x?xi64>, tensor<2xi64>) -> tensor<?x1xi64>
  %allowed = sol.onnx "Less"(%kpos2, %qpos2) : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %fzero = sol.onnx_constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %fmin = sol.onnx_constant {value = dense<-3.40282347E+38> : tensor<f32>} : tensor<f32>
  %m = sol.onnx "Where"(%allowed, %fzero, %fmin) : (tensor<?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32>
  %axes01 = sol.onnx_constant {value = dense<[0, 1]> : tensor<2xi64>} : tensor<2xi64>
  %mask = sol.onnx "Unsqueeze"(%m, %axes01) : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<1x1x?x?xf32>
  %sum = sol.onnx "Add"(%scaled, %mask) : (tensor<1x2x?x?xf32>, tensor<1x1x?x?xf32>) -> tensor<1x2x?x?xf32>
  %p = sol.onnx "Softmax"(%sum) {axis = -1 : i64} : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %o = sol.onnx "MatMul"(%p, %vr) : (tensor<1x2x?x?xf32>, tensor<1x2x?x16xf32>) -> tensor<1x2x?x16xf32>
  %ot = sol.onnx "Transpose"(%o) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x?x16xf32>) -> tensor<*xf32>
  return %ot, %kc : tensor<*xf32>, tensor<1x1x?x16xf32>
}
}
