// RUN: solc-opt %s --split-input-file --sol-raise-swiglu --sol-raise-residual-add | FileCheck %s

// sol-raise-swiglu: silu(gate) * up between raised linears; and
// sol-raise-residual-add: Adds of two raised values.

// CHECK-LABEL: func.func @mlp
// CHECK: %[[G:.*]] = sol.linear %arg0, %{{.*}} -> tensor<?x128xbf16>
// CHECK: %[[U:.*]] = sol.linear %arg0, %{{.*}} -> tensor<?x128xbf16>
// CHECK: %[[S:.*]] = sol.swiglu %[[G]], %[[U]]
// CHECK: %[[D:.*]] = sol.linear %[[S]]
// CHECK: %[[H:.*]] = sol.add %arg0, %[[D]] : tensor<?x64xbf16>
// CHECK-NOT: sol.onnx "
// CHECK: return %[[H]]
func.func @mlp(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %wg = sol.weight @gate.weight : tensor<128x64xbf16>
  %wu = sol.weight @up.weight : tensor<128x64xbf16>
  %wd = sol.weight @down.weight : tensor<64x128xbf16>
  %g = sol.linear %x, %wg : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %u = sol.linear %x, %wu : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %gv = sol.batch_view %g : tensor<?x128xbf16> -> tensor<1x?x128xf32>
  %uv = sol.batch_view %u : tensor<?x128xbf16> -> tensor<1x?x128xf32>
  %sg = sol.onnx "Sigmoid"(%gv) : (tensor<1x?x128xf32>) -> tensor<*xf32>
  %silu = sol.onnx "Mul"(%gv, %sg) : (tensor<1x?x128xf32>, tensor<*xf32>) -> tensor<*xf32>
  %act = sol.onnx "Mul"(%silu, %uv) : (tensor<*xf32>, tensor<1x?x128xf32>) -> tensor<1x?x128xf32>
  %a = sol.batch_view %act : tensor<1x?x128xf32> -> tensor<?x128xbf16>
  %d = sol.linear %a, %wd : (tensor<?x128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
  %xv = sol.batch_view %x : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %dv = sol.batch_view %d : tensor<?x64xbf16> -> tensor<1x?x64xf32>
  %h = sol.onnx "Add"(%xv, %dv) : (tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %hv = sol.batch_view %h : tensor<1x?x64xf32> -> tensor<?x64xbf16>
  return %hv : tensor<?x64xbf16>
}

// -----

// Not raised: a sigmoid of another value than the one multiplied (not
// silu); up not a raised value; an Add of a raised value and a graph input.
// CHECK-LABEL: func.func @near_misses
// CHECK-NOT: sol.swiglu
// CHECK-NOT: sol.add
// CHECK: return
func.func @near_misses(%x: tensor<?x128xbf16>, %y: tensor<?x128xbf16>, %raw: tensor<1x?x128xf32>)
    -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %xv = sol.batch_view %x : tensor<?x128xbf16> -> tensor<1x?x128xf32>
  %yv = sol.batch_view %y : tensor<?x128xbf16> -> tensor<1x?x128xf32>
  %sy = sol.onnx "Sigmoid"(%yv) : (tensor<1x?x128xf32>) -> tensor<*xf32>
  %notsilu = sol.onnx "Mul"(%xv, %sy) : (tensor<1x?x128xf32>, tensor<*xf32>) -> tensor<*xf32>
  %m1 = sol.onnx "Mul"(%notsilu, %yv) : (tensor<*xf32>, tensor<1x?x128xf32>) -> tensor<*xf32>
  %sx = sol.onnx "Sigmoid"(%xv) : (tensor<1x?x128xf32>) -> tensor<*xf32>
  %silu = sol.onnx "Mul"(%xv, %sx) : (tensor<1x?x128xf32>, tensor<*xf32>) -> tensor<*xf32>
  %m2 = sol.onnx "Mul"(%silu, %raw) : (tensor<*xf32>, tensor<1x?x128xf32>) -> tensor<*xf32>
  %a = sol.onnx "Add"(%xv, %raw) : (tensor<1x?x128xf32>, tensor<1x?x128xf32>) -> tensor<*xf32>
  return %m1, %m2, %a : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}
