// RUN: solc-opt %s --split-input-file --sol-raise-attention | FileCheck %s

// sol-raise-attention on the standard Attention op with the cache inside it
// (past_key/past_value inputs, presents as outputs 1 and 2) and 3-D inputs
// (q_num_heads, kv_num_heads): is_causal counts from the cached length on,
// and opset 24's left_window_size w - 1 is a sliding window of w keys.

// CHECK-LABEL: func.func @cached_3d
// CHECK: %[[A:.*]] = sol.attention %arg6, %arg7, %arg8, %arg1, %arg2 {head_dim = 8 : i64, layer = 3 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, scale = 0.353553385 : f32, sliding_window = 4 : i64}
// CHECK: %[[O:.*]] = sol.batch_view %[[A]]
// The op stays for its present outputs, which sol-raise-outputs drops.
// CHECK: return %[[O]],

module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @cached_3d(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"},
               %pk: tensor<?x1x?x8xf32> {sol.name = "past_key_values.3.key"}, %pv: tensor<?x1x?x8xf32> {sol.name = "past_key_values.3.value"},
               %q: tensor<?x16xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>) -> (tensor<1x?x16xf32>, tensor<*xf32>, tensor<*xf32>) {
  %qv = sol.batch_view %q : tensor<?x16xbf16> -> tensor<1x?x16xf32>
  %kv = sol.batch_view %k : tensor<?x8xbf16> -> tensor<1x?x8xf32>
  %vv = sol.batch_view %v : tensor<?x8xbf16> -> tensor<1x?x8xf32>
  %none = sol.onnx_none
  %out:3 = sol.onnx "Attention"(%qv, %kv, %vv, %none, %pk, %pv) {is_causal = 1 : i64, q_num_heads = 2 : i64, kv_num_heads = 1 : i64, left_window_size = 3 : i64, right_window_size = -1 : i64} : (tensor<1x?x16xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>, none, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> (tensor<1x?x16xf32>, tensor<*xf32>, tensor<*xf32>)
  return %out#0, %out#1, %out#2 : tensor<1x?x16xf32>, tensor<*xf32>, tensor<*xf32>
}
}

// -----

// A near miss: a static cache's nonpad_kv_seqlen.
// CHECK: reason = "a nonpad_kv_seqlen input (a static cache) is not supported"
// CHECK-LABEL: func.func @nonpad
// CHECK: sol.onnx "Attention"

module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @nonpad(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"},
               %lens: tensor<1xi64>, %q: tensor<?x16xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>) -> tensor<1x?x16xf32> {
  %qv = sol.batch_view %q : tensor<?x16xbf16> -> tensor<1x?x16xf32>
  %kv = sol.batch_view %k : tensor<?x8xbf16> -> tensor<1x?x8xf32>
  %vv = sol.batch_view %v : tensor<?x8xbf16> -> tensor<1x?x8xf32>
  %none = sol.onnx_none
  %out = sol.onnx "Attention"(%qv, %kv, %vv, %none, %none, %none, %lens) {is_causal = 1 : i64, q_num_heads = 2 : i64, kv_num_heads = 1 : i64} : (tensor<1x?x16xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>, none, none, none, tensor<1xi64>) -> tensor<1x?x16xf32>
  return %out : tensor<1x?x16xf32>
}
}

// -----

// A near miss: a window that also reaches keys after the query.
// CHECK: reason = "a window other than the keys up to the query"
// CHECK-LABEL: func.func @right_window
// CHECK: sol.onnx "Attention"

module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @right_window(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"},
               %q: tensor<?x16xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>) -> tensor<1x?x16xf32> {
  %qv = sol.batch_view %q : tensor<?x16xbf16> -> tensor<1x?x16xf32>
  %kv = sol.batch_view %k : tensor<?x8xbf16> -> tensor<1x?x8xf32>
  %vv = sol.batch_view %v : tensor<?x8xbf16> -> tensor<1x?x8xf32>
  %out = sol.onnx "Attention"(%qv, %kv, %vv) {is_causal = 1 : i64, q_num_heads = 2 : i64, kv_num_heads = 1 : i64, left_window_size = 3 : i64, right_window_size = 2 : i64} : (tensor<1x?x16xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x16xf32>
  return %out : tensor<1x?x16xf32>
}
}
