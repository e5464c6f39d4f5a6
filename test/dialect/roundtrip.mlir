// RUN: solc-opt %s | FileCheck %s
// RUN: solc-opt %s | solc-opt | FileCheck %s
// RUN: solc-opt %s --mlir-print-op-generic | solc-opt | FileCheck %s

// Every op and attribute of the sol dialect prints in its custom form and
// parses back to the same IR (also from the generic form).

// The module attributes: what the model is (recorded by the importer) and
// the KV-cache layout (recorded by sol-plan-kv-cache).
// CHECK: module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 32, dtype = bf16, arrangement = block_slot_head_dim, alignment = 16, scales = none>, sol.model = #sol.model<architecture = "LlamaForCausalLM", vocab_size = 256, hidden_size = 64, num_layers = 1, max_position_embeddings = 128>}
module attributes {
  sol.model = #sol.model<architecture = "LlamaForCausalLM", vocab_size = 256, hidden_size = 64, num_layers = 1, max_position_embeddings = 128>,
  sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 32, dtype = bf16, arrangement = block_slot_head_dim, alignment = 16, scales = none>
} {

// Weights and the four weight transforms, which derive weights from weights
// (a transform's operand may be another transform).
// CHECK-LABEL: func.func @weights
func.func @weights() -> (tensor<128x64xbf16>, tensor<256x64xbf16>, tensor<64x32xbf16>, tensor<128xbf16>) {
  // CHECK: %[[Q:.*]] = sol.weight @l0.q.weight : tensor<64x64xbf16>
  // CHECK: %[[K:.*]] = sol.weight @l0.k.weight : tensor<32x64xf16>
  // CHECK: %[[V:.*]] = sol.weight @l0.v.weight : tensor<32x64xbf16>
  %q = sol.weight @l0.q.weight : tensor<64x64xbf16>
  %k = sol.weight @l0.k.weight : tensor<32x64xf16>
  %v = sol.weight @l0.v.weight : tensor<32x64xbf16>
  // Names with dots print bare; others keep their quotes.
  // CHECK: %[[G:.*]] = sol.weight @"l0.{gate,up}.weight" : tensor<128x64xbf16>
  %g = sol.weight @"l0.{gate,up}.weight" : tensor<128x64xbf16>
  // CHECK: %[[U:.*]] = sol.weight @l0.up.weight : tensor<128x64xbf16>
  %u = sol.weight @l0.up.weight : tensor<128x64xbf16>
  // CHECK: %[[T:.*]] = sol.weight @l0.onnx.weight : tensor<32x64xbf16>
  %t = sol.weight @l0.onnx.weight : tensor<32x64xbf16>
  // CHECK: %[[BG:.*]] = sol.weight @l0.gate.bias : tensor<64xbf16>
  // CHECK: %[[BU:.*]] = sol.weight @l0.up.bias : tensor<64xbf16>
  %bg = sol.weight @l0.gate.bias : tensor<64xbf16>
  %bu = sol.weight @l0.up.bias : tensor<64xbf16>
  // CHECK: %[[KC:.*]] = sol.convert_weight %[[K]] : tensor<32x64xf16> -> tensor<32x64xbf16>
  %kc = sol.convert_weight %k : tensor<32x64xf16> -> tensor<32x64xbf16>
  // CHECK: sol.concat_weights %[[Q]], %[[KC]], %[[V]] : (tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
  %qkv = sol.concat_weights %q, %kc, %v : (tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
  // CHECK: sol.interleave_rows %[[G]], %[[U]] : tensor<128x64xbf16> -> tensor<256x64xbf16>
  %gu = sol.interleave_rows %g, %u : tensor<128x64xbf16> -> tensor<256x64xbf16>
  // CHECK: sol.transpose_weight %[[T]] : tensor<32x64xbf16> -> tensor<64x32xbf16>
  %tt = sol.transpose_weight %t : tensor<32x64xbf16> -> tensor<64x32xbf16>
  // 1-D weights (biases) interleave element by element.
  // CHECK: sol.interleave_rows %[[BG]], %[[BU]] : tensor<64xbf16> -> tensor<128xbf16>
  %bgu = sol.interleave_rows %bg, %bu : tensor<64xbf16> -> tensor<128xbf16>
  return %qkv, %gu, %tt, %bgu : tensor<128x64xbf16>, tensor<256x64xbf16>, tensor<64x32xbf16>, tensor<128xbf16>
}

// One decoder layer of a tiny GQA model at the tensor level, as importers
// produce it, with every rope scaling kind and the linear epilogues.
// CHECK-LABEL: func.func @tensor_level
func.func @tensor_level(%ids: tensor<?xi32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>,
                        %rows: tensor<?xi32>) -> (tensor<?x256xf32>, tensor<?x64xf32>) {
  // CHECK: %[[EMB:.*]] = sol.weight @model.embed_tokens.weight : tensor<256x64xbf16>
  %emb = sol.weight @"model.embed_tokens.weight" : tensor<256x64xbf16>
  // CHECK: %[[H:.*]] = sol.embedding %{{.*}}, %[[EMB]] : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %h = sol.embedding %ids, %emb : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %ln = sol.weight @"l0.input_layernorm.weight" : tensor<64xbf16>
  // CHECK: %[[X:.*]] = sol.rms_norm %[[H]], %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %x = sol.rms_norm %h, %ln {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %wq = sol.weight @"l0.q.weight" : tensor<64x64xbf16>
  %bq = sol.weight @"l0.q.bias" : tensor<64xbf16>
  %wk = sol.weight @"l0.k.weight" : tensor<32x64xbf16>
  %wv = sol.weight @"l0.v.weight" : tensor<32x64xbf16>
  // A linear with a bias, and without.
  // CHECK: %[[Q:.*]] = sol.linear %[[X]], %{{.*}}, %{{.*}} : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %q = sol.linear %x, %wq, %bq : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  // CHECK: %[[K:.*]] = sol.linear %[[X]], %{{.*}} : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %k = sol.linear %x, %wk : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  // CHECK: %[[V:.*]] = sol.linear %[[X]], %{{.*}} : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %v = sol.linear %x, %wv : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %qn = sol.weight @"l0.q_norm.weight" : tensor<16xbf16>
  // Per-head norm: the weight covers one head of 16.
  // CHECK: %[[QN:.*]] = sol.rms_norm %[[Q]], %{{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<?x64xbf16>, tensor<16xbf16>) -> tensor<?x64xbf16>
  %q1 = sol.rms_norm %q, %qn {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<16xbf16>) -> tensor<?x64xbf16>
  // Parameters equal to their defaults (low_freq_factor = 1, high_freq_factor = 4) are not printed.
  // CHECK: %[[QR:.*]] = sol.rope %[[QN]], %{{.*}} {head_dim = 16 : i64, num_heads = 4 : i64, rope = #sol.rope<theta = 5.000000e+05, kind = llama3, factor = 8.000000e+00, original_max_position = 64>} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %q2 = sol.rope %q1, %pos {rope = #sol.rope<theta = 500000.0, kind = llama3, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position = 64>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  // CHECK: sol.rope %[[K]], {{.*}}rope = #sol.rope<theta = 1.000000e+04>}
  %k2 = sol.rope %k, %pos {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  // CHECK: sol.rope {{.*}}rope = #sol.rope<theta = 1.000000e+04, kind = yarn, factor = 4.000000e+00, original_max_position = 32, beta_fast = 1.600000e+01, beta_slow = 2.000000e+00, attention_factor = 1.500000e+00>}
  %k3 = sol.rope %k2, %pos {rope = #sol.rope<theta = 10000.0, kind = yarn, factor = 4.0, original_max_position = 32, beta_fast = 16.0, beta_slow = 2.0, attention_factor = 1.5>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  // CHECK: %[[KR:.*]] = sol.rope {{.*}}rope = #sol.rope<theta = 1.000000e+04, kind = linear, factor = 2.000000e+00>}
  %k4 = sol.rope %k3, %pos {rope = #sol.rope<theta = 10000.0, kind = linear, factor = 2.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  // causal = true is the default and is not printed.
  // CHECK: %[[A:.*]] = sol.attention %[[QR]], %[[KR]], %[[V]], %{{.*}}, %{{.*}} {head_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32, sliding_window = 8 : i64} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  %a = sol.attention %q2, %k4, %v, %pos, %seq {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32, sliding_window = 8, causal = true} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  // CHECK: sol.attention {{.*}} {causal = false, head_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32}
  %a2 = sol.attention %a, %k4, %v, %pos, %seq {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32, causal = false} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  %wo = sol.weight @"l0.o.weight" : tensor<64x64xbf16>
  // CHECK: %[[O:.*]] = sol.linear %{{.*}}, %{{.*}} : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %o = sol.linear %a2, %wo : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  // CHECK: %[[R:.*]] = sol.add %[[H]], %[[O]] : tensor<?x64xbf16>
  %r = sol.add %h, %o : tensor<?x64xbf16>
  %ln2 = sol.weight @"l0.post_attention_layernorm.weight" : tensor<64xbf16>
  %y = sol.rms_norm %r, %ln2 {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %wg = sol.weight @"l0.gate.weight" : tensor<128x64xbf16>
  %wu = sol.weight @"l0.up.weight" : tensor<128x64xbf16>
  %g = sol.linear %y, %wg : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %u = sol.linear %y, %wu : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  // The tensor-level swiglu: gate and up apart.
  // CHECK: %[[S:.*]] = sol.swiglu %{{.*}}, %{{.*}} : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  // The swiglu epilogue: interleaved gate/up rows, half the columns out.
  %wgu = sol.interleave_rows %wg, %wu : tensor<128x64xbf16> -> tensor<256x64xbf16>
  // CHECK: %[[GU:.*]] = sol.linear %{{.*}}, %{{.*}} {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x128xbf16>
  %gu = sol.linear %y, %wgu {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x128xbf16>
  // The explicit default epilogue is not printed.
  // CHECK: sol.linear %{{.*}}, %{{.*}} : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xbf16>
  %gu2 = sol.linear %y, %wgu {epilogue = #sol<epilogue none>} : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xbf16>
  // CHECK: %[[P:.*]]:2 = sol.split %{{.*}} : tensor<?x256xbf16> -> tensor<?x64xbf16>, tensor<?x192xbf16>
  %p:2 = sol.split %gu2 : tensor<?x256xbf16> -> tensor<?x64xbf16>, tensor<?x192xbf16>
  %sum = sol.add %s, %gu : tensor<?x128xbf16>
  %wd = sol.weight @"l0.down.weight" : tensor<64x128xbf16>
  %bd = sol.weight @"l0.down.bias" : tensor<64xbf16>
  // The residual epilogue, with and without a bias.
  // CHECK: %[[D:.*]] = sol.linear %{{.*}}, %{{.*}}, %{{.*}} residual %[[R]] {epilogue = #sol<epilogue residual>} : (tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
  %d = sol.linear %sum, %wd, %bd residual %r {epilogue = #sol<epilogue residual>} : (tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
  // CHECK: %[[D2:.*]] = sol.linear %{{.*}}, %{{.*}} residual %[[D]] {epilogue = #sol<epilogue residual>} : (tensor<?x128xbf16>, tensor<64x128xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
  %d2 = sol.linear %sum, %wd residual %d {epilogue = #sol<epilogue residual>} : (tensor<?x128xbf16>, tensor<64x128xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
  %d3 = sol.add %d2, %p#0 : tensor<?x64xbf16>
  %nw = sol.weight @"model.norm.weight" : tensor<64xbf16>
  // CHECK: sol.logits %{{.*}}, %{{.*}}, %[[EMB]], %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
  %l = sol.logits %d3, %nw, %emb, %rows {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
  // A linear may produce f32 (logits) without an epilogue.
  // CHECK: sol.linear %{{.*}}, %{{.*}} : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xf32>
  %f = sol.linear %d3, %wo : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xf32>
  return %l, %f : tensor<?x256xf32>, tensor<?x64xf32>
}

// The same layer at the kernel level (the -O2 pipeline's output, Qwen3
// style with per-head q/k norms), then the LM head on gathered rows.
// CHECK-LABEL: func.func @kernel_level
func.func @kernel_level(%ids: tensor<?xi32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>,
                        %rows: tensor<?xi32>) -> tensor<?x256xf32> {
  %emb = sol.weight @"model.embed_tokens.weight" : tensor<256x64xbf16>
  %h = sol.embedding %ids, %emb : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %ln = sol.weight @"l0.input_layernorm.weight" : tensor<64xbf16>
  %wqkv = sol.weight @"l0.qkv.weight" : tensor<128x64xbf16>
  %bqkv = sol.weight @"l0.qkv.bias" : tensor<128xbf16>
  // CHECK: %[[QKV:.*]] = sol.norm_linear %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  %qkv = sol.norm_linear %h, %ln, %wqkv, %bqkv {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  %qn = sol.weight @"l0.q_norm.weight" : tensor<16xbf16>
  %kn = sol.weight @"l0.k_norm.weight" : tensor<16xbf16>
  // CHECK: %[[QKV1:.*]] = sol.head_rms_norm %[[QKV]], %{{.*}} {column = 0 : i64, epsilon = 9.99999997E-7 : f32, num_heads = 4 : i64} : (tensor<?x128xbf16>, tensor<16xbf16>) -> tensor<?x128xbf16>
  %qkv1 = sol.head_rms_norm %qkv, %qn {column = 0, num_heads = 4, epsilon = 1.0e-6 : f32} : (tensor<?x128xbf16>, tensor<16xbf16>) -> tensor<?x128xbf16>
  // CHECK: %[[QKV2:.*]] = sol.head_rms_norm %[[QKV1]], %{{.*}} {column = 64 : i64, epsilon = 9.99999997E-7 : f32, num_heads = 2 : i64} : (tensor<?x128xbf16>, tensor<16xbf16>) -> tensor<?x128xbf16>
  %qkv2 = sol.head_rms_norm %qkv1, %kn {column = 64, num_heads = 2, epsilon = 1.0e-6 : f32} : (tensor<?x128xbf16>, tensor<16xbf16>) -> tensor<?x128xbf16>
  // CHECK: %[[ROT:.*]] = sol.rope_kv_write %[[QKV2]], %{{.*}}, %{{.*}} {head_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #sol.rope<theta = 1.000000e+06>} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  %rot = sol.rope_kv_write %qkv2, %pos, %seq {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, rope = #sol.rope<theta = 1000000.0>} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  // CHECK: %[[ATT:.*]] = sol.kv_attention %[[ROT]], %{{.*}}, %{{.*}} {head_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32, sliding_window = 4 : i64} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  %att = sol.kv_attention %rot, %pos, %seq {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32, sliding_window = 4} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  // CHECK: sol.kv_attention %[[ROT]], %{{.*}}, %{{.*}} {head_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32} :
  %att2 = sol.kv_attention %rot, %pos, %seq {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  %wo = sol.weight @"l0.o.weight" : tensor<64x64xbf16>
  // CHECK: %[[R1:.*]] = sol.linear %[[ATT]], %{{.*}} residual %{{.*}} {epilogue = #sol<epilogue residual>}
  %r1 = sol.linear %att, %wo residual %h {epilogue = #sol<epilogue residual>} : (tensor<?x64xbf16>, tensor<64x64xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
  %ln2 = sol.weight @"l0.post_attention_layernorm.weight" : tensor<64xbf16>
  // add_rms_norm has two results: the normed rows, and the sum.
  // CHECK: %[[NORMED:.*]], %[[SUM:.*]] = sol.add_rms_norm %{{.*}}, %[[R1]], %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>)
  %an:2 = sol.add_rms_norm %att2, %r1, %ln2 {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>)
  %wgu = sol.weight @"l0.gate_up.weight" : tensor<256x64xbf16>
  // CHECK: %[[ACT:.*]] = sol.norm_linear %[[SUM]], %{{.*}}, %{{.*}} {epilogue = #sol<epilogue swiglu>, epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>) -> tensor<?x128xbf16>
  %act = sol.norm_linear %an#1, %ln2, %wgu {epilogue = #sol<epilogue swiglu>, epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>) -> tensor<?x128xbf16>
  // The unfused forms: gate and up side by side, and the one-operand swiglu.
  %wg = sol.weight @"l0.gate.weight" : tensor<128x64xbf16>
  %g = sol.linear %an#0, %wg : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  // CHECK: %[[G:.*]] = sol.linear %[[NORMED]], %{{.*}} :
  // CHECK: %[[CAT:.*]] = sol.concat_columns %[[G]], %[[ACT]] : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x256xbf16>
  %cat = sol.concat_columns %g, %act : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x256xbf16>
  // CHECK: %[[SW:.*]] = sol.swiglu %[[CAT]] : (tensor<?x256xbf16>) -> tensor<?x128xbf16>
  %sw = sol.swiglu %cat : (tensor<?x256xbf16>) -> tensor<?x128xbf16>
  %wd = sol.weight @"l0.down.weight" : tensor<64x128xbf16>
  %bd = sol.weight @"l0.down.bias" : tensor<64xbf16>
  // norm_linear with a bias and the residual epilogue.
  // CHECK: %[[R2:.*]] = sol.norm_linear %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} residual %[[SUM]] {epilogue = #sol<epilogue residual>, epsilon = 9.99999974E-6 : f32} : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
  %nd = sol.weight @"l0.down_norm.weight" : tensor<128xbf16>
  %r2 = sol.norm_linear %sw, %nd, %wd, %bd residual %an#1 {epilogue = #sol<epilogue residual>, epsilon = 1.0e-5 : f32} : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
  // CHECK: %[[GR:.*]] = sol.gather_rows %[[R2]], %{{.*}} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %gr = sol.gather_rows %r2, %rows : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %nw = sol.weight @"model.norm.weight" : tensor<64xbf16>
  // The LM head: f32 results without an epilogue.
  // CHECK: sol.norm_linear %[[GR]], %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
  %l = sol.norm_linear %gr, %nw, %emb {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
  return %l : tensor<?x256xf32>
}

// The enum attributes on their own (they are otherwise parameters of the
// attributes and ops above).
// CHECK-LABEL: func.func @enums
// CHECK-SAME: attributes {sol.a = #sol<rope_scaling_kind yarn>, sol.b = #sol<kv_cache_dtype fp8>, sol.c = #sol<epilogue none>, sol.d = #sol<epilogue residual>, sol.e = #sol<epilogue swiglu>}
func.func @enums() attributes {sol.a = #sol<rope_scaling_kind yarn>, sol.b = #sol<kv_cache_dtype fp8>, sol.c = #sol<epilogue none>, sol.d = #sol<epilogue residual>, sol.e = #sol<epilogue swiglu>} {
  return
}

// The fp8 KV-cache layout, with its scales, on a nested module.
// CHECK: #sol.kv_cache_layout<num_layers = 4, num_kv_heads = 8, head_dim = 128, block_size = 16, dtype = fp8, arrangement = block_slot_head_dim, alignment = 16, scales = per_token_head>
// CHECK: #sol.model<architecture = "Qwen3ForCausalLM", vocab_size = 151936, hidden_size = 1024, num_layers = 28, max_position_embeddings = 40960>
module @fp8 attributes {
  sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 4, num_kv_heads = 8, head_dim = 128, block_size = 16, dtype = fp8, arrangement = block_slot_head_dim, alignment = 16, scales = per_token_head>,
  sol.model = #sol.model<architecture = "Qwen3ForCausalLM", vocab_size = 151936, hidden_size = 1024, num_layers = 28, max_position_embeddings = 40960>
} {}

}

// Tensor parallelism: a rank's weight slice and the collectives.
// CHECK-LABEL: func.func @tensor_parallel
// CHECK: sol.shard_weight %{{.*}} {axis = 0 : i64, groups = 4 : i64, ranks = 4 : i64, shards = 2 : i64} : tensor<64x16xbf16> -> tensor<32x16xbf16>
// CHECK: sol.first_rank_weight %{{.*}} {ranks = 4 : i64} : tensor<16xbf16>
// CHECK: sol.all_reduce %arg0 {ranks = 4 : i64} : tensor<?x16xbf16>
// CHECK: sol.all_gather %arg1 {ranks = 4 : i64} : tensor<?x8xf32> -> tensor<?x32xf32>
func.func @tensor_parallel(%x: tensor<?x16xbf16>, %l: tensor<?x8xf32>) -> (tensor<32x16xbf16>, tensor<16xbf16>, tensor<?x16xbf16>, tensor<?x32xf32>) {
  %w = sol.weight @w : tensor<64x16xbf16>
  %s = sol.shard_weight %w {axis = 0 : i64, groups = 4 : i64, shards = 2 : i64, ranks = 4 : i64} : tensor<64x16xbf16> -> tensor<32x16xbf16>
  %b = sol.weight @b : tensor<16xbf16>
  %b0 = sol.first_rank_weight %b {ranks = 4 : i64} : tensor<16xbf16>
  %y = sol.all_reduce %x {ranks = 4 : i64} : tensor<?x16xbf16>
  %g = sol.all_gather %l {ranks = 4 : i64} : tensor<?x8xf32> -> tensor<?x32xf32>
  return %s, %b0, %y, %g : tensor<32x16xbf16>, tensor<16xbf16>, tensor<?x16xbf16>, tensor<?x32xf32>
}

// A GPTQ act-order linear's inputs in its codes' column order.
// CHECK-LABEL: func.func @gather_columns
func.func @gather_columns(%x: tensor<?x4xbf16>) -> tensor<?x4xbf16> {
  // CHECK: sol.gather_columns %{{.*}} {columns = array<i32: 2, 0, 3, 1>} : (tensor<?x4xbf16>) -> tensor<?x4xbf16>
  %p = sol.gather_columns %x {columns = array<i32: 2, 0, 3, 1>} : (tensor<?x4xbf16>) -> tensor<?x4xbf16>
  return %p : tensor<?x4xbf16>
}
