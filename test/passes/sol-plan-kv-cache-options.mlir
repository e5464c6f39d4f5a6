// Bad option values are diagnostics naming the problem.
// RUN: solc-opt %s --split-input-file --sol-plan-kv-cache=block-size=12 --verify-diagnostics
// RUN: solc-opt %s --split-input-file --sol-plan-kv-cache=block-size=4 --verify-diagnostics
// RUN: solc-opt %s --split-input-file --sol-plan-kv-cache=block-size=512 --verify-diagnostics
// RUN: not solc-opt %s --sol-plan-kv-cache=dtype=fp16 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not solc-opt %s --sol-plan-kv-cache=dtype=fp8 2>&1 | FileCheck %s --check-prefix=FP8

// DTYPE: error: sol-plan-kv-cache: unknown KV-cache dtype 'fp16'; expected bf16 or fp8
// FP8: error: sol-plan-kv-cache: the fp8 KV cache supports head dims that are multiples of 16 up to 256, but this model's is 72; use the bf16 KV cache

// expected-error@+1 {{sol-plan-kv-cache: the KV-cache block size must be a power of two in [8, 256], got}}
module {
  func.func @hd72(%q: tensor<?x144xbf16>, %k: tensor<?x72xbf16>, %p: tensor<?xi32>) -> tensor<?x144xbf16> {
    %a = sol.attention %q, %k, %k, %p, %p {layer = 0, num_heads = 2, num_kv_heads = 1, head_dim = 72, scale = 0.1 : f32} : (tensor<?x144xbf16>, tensor<?x72xbf16>, tensor<?x72xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x144xbf16>
    return %a : tensor<?x144xbf16>
  }
}
