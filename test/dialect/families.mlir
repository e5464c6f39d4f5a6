// RUN: solc-opt %s | FileCheck %s
// RUN: solc-opt %s --mlir-print-op-generic | solc-opt | FileCheck %s

// The ops and attributes of the Phi-3 and Gemma families print and parse
// back: fused projections taken apart (slice_rows), a partial rotary's dim
// order (permute_head_dims), Gemma's 1 + w norms (offset_weight), scaled
// embeddings, GeGLU (and its linear epilogue), soft-capped attention and
// logits, longrope, sandwich norms in the residual add, q and k norms in one
// head_rms_norm.

// CHECK-LABEL: func.func @families
func.func @families(%ids: tensor<?xi32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>) -> tensor<?x512xf32> {
  %qkv = sol.weight @qkv : tensor<160x96xbf16>
  // CHECK: sol.slice_rows %{{.*}} {offset = 96 : i64} : tensor<160x96xbf16> -> tensor<32x96xbf16>
  %k = sol.slice_rows %qkv {offset = 96 : i64} : tensor<160x96xbf16> -> tensor<32x96xbf16>
  // CHECK: sol.permute_head_dims %{{.*}} {head_dim = 32 : i64, rotary_dim = 24 : i64} : tensor<32x96xbf16>
  %kp = sol.permute_head_dims %k {head_dim = 32 : i64, rotary_dim = 24 : i64} : tensor<32x96xbf16>
  %n = sol.weight @norm : tensor<96xbf16>
  // CHECK: sol.offset_weight %{{.*}} {offset = 1.000000e+00 : f32} : tensor<96xbf16> -> tensor<96xf32>
  %n1 = sol.offset_weight %n {offset = 1.0 : f32} : tensor<96xbf16> -> tensor<96xf32>
  %table = sol.weight @embed : tensor<512x96xbf16>
  // CHECK: sol.embedding %{{.*}}, %{{.*}} {scale = 9.7979{{[0-9]*}} : f32}
  %h = sol.embedding %ids, %table {scale = 9.79795931 : f32} : (tensor<?xi32>, tensor<512x96xbf16>) -> tensor<?x96xbf16>
  %x = sol.rms_norm %h, %n1 {epsilon = 1.0e-6 : f32} : (tensor<?x96xbf16>, tensor<96xf32>) -> tensor<?x96xbf16>
  %kk = sol.linear %x, %kp : (tensor<?x96xbf16>, tensor<32x96xbf16>) -> tensor<?x32xbf16>
  // Gemma's sandwich norm inside the residual add; q and k norms in one op;
  // the GeGLU epilogue.
  %n2 = sol.offset_weight %n {offset = 1.0 : f32} : tensor<96xbf16> -> tensor<96xf32>
  // CHECK: sol.add_rms_norm %{{.*}}, %{{.*}}, %{{.*}} input_norm %{{.*}} : tensor<96xf32> {epsilon = 9.99999997E-7 : f32, input_epsilon = 9.99999997E-7 : f32}
  %an, %as = sol.add_rms_norm %x, %h, %n1 input_norm %n2 : tensor<96xf32> {epsilon = 1.0e-6 : f32, input_epsilon = 1.0e-6 : f32} : (tensor<?x96xbf16>, tensor<?x96xbf16>, tensor<96xf32>) -> (tensor<?x96xbf16>, tensor<?x96xbf16>)
  %hn = sol.weight @head_norm : tensor<32xf32>
  %hk = sol.weight @head_k_norm : tensor<32xf32>
  // CHECK: sol.head_rms_norm %{{.*}}, %{{.*}} then %{{.*}} : tensor<32xf32> {column = 0 : i64, epsilon = 9.99999997E-7 : f32, num_heads = 2 : i64, second_heads = 1 : i64}
  %qk = sol.head_rms_norm %an, %hn then %hk : tensor<32xf32> {column = 0 : i64, num_heads = 2 : i64, second_heads = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<?x96xbf16>, tensor<32xf32>) -> tensor<?x96xbf16>
  %gu = sol.weight @gate_up : tensor<64x96xbf16>
  // CHECK: sol.linear %{{.*}}, %{{.*}} {epilogue = #sol<epilogue geglu>} : (tensor<?x96xbf16>, tensor<64x96xbf16>) -> tensor<?x32xbf16>
  %act = sol.linear %qk, %gu {epilogue = #sol<epilogue geglu>} : (tensor<?x96xbf16>, tensor<64x96xbf16>) -> tensor<?x32xbf16>
  // CHECK: #sol.rope<theta = 1.000000e+04, kind = longrope, factor = 4.000000e+00
  // CHECK-SAME: rotary_dim = 4, short_factor = [1.000000e+00, 1.000000e+00], long_factor = [2.000000e+00, 3.000000e+00]>
  %kr = sol.rope %kk, %pos {head_dim = 32 : i64, num_heads = 1 : i64, rope = #sol.rope<theta = 10000.0, kind = longrope, factor = 4.0, original_max_position = 32, attention_factor = 1.18, rotary_dim = 4, short_factor = [1.0, 1.0], long_factor = [2.0, 3.0]>} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  // CHECK: sol.attention {{.*}}softcap = 5.000000e+01 : f32
  %a = sol.attention %kk, %kr, %kk, %pos, %seq {layer = 0 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 32 : i64, scale = 0.0625 : f32, softcap = 50.0 : f32} : (tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x32xbf16>
  // CHECK: sol.swiglu %{{.*}}, %{{.*}} {activation = #sol<activation gelu_tanh>}
  %g = sol.swiglu %a, %a {activation = #sol<activation gelu_tanh>} : (tensor<?x32xbf16>, tensor<?x32xbf16>) -> tensor<?x32xbf16>
  %head = sol.weight @head : tensor<512x96xbf16>
  // CHECK: sol.logits {{.*}}softcap = 3.000000e+01 : f32
  %l = sol.logits %h, %n1, %head, %seq {epsilon = 1.0e-6 : f32, softcap = 30.0 : f32} : (tensor<?x96xbf16>, tensor<96xf32>, tensor<512x96xbf16>, tensor<?xi32>) -> tensor<?x512xf32>
  // CHECK: sol.softcap %{{.*}} {cap = 3.000000e+01 : f32} : tensor<?x512xf32>
  %c = sol.softcap %l {cap = 30.0 : f32} : tensor<?x512xf32>
  return %c : tensor<?x512xf32>
}
