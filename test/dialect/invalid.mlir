// RUN: solc-opt %s -split-input-file -verify-diagnostics

func.func @weight_dynamic() {
  // expected-error @+1 {{'sol.weight' op weight @w must have a static shape, but has [?, 4]}}
  %w = sol.weight @w : tensor<?x4xbf16>
  return
}

// -----

func.func @weight_type() {
  // expected-error @+1 {{result #0 must be ranked tensor of}}
  %w = sol.weight @w : tensor<4xi64>
  return
}

// -----

func.func @embedding_table_rank(%ids: tensor<?xi32>) {
  %t = sol.weight @t : tensor<256xbf16>
  // expected-error @+1 {{operand #1 (table) must be 2-D [vocab, hidden], but has shape [256]}}
  %e = sol.embedding %ids, %t : (tensor<?xi32>, tensor<256xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @embedding_ids_rank(%ids: tensor<?x2xi32>) {
  %t = sol.weight @t : tensor<256x64xbf16>
  // expected-error @+1 {{operand #0 (ids) must be a 1-D tensor of i32 (one entry per token), but has shape [?, 2]}}
  %e = sol.embedding %ids, %t : (tensor<?x2xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @embedding_result(%ids: tensor<?xi32>) {
  %t = sol.weight @t : tensor<256x64xbf16>
  // expected-error @+1 {{result must have shape [?, 64] to match the table, but has shape [?, 32]}}
  %e = sol.embedding %ids, %t : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @linear_k(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<32x48xbf16>
  // expected-error @+1 {{operand #1 (weight) has 48 input features but operand #0 (input) has 64}}
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<32x48xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @linear_bias(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  %b = sol.weight @b : tensor<64xbf16>
  // expected-error @+1 {{operand #2 (bias) must have shape [32], but has shape [64]}}
  %y = sol.linear %x, %w, %b : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @linear_result(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{result must have shape [?, 32], but has shape [?, 64]}}
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @linear_swiglu_odd(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<33x64xbf16>
  // expected-error @+1 {{the swiglu epilogue needs an even number of output features, weight has 33}}
  %y = sol.linear %x, %w {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<33x64xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @linear_static_tokens(%x: tensor<4x?xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{operand #0 (input) must have static dimensions after the token dimension, but has shape [4, ?]}}
  %y = sol.linear %x, %w : (tensor<4x?xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @rms_norm_group(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<24xbf16>
  // expected-error @+1 {{operand #1 (weight) must be 1-D with a size that divides the row size 64, but has shape [24]}}
  %y = sol.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<24xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @rms_norm_epsilon(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<64xbf16>
  // expected-error @+1 {{epsilon must be positive}}
  %y = sol.rms_norm %x, %w {epsilon = 0.0 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @rms_norm_rank(%x: tensor<?x4x16xbf16>) {
  %w = sol.weight @w : tensor<16xbf16>
  // expected-error @+1 {{operand #0 (input) must have rank 2 (tokens first), but has shape [?, 4, 16]}}
  %y = sol.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x4x16xbf16>, tensor<16xbf16>) -> tensor<?x4x16xbf16>
  return
}

// -----

func.func @layer_norm_bias(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<64xbf16>
  %b = sol.weight @b : tensor<32xbf16>
  // expected-error @+1 {{operand #2 (bias) must have shape [64], but has shape [32]}}
  %y = sol.layer_norm %x, %w, %b {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @rope_heads(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{operand #0 (input) has 64 features per token, but num_heads × head_dim = 48}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 3, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @rope_odd(%x: tensor<?x60xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{num_heads must be positive and head_dim positive and even, got num_heads = 4, head_dim = 15}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 15} : (tensor<?x60xbf16>, tensor<?xi32>) -> tensor<?x60xbf16>
  return
}

// -----

func.func @rope_theta(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope theta must be positive, got -1}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = -1.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @rope_llama3(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{llama3 rope scaling needs original_max_position > 0}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0, kind = llama3, factor = 8.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @attention_gqa(%q: tensor<?x48xbf16>, %k: tensor<?x32xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{num_heads (3) must be a multiple of num_kv_heads (2)}}
  %a = sol.attention %q, %k, %k, %p, %p {layer = 0, num_heads = 3, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x48xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x48xbf16>
  return
}

// -----

func.func @attention_key(%q: tensor<?x64xbf16>, %k: tensor<?x16xbf16>, %v: tensor<?x32xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{operand #1 (key) has 16 features per token, expected 32}}
  %a = sol.attention %q, %k, %v, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x16xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @attention_window(%q: tensor<?x64xbf16>, %k: tensor<?x32xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{sliding_window must be positive when set}}
  %a = sol.attention %q, %k, %k, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32, sliding_window = 0} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @attention_positions(%q: tensor<?x64xbf16>, %k: tensor<?x32xbf16>, %p: tensor<?x2xi32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{operand #3 (positions) must be a 1-D tensor of i32 (one entry per token), but has shape [?, 2]}}
  %a = sol.attention %q, %k, %k, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x2xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @silu_type(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{'sol.silu' op requires the same type for all operands and results}}
  %y = "sol.silu"(%x) : (tensor<?x64xbf16>) -> tensor<?x64xf32>
  return
}

// -----

func.func @gelu_type(%x: tensor<?x64xi32>) {
  // expected-error @+1 {{'sol.gelu' op operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<?x64xi32>'}}
  %y = "sol.gelu"(%x) : (tensor<?x64xi32>) -> tensor<?x64xi32>
  return
}

// -----

func.func @mul_shapes(%x: tensor<?x64xbf16>, %y: tensor<?x32xbf16>) {
  // expected-error @+1 {{'sol.mul' op all non-scalar operands/results must have the same shape and base type}}
  %z = "sol.mul"(%x, %y) : (tensor<?x64xbf16>, tensor<?x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @add_shapes(%x: tensor<?x64xbf16>, %y: tensor<?x64xf16>) {
  // expected-error @+1 {{'sol.add' op requires the same type for all operands and results}}
  %z = "sol.add"(%x, %y) : (tensor<?x64xbf16>, tensor<?x64xf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @swiglu_up(%g: tensor<?x64xbf16>, %u: tensor<?x32xbf16>) {
  // expected-error @+1 {{operand #1 (up) must have the type of operand #0 (gate) 'tensor<?x64xbf16>', but has 'tensor<?x32xbf16>'}}
  %s = sol.swiglu %g, %u : (tensor<?x64xbf16>, tensor<?x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @swiglu_one_operand(%g: tensor<?x64xbf16>) {
  // expected-error @+1 {{result must have shape [?, 32], but has shape [?, 64]}}
  %s = sol.swiglu %g : (tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @split_sum(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{results have 48 columns in all, but the input has 64}}
  %a:2 = sol.split %x : tensor<?x64xbf16> -> tensor<?x16xbf16>, tensor<?x32xbf16>
  return
}

// -----

func.func @logits_head(%h: tensor<?x64xbf16>, %r: tensor<?xi32>) {
  %n = sol.weight @n : tensor<64xbf16>
  %w = sol.weight @w : tensor<256x32xbf16>
  // expected-error @+1 {{operand #2 (lm_head) must have shape [vocab, 64], but has shape [256, 32]}}
  %l = sol.logits %h, %n, %w, %r {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x32xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
  return
}

// -----

func.func @logits_result(%h: tensor<?x64xbf16>, %r: tensor<?xi32>) {
  %n = sol.weight @n : tensor<64xbf16>
  %w = sol.weight @w : tensor<256x64xbf16>
  // expected-error @+1 {{result must have shape [?, 256] (one row of vocabulary logits per selected row), but has shape [?, 128]}}
  %l = sol.logits %h, %n, %w, %r {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x128xf32>
  return
}

// -----

func.func @fused_non_elementwise(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{may hold only elementwise sol ops, but holds 'sol.swiglu'}}
  %r = sol.fused ins(%x : tensor<?x64xbf16>) -> tensor<?x32xbf16> {
  ^bb0(%a: tensor<?x64xbf16>):
    %s = sol.swiglu %a : (tensor<?x64xbf16>) -> tensor<?x32xbf16>
    sol.yield %s : tensor<?x32xbf16>
  }
  return
}

// -----

func.func @fused_arg_type(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{region argument #0 has type 'tensor<?x64xf32>' but input #0 has type 'tensor<?x64xbf16>'}}
  %r = sol.fused ins(%x : tensor<?x64xbf16>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>):
    %s = sol.silu %a : tensor<?x64xf32>
    sol.yield %s : tensor<?x64xf32>
  }
  return
}

// -----

func.func @fused_yield(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{sol.yield produces 1 values whose types must equal the results' types}}
  %r = sol.fused ins(%x : tensor<?x64xbf16>) -> tensor<?x32xbf16> {
  ^bb0(%a: tensor<?x64xbf16>):
    %s = sol.silu %a : tensor<?x64xbf16>
    sol.yield %s : tensor<?x64xbf16>
  }
  return
}

// -----

func.func @yield_outside(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{expects parent op 'sol.fused'}}
  sol.yield %x : tensor<?x64xbf16>
}
