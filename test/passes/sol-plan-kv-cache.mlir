// RUN: solc-opt %s --split-input-file --sol-plan-kv-cache | FileCheck %s
// RUN: solc-opt %s --split-input-file --sol-plan-kv-cache=dtype=fp8 | FileCheck %s --check-prefix=FP8
// RUN: solc-opt %s --split-input-file --sol-plan-kv-cache="block-size=128 dtype=bf16" | FileCheck %s --check-prefix=EXPLICIT
// RUN: solc-opt %s --split-input-file --sol-O0 | FileCheck %s
// RUN: solc-opt %s --split-input-file --sol-O2 | FileCheck %s

// sol-plan-kv-cache sizes the paged KV cache from every op that uses it
// (the KvCacheUser interface: sol.attention at the tensor level,
// sol.rope_kv_write and sol.kv_attention at the kernel level), so it gives
// the same layout before and after sol-lower-to-kernels, and every -O
// pipeline ends with it.
//
// The default block size keeps a block's K (or V) of one kv head near 4 KiB:
// 4096 / (head_dim x element bytes), clamped to [16, 32]. fp8 halves the
// element and doubles the tokens; explicit options win.

// Head dim 128, two tensor-level attentions: 16 tokens of bf16 (4 KiB), 32
// of fp8.
// CHECK: module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 2, num_kv_heads = 2, head_dim = 128, block_size = 16, dtype = bf16, arrangement = block_slot_head_dim, alignment = 16, scales = none>}
// FP8: module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 2, num_kv_heads = 2, head_dim = 128, block_size = 32, dtype = fp8, arrangement = block_slot_head_dim, alignment = 16, scales = per_token_head>}
// EXPLICIT: #sol.kv_cache_layout<num_layers = 2, num_kv_heads = 2, head_dim = 128, block_size = 128, dtype = bf16,
func.func @hd128(%q: tensor<?x512xbf16>, %k: tensor<?x256xbf16>, %v: tensor<?x256xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x512xbf16> {
  %qr = sol.rope %q, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 128} : (tensor<?x512xbf16>, tensor<?xi32>) -> tensor<?x512xbf16>
  %kr = sol.rope %k, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 128} : (tensor<?x256xbf16>, tensor<?xi32>) -> tensor<?x256xbf16>
  %a = sol.attention %qr, %kr, %v, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 128, scale = 0.088 : f32} : (tensor<?x512xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x512xbf16>
  %ar = sol.rope %a, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 128} : (tensor<?x512xbf16>, tensor<?xi32>) -> tensor<?x512xbf16>
  %b = sol.attention %ar, %kr, %v, %p, %s {layer = 1, num_heads = 4, num_kv_heads = 2, head_dim = 128, scale = 0.088 : f32, sliding_window = 64} : (tensor<?x512xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x512xbf16>
  return %b : tensor<?x512xbf16>
}

// -----

// Head dim 64 (Llama-3.2-1B), kernel level: 32 tokens of bf16; fp8 would
// be 64, capped at 32.
// CHECK: #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 8, head_dim = 64, block_size = 32, dtype = bf16,
// FP8: #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 8, head_dim = 64, block_size = 32, dtype = fp8,
// EXPLICIT: #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 8, head_dim = 64, block_size = 128, dtype = bf16,
func.func @hd64(%qkv: tensor<?x3072xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x2048xbf16> {
  %r = sol.rope_kv_write %qkv, %p, %s {layer = 0, num_heads = 32, num_kv_heads = 8, head_dim = 64, rope = #sol.rope<theta = 500000.0>} : (tensor<?x3072xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x3072xbf16>
  %a = sol.kv_attention %r, %p, %s {layer = 0, num_heads = 32, num_kv_heads = 8, head_dim = 64, scale = 0.125 : f32} : (tensor<?x3072xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2048xbf16>
  return %a : tensor<?x2048xbf16>
}

// -----

// Head dim 256: 8 tokens would be 4 KiB; the floor is 16.
// CHECK: #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 1, head_dim = 256, block_size = 16, dtype = bf16,
// FP8: #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 1, head_dim = 256, block_size = 16, dtype = fp8,
func.func @hd256(%qkv: tensor<?x1024xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x512xbf16> {
  %r = sol.rope_kv_write %qkv, %p, %s {layer = 0, num_heads = 2, num_kv_heads = 1, head_dim = 256, rope = #sol.rope<theta = 10000.0>} : (tensor<?x1024xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x1024xbf16>
  %a = sol.kv_attention %r, %p, %s {layer = 0, num_heads = 2, num_kv_heads = 1, head_dim = 256, scale = 0.0625 : f32} : (tensor<?x1024xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x512xbf16>
  return %a : tensor<?x512xbf16>
}

// -----

// Head dim 16 (the tiny test models): 128 tokens would be 4 KiB; the
// ceiling is 32. Layers need not appear in order, nor all: the cache has
// max(layer) + 1. Only a kv_attention here (it reads the cache of layer 2).
// CHECK: #sol.kv_cache_layout<num_layers = 3, num_kv_heads = 2, head_dim = 16, block_size = 32, dtype = bf16,
// FP8: #sol.kv_cache_layout<num_layers = 3, num_kv_heads = 2, head_dim = 16, block_size = 32, dtype = fp8,
func.func @kv_attention_only(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x64xbf16> {
  %a = sol.kv_attention %qkv, %p, %s {layer = 2, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// -----

// Only a rope_kv_write (it appends to the cache of layer 4).
// CHECK: #sol.kv_cache_layout<num_layers = 5, num_kv_heads = 1, head_dim = 32, block_size = 32, dtype = bf16,
// FP8: #sol.kv_cache_layout<num_layers = 5, num_kv_heads = 1, head_dim = 32, block_size = 32, dtype = fp8,
func.func @rope_kv_write_only(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x128xbf16> {
  %r = sol.rope_kv_write %qkv, %p, %s {layer = 4, num_heads = 2, num_kv_heads = 1, head_dim = 32, rope = #sol.rope<theta = 10000.0>} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  return %r : tensor<?x128xbf16>
}

// -----

// A module that has a layout keeps it when no option is given (re-running
// the pass, or the pipeline after solc's flags, changes nothing).
// CHECK: #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 8, dtype = fp8,
// FP8: #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 8, dtype = fp8,
// EXPLICIT: #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 128, dtype = bf16, arrangement = block_slot_head_dim, alignment = 16, scales = none>
module attributes {sol.kv_cache_layout = #sol.kv_cache_layout<num_layers = 1, num_kv_heads = 2, head_dim = 16, block_size = 8, dtype = fp8, arrangement = block_slot_head_dim, alignment = 16, scales = per_token_head>} {
  func.func @kept(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x64xbf16> {
    %r = sol.rope_kv_write %qkv, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, rope = #sol.rope<theta = 10000.0>} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
    %a = sol.kv_attention %r, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
    return %a : tensor<?x64xbf16>
  }
}
