// RUN: solc-opt %s --sol-fuse-projections | FileCheck %s

// Q, K and V of one input become one GEMM over their weights stacked by
// sol.concat_weights, then a sol.split back into the three parts; the
// biases are stacked the same way. The weights of K and V, defined after Q's
// linear as the importer writes them, move up to the fused linear.
// CHECK-LABEL: func.func @qkv
// CHECK-DAG: %[[WQ:.*]] = sol.weight @l0.q.weight
// CHECK-DAG: %[[WK:.*]] = sol.weight @l0.k.weight
// CHECK-DAG: %[[WV:.*]] = sol.weight @l0.v.weight
// CHECK-DAG: %[[BQ:.*]] = sol.weight @l0.q.bias
// CHECK-DAG: %[[BK:.*]] = sol.weight @l0.k.bias
// CHECK-DAG: %[[BV:.*]] = sol.weight @l0.v.bias
// CHECK: %[[W:.*]] = sol.concat_weights %[[WQ]], %[[WK]], %[[WV]] : (tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
// CHECK: %[[B:.*]] = sol.concat_weights %[[BQ]], %[[BK]], %[[BV]] : (tensor<64xbf16>, tensor<32xbf16>, tensor<32xbf16>) -> tensor<128xbf16>
// CHECK: %[[L:.*]] = sol.linear %arg0, %[[W]], %[[B]] : (tensor<?x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
// CHECK: %[[S:.*]]:3 = sol.split %[[L]] : tensor<?x128xbf16> -> tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>
// CHECK-NOT: sol.linear
// CHECK: %[[QR:.*]] = sol.rope %[[S]]#0
// CHECK: %[[KR:.*]] = sol.rope %[[S]]#1
// CHECK: sol.attention %[[QR]], %[[KR]], %[[S]]#2
func.func @qkv(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) -> tensor<?x64xbf16> {
  %wq = sol.weight @l0.q.weight : tensor<64x64xbf16>
  %bq = sol.weight @l0.q.bias : tensor<64xbf16>
  %q = sol.linear %x, %wq, %bq : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %wk = sol.weight @l0.k.weight : tensor<32x64xbf16>
  %bk = sol.weight @l0.k.bias : tensor<32xbf16>
  %k = sol.linear %x, %wk, %bk : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
  %wv = sol.weight @l0.v.weight : tensor<32x64xbf16>
  %bv = sol.weight @l0.v.bias : tensor<32xbf16>
  %v = sol.linear %x, %wv, %bv : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
  %qr = sol.rope %q, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %kr = sol.rope %k, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  %a = sol.attention %qr, %kr, %v, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// Gate and up feeding a swiglu become one linear with the swiglu epilogue
// over their rows interleaved by sol.interleave_rows (biases too); the down
// projection (another input) is left alone.
// CHECK-LABEL: func.func @mlp
// CHECK-DAG: %[[WG:.*]] = sol.weight @mlp.gate_proj.weight
// CHECK-DAG: %[[BG:.*]] = sol.weight @mlp.gate_proj.bias
// CHECK-DAG: %[[WU:.*]] = sol.weight @mlp.up_proj.weight
// CHECK-DAG: %[[BU:.*]] = sol.weight @mlp.up_proj.bias
// CHECK-DAG: %[[WD:.*]] = sol.weight @mlp.down_proj.weight
// CHECK: %[[GU:.*]] = sol.interleave_rows %[[WG]], %[[WU]] : tensor<128x64xbf16> -> tensor<256x64xbf16>
// CHECK: %[[BGU:.*]] = sol.interleave_rows %[[BG]], %[[BU]] : tensor<128xbf16> -> tensor<256xbf16>
// CHECK: %[[A:.*]] = sol.linear %arg0, %[[GU]], %[[BGU]] {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<256x64xbf16>, tensor<256xbf16>) -> tensor<?x128xbf16>
// CHECK-NEXT: %[[D:.*]] = sol.linear %[[A]], %[[WD]] : (tensor<?x128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
// CHECK-NEXT: return %[[D]]
func.func @mlp(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %wg = sol.weight @mlp.gate_proj.weight : tensor<128x64xbf16>
  %bg = sol.weight @mlp.gate_proj.bias : tensor<128xbf16>
  %wu = sol.weight @mlp.up_proj.weight : tensor<128x64xbf16>
  %bu = sol.weight @mlp.up_proj.bias : tensor<128xbf16>
  %wd = sol.weight @mlp.down_proj.weight : tensor<64x128xbf16>
  %g = sol.linear %x, %wg, %bg : (tensor<?x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  %u = sol.linear %x, %wu, %bu : (tensor<?x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  %d = sol.linear %s, %wd : (tensor<?x128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
  return %d : tensor<?x64xbf16>
}

// A linear of the same input as gate and up is not stacked with them: the
// gate/up pair goes to the swiglu epilogue, the sibling stays alone.
// CHECK-LABEL: func.func @sibling_of_swiglu
// CHECK-NOT: sol.concat_weights
// CHECK: %[[Q:.*]] = sol.linear %arg0, %{{.*}} : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
// CHECK: %[[GU:.*]] = sol.interleave_rows
// CHECK: %[[S:.*]] = sol.linear %arg0, %[[GU]] {epilogue = #sol<epilogue swiglu>}
// CHECK-NOT: sol.split
// CHECK: return %[[Q]], %[[S]]
func.func @sibling_of_swiglu(%x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x128xbf16>) {
  %wq = sol.weight @q : tensor<64x64xbf16>
  %wg = sol.weight @gate : tensor<128x64xbf16>
  %wu = sol.weight @up : tensor<128x64xbf16>
  %q = sol.linear %x, %wq : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %g = sol.linear %x, %wg : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %u = sol.linear %x, %wu : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  return %q, %s : tensor<?x64xbf16>, tensor<?x128xbf16>
}

// Of three linears of one input, the two without a bias are fused; the one
// with a bias stays apart.
// CHECK-LABEL: func.func @bias_groups
// CHECK-DAG: %[[B:.*]] = sol.weight @b :
// CHECK-DAG: %[[C:.*]] = sol.weight @c :
// CHECK: %[[Y1:.*]] = sol.linear %arg0, %{{.*}}, %{{.*}} : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
// CHECK: %[[W:.*]] = sol.concat_weights %[[B]], %[[C]] : (tensor<32x64xbf16>, tensor<16x64xbf16>) -> tensor<48x64xbf16>
// CHECK: %[[L:.*]] = sol.linear %arg0, %[[W]] : (tensor<?x64xbf16>, tensor<48x64xbf16>) -> tensor<?x48xbf16>
// CHECK: %[[S:.*]]:2 = sol.split %[[L]] : tensor<?x48xbf16> -> tensor<?x32xbf16>, tensor<?x16xbf16>
// CHECK: return %[[Y1]], %[[S]]#0, %[[S]]#1
func.func @bias_groups(%x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x16xbf16>) {
  %w1 = sol.weight @a : tensor<64x64xbf16>
  %b1 = sol.weight @a.bias : tensor<64xbf16>
  %w2 = sol.weight @b : tensor<32x64xbf16>
  %w3 = sol.weight @c : tensor<16x64xbf16>
  %y1 = sol.linear %x, %w1, %b1 : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %y2 = sol.linear %x, %w2 : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %y3 = sol.linear %x, %w3 : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
  return %y1, %y2, %y3 : tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x16xbf16>
}

// Near-misses of the sibling fusion (Q/K/V).

// Linears of different inputs stay apart.
// CHECK-LABEL: func.func @different_inputs
// CHECK-NOT: sol.concat_weights
// CHECK-COUNT-2: sol.linear
// CHECK-NOT: sol.split
// CHECK: return
func.func @different_inputs(%x: tensor<?x64xbf16>, %x2: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %w1 = sol.weight @a : tensor<64x64xbf16>
  %w2 = sol.weight @b : tensor<64x64xbf16>
  %y1 = sol.linear %x, %w1 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %y2 = sol.linear %x2, %w2 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  return %y1, %y2 : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Two linears of which only one has a bias stay apart.
// CHECK-LABEL: func.func @one_bias
// CHECK-NOT: sol.concat_weights
// CHECK-COUNT-2: sol.linear
// CHECK-NOT: sol.split
// CHECK: return
func.func @one_bias(%x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %w1 = sol.weight @a : tensor<64x64xbf16>
  %w2 = sol.weight @b : tensor<64x64xbf16>
  %b2 = sol.weight @b.bias : tensor<64xbf16>
  %y1 = sol.linear %x, %w1 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %y2 = sol.linear %x, %w2, %b2 : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y1, %y2 : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// A linear with an epilogue is not fused with a plain sibling.
// CHECK-LABEL: func.func @epilogue
// CHECK-NOT: sol.concat_weights
// CHECK: sol.linear %arg0, %{{.*}} : (
// CHECK: sol.linear %arg0, %{{.*}} residual %arg1 {epilogue = #sol<epilogue residual>}
// CHECK-NOT: sol.split
func.func @epilogue(%x: tensor<?x64xbf16>, %r: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %w1 = sol.weight @a : tensor<64x64xbf16>
  %w2 = sol.weight @b : tensor<64x64xbf16>
  %y1 = sol.linear %x, %w1 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %y2 = sol.linear %x, %w2 residual %r {epilogue = #sol<epilogue residual>} : (tensor<?x64xbf16>, tensor<64x64xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return %y1, %y2 : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Weights of different element types cannot be stacked.
// CHECK-LABEL: func.func @weight_types
// CHECK-NOT: sol.concat_weights
// CHECK-COUNT-2: sol.linear
// CHECK-NOT: sol.split
// CHECK: return
func.func @weight_types(%x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %w1 = sol.weight @a : tensor<64x64xbf16>
  %w2 = sol.weight @b : tensor<64x64xf16>
  %y1 = sol.linear %x, %w1 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %y2 = sol.linear %x, %w2 : (tensor<?x64xbf16>, tensor<64x64xf16>) -> tensor<?x64xbf16>
  return %y1, %y2 : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Results of different element types (an f32 logits head beside a bf16
// projection) are not one GEMM.
// CHECK-LABEL: func.func @result_types
// CHECK-NOT: sol.concat_weights
// CHECK-COUNT-2: sol.linear
// CHECK-NOT: sol.split
// CHECK: return
func.func @result_types(%x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xf32>) {
  %w1 = sol.weight @a : tensor<64x64xbf16>
  %w2 = sol.weight @b : tensor<64x64xbf16>
  %y1 = sol.linear %x, %w1 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %y2 = sol.linear %x, %w2 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xf32>
  return %y1, %y2 : tensor<?x64xbf16>, tensor<?x64xf32>
}

// A weight that is not a weight op (a function argument) is not fused.
// CHECK-LABEL: func.func @weight_argument
// CHECK-NOT: sol.concat_weights
// CHECK-COUNT-2: sol.linear
// CHECK-NOT: sol.split
// CHECK: return
func.func @weight_argument(%x: tensor<?x64xbf16>, %w2: tensor<64x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %w1 = sol.weight @a : tensor<64x64xbf16>
  %y1 = sol.linear %x, %w1 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %y2 = sol.linear %x, %w2 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  return %y1, %y2 : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Near-misses of the gate/up fusion: the swiglu keeps its two operands.

// Gate and up of different inputs.
// CHECK-LABEL: func.func @gate_up_inputs
// CHECK-NOT: sol.interleave_rows
// CHECK-COUNT-2: sol.linear
// CHECK-NEXT: sol.swiglu %{{.*}}, %{{.*}} :
func.func @gate_up_inputs(%x: tensor<?x64xbf16>, %x2: tensor<?x64xbf16>) -> tensor<?x128xbf16> {
  %wg = sol.weight @gate : tensor<128x64xbf16>
  %wu = sol.weight @up : tensor<128x64xbf16>
  %g = sol.linear %x, %wg : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %u = sol.linear %x2, %wu : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  return %s : tensor<?x128xbf16>
}

// Gate and up weights of different element types.
// CHECK-LABEL: func.func @gate_up_weight_types
// CHECK-NOT: sol.interleave_rows
// CHECK-COUNT-2: sol.linear
// CHECK-NEXT: sol.swiglu %{{.*}}, %{{.*}} :
func.func @gate_up_weight_types(%x: tensor<?x64xbf16>) -> tensor<?x128xbf16> {
  %wg = sol.weight @gate : tensor<128x64xbf16>
  %wu = sol.weight @up : tensor<128x64xf16>
  %g = sol.linear %x, %wg : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %u = sol.linear %x, %wu : (tensor<?x64xbf16>, tensor<128x64xf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  return %s : tensor<?x128xbf16>
}

// Only the gate has a bias.
// CHECK-LABEL: func.func @gate_up_one_bias
// CHECK-NOT: sol.interleave_rows
// CHECK-COUNT-2: sol.linear
// CHECK-NEXT: sol.swiglu %{{.*}}, %{{.*}} :
func.func @gate_up_one_bias(%x: tensor<?x64xbf16>) -> tensor<?x128xbf16> {
  %wg = sol.weight @gate : tensor<128x64xbf16>
  %bg = sol.weight @gate.bias : tensor<128xbf16>
  %wu = sol.weight @up : tensor<128x64xbf16>
  %g = sol.linear %x, %wg, %bg : (tensor<?x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  %u = sol.linear %x, %wu : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  return %s : tensor<?x128xbf16>
}

// The gate is read by another op too.
// CHECK-LABEL: func.func @gate_two_uses
// CHECK-NOT: sol.interleave_rows
// CHECK-COUNT-2: sol.linear
// CHECK-NEXT: sol.swiglu %{{.*}}, %{{.*}} :
func.func @gate_two_uses(%x: tensor<?x64xbf16>) -> (tensor<?x128xbf16>, tensor<?x128xbf16>) {
  %wg = sol.weight @gate : tensor<128x64xbf16>
  %wu = sol.weight @up : tensor<128x64xbf16>
  %g = sol.linear %x, %wg : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %u = sol.linear %x, %wu : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  return %s, %g : tensor<?x128xbf16>, tensor<?x128xbf16>
}

// The up projection already has an epilogue.
// CHECK-LABEL: func.func @gate_up_epilogue
// CHECK-NOT: sol.interleave_rows
// CHECK-COUNT-2: sol.linear
// CHECK-NEXT: sol.swiglu %{{.*}}, %{{.*}} :
func.func @gate_up_epilogue(%x: tensor<?x64xbf16>, %r: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  %wg = sol.weight @gate : tensor<128x64xbf16>
  %wu = sol.weight @up : tensor<128x64xbf16>
  %g = sol.linear %x, %wg : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %u = sol.linear %x, %wu residual %r {epilogue = #sol<epilogue residual>} : (tensor<?x64xbf16>, tensor<128x64xbf16> residual tensor<?x128xbf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  return %s : tensor<?x128xbf16>
}

// The kernel-level swiglu (one operand) is already fused.
// CHECK-LABEL: func.func @one_operand_swiglu
// CHECK: %[[GU:.*]] = sol.linear %arg0, %{{.*}} : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
// CHECK-NEXT: sol.swiglu %[[GU]] : (tensor<?x128xbf16>) -> tensor<?x64xbf16>
func.func @one_operand_swiglu(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %w = sol.weight @gate_up : tensor<128x64xbf16>
  %gu = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %gu : (tensor<?x128xbf16>) -> tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}


// Gate and up weights of one type after a conversion (the verifier keeps a
// bias in its weight's type, so the biases then agree too): they fuse, the
// interleave reading the converted weights.
// CHECK-LABEL: func.func @gate_up_converted
// CHECK: %[[WU:.*]] = sol.convert_weight %{{.*}} : tensor<128x64xbf16> -> tensor<128x64xf16>
// CHECK: %[[BU:.*]] = sol.convert_weight %{{.*}} : tensor<128xbf16> -> tensor<128xf16>
// CHECK: %[[W:.*]] = sol.interleave_rows %{{.*}}, %[[WU]] : tensor<128x64xf16> -> tensor<256x64xf16>
// CHECK: %[[B:.*]] = sol.interleave_rows %{{.*}}, %[[BU]] : tensor<128xf16> -> tensor<256xf16>
// CHECK: sol.linear %arg0, %[[W]], %[[B]] {epilogue = #sol<epilogue swiglu>}
func.func @gate_up_converted(%x: tensor<?x64xf16>) -> tensor<?x128xf16> {
  %wg = sol.weight @gate : tensor<128x64xf16>
  %bg = sol.weight @gate.bias : tensor<128xf16>
  %wu = sol.weight @up : tensor<128x64xbf16>
  %bu = sol.weight @up.bias : tensor<128xbf16>
  %wu16 = sol.convert_weight %wu : tensor<128x64xbf16> -> tensor<128x64xf16>
  %bu16 = sol.convert_weight %bu : tensor<128xbf16> -> tensor<128xf16>
  %g = sol.linear %x, %wg, %bg : (tensor<?x64xf16>, tensor<128x64xf16>, tensor<128xf16>) -> tensor<?x128xf16>
  %u = sol.linear %x, %wu16, %bu16 : (tensor<?x64xf16>, tensor<128x64xf16>, tensor<128xf16>) -> tensor<?x128xf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xf16>, tensor<?x128xf16>) -> tensor<?x128xf16>
  return %s : tensor<?x128xf16>
}

// Quantized projections (as an AWQ or GPTQ checkpoint imports them) are fused
// like float ones: codes, scales and zero points stacked alike, the fused
// linear with the parts' scheme and group size.
// CHECK-LABEL: func.func @qkv_int4
// CHECK-DAG: %[[QC:.*]] = sol.weight @"q~int4" :
// CHECK-DAG: %[[KC:.*]] = sol.weight @"k~int4" :
// CHECK-DAG: %[[QS:.*]] = sol.weight @"q~int4.scales" :
// CHECK-DAG: %[[KS:.*]] = sol.weight @"k~int4.scales" :
// CHECK-DAG: %[[QZ:.*]] = sol.weight @"q~int4.zeros" :
// CHECK-DAG: %[[KZ:.*]] = sol.weight @"k~int4.zeros" :
// CHECK: %[[C:.*]] = sol.concat_weights %[[QC]], %[[KC]] : (tensor<64x64xi4>, tensor<32x64xi4>) -> tensor<96x64xi4>
// CHECK: %[[S:.*]] = sol.concat_weights %[[QS]], %[[KS]] : (tensor<64x2xf32>, tensor<32x2xf32>) -> tensor<96x2xf32>
// CHECK: %[[Z:.*]] = sol.concat_weights %[[QZ]], %[[KZ]] : (tensor<64x2xui8>, tensor<32x2xui8>) -> tensor<96x2xui8>
// CHECK: %[[L:.*]] = sol.linear %arg0, %[[C]] scales %[[S]] zeros %[[Z]] {group_size = 32 : i64, quant = #sol<quant int4>} : (tensor<?x64xbf16>, tensor<96x64xi4> scales tensor<96x2xf32> zeros tensor<96x2xui8>) -> tensor<?x96xbf16>
// CHECK: sol.split %[[L]] : tensor<?x96xbf16> -> tensor<?x64xbf16>, tensor<?x32xbf16>
func.func @qkv_int4(%x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>) {
  %qc = sol.weight @"q~int4" : tensor<64x64xi4>
  %qs = sol.weight @"q~int4.scales" : tensor<64x2xf32>
  %qz = sol.weight @"q~int4.zeros" : tensor<64x2xui8>
  %q = sol.linear %x, %qc scales %qs zeros %qz {group_size = 32 : i64, quant = #sol<quant int4>} : (tensor<?x64xbf16>, tensor<64x64xi4> scales tensor<64x2xf32> zeros tensor<64x2xui8>) -> tensor<?x64xbf16>
  %kc = sol.weight @"k~int4" : tensor<32x64xi4>
  %ks = sol.weight @"k~int4.scales" : tensor<32x2xf32>
  %kz = sol.weight @"k~int4.zeros" : tensor<32x2xui8>
  %k = sol.linear %x, %kc scales %ks zeros %kz {group_size = 32 : i64, quant = #sol<quant int4>} : (tensor<?x64xbf16>, tensor<32x64xi4> scales tensor<32x2xf32> zeros tensor<32x2xui8>) -> tensor<?x32xbf16>
  return %q, %k : tensor<?x64xbf16>, tensor<?x32xbf16>
}

// fp8 gate and up: their codes and per-row scales interleaved for the swiglu
// epilogue.
// CHECK-LABEL: func.func @gate_up_fp8
// CHECK: %[[C:.*]] = sol.interleave_rows %{{.*}}, %{{.*}} : tensor<128x64xf8E4M3FN> -> tensor<256x64xf8E4M3FN>
// CHECK: %[[S:.*]] = sol.interleave_rows %{{.*}}, %{{.*}} : tensor<128xf32> -> tensor<256xf32>
// CHECK: sol.linear %arg0, %[[C]] scales %[[S]] {epilogue = #sol<epilogue swiglu>, quant = #sol<quant fp8>} : (tensor<?x64xbf16>, tensor<256x64xf8E4M3FN> scales tensor<256xf32>) -> tensor<?x128xbf16>
// CHECK-NOT: sol.swiglu
func.func @gate_up_fp8(%x: tensor<?x64xbf16>) -> tensor<?x128xbf16> {
  %gc = sol.weight @gate : tensor<128x64xf8E4M3FN>
  %gs = sol.weight @gate.scales : tensor<128xf32>
  %uc = sol.weight @up : tensor<128x64xf8E4M3FN>
  %us = sol.weight @up.scales : tensor<128xf32>
  %g = sol.linear %x, %gc scales %gs {quant = #sol<quant fp8>} : (tensor<?x64xbf16>, tensor<128x64xf8E4M3FN> scales tensor<128xf32>) -> tensor<?x128xbf16>
  %u = sol.linear %x, %uc scales %us {quant = #sol<quant fp8>} : (tensor<?x64xbf16>, tensor<128x64xf8E4M3FN> scales tensor<128xf32>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  return %s : tensor<?x128xbf16>
}

// Near-misses: parts quantized differently are not fused. Q in int4 groups
// of 32 beside K in groups of 16 and V in bf16: all three stay apart.
// CHECK-LABEL: func.func @mixed_quantization
// CHECK-NOT: sol.concat_weights
// CHECK-COUNT-3: sol.linear
// CHECK-NOT: sol.split
// CHECK: return
func.func @mixed_quantization(%x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>) {
  %qc = sol.weight @q : tensor<64x64xi4>
  %qs = sol.weight @q.scales : tensor<64x2xf32>
  %qz = sol.weight @q.zeros : tensor<64x2xui8>
  %q = sol.linear %x, %qc scales %qs zeros %qz {group_size = 32 : i64, quant = #sol<quant int4>} : (tensor<?x64xbf16>, tensor<64x64xi4> scales tensor<64x2xf32> zeros tensor<64x2xui8>) -> tensor<?x64xbf16>
  %kc = sol.weight @k : tensor<32x64xi4>
  %ks = sol.weight @k.scales : tensor<32x4xf32>
  %kz = sol.weight @k.zeros : tensor<32x4xui8>
  %k = sol.linear %x, %kc scales %ks zeros %kz {group_size = 16 : i64, quant = #sol<quant int4>} : (tensor<?x64xbf16>, tensor<32x64xi4> scales tensor<32x4xf32> zeros tensor<32x4xui8>) -> tensor<?x32xbf16>
  %vw = sol.weight @v : tensor<32x64xbf16>
  %v = sol.linear %x, %vw : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %q, %k, %v : tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>
}

// An fp8 gate beside a bf16 up keeps the two-operand swiglu.
// CHECK-LABEL: func.func @gate_up_mixed
// CHECK-NOT: sol.interleave_rows
// CHECK-COUNT-2: sol.linear
// CHECK-NEXT: sol.swiglu %{{.*}}, %{{.*}} :
func.func @gate_up_mixed(%x: tensor<?x64xbf16>) -> tensor<?x128xbf16> {
  %gc = sol.weight @gate : tensor<128x64xf8E4M3FN>
  %gs = sol.weight @gate.scales : tensor<128xf32>
  %uw = sol.weight @up : tensor<128x64xbf16>
  %g = sol.linear %x, %gc scales %gs {quant = #sol<quant fp8>} : (tensor<?x64xbf16>, tensor<128x64xf8E4M3FN> scales tensor<128xf32>) -> tensor<?x128xbf16>
  %u = sol.linear %x, %uw : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  return %s : tensor<?x128xbf16>
}
