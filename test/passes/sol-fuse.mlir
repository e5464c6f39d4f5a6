// RUN: solc-opt %s --sol-fuse | FileCheck %s
// RUN: solc-opt %s --sol-O2 | FileCheck %s --check-prefix=O2

// Q, K and V of one input become one GEMM over a concatenated weight, then a
// split; biases are concatenated the same way.
// CHECK-LABEL: func.func @qkv
// CHECK-DAG: %[[W:.*]] = sol.weight @"l0.{q,k,v}.weight" concat [@l0.q.weight, @l0.k.weight, @l0.v.weight] : tensor<128x64xbf16>
// CHECK-DAG: %[[B:.*]] = sol.weight @"l0.{q,k,v}.bias" concat [@l0.q.bias, @l0.k.bias, @l0.v.bias] : tensor<128xbf16>
// CHECK: %[[L:.*]] = sol.linear %arg0, %[[W]], %[[B]] : (tensor<?x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
// CHECK: %[[S:.*]]:3 = sol.split %[[L]] : tensor<?x128xbf16> -> tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>
// CHECK: sol.attention %[[S]]#0, %[[S]]#1, %[[S]]#2
// CHECK-NOT: sol.linear
func.func @qkv(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) -> tensor<?x64xbf16> {
  %wq = sol.weight @l0.q.weight : tensor<64x64xbf16>
  %wk = sol.weight @l0.k.weight : tensor<32x64xbf16>
  %wv = sol.weight @l0.v.weight : tensor<32x64xbf16>
  %bq = sol.weight @l0.q.bias : tensor<64xbf16>
  %bk = sol.weight @l0.k.bias : tensor<32xbf16>
  %bv = sol.weight @l0.v.bias : tensor<32xbf16>
  %q = sol.linear %x, %wq, %bq : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %k = sol.linear %x, %wk, %bk : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
  %v = sol.linear %x, %wv, %bv : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
  %a = sol.attention %q, %k, %v, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// Gate and up feeding a swiglu become one linear with the swiglu epilogue;
// the down projection (another input) is left alone.
// CHECK-LABEL: func.func @mlp
// CHECK: %[[GU:.*]] = sol.weight @"mlp.{gate_proj,up_proj}.weight" concat [@mlp.gate_proj.weight, @mlp.up_proj.weight] : tensor<256x64xbf16>
// CHECK: %[[A:.*]] = sol.linear %arg0, %[[GU]] {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x128xbf16>
// CHECK: sol.linear %[[A]], %{{.*}} : (tensor<?x128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
// CHECK-NOT: sol.swiglu
func.func @mlp(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %wg = sol.weight @mlp.gate_proj.weight : tensor<128x64xbf16>
  %wu = sol.weight @mlp.up_proj.weight : tensor<128x64xbf16>
  %wd = sol.weight @mlp.down_proj.weight : tensor<64x128xbf16>
  %g = sol.linear %x, %wg : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %u = sol.linear %x, %wu : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  %d = sol.linear %s, %wd : (tensor<?x128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
  return %d : tensor<?x64xbf16>
}

// Linears of different inputs, or where only one has a bias, stay apart.
// CHECK-LABEL: func.func @no_fusion
// CHECK-COUNT-2: sol.linear
// CHECK-NOT: sol.split
func.func @no_fusion(%x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %w1 = sol.weight @a : tensor<64x64xbf16>
  %w2 = sol.weight @b : tensor<64x64xbf16>
  %b2 = sol.weight @b.bias : tensor<64xbf16>
  %y1 = sol.linear %x, %w1 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %y2 = sol.linear %x, %w2, %b2 : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y1, %y2 : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// At -O2 the pipeline fuses too.
// O2-LABEL: func.func @qkv
// O2: sol.split
// O2-LABEL: func.func @mlp
// O2: epilogue = #sol<epilogue swiglu>
