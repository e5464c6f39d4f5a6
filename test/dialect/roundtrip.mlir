// RUN: solc-opt %s | FileCheck %s
// RUN: solc-opt %s | solc-opt | FileCheck %s
// RUN: solc-opt %s --mlir-print-op-generic | solc-opt | FileCheck %s

// One decoder layer of a tiny GQA model, using every op of the dialect.

// CHECK-LABEL: func.func @forward
func.func @forward(%ids: tensor<?xi32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>,
                   %rows: tensor<?xi32>) -> tensor<?x256xf32> {
  // CHECK: %[[EMB:.*]] = sol.weight @model.embed_tokens.weight : tensor<256x64xbf16>
  %emb = sol.weight @"model.embed_tokens.weight" : tensor<256x64xbf16>
  // CHECK: sol.embedding %{{.*}}, %[[EMB]] : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %h = sol.embedding %ids, %emb : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %ln = sol.weight @"l0.input_layernorm.weight" : tensor<64xbf16>
  // CHECK: sol.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32}
  %x = sol.rms_norm %h, %ln {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %wq = sol.weight @"l0.q.weight" : tensor<64x64xbf16>
  %bq = sol.weight @"l0.q.bias" : tensor<64xbf16>
  %wk = sol.weight @"l0.k.weight" : tensor<32x64xbf16>
  %wv = sol.weight @"l0.v.weight" : tensor<32x64xbf16>
  // CHECK: sol.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %q = sol.linear %x, %wq, %bq : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %k = sol.linear %x, %wk : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %v = sol.linear %x, %wv : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %qn = sol.weight @"l0.q_norm.weight" : tensor<16xbf16>
  // Per-head norm: the weight covers one head of 16.
  // CHECK: sol.rms_norm %{{.*}}, %{{.*}} {epsilon = {{.*}}} : (tensor<?x64xbf16>, tensor<16xbf16>) -> tensor<?x64xbf16>
  %q1 = sol.rms_norm %q, %qn {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<16xbf16>) -> tensor<?x64xbf16>
  // CHECK: sol.rope %{{.*}}, %{{.*}} {head_dim = 16 : i64, num_heads = 4 : i64, rope = #sol.rope<theta = 5.000000e+05, kind = llama3, factor = 8.000000e+00, original_max_position = 64>}
  %q2 = sol.rope %q1, %pos {rope = #sol.rope<theta = 500000.0, kind = llama3, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position = 64>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  // CHECK: sol.rope {{.*}}rope = #sol.rope<theta = 1.000000e+04>
  %k2 = sol.rope %k, %pos {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  // CHECK: sol.rope {{.*}}rope = #sol.rope<theta = 1.000000e+04, kind = yarn, factor = 4.000000e+00, original_max_position = 32, beta_fast = 1.600000e+01>
  %k3 = sol.rope %k2, %pos {rope = #sol.rope<theta = 10000.0, kind = yarn, factor = 4.0, original_max_position = 32, beta_fast = 16.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  // CHECK: sol.rope {{.*}}kind = linear, factor = 2.000000e+00
  %k4 = sol.rope %k3, %pos {rope = #sol.rope<theta = 10000.0, kind = linear, factor = 2.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  // CHECK: sol.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32, sliding_window = 8 : i64}
  %a = sol.attention %q2, %k4, %v, %pos, %seq {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32, sliding_window = 8} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  %wo = sol.weight @"l0.o.weight" : tensor<64x64xbf16>
  %o = sol.linear %a, %wo : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  // CHECK: sol.add
  %r = sol.add %h, %o : tensor<?x64xbf16>
  %lnw = sol.weight @"l0.ln.weight" : tensor<64xbf16>
  %lnb = sol.weight @"l0.ln.bias" : tensor<64xbf16>
  // CHECK: sol.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = {{.*}}}
  %y = sol.layer_norm %r, %lnw, %lnb {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %wg = sol.weight @"l0.gate.weight" : tensor<128x64xbf16>
  %wu = sol.weight @"l0.up.weight" : tensor<128x64xbf16>
  %g = sol.linear %y, %wg : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %u = sol.linear %y, %wu : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  // CHECK: sol.swiglu %{{.*}}, %{{.*}} : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  // CHECK: sol.silu %{{.*}} : tensor<?x128xbf16>
  %s1 = sol.silu %s : tensor<?x128xbf16>
  // CHECK: sol.gelu %{{.*}} {approximation = #sol<gelu_approximation tanh>} : tensor<?x128xbf16>
  %s2 = sol.gelu %s1 {approximation = #sol<gelu_approximation tanh>} : tensor<?x128xbf16>
  // CHECK: sol.mul
  %s3 = sol.mul %s2, %s : tensor<?x128xbf16>
  // CHECK: %{{.*}} = sol.fused ins(%{{.*}}, %{{.*}} : tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  // CHECK: ^bb0(%{{.*}}: tensor<?x128xbf16>, %{{.*}}: tensor<?x128xbf16>):
  // CHECK:   sol.silu
  // CHECK:   sol.mul
  // CHECK:   sol.yield %{{.*}} : tensor<?x128xbf16>
  %f = sol.fused ins(%g, %s3 : tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  ^bb0(%fa: tensor<?x128xbf16>, %fb: tensor<?x128xbf16>):
    %t = sol.silu %fa : tensor<?x128xbf16>
    %t2 = sol.mul %t, %fb : tensor<?x128xbf16>
    sol.yield %t2 : tensor<?x128xbf16>
  }
  // The fused gate/up form of swiglu, and a linear with the swiglu epilogue.
  %wgu = sol.weight @"l0.gate_up.weight" concat [@"l0.gate.weight", @"l0.up.weight"] : tensor<256x64xbf16>
  // CHECK: sol.weight @l0.gate_up.weight concat [@l0.gate.weight, @l0.up.weight] : tensor<256x64xbf16>
  // CHECK: sol.linear {{.*}} {epilogue = #sol<epilogue swiglu>}
  %gu = sol.linear %y, %wgu {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x128xbf16>
  %gu2 = sol.linear %y, %wgu : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xbf16>
  // CHECK: sol.swiglu %{{.*}} : (tensor<?x256xbf16>) -> tensor<?x128xbf16>
  %sg = sol.swiglu %gu2 : (tensor<?x256xbf16>) -> tensor<?x128xbf16>
  // CHECK: sol.split %{{.*}} : tensor<?x256xbf16> -> tensor<?x64xbf16>, tensor<?x192xbf16>
  %p:2 = sol.split %gu2 : tensor<?x256xbf16> -> tensor<?x64xbf16>, tensor<?x192xbf16>
  %sum = sol.add %f, %gu : tensor<?x128xbf16>
  %sum2 = sol.add %sum, %sg : tensor<?x128xbf16>
  %wd = sol.weight @"l0.down.weight" : tensor<64x128xbf16>
  %d = sol.linear %sum2, %wd : (tensor<?x128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
  %d2 = sol.add %d, %p#0 : tensor<?x64xbf16>
  %nw = sol.weight @"model.norm.weight" : tensor<64xbf16>
  // CHECK: sol.logits %{{.*}}, %{{.*}}, %[[EMB]], %{{.*}} {epsilon = {{.*}}} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
  %l = sol.logits %d2, %nw, %emb, %rows {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
  return %l : tensor<?x256xf32>
}
