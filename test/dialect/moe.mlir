// RUN: solc-opt %s | FileCheck %s
// RUN: solc-opt %s --mlir-print-op-generic | solc-opt | FileCheck %s

// A mixture of experts prints and parses back: the experts' projections
// stacked by sol.concat_weights (expert e's rows in order), routed by sol.moe.

// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %r = sol.weight @router : tensor<4x64xbf16>
  %g0 = sol.weight @e0.gate : tensor<32x64xbf16>
  %g1 = sol.weight @e1.gate : tensor<32x64xbf16>
  %g2 = sol.weight @e2.gate : tensor<32x64xbf16>
  %g3 = sol.weight @e3.gate : tensor<32x64xbf16>
  %g = sol.concat_weights %g0, %g1, %g2, %g3 : (tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
  %u = sol.weight @up : tensor<128x64xbf16>
  %d = sol.weight @down : tensor<256x32xbf16>
  // CHECK: sol.moe %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {normalize_top_k = true, top_k = 2 : i64} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  %y = sol.moe %x, %r, %g, %u, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  // CHECK: sol.moe {{.*}}activation = #sol<activation gelu_tanh>, normalize_top_k = false, top_k = 1 : i64
  %z = sol.moe %y, %r, %g, %u, %d {top_k = 1 : i64, normalize_top_k = false, activation = #sol<activation gelu_tanh>} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  return %z : tensor<?x64xbf16>
}
