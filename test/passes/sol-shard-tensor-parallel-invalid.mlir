// RUN: solc-opt %s --split-input-file --sol-shard-tensor-parallel="ranks=4" --verify-diagnostics

// What cannot be split evenly over the ranks is an error naming the op and
// the numbers.

// 6 query heads over 4 ranks.
func.func @heads(%x: tensor<?x192xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x192xbf16> {
  %wq = sol.weight @q.weight : tensor<192x192xbf16>
  %q0 = sol.linear %x, %wq : (tensor<?x192xbf16>, tensor<192x192xbf16>) -> tensor<?x192xbf16>
  %wk = sol.weight @k.weight : tensor<64x192xbf16>
  %k0 = sol.linear %x, %wk : (tensor<?x192xbf16>, tensor<64x192xbf16>) -> tensor<?x64xbf16>
  %wv = sol.weight @v.weight : tensor<64x192xbf16>
  %v = sol.linear %x, %wv : (tensor<?x192xbf16>, tensor<64x192xbf16>) -> tensor<?x64xbf16>
  %q = sol.rope %q0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 6, head_dim = 32} : (tensor<?x192xbf16>, tensor<?xi32>) -> tensor<?x192xbf16>
  %k = sol.rope %k0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 32} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  // expected-error @+1 {{'sol.attention' op has 6 query heads, which 4 ranks cannot share evenly; choose a tensor-parallel size that divides 6}}
  %a = sol.attention %q, %k, %v, %p, %s {layer = 0, num_heads = 6, num_kv_heads = 2, head_dim = 32, scale = 0.17 : f32} : (tensor<?x192xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x192xbf16>
  return %a : tensor<?x192xbf16>
}

// -----

// 3 key/value heads: 4 ranks can neither split nor replicate them.
func.func @kv_heads(%x: tensor<?x384xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x384xbf16> {
  %wq = sol.weight @q.weight : tensor<384x384xbf16>
  %q0 = sol.linear %x, %wq : (tensor<?x384xbf16>, tensor<384x384xbf16>) -> tensor<?x384xbf16>
  %wk = sol.weight @k.weight : tensor<96x384xbf16>
  %k0 = sol.linear %x, %wk : (tensor<?x384xbf16>, tensor<96x384xbf16>) -> tensor<?x96xbf16>
  %wv = sol.weight @v.weight : tensor<96x384xbf16>
  %v = sol.linear %x, %wv : (tensor<?x384xbf16>, tensor<96x384xbf16>) -> tensor<?x96xbf16>
  %q = sol.rope %q0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 12, head_dim = 32} : (tensor<?x384xbf16>, tensor<?xi32>) -> tensor<?x384xbf16>
  %k = sol.rope %k0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 3, head_dim = 32} : (tensor<?x96xbf16>, tensor<?xi32>) -> tensor<?x96xbf16>
  // expected-error @+1 {{'sol.attention' op has 3 key/value heads, which 4 ranks can neither split nor replicate evenly; choose a tensor-parallel size that divides or is a multiple of 3}}
  %a = sol.attention %q, %k, %v, %p, %s {layer = 0, num_heads = 12, num_kv_heads = 3, head_dim = 32, scale = 0.17 : f32} : (tensor<?x384xbf16>, tensor<?x96xbf16>, tensor<?x96xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x384xbf16>
  return %a : tensor<?x384xbf16>
}

// -----

// The attention's result read by something besides its output projection.
func.func @attention_read_twice(%x: tensor<?x128xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> (tensor<?x128xbf16>, tensor<?x128xbf16>) {
  %wq = sol.weight @q.weight : tensor<128x128xbf16>
  %q0 = sol.linear %x, %wq : (tensor<?x128xbf16>, tensor<128x128xbf16>) -> tensor<?x128xbf16>
  %wk = sol.weight @k.weight : tensor<128x128xbf16>
  %k0 = sol.linear %x, %wk : (tensor<?x128xbf16>, tensor<128x128xbf16>) -> tensor<?x128xbf16>
  %wv = sol.weight @v.weight : tensor<128x128xbf16>
  %v = sol.linear %x, %wv : (tensor<?x128xbf16>, tensor<128x128xbf16>) -> tensor<?x128xbf16>
  %q = sol.rope %q0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 32} : (tensor<?x128xbf16>, tensor<?xi32>) -> tensor<?x128xbf16>
  %k = sol.rope %k0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 32} : (tensor<?x128xbf16>, tensor<?xi32>) -> tensor<?x128xbf16>
  // expected-error @+1 {{'sol.attention' op cannot be split over 4 ranks: its result has more than one reader}}
  %a = sol.attention %q, %k, %v, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 4, head_dim = 32, scale = 0.17 : f32} : (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  %wo = sol.weight @o.weight : tensor<128x128xbf16>
  %o = sol.linear %a, %wo : (tensor<?x128xbf16>, tensor<128x128xbf16>) -> tensor<?x128xbf16>
  return %o, %a : tensor<?x128xbf16>, tensor<?x128xbf16>
}

// -----

// A query that is not a projection of its own (the attention's input
// itself).
func.func @query_not_projected(%x: tensor<?x128xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x128xbf16> {
  %wk = sol.weight @k.weight : tensor<128x128xbf16>
  %k0 = sol.linear %x, %wk : (tensor<?x128xbf16>, tensor<128x128xbf16>) -> tensor<?x128xbf16>
  %wv = sol.weight @v.weight : tensor<128x128xbf16>
  %v = sol.linear %x, %wv : (tensor<?x128xbf16>, tensor<128x128xbf16>) -> tensor<?x128xbf16>
  %q = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 32} : (tensor<?x128xbf16>, tensor<?xi32>) -> tensor<?x128xbf16>
  %k = sol.rope %k0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 32} : (tensor<?x128xbf16>, tensor<?xi32>) -> tensor<?x128xbf16>
  // expected-error @+1 {{'sol.attention' op cannot be split over 4 ranks: its query is not a projection of its own}}
  %a = sol.attention %q, %k, %v, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 4, head_dim = 32, scale = 0.17 : f32} : (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  return %a : tensor<?x128xbf16>
}

// -----

// An MLP whose intermediate size 6 the ranks do not divide.
func.func @mlp_width(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %wg = sol.weight @gate.weight : tensor<6x64xbf16>
  %g = sol.linear %x, %wg : (tensor<?x64xbf16>, tensor<6x64xbf16>) -> tensor<?x6xbf16>
  %wu = sol.weight @up.weight : tensor<6x64xbf16>
  %u = sol.linear %x, %wu : (tensor<?x64xbf16>, tensor<6x64xbf16>) -> tensor<?x6xbf16>
  // expected-error @+1 {{'sol.swiglu' op has an intermediate size of 6, which 4 ranks cannot share evenly}}
  %s = sol.swiglu %g, %u : (tensor<?x6xbf16>, tensor<?x6xbf16>) -> tensor<?x6xbf16>
  %wd = sol.weight @down.weight : tensor<64x6xbf16>
  %d = sol.linear %s, %wd : (tensor<?x6xbf16>, tensor<64x6xbf16>) -> tensor<?x64xbf16>
  return %d : tensor<?x64xbf16>
}

// -----

// Experts of intermediate size 6.
func.func @expert_width(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %r = sol.weight @router.weight : tensor<2x64xbf16>
  %g = sol.weight @gate.weight : tensor<12x64xbf16>
  %u = sol.weight @up.weight : tensor<12x64xbf16>
  %d = sol.weight @down.weight : tensor<128x6xbf16>
  // expected-error @+1 {{'sol.moe' op has experts of intermediate size 6, which 4 ranks cannot share evenly}}
  %y = sol.moe %x, %r, %g, %u, %d {top_k = 1 : i64, normalize_top_k = false} : (tensor<?x64xbf16>, tensor<2x64xbf16>, tensor<12x64xbf16>, tensor<12x64xbf16>, tensor<128x6xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Int4 groups of 64 inputs: a quarter of 128 inputs splits a group.
func.func @int4_group(%x: tensor<?x128xbf16>) -> tensor<?x64xbf16> {
  %wg = sol.weight @gate.weight : tensor<128x128xbf16>
  %g = sol.linear %x, %wg : (tensor<?x128xbf16>, tensor<128x128xbf16>) -> tensor<?x128xbf16>
  %wu = sol.weight @up.weight : tensor<128x128xbf16>
  %u = sol.linear %x, %wu : (tensor<?x128xbf16>, tensor<128x128xbf16>) -> tensor<?x128xbf16>
  // expected-error @+1 {{'sol.swiglu' op cannot be split over 4 ranks: its down projection's int4 groups of 64 inputs do not divide its 32 inputs per rank}}
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  %c = sol.weight @down.codes : tensor<64x128xi4>
  %sc = sol.weight @down.scales : tensor<64x2xf32>
  %z = sol.weight @down.zeros : tensor<64x2xui8>
  %d = sol.linear %s, %c scales %sc zeros %z {quant = #sol<quant int4>, group_size = 64 : i64} : (tensor<?x128xbf16>, tensor<64x128xi4> scales tensor<64x2xf32> zeros tensor<64x2xui8>) -> tensor<?x64xbf16>
  return %d : tensor<?x64xbf16>
}
