// RUN: solc-opt %s --split-input-file --sol-lower-to-kernels --verify-diagnostics

// What sol-lower-to-kernels cannot lower is an error naming the op.

// An attention whose key has no sol.rope (the kernels rotate K as it is
// cached).
func.func @no_rope(%q0: tensor<?x64xbf16>, %k: tensor<?x32xbf16>, %v: tensor<?x32xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x64xbf16> {
  %q = sol.rope %q0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  // expected-error @+1 {{'sol.attention' op needs sol.rope on its query and key: the attention kernels rotate them as K is cached}}
  %a = sol.attention %q, %k, %v, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// -----

// Query and key rotated with different parameters (one rope per attention).
func.func @different_rope(%q0: tensor<?x64xbf16>, %k0: tensor<?x32xbf16>, %v: tensor<?x32xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x64xbf16> {
  %q = sol.rope %q0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %k = sol.rope %k0, %p {rope = #sol.rope<theta = 10000.0, kind = linear, factor = 2.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  // expected-error @+1 {{'sol.attention' op has query and key rotated with different rope parameters}}
  %a = sol.attention %q, %k, %v, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// -----

// Query rotated at other positions than the attention's.
func.func @other_positions(%q0: tensor<?x64xbf16>, %k0: tensor<?x32xbf16>, %v: tensor<?x32xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>, %p2: tensor<?xi32>) -> tensor<?x64xbf16> {
  %q = sol.rope %q0, %p2 {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %k = sol.rope %k0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  // expected-error @+1 {{'sol.attention' op must rotate query and key at its own positions}}
  %a = sol.attention %q, %k, %v, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// -----

// A non-causal attention (only causal attention is generated).
func.func @non_causal(%q0: tensor<?x64xbf16>, %k0: tensor<?x32xbf16>, %v: tensor<?x32xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x64xbf16> {
  %q = sol.rope %q0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %k = sol.rope %k0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  // expected-error @+1 {{'sol.attention' op is not causal; only causal attention is generated}}
  %a = sol.attention %q, %k, %v, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32, causal = false} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// -----

// A rope whose result feeds no attention has no kernel of its own.
func.func @rope_alone(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) -> tensor<?x64xbf16> {
  // expected-error @+1 {{'sol.rope' op is generated only as part of the KV-cache append of the sol.attention that reads it}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// A rope read by an attention and by another op: the attention is lowered,
// the rope stays behind for the other user.
func.func @rope_shared(%q0: tensor<?x64xbf16>, %k0: tensor<?x32xbf16>, %v: tensor<?x32xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  // expected-error @+1 {{'sol.rope' op is generated only as part of the KV-cache append of the sol.attention that reads it}}
  %q = sol.rope %q0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %k = sol.rope %k0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  %a = sol.attention %q, %k, %v, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a, %q : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// -----

// The ropes rotate heads of 32 while the attention has heads of 16: lowering
// would change the rotation.
func.func @rope_head_dim(%q0: tensor<?x64xbf16>, %k0: tensor<?x32xbf16>, %v: tensor<?x32xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x64xbf16> {
  %q = sol.rope %q0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 32} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %k = sol.rope %k0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 1, head_dim = 32} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  // expected-error @+1 {{'sol.attention' op has query and key rotated in heads other than its own}}
  %a = sol.attention %q, %k, %v, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}
