// RUN: solc-opt %s --sol-O0 | FileCheck %s --check-prefix=O0
// RUN: solc-opt %s --sol-O1 | FileCheck %s --check-prefix=O0
// RUN: solc-opt %s --sol-O2 | FileCheck %s --check-prefix=O2
// RUN: solc-opt %s --sol-O3 | FileCheck %s --check-prefix=O2

// The whole pipelines on one Llama-style decoder layer as the importer
// writes it: every level lowers to kernel-level ops and plans the KV cache;
// from -O2 the fusions run first. (-O1 adds only canonicalization and CSE,
// which change nothing here, so it matches -O0; -O3 matches -O2.)

// -O0: one kernel per tensor-level op. Q, K and V (and gate and up) are
// packed by concat_columns for the kernels that read packed rows; the LM
// head is a gather, a norm and an f32 linear.
// O0: module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 32, dtype = bf16, arrangement = block_slot_head_dim, alignment = 16, scales = none>, sol.model = #sol.model<architecture = "LlamaForCausalLM", vocab_size = 256, hidden_size = 64, num_layers = 1, max_position_embeddings = 128>}
// O0-LABEL: func.func @forward
// O0-NEXT:  %[[EMB:.*]] = sol.weight @model.embed_tokens.weight
// O0-NEXT:  %[[H:.*]] = sol.embedding %arg0, %[[EMB]]
// O0-NEXT:  sol.weight @model.layers.0.input_layernorm.weight
// O0-NEXT:  %[[X:.*]] = sol.rms_norm %[[H]],
// O0-NEXT:  sol.weight @model.layers.0.self_attn.q_proj.weight
// O0-NEXT:  %[[Q:.*]] = sol.linear %[[X]],
// O0-NEXT:  sol.weight @model.layers.0.self_attn.k_proj.weight
// O0-NEXT:  %[[K:.*]] = sol.linear %[[X]],
// O0-NEXT:  sol.weight @model.layers.0.self_attn.v_proj.weight
// O0-NEXT:  %[[V:.*]] = sol.linear %[[X]],
// O0-NEXT:  %[[QKV:.*]] = sol.concat_columns %[[Q]], %[[K]], %[[V]] : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>) -> tensor<?x128xbf16>
// O0-NEXT:  %[[ROT:.*]] = sol.rope_kv_write %[[QKV]], %arg1, %arg2 {head_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #sol.rope<theta = 1.000000e+04>}
// O0-NEXT:  %[[A:.*]] = sol.kv_attention %[[ROT]], %arg1, %arg2 {head_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32}
// O0-NEXT:  sol.weight @model.layers.0.self_attn.o_proj.weight
// O0-NEXT:  %[[O:.*]] = sol.linear %[[A]],
// O0-NEXT:  %[[H1:.*]] = sol.add %[[H]], %[[O]]
// O0-NEXT:  sol.weight @model.layers.0.post_attention_layernorm.weight
// O0-NEXT:  %[[Y:.*]] = sol.rms_norm %[[H1]],
// O0-NEXT:  sol.weight @model.layers.0.mlp.gate_proj.weight
// O0-NEXT:  %[[G:.*]] = sol.linear %[[Y]],
// O0-NEXT:  sol.weight @model.layers.0.mlp.up_proj.weight
// O0-NEXT:  %[[U:.*]] = sol.linear %[[Y]],
// O0-NEXT:  %[[GU:.*]] = sol.concat_columns %[[G]], %[[U]] : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x256xbf16>
// O0-NEXT:  %[[S:.*]] = sol.swiglu %[[GU]] : (tensor<?x256xbf16>) -> tensor<?x128xbf16>
// O0-NEXT:  sol.weight @model.layers.0.mlp.down_proj.weight
// O0-NEXT:  %[[D:.*]] = sol.linear %[[S]],
// O0-NEXT:  %[[H2:.*]] = sol.add %[[H1]], %[[D]]
// O0-NEXT:  %[[NW:.*]] = sol.weight @model.norm.weight
// O0-NEXT:  %[[GR:.*]] = sol.gather_rows %[[H2]], %arg3
// O0-NEXT:  %[[N:.*]] = sol.rms_norm %[[GR]], %[[NW]]
// O0-NEXT:  %[[L:.*]] = sol.linear %[[N]], %[[EMB]] : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
// O0-NEXT:  return %[[L]]

// -O2: QKV as one GEMM with the input norm in its prologue, written packed
// for the cache append; the residual adds in the o_proj and down_proj
// epilogues; the post-attention norm and gate/up in one GEMM with the
// swiglu epilogue; the LM head on the gathered rows with the final norm in
// its prologue. Weight transforms (concat_weights, interleave_rows) stay for
// code generation to materialise.
// O2: module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 32, dtype = bf16, arrangement = block_slot_head_dim, alignment = 16, scales = none>, sol.model = #sol.model<architecture = "LlamaForCausalLM", vocab_size = 256, hidden_size = 64, num_layers = 1, max_position_embeddings = 128>}
// O2-LABEL: func.func @forward
// O2-NEXT:  %[[EMB:.*]] = sol.weight @model.embed_tokens.weight
// O2-NEXT:  %[[H:.*]] = sol.embedding %arg0, %[[EMB]]
// O2-NEXT:  %[[LN:.*]] = sol.weight @model.layers.0.input_layernorm.weight
// O2-NEXT:  %[[WQ:.*]] = sol.weight @model.layers.0.self_attn.q_proj.weight
// O2-NEXT:  %[[WK:.*]] = sol.weight @model.layers.0.self_attn.k_proj.weight
// O2-NEXT:  %[[WV:.*]] = sol.weight @model.layers.0.self_attn.v_proj.weight
// O2-NEXT:  %[[WQKV:.*]] = sol.concat_weights %[[WQ]], %[[WK]], %[[WV]] : (tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
// O2-NEXT:  %[[QKV:.*]] = sol.norm_linear %[[H]], %[[LN]], %[[WQKV]] {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
// O2-NEXT:  %[[ROT:.*]] = sol.rope_kv_write %[[QKV]], %arg1, %arg2 {head_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #sol.rope<theta = 1.000000e+04>}
// O2-NEXT:  %[[A:.*]] = sol.kv_attention %[[ROT]], %arg1, %arg2 {head_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32}
// O2-NEXT:  %[[WO:.*]] = sol.weight @model.layers.0.self_attn.o_proj.weight
// O2-NEXT:  %[[H1:.*]] = sol.linear %[[A]], %[[WO]] residual %[[H]] {epilogue = #sol<epilogue residual>}
// O2-NEXT:  %[[LN2:.*]] = sol.weight @model.layers.0.post_attention_layernorm.weight
// O2-NEXT:  %[[WG:.*]] = sol.weight @model.layers.0.mlp.gate_proj.weight
// O2-NEXT:  %[[WU:.*]] = sol.weight @model.layers.0.mlp.up_proj.weight
// O2-NEXT:  %[[WGU:.*]] = sol.interleave_rows %[[WG]], %[[WU]] : tensor<128x64xbf16> -> tensor<256x64xbf16>
// O2-NEXT:  %[[S:.*]] = sol.norm_linear %[[H1]], %[[LN2]], %[[WGU]] {epilogue = #sol<epilogue swiglu>, epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>) -> tensor<?x128xbf16>
// O2-NEXT:  %[[WD:.*]] = sol.weight @model.layers.0.mlp.down_proj.weight
// O2-NEXT:  %[[H2:.*]] = sol.linear %[[S]], %[[WD]] residual %[[H1]] {epilogue = #sol<epilogue residual>}
// O2-NEXT:  %[[NW:.*]] = sol.weight @model.norm.weight
// O2-NEXT:  %[[GR:.*]] = sol.gather_rows %[[H2]], %arg3
// O2-NEXT:  %[[L:.*]] = sol.norm_linear %[[GR]], %[[NW]], %[[EMB]] {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
// O2-NEXT:  return %[[L]]

module attributes {sol.model = #sol.model<architecture = "LlamaForCausalLM", vocab_size = 256, hidden_size = 64, num_layers = 1, max_position_embeddings = 128>} {
  func.func @forward(%tokens: tensor<?xi32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %rows: tensor<?xi32>) -> tensor<?x256xf32> {
    %emb = sol.weight @model.embed_tokens.weight : tensor<256x64xbf16>
    %h = sol.embedding %tokens, %emb : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
    %ln = sol.weight @model.layers.0.input_layernorm.weight : tensor<64xbf16>
    %x = sol.rms_norm %h, %ln {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
    %wq = sol.weight @model.layers.0.self_attn.q_proj.weight : tensor<64x64xbf16>
    %q = sol.linear %x, %wq : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
    %wk = sol.weight @model.layers.0.self_attn.k_proj.weight : tensor<32x64xbf16>
    %k = sol.linear %x, %wk : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
    %wv = sol.weight @model.layers.0.self_attn.v_proj.weight : tensor<32x64xbf16>
    %v = sol.linear %x, %wv : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
    %qr = sol.rope %q, %pos {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
    %kr = sol.rope %k, %pos {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
    %a = sol.attention %qr, %kr, %v, %pos, %seq {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
    %wo = sol.weight @model.layers.0.self_attn.o_proj.weight : tensor<64x64xbf16>
    %o = sol.linear %a, %wo : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
    %h1 = sol.add %h, %o : tensor<?x64xbf16>
    %ln2 = sol.weight @model.layers.0.post_attention_layernorm.weight : tensor<64xbf16>
    %y = sol.rms_norm %h1, %ln2 {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
    %wg = sol.weight @model.layers.0.mlp.gate_proj.weight : tensor<128x64xbf16>
    %g = sol.linear %y, %wg : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
    %wu = sol.weight @model.layers.0.mlp.up_proj.weight : tensor<128x64xbf16>
    %u = sol.linear %y, %wu : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
    %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
    %wd = sol.weight @model.layers.0.mlp.down_proj.weight : tensor<64x128xbf16>
    %d = sol.linear %s, %wd : (tensor<?x128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
    %h2 = sol.add %h1, %d : tensor<?x64xbf16>
    %nw = sol.weight @model.norm.weight : tensor<64xbf16>
    %l = sol.logits %h2, %nw, %emb, %rows {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
    return %l : tensor<?x256xf32>
  }
}
