// RUN: solc-opt %s --split-input-file --sol-raise-attention | FileCheck %s

// sol-raise-attention on com.microsoft GroupQueryAttention, as
// onnxruntime-genai writes it. A packed QKV is split, the rotation (cos/sin
// caches of position x inv_freq, fitted to theta 10000) becomes sol.rope of
// q and k, and the layer's past inputs name the cache. seqlens_k and
// total_sequence_length are evaluated from the mask.

// CHECK-LABEL: func.func @packed
// CHECK: %[[S:.*]]:3 = sol.split %arg7 : tensor<?x32xbf16> -> tensor<?x16xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>
// CHECK: %[[Q:.*]] = sol.rope %[[S]]#0, %arg1 {head_dim = 8 : i64, num_heads = 2 : i64, rope = #sol.rope<theta = 1.000000e+04>}
// CHECK: %[[K:.*]] = sol.rope %[[S]]#1, %arg1 {head_dim = 8 : i64, num_heads = 1 : i64, rope = #sol.rope<theta = 1.000000e+04>}
// CHECK: %[[A:.*]] = sol.attention %[[Q]], %[[K]], %[[S]]#2, %arg1, %arg2 {head_dim = 8 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, scale = 0.353553385 : f32, sliding_window = 4 : i64}
// CHECK: %[[O:.*]] = sol.batch_view %[[A]]
// The op stays for its present outputs, which sol-raise-outputs drops.
// CHECK: return %[[O]],

module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @packed(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"},
               %mask: tensor<1x?xi64> {sol.name = "attention_mask"},
               %pk: tensor<?x1x?x?xf32> {sol.name = "past_key_values.0.key"}, %pv: tensor<?x1x?x?xf32> {sol.name = "past_key_values.0.value"},
               %qkv: tensor<?x32xbf16>) -> (tensor<1x?x16xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>) {
  %one = sol.onnx_constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %sum = sol.onnx "ReduceSum"(%mask, %one) {keepdims = 0 : i64} : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1xi64>
  %sub = sol.onnx "Sub"(%sum, %one) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %seqlens = sol.onnx "Cast"(%sub) {to = 6 : i64} : (tensor<1xi64>) -> tensor<1xi32>
  %shape = sol.onnx "Shape"(%mask) : (tensor<1x?xi64>) -> tensor<2xi64>
  %i1 = sol.onnx_constant {value = dense<1> : tensor<i64>} : tensor<i64>
  %len = sol.onnx "Gather"(%shape, %i1) {axis = 0 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %total = sol.onnx "Cast"(%len) {to = 6 : i64} : (tensor<i64>) -> tensor<i32>
  %cos = sol.onnx_constant {value = dense<[[1.000000000e+00, 1.000000000e+00, 1.000000000e+00, 1.000000000e+00], [5.403022766e-01, 9.950041771e-01, 9.999499917e-01, 9.999995232e-01], [-4.161468148e-01, 9.800665975e-01, 9.998000264e-01, 9.999979734e-01], [-9.899924994e-01, 9.553365111e-01, 9.995500445e-01, 9.999955297e-01], [-6.536436081e-01, 9.210609794e-01, 9.992001057e-01, 9.999920130e-01], [2.836621702e-01, 8.775825500e-01, 9.987502694e-01, 9.999874830e-01], [9.601702690e-01, 8.253356218e-01, 9.982005358e-01, 9.999819994e-01], [7.539022565e-01, 7.648422122e-01, 9.975510240e-01, 9.999755025e-01]]> : tensor<8x4xf32>} : tensor<8x4xf32>
  %sin = sol.onnx_constant {value = dense<[[0.000000000e+00, 0.000000000e+00, 0.000000000e+00, 0.000000000e+00], [8.414710164e-01, 9.983342141e-02, 9.999833070e-03, 9.999999311e-04], [9.092974067e-01, 1.986693293e-01, 1.999866590e-02, 1.999998698e-03], [1.411200017e-01, 2.955202162e-01, 2.999549918e-02, 2.999995602e-03], [-7.568024993e-01, 3.894183338e-01, 3.998933360e-02, 3.999989480e-03], [-9.589242935e-01, 4.794255495e-01, 4.997916520e-02, 4.999979399e-03], [-2.794154882e-01, 5.646424890e-01, 5.996400490e-02, 5.999964196e-03], [6.569865942e-01, 6.442176700e-01, 6.994284689e-02, 6.999942940e-03]]> : tensor<8x4xf32>} : tensor<8x4xf32>
  %none = sol.onnx_none
  %qkvv = sol.batch_view %qkv : tensor<?x32xbf16> -> tensor<1x?x32xf32>
  %out:3 = sol.onnx "GroupQueryAttention"(%qkvv, %none, %none, %pk, %pv, %seqlens, %total, %cos, %sin) {domain = "com.microsoft", num_heads = 2 : i64, kv_num_heads = 1 : i64, do_rotary = 1 : i64, scale = 0.0 : f32, local_window_size = 4 : i64, softcap = 0.0 : f32, rotary_interleaved = 0 : i64} : (tensor<1x?x32xf32>, none, none, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>, tensor<1xi32>, tensor<i32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<1x?x16xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>)
  return %out#0, %out#1, %out#2 : tensor<1x?x16xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>
}
}

// -----

// softcap (Gemma 2's attention-logit soft-capping) is the attention's.
// CHECK-LABEL: func.func @softcap
// CHECK: sol.attention {{.*}}softcap = 3.000000e+01 : f32

module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @softcap(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"},
               %mask: tensor<1x?xi64> {sol.name = "attention_mask"},
               %pk: tensor<?x1x?x?xf32> {sol.name = "past_key_values.0.key"}, %pv: tensor<?x1x?x?xf32> {sol.name = "past_key_values.0.value"},
               %qkv: tensor<?x32xbf16>) -> (tensor<1x?x16xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>) {
  %one = sol.onnx_constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %sum = sol.onnx "ReduceSum"(%mask, %one) {keepdims = 0 : i64} : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1xi64>
  %sub = sol.onnx "Sub"(%sum, %one) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %seqlens = sol.onnx "Cast"(%sub) {to = 6 : i64} : (tensor<1xi64>) -> tensor<1xi32>
  %shape = sol.onnx "Shape"(%mask) : (tensor<1x?xi64>) -> tensor<2xi64>
  %i1 = sol.onnx_constant {value = dense<1> : tensor<i64>} : tensor<i64>
  %len = sol.onnx "Gather"(%shape, %i1) {axis = 0 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %total = sol.onnx "Cast"(%len) {to = 6 : i64} : (tensor<i64>) -> tensor<i32>
  %cos = sol.onnx_constant {value = dense<[[1.000000000e+00, 1.000000000e+00, 1.000000000e+00, 1.000000000e+00], [5.403022766e-01, 9.950041771e-01, 9.999499917e-01, 9.999995232e-01], [-4.161468148e-01, 9.800665975e-01, 9.998000264e-01, 9.999979734e-01], [-9.899924994e-01, 9.553365111e-01, 9.995500445e-01, 9.999955297e-01], [-6.536436081e-01, 9.210609794e-01, 9.992001057e-01, 9.999920130e-01], [2.836621702e-01, 8.775825500e-01, 9.987502694e-01, 9.999874830e-01], [9.601702690e-01, 8.253356218e-01, 9.982005358e-01, 9.999819994e-01], [7.539022565e-01, 7.648422122e-01, 9.975510240e-01, 9.999755025e-01]]> : tensor<8x4xf32>} : tensor<8x4xf32>
  %sin = sol.onnx_constant {value = dense<[[0.000000000e+00, 0.000000000e+00, 0.000000000e+00, 0.000000000e+00], [8.414710164e-01, 9.983342141e-02, 9.999833070e-03, 9.999999311e-04], [9.092974067e-01, 1.986693293e-01, 1.999866590e-02, 1.999998698e-03], [1.411200017e-01, 2.955202162e-01, 2.999549918e-02, 2.999995602e-03], [-7.568024993e-01, 3.894183338e-01, 3.998933360e-02, 3.999989480e-03], [-9.589242935e-01, 4.794255495e-01, 4.997916520e-02, 4.999979399e-03], [-2.794154882e-01, 5.646424890e-01, 5.996400490e-02, 5.999964196e-03], [6.569865942e-01, 6.442176700e-01, 6.994284689e-02, 6.999942940e-03]]> : tensor<8x4xf32>} : tensor<8x4xf32>
  %none = sol.onnx_none
  %qkvv = sol.batch_view %qkv : tensor<?x32xbf16> -> tensor<1x?x32xf32>
  %out:3 = sol.onnx "GroupQueryAttention"(%qkvv, %none, %none, %pk, %pv, %seqlens, %total, %cos, %sin) {domain = "com.microsoft", num_heads = 2 : i64, kv_num_heads = 1 : i64, do_rotary = 1 : i64, softcap = 3.0e+01 : f32} : (tensor<1x?x32xf32>, none, none, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>, tensor<1xi32>, tensor<i32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<1x?x16xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>)
  return %out#0, %out#1, %out#2 : tensor<1x?x16xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>
}
}

// -----

// A near miss: interleaved rotation pairs are not rotate-half.
// CHECK: reason = "interleaved rotation (not rotate-half)"
// CHECK-LABEL: func.func @interleaved
// CHECK: sol.onnx "GroupQueryAttention"

module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @interleaved(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"},
               %mask: tensor<1x?xi64> {sol.name = "attention_mask"},
               %pk: tensor<?x1x?x?xf32> {sol.name = "past_key_values.0.key"}, %pv: tensor<?x1x?x?xf32> {sol.name = "past_key_values.0.value"},
               %qkv: tensor<?x32xbf16>) -> (tensor<1x?x16xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>) {
  %one = sol.onnx_constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %sum = sol.onnx "ReduceSum"(%mask, %one) {keepdims = 0 : i64} : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1xi64>
  %sub = sol.onnx "Sub"(%sum, %one) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %seqlens = sol.onnx "Cast"(%sub) {to = 6 : i64} : (tensor<1xi64>) -> tensor<1xi32>
  %shape = sol.onnx "Shape"(%mask) : (tensor<1x?xi64>) -> tensor<2xi64>
  %i1 = sol.onnx_constant {value = dense<1> : tensor<i64>} : tensor<i64>
  %len = sol.onnx "Gather"(%shape, %i1) {axis = 0 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %total = sol.onnx "Cast"(%len) {to = 6 : i64} : (tensor<i64>) -> tensor<i32>
  %cos = sol.onnx_constant {value = dense<[[1.000000000e+00, 1.000000000e+00, 1.000000000e+00, 1.000000000e+00], [5.403022766e-01, 9.950041771e-01, 9.999499917e-01, 9.999995232e-01], [-4.161468148e-01, 9.800665975e-01, 9.998000264e-01, 9.999979734e-01], [-9.899924994e-01, 9.553365111e-01, 9.995500445e-01, 9.999955297e-01], [-6.536436081e-01, 9.210609794e-01, 9.992001057e-01, 9.999920130e-01], [2.836621702e-01, 8.775825500e-01, 9.987502694e-01, 9.999874830e-01], [9.601702690e-01, 8.253356218e-01, 9.982005358e-01, 9.999819994e-01], [7.539022565e-01, 7.648422122e-01, 9.975510240e-01, 9.999755025e-01]]> : tensor<8x4xf32>} : tensor<8x4xf32>
  %sin = sol.onnx_constant {value = dense<[[0.000000000e+00, 0.000000000e+00, 0.000000000e+00, 0.000000000e+00], [8.414710164e-01, 9.983342141e-02, 9.999833070e-03, 9.999999311e-04], [9.092974067e-01, 1.986693293e-01, 1.999866590e-02, 1.999998698e-03], [1.411200017e-01, 2.955202162e-01, 2.999549918e-02, 2.999995602e-03], [-7.568024993e-01, 3.894183338e-01, 3.998933360e-02, 3.999989480e-03], [-9.589242935e-01, 4.794255495e-01, 4.997916520e-02, 4.999979399e-03], [-2.794154882e-01, 5.646424890e-01, 5.996400490e-02, 5.999964196e-03], [6.569865942e-01, 6.442176700e-01, 6.994284689e-02, 6.999942940e-03]]> : tensor<8x4xf32>} : tensor<8x4xf32>
  %none = sol.onnx_none
  %qkvv = sol.batch_view %qkv : tensor<?x32xbf16> -> tensor<1x?x32xf32>
  %out:3 = sol.onnx "GroupQueryAttention"(%qkvv, %none, %none, %pk, %pv, %seqlens, %total, %cos, %sin) {domain = "com.microsoft", num_heads = 2 : i64, kv_num_heads = 1 : i64, do_rotary = 1 : i64, rotary_interleaved = 1 : i64} : (tensor<1x?x32xf32>, none, none, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>, tensor<1xi32>, tensor<i32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<1x?x16xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>)
  return %out#0, %out#1, %out#2 : tensor<1x?x16xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>
}
}
