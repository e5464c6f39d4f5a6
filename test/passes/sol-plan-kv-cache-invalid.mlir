// RUN: solc-opt %s --split-input-file --sol-plan-kv-cache --verify-diagnostics

// Negative cases of sol-plan-kv-cache and of #sol.kv_cache_layout's verifier.

// No op uses the cache.
// expected-error@+1 {{sol-plan-kv-cache: no op of the module uses the KV cache (no sol.attention), so there is nothing to plan}}
module {
  func.func @no_attention(%x: tensor<?x16xbf16>) -> tensor<?x16xbf16> {
    return %x : tensor<?x16xbf16>
  }
}

// -----

// Layers that disagree on kv heads.
func.func @shapes_differ(%q: tensor<?x64xbf16>, %k: tensor<?x32xbf16>, %v: tensor<?x32xbf16>, %k2: tensor<?x16xbf16>, %p: tensor<?xi32>) -> tensor<?x64xbf16> {
  // expected-note@+1 {{layer 0}}
  %a = sol.attention %q, %k, %v, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  // expected-error@+1 {{every layer must have the same KV shape, but this one has 1 kv heads of head dim 16 and layer 0 has 2 of 16}}
  %b = sol.attention %a, %k2, %k2, %p, %p {layer = 1, num_heads = 4, num_kv_heads = 1, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %b : tensor<?x64xbf16>
}

// -----

// The same across op kinds: a kernel-level append and a tensor-level
// attention disagree on the head dim.
func.func @kinds_differ(%qkv: tensor<?x128xbf16>, %q: tensor<?x128xbf16>, %k: tensor<?x64xbf16>, %p: tensor<?xi32>) -> tensor<?x128xbf16> {
  // expected-note@+1 {{layer 0}}
  %r = sol.rope_kv_write %qkv, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, rope = #sol.rope<theta = 10000.0>} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  // expected-error@+1 {{every layer must have the same KV shape, but this one has 2 kv heads of head dim 32 and layer 0 has 2 of 16}}
  %a = sol.attention %q, %k, %k, %p, %p {layer = 1, num_heads = 4, num_kv_heads = 2, head_dim = 32, scale = 0.25 : f32} : (tensor<?x128xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  return %a : tensor<?x128xbf16>
}

// -----

// A cache row must be a multiple of the kernels' 16-byte loads.
func.func @row_too_small(%q: tensor<?x8xbf16>, %k: tensor<?x4xbf16>, %p: tensor<?xi32>) -> tensor<?x8xbf16> {
  // expected-error@+1 {{a KV-cache row of head dim 4 is 8 bytes; the attention kernels need a multiple of 16}}
  %a = sol.attention %q, %k, %k, %p, %p {layer = 0, num_heads = 2, num_kv_heads = 1, head_dim = 4, scale = 0.5 : f32} : (tensor<?x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xbf16>
  return %a : tensor<?x8xbf16>
}

// -----

// The same for a kernel-level op (kv_attention of head dim 4).
func.func @row_too_small_kernel(%qkv: tensor<?x16xbf16>, %p: tensor<?xi32>) -> tensor<?x8xbf16> {
  // expected-error@+1 {{a KV-cache row of head dim 4 is 8 bytes; the attention kernels need a multiple of 16}}
  %a = sol.kv_attention %qkv, %p, %p {layer = 0, num_heads = 2, num_kv_heads = 1, head_dim = 4, scale = 0.5 : f32} : (tensor<?x16xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xbf16>
  return %a : tensor<?x8xbf16>
}

// -----

// #sol.kv_cache_layout's verifier: a power-of-two block size in [8, 256]...
// expected-error@+1 {{kv_cache_layout block_size must be a power of two in [8, 256], got 12}}
module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 12, dtype = bf16, arrangement = block_slot_head_dim, alignment = 16, scales = none>} {}

// -----

// ... not above the range...
// expected-error@+1 {{kv_cache_layout block_size must be a power of two in [8, 256], got 512}}
module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 512, dtype = bf16, arrangement = block_slot_head_dim, alignment = 16, scales = none>} {}

// -----

// ... an fp8 cache of a head dim the fp8 kernels support...
// expected-error@+1 {{the fp8 KV cache supports head dims that are multiples of 16 up to 256, got 288}}
module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 288, block_size = 16, dtype = fp8, arrangement = block_slot_head_dim, alignment = 16, scales = per_token_head>} {}

// -----

// ... with its scales...
// expected-error@+1 {{an fp8 KV cache needs scales = per_token_head}}
module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 64, block_size = 16, dtype = fp8, arrangement = block_slot_head_dim, alignment = 16, scales = none>} {}

// -----

// ... which a bf16 cache has not...
// expected-error@+1 {{a bf16 KV cache has no scales (scales = none)}}
module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 64, block_size = 16, dtype = bf16, arrangement = block_slot_head_dim, alignment = 16, scales = per_token_head>} {}

// -----

// ... an alignment that divides a row...
// expected-error@+1 {{kv_cache_layout alignment must be a power of two >= 16 that divides a cache row (32 bytes), got 24}}
module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 16, dtype = bf16, arrangement = block_slot_head_dim, alignment = 24, scales = none>} {}

// -----

// ... positive sizes...
// expected-error@+1 {{kv_cache_layout needs positive num_layers, num_kv_heads and head_dim, got 0, 2, 16}}
module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 0, num_kv_heads = 2, head_dim = 16, block_size = 16, dtype = bf16, arrangement = block_slot_head_dim, alignment = 16, scales = none>} {}

// -----

// ... and a known dtype.
// expected-error@+2 {{invalid KV-cache dtype (bf16 or fp8) specification: fp16}}
// expected-error@+1 {{failed to parse Sol_KvCacheLayoutAttr parameter 'dtype'}}
module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 16, dtype = fp16, arrangement = block_slot_head_dim, alignment = 16, scales = none>} {}
