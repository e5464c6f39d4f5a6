// RUN: solc-opt %s --split-input-file --sol-raise-rope | FileCheck %s

// com.microsoft RotaryEmbedding(x, position_ids, cos_cache, sin_cache), as
// onnxruntime-genai writes it when the rotation is not fused into
// GroupQueryAttention. The float16 caches (positions x head_dim/2) are
// checked whole against the rope fitted from them: theta 500000 with linear
// scaling by 4.

// CHECK-LABEL: func.func @rotary
// CHECK: %[[R:.*]] = sol.rope %arg4, %arg1 {head_dim = 8 : i64, num_heads = 2 : i64, rope = #sol.rope<theta = 5.000000e+05, kind = linear, factor = 4.000000e+00>}
// CHECK: sol.batch_view %[[R]]
// CHECK-NOT: "RotaryEmbedding"

module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @rotary(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"},
               %q: tensor<?x16xbf16>) -> tensor<1x?x16xf16> {
  %cos = sol.onnx_constant {value = dense<[[1.000000000e+00, 1.000000000e+00, 1.000000000e+00, 1.000000000e+00], [9.687500000e-01, 1.000000000e+00, 1.000000000e+00, 1.000000000e+00], [8.774414062e-01, 1.000000000e+00, 1.000000000e+00, 1.000000000e+00], [7.314453125e-01, 9.995117188e-01, 1.000000000e+00, 1.000000000e+00], [5.405273438e-01, 9.995117188e-01, 1.000000000e+00, 1.000000000e+00], [3.154296875e-01, 9.990234375e-01, 1.000000000e+00, 1.000000000e+00], [7.073974609e-02, 9.985351562e-01, 1.000000000e+00, 1.000000000e+00], [-1.782226562e-01, 9.980468750e-01, 1.000000000e+00, 1.000000000e+00]]> : tensor<8x4xf16>} : tensor<8x4xf16>
  %sin = sol.onnx_constant {value = dense<[[0.000000000e+00, 0.000000000e+00, 0.000000000e+00, 0.000000000e+00], [2.474365234e-01, 9.399414062e-03, 3.535747528e-04, 1.329183578e-05], [4.794921875e-01, 1.879882812e-02, 7.071495056e-04, 2.658367157e-05], [6.816406250e-01, 2.819824219e-02, 1.060485840e-03, 3.987550735e-05], [8.413085938e-01, 3.759765625e-02, 1.414299011e-03, 5.316734314e-05], [9.492187500e-01, 4.699707031e-02, 1.768112183e-03, 6.645917892e-05], [9.975585938e-01, 5.636596680e-02, 2.120971680e-03, 7.975101471e-05], [9.838867188e-01, 6.573486328e-02, 2.475738525e-03, 9.304285049e-05]]> : tensor<8x4xf16>} : tensor<8x4xf16>
  %pid = sol.batch_view %pos : tensor<?xi32> -> tensor<1x?xi64>
  %x = sol.batch_view %q : tensor<?x16xbf16> -> tensor<1x?x16xf16>
  %r = sol.onnx "RotaryEmbedding"(%x, %pid, %cos, %sin) {domain = "com.microsoft", interleaved = 0 : i64, num_heads = 0 : i64, rotary_embedding_dim = 0 : i64} : (tensor<1x?x16xf16>, tensor<1x?xi64>, tensor<8x4xf16>, tensor<8x4xf16>) -> tensor<1x?x16xf16>
  return %r : tensor<1x?x16xf16>
}
}

// -----

// A near miss: partial rotation (rotary_embedding_dim below head_dim).
// CHECK: reason = "partial rotation is not supported"
// CHECK-LABEL: func.func @partial
// CHECK: sol.onnx "RotaryEmbedding"

module attributes {sol.onnx_source = {architecture = "LlamaForCausalLM"}} {
func.func @partial(%tok: tensor<?xi32> {sol.name = "tokens"}, %pos: tensor<?xi32> {sol.name = "positions"}, %seq: tensor<?xi32> {sol.name = "token_seq"}, %rows: tensor<?xi32> {sol.name = "logit_rows"},
               %q: tensor<?x16xbf16>) -> tensor<1x?x16xf16> {
  %cos = sol.onnx_constant {value = dense<[[1.000000000e+00, 1.000000000e+00, 1.000000000e+00, 1.000000000e+00], [9.687500000e-01, 1.000000000e+00, 1.000000000e+00, 1.000000000e+00], [8.774414062e-01, 1.000000000e+00, 1.000000000e+00, 1.000000000e+00], [7.314453125e-01, 9.995117188e-01, 1.000000000e+00, 1.000000000e+00], [5.405273438e-01, 9.995117188e-01, 1.000000000e+00, 1.000000000e+00], [3.154296875e-01, 9.990234375e-01, 1.000000000e+00, 1.000000000e+00], [7.073974609e-02, 9.985351562e-01, 1.000000000e+00, 1.000000000e+00], [-1.782226562e-01, 9.980468750e-01, 1.000000000e+00, 1.000000000e+00]]> : tensor<8x4xf16>} : tensor<8x4xf16>
  %sin = sol.onnx_constant {value = dense<[[0.000000000e+00, 0.000000000e+00, 0.000000000e+00, 0.000000000e+00], [2.474365234e-01, 9.399414062e-03, 3.535747528e-04, 1.329183578e-05], [4.794921875e-01, 1.879882812e-02, 7.071495056e-04, 2.658367157e-05], [6.816406250e-01, 2.819824219e-02, 1.060485840e-03, 3.987550735e-05], [8.413085938e-01, 3.759765625e-02, 1.414299011e-03, 5.316734314e-05], [9.492187500e-01, 4.699707031e-02, 1.768112183e-03, 6.645917892e-05], [9.975585938e-01, 5.636596680e-02, 2.120971680e-03, 7.975101471e-05], [9.838867188e-01, 6.573486328e-02, 2.475738525e-03, 9.304285049e-05]]> : tensor<8x4xf16>} : tensor<8x4xf16>
  %pid = sol.batch_view %pos : tensor<?xi32> -> tensor<1x?xi64>
  %x = sol.batch_view %q : tensor<?x16xbf16> -> tensor<1x?x16xf16>
  %r = sol.onnx "RotaryEmbedding"(%x, %pid, %cos, %sin) {domain = "com.microsoft", interleaved = 0 : i64, num_heads = 1 : i64, rotary_embedding_dim = 4 : i64} : (tensor<1x?x16xf16>, tensor<1x?xi64>, tensor<8x4xf16>, tensor<8x4xf16>) -> tensor<1x?x16xf16>
  return %r : tensor<1x?x16xf16>
}
}
