// RUN: solc-opt %s --sol-shard-tensor-parallel="ranks=2" --split-input-file | FileCheck %s
// RUN: solc-opt %s --sol-shard-tensor-parallel="ranks=4" --split-input-file | FileCheck %s --check-prefix=FOUR

// A decoder layer split over two ranks: each keeps 2 of the 4 query heads
// and 1 of the 2 kv heads (rows of q, k, v and their biases), the output
// projection its 64 of 128 input columns, its bias on rank 0 only, and a
// sol.all_reduce sums the ranks' products; gate and up keep half their
// rows, down half its columns.
// CHECK-LABEL: func.func @layer
// CHECK: %[[WQ:.*]] = sol.shard_weight %{{.*}} {axis = 0 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<128x128xbf16> -> tensor<64x128xbf16>
// CHECK: %[[BQ:.*]] = sol.shard_weight %{{.*}} {axis = 0 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<128xbf16> -> tensor<64xbf16>
// CHECK: %[[Q:.*]] = sol.linear %arg0, %[[WQ]], %[[BQ]] : (tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
// CHECK: sol.shard_weight %{{.*}} {axis = 0 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<64x128xbf16> -> tensor<32x128xbf16>
// CHECK: %[[K:.*]] = sol.linear {{.*}} -> tensor<?x32xbf16>
// CHECK: %[[V:.*]] = sol.linear {{.*}} -> tensor<?x32xbf16>
// CHECK: %[[QR:.*]] = sol.rope %[[Q]], %arg1 {head_dim = 32 : i64, num_heads = 2 : i64
// CHECK-SAME: -> tensor<?x64xbf16>
// CHECK: %[[KR:.*]] = sol.rope %[[K]], %arg1 {head_dim = 32 : i64, num_heads = 1 : i64
// CHECK: %[[A:.*]] = sol.attention %[[QR]], %[[KR]], %[[V]], %arg1, %arg2 {head_dim = 32 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64
// CHECK-SAME: -> tensor<?x64xbf16>
// CHECK: %[[WO:.*]] = sol.shard_weight %{{.*}} {axis = 1 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<128x128xbf16> -> tensor<128x64xbf16>
// CHECK: %[[BO:.*]] = sol.first_rank_weight %{{.*}} {ranks = 2 : i64} : tensor<128xbf16>
// CHECK: %[[O:.*]] = sol.linear %[[A]], %[[WO]], %[[BO]] : (tensor<?x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
// CHECK: %[[OS:.*]] = sol.all_reduce %[[O]] {ranks = 2 : i64} : tensor<?x128xbf16>
// CHECK: %[[H:.*]] = sol.add %arg0, %[[OS]]
// CHECK: sol.shard_weight {{.*}} : tensor<256x128xbf16> -> tensor<128x128xbf16>
// CHECK: %[[G:.*]] = sol.linear %[[H]], {{.*}} -> tensor<?x128xbf16>
// CHECK: %[[U:.*]] = sol.linear %[[H]], {{.*}} -> tensor<?x128xbf16>
// CHECK: %[[S:.*]] = sol.swiglu %[[G]], %[[U]] : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
// CHECK: %[[WD:.*]] = sol.shard_weight %{{.*}} {axis = 1 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<128x256xbf16> -> tensor<128x128xbf16>
// CHECK: %[[D:.*]] = sol.linear %[[S]], %[[WD]] : (tensor<?x128xbf16>, tensor<128x128xbf16>) -> tensor<?x128xbf16>
// CHECK: %[[DS:.*]] = sol.all_reduce %[[D]] {ranks = 2 : i64} : tensor<?x128xbf16>
// CHECK: sol.add %[[H]], %[[DS]]
// Four ranks and two kv heads: k and v are cut in two (shards = 2), ranks
// 0 and 1 keeping kv head 0, ranks 2 and 3 kv head 1.
// FOUR-LABEL: func.func @layer
// FOUR: sol.shard_weight %{{.*}} {axis = 0 : i64, ranks = 4 : i64, shards = 4 : i64} : tensor<128x128xbf16> -> tensor<32x128xbf16>
// FOUR: sol.shard_weight %{{.*}} {axis = 0 : i64, ranks = 4 : i64, shards = 2 : i64} : tensor<64x128xbf16> -> tensor<32x128xbf16>
// FOUR: sol.attention {{.*}} {head_dim = 32 : i64, layer = 0 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64
func.func @layer(%x: tensor<?x128xbf16>, %pos: tensor<?xi32>, %seq: tensor<?xi32>) -> tensor<?x128xbf16> {
  %wq = sol.weight @q.weight : tensor<128x128xbf16>
  %bq = sol.weight @q.bias : tensor<128xbf16>
  %q = sol.linear %x, %wq, %bq : (tensor<?x128xbf16>, tensor<128x128xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  %wk = sol.weight @k.weight : tensor<64x128xbf16>
  %k = sol.linear %x, %wk : (tensor<?x128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
  %wv = sol.weight @v.weight : tensor<64x128xbf16>
  %v = sol.linear %x, %wv : (tensor<?x128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
  %qr = sol.rope %q, %pos {head_dim = 32 : i64, num_heads = 4 : i64, rope = #sol.rope<theta = 1.0e4>} : (tensor<?x128xbf16>, tensor<?xi32>) -> tensor<?x128xbf16>
  %kr = sol.rope %k, %pos {head_dim = 32 : i64, num_heads = 2 : i64, rope = #sol.rope<theta = 1.0e4>} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %a = sol.attention %qr, %kr, %v, %pos, %seq {head_dim = 32 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.17677 : f32} : (tensor<?x128xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  %wo = sol.weight @o.weight : tensor<128x128xbf16>
  %bo = sol.weight @o.bias : tensor<128xbf16>
  %o = sol.linear %a, %wo, %bo : (tensor<?x128xbf16>, tensor<128x128xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  %h = sol.add %x, %o : tensor<?x128xbf16>
  %wg = sol.weight @gate.weight : tensor<256x128xbf16>
  %g = sol.linear %h, %wg : (tensor<?x128xbf16>, tensor<256x128xbf16>) -> tensor<?x256xbf16>
  %wu = sol.weight @up.weight : tensor<256x128xbf16>
  %u = sol.linear %h, %wu : (tensor<?x128xbf16>, tensor<256x128xbf16>) -> tensor<?x256xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x256xbf16>, tensor<?x256xbf16>) -> tensor<?x256xbf16>
  %wd = sol.weight @down.weight : tensor<128x256xbf16>
  %d = sol.linear %s, %wd : (tensor<?x256xbf16>, tensor<128x256xbf16>) -> tensor<?x128xbf16>
  %y = sol.add %h, %d : tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// A packed QKV projection (an ONNX graph's) is taken apart into one linear
// per part over its rows, each then split by heads; Qwen3's per-head norms
// keep their one-head weight and narrow with the heads.
// CHECK-LABEL: func.func @packed_qkv_with_head_norms
// CHECK: %[[W:.*]] = sol.weight @qkv.weight : tensor<256x128xbf16>
// CHECK: %[[WQ:.*]] = sol.slice_rows %[[W]] {offset = 0 : i64} : tensor<256x128xbf16> -> tensor<128x128xbf16>
// CHECK: sol.shard_weight %[[WQ]] {axis = 0 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<128x128xbf16> -> tensor<64x128xbf16>
// CHECK: %[[WK:.*]] = sol.slice_rows %[[W]] {offset = 128 : i64} : tensor<256x128xbf16> -> tensor<64x128xbf16>
// CHECK: %[[WV:.*]] = sol.slice_rows %[[W]] {offset = 192 : i64} : tensor<256x128xbf16> -> tensor<64x128xbf16>
// CHECK-NOT: sol.split
// CHECK: sol.rms_norm %{{.*}}, %{{.*}} {epsilon = {{.*}}} : (tensor<?x64xbf16>, tensor<32xbf16>) -> tensor<?x64xbf16>
// CHECK: sol.rms_norm %{{.*}}, %{{.*}} {epsilon = {{.*}}} : (tensor<?x32xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
// CHECK: sol.attention {{.*}} num_heads = 2 : i64, num_kv_heads = 1 : i64
func.func @packed_qkv_with_head_norms(%x: tensor<?x128xbf16>, %pos: tensor<?xi32>, %seq: tensor<?xi32>) -> tensor<?x128xbf16> {
  %w = sol.weight @qkv.weight : tensor<256x128xbf16>
  %qkv = sol.linear %x, %w : (tensor<?x128xbf16>, tensor<256x128xbf16>) -> tensor<?x256xbf16>
  %q, %k, %v = sol.split %qkv : tensor<?x256xbf16> -> tensor<?x128xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>
  %nq = sol.weight @q_norm.weight : tensor<32xbf16>
  %qn = sol.rms_norm %q, %nq {epsilon = 1.0e-6 : f32} : (tensor<?x128xbf16>, tensor<32xbf16>) -> tensor<?x128xbf16>
  %nk = sol.weight @k_norm.weight : tensor<32xbf16>
  %kn = sol.rms_norm %k, %nk {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<32xbf16>) -> tensor<?x64xbf16>
  %qr = sol.rope %qn, %pos {head_dim = 32 : i64, num_heads = 4 : i64, rope = #sol.rope<theta = 1.0e4>} : (tensor<?x128xbf16>, tensor<?xi32>) -> tensor<?x128xbf16>
  %kr = sol.rope %kn, %pos {head_dim = 32 : i64, num_heads = 2 : i64, rope = #sol.rope<theta = 1.0e4>} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %a = sol.attention %qr, %kr, %v, %pos, %seq {head_dim = 32 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.17677 : f32} : (tensor<?x128xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  %wo = sol.weight @o.weight : tensor<128x128xbf16>
  %o = sol.linear %a, %wo : (tensor<?x128xbf16>, tensor<128x128xbf16>) -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

// A mixture of experts: every expert's rows of gate and up (groups = 8
// experts), the columns of down, the router whole; the ranks' outputs are
// summed.
// CHECK-LABEL: func.func @moe
// CHECK: %[[R:.*]] = sol.weight @router.weight : tensor<8x64xbf16>
// CHECK: %[[G:.*]] = sol.shard_weight %{{.*}} {axis = 0 : i64, groups = 8 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<256x64xbf16> -> tensor<128x64xbf16>
// CHECK: %[[U:.*]] = sol.shard_weight %{{.*}} {axis = 0 : i64, groups = 8 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<256x64xbf16> -> tensor<128x64xbf16>
// CHECK: %[[D:.*]] = sol.shard_weight %{{.*}} {axis = 1 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<512x32xbf16> -> tensor<512x16xbf16>
// CHECK: %[[M:.*]] = sol.moe %arg0, %[[R]], %[[G]], %[[U]], %[[D]]
// CHECK: %[[S:.*]] = sol.all_reduce %[[M]] {ranks = 2 : i64} : tensor<?x64xbf16>
// CHECK: return %[[S]]
func.func @moe(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %r = sol.weight @router.weight : tensor<8x64xbf16>
  %g = sol.weight @gate.weight : tensor<256x64xbf16>
  %u = sol.weight @up.weight : tensor<256x64xbf16>
  %d = sol.weight @down.weight : tensor<512x32xbf16>
  %y = sol.moe %x, %r, %g, %u, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<8x64xbf16>, tensor<256x64xbf16>, tensor<256x64xbf16>, tensor<512x32xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// gpt-oss's biases: the router's stays whole, gate's and up's follow their
// experts' rows, down's is added by rank 0 only (the sum holds it once).
// CHECK-LABEL: func.func @moe_biases
// CHECK-DAG: %[[RB:.*]] = sol.weight @router.bias : tensor<8xbf16>
// CHECK-DAG: %[[GB:.*]] = sol.shard_weight %{{.*}} {axis = 0 : i64, groups = 8 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<256xbf16> -> tensor<128xbf16>
// CHECK-DAG: %[[DB:.*]] = sol.first_rank_weight %{{.*}} {ranks = 2 : i64} : tensor<512xbf16>
// CHECK: sol.moe {{.*}} biases(%[[RB]], %[[GB]], %{{.*}}, %[[DB]])
// CHECK: sol.all_reduce
func.func @moe_biases(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %r = sol.weight @router.weight : tensor<8x64xbf16>
  %g = sol.weight @gate.weight : tensor<256x64xbf16>
  %u = sol.weight @up.weight : tensor<256x64xbf16>
  %d = sol.weight @down.weight : tensor<512x32xbf16>
  %rb = sol.weight @router.bias : tensor<8xbf16>
  %gb = sol.weight @gate.bias : tensor<256xbf16>
  %ub = sol.weight @up.bias : tensor<256xbf16>
  %db = sol.weight @down.bias : tensor<512xbf16>
  %y = sol.moe %x, %r, %g, %u, %d biases(%rb, %gb, %ub, %db) {top_k = 2 : i64, normalize_top_k = true, activation = #sol<activation clamped_silu>, activation_limit = 7.0 : f32} : (tensor<?x64xbf16>, tensor<8x64xbf16>, tensor<256x64xbf16>, tensor<256x64xbf16>, tensor<512x32xbf16>, tensor<8xbf16>, tensor<256xbf16>, tensor<256xbf16>, tensor<512xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Attention sinks follow their query heads.
// CHECK-LABEL: func.func @sinks
// CHECK: %[[S:.*]] = sol.shard_weight %{{.*}} {axis = 0 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<4xbf16> -> tensor<2xbf16>
// CHECK: sol.attention {{.*}} sinks %[[S]] {head_dim = 16 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64
func.func @sinks(%x: tensor<?x64xbf16>, %pos: tensor<?xi32>, %seq: tensor<?xi32>) -> tensor<?x64xbf16> {
  %wq = sol.weight @q.weight : tensor<64x64xbf16>
  %wk = sol.weight @k.weight : tensor<32x64xbf16>
  %wv = sol.weight @v.weight : tensor<32x64xbf16>
  %wo = sol.weight @o.weight : tensor<64x64xbf16>
  %s = sol.weight @sinks : tensor<4xbf16>
  %q = sol.linear %x, %wq : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %k = sol.linear %x, %wk : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %v = sol.linear %x, %wv : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %a = sol.attention %q, %k, %v, %pos, %seq sinks %s {head_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<4xbf16>) -> tensor<?x64xbf16>
  %o = sol.linear %a, %wo : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  return %o : tensor<?x64xbf16>
}

// -----

// The LM head by vocabulary, the logits' columns gathered; the tied
// embedding keeps the whole table.
// CHECK-LABEL: func.func @lm_head
// CHECK: %[[T:.*]] = sol.weight @embed.weight : tensor<1024x64xbf16>
// CHECK: sol.embedding %arg0, %[[T]] : (tensor<?xi32>, tensor<1024x64xbf16>)
// CHECK: %[[H:.*]] = sol.shard_weight %[[T]] {axis = 0 : i64, ranks = 2 : i64, shards = 2 : i64} : tensor<1024x64xbf16> -> tensor<512x64xbf16>
// CHECK: %[[L:.*]] = sol.logits %{{.*}}, %{{.*}}, %[[H]], %arg1 {{.*}} -> tensor<?x512xf32>
// CHECK: %[[A:.*]] = sol.all_gather %[[L]] {ranks = 2 : i64} : tensor<?x512xf32> -> tensor<?x1024xf32>
// CHECK: return %[[A]]
func.func @lm_head(%ids: tensor<?xi32>, %rows: tensor<?xi32>) -> tensor<?x1024xf32> {
  %t = sol.weight @embed.weight : tensor<1024x64xbf16>
  %h = sol.embedding %ids, %t : (tensor<?xi32>, tensor<1024x64xbf16>) -> tensor<?x64xbf16>
  %n = sol.weight @norm.weight : tensor<64xbf16>
  %l = sol.logits %h, %n, %t, %rows {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<1024x64xbf16>, tensor<?xi32>) -> tensor<?x1024xf32>
  return %l : tensor<?x1024xf32>
}

// -----

// A vocabulary the ranks do not divide: the LM head stays whole on every
// rank, and nothing is gathered.
// CHECK-LABEL: func.func @odd_vocabulary
// CHECK-NOT: sol.shard_weight
// CHECK-NOT: sol.all_gather
// CHECK: sol.logits {{.*}} -> tensor<?x1001xf32>
func.func @odd_vocabulary(%h: tensor<?x64xbf16>, %rows: tensor<?xi32>) -> tensor<?x1001xf32> {
  %t = sol.weight @lm_head.weight : tensor<1001x64xbf16>
  %n = sol.weight @norm.weight : tensor<64xbf16>
  %l = sol.logits %h, %n, %t, %rows {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<1001x64xbf16>, tensor<?xi32>) -> tensor<?x1001xf32>
  return %l : tensor<?x1001xf32>
}
