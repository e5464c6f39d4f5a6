// RUN: solc-opt %s --sol-fuse-residual-add | FileCheck %s

// sol-fuse-residual-add folds a residual add into the epilogue of the linear
// it adds, when the residual's buffer can take the sum where the linear runs.

// add(r, linear(x, W, b)) becomes linear(x, W, b) residual(r), the bias kept.
// CHECK-LABEL: func.func @residual
// CHECK: %[[R:.*]] = sol.embedding
// CHECK: %[[W:.*]] = sol.weight @o.weight
// CHECK: %[[B:.*]] = sol.weight @o.bias
// CHECK: %[[S:.*]] = sol.linear %arg1, %[[W]], %[[B]] residual %[[R]] {epilogue = #sol<epilogue residual>} : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
// CHECK-NOT: sol.add
// CHECK: return %[[S]]
func.func @residual(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %b = sol.weight @o.bias : tensor<64xbf16>
  %y = sol.linear %x, %w, %b : (tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %y : tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}

// The linear may be either operand of the add.
// CHECK-LABEL: func.func @commuted
// CHECK: %[[R:.*]] = sol.embedding
// CHECK: %[[S:.*]] = sol.linear %arg1, %{{.*}} residual %[[R]] {epilogue = #sol<epilogue residual>}
// CHECK-NOT: sol.add
// CHECK: return %[[S]]
func.func @commuted(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %y, %r : tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}

// The residual stream of a layer: the o_proj adds into the embedding, the
// down_proj into the o_proj's sum (which lives in the embedding's buffer).
// CHECK-LABEL: func.func @chain
// CHECK: %[[R:.*]] = sol.embedding
// CHECK: %[[H:.*]] = sol.linear %arg1, %{{.*}} residual %[[R]] {epilogue = #sol<epilogue residual>}
// CHECK: %[[H2:.*]] = sol.linear %arg2, %{{.*}} residual %[[H]] {epilogue = #sol<epilogue residual>} : (tensor<?x128xbf16>, tensor<64x128xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
// CHECK-NOT: sol.add
// CHECK: return %[[H2]]
func.func @chain(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>, %x2: tensor<?x128xbf16>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %wo = sol.weight @o.weight : tensor<64x64xbf16>
  %o = sol.linear %x, %wo : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %h = sol.add %r, %o : tensor<?x64xbf16>
  %wd = sol.weight @down.weight : tensor<64x128xbf16>
  %d = sol.linear %x2, %wd : (tensor<?x128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
  %h2 = sol.add %h, %d : tensor<?x64xbf16>
  return %h2 : tensor<?x64xbf16>
}

// The sum of two linears: the right one takes the add, the left one's
// result is the residual.
// CHECK-LABEL: func.func @two_linears
// CHECK: %[[Y1:.*]] = sol.linear %arg0, %{{.*}} : (
// CHECK: %[[S:.*]] = sol.linear %arg1, %{{.*}} residual %[[Y1]] {epilogue = #sol<epilogue residual>}
// CHECK-NOT: sol.add
// CHECK: return %[[S]]
func.func @two_linears(%x: tensor<?x64xbf16>, %x2: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %w1 = sol.weight @a : tensor<64x64xbf16>
  %w2 = sol.weight @b : tensor<64x64xbf16>
  %y1 = sol.linear %x, %w1 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %y2 = sol.linear %x2, %w2 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %y1, %y2 : tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}

// Near-miss: the residual is read after the linear (by another linear
// before the add), so its buffer cannot take the sum there.
// CHECK-LABEL: func.func @read_after
// CHECK-NOT: residual
// CHECK: sol.add
func.func @read_after(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %w2 = sol.weight @p.weight : tensor<64x64xbf16>
  %z = sol.linear %r, %w2 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %y : tensor<?x64xbf16>
  return %s, %z : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Near-miss: the residual is read after the add (returned).
// CHECK-LABEL: func.func @read_after_add
// CHECK-NOT: residual
// CHECK: sol.add
func.func @read_after_add(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %y : tensor<?x64xbf16>
  return %s, %r : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Near-miss: the residual is a function argument (an input buffer of the
// step, not the pass's to overwrite).
// CHECK-LABEL: func.func @argument_residual
// CHECK-NOT: residual
// CHECK: sol.add %arg0, %{{.*}}
func.func @argument_residual(%r: tensor<?x64xbf16>, %x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %y : tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}

// Near-miss: the residual is a split result (a column slice of another
// buffer, not a whole buffer).
// CHECK-LABEL: func.func @split_residual
// CHECK-NOT: residual
// CHECK: sol.add %{{.*}}#0, %{{.*}}
func.func @split_residual(%t: tensor<?x128xbf16>, %x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %p:2 = sol.split %t : tensor<?x128xbf16> -> tensor<?x64xbf16>, tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %p#0, %y : tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}

// Near-miss: the linear's result has another user.
// CHECK-LABEL: func.func @linear_two_uses
// CHECK-NOT: residual
// CHECK: %[[Y:.*]] = sol.linear
// CHECK: %[[S:.*]] = sol.add %{{.*}}, %[[Y]]
// CHECK: return %[[S]], %[[Y]]
func.func @linear_two_uses(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %y : tensor<?x64xbf16>
  return %s, %y : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Near-miss: the linear's input is a column slice of the residual (same
// storage): blocks would read it while others write the sum.
// CHECK-LABEL: func.func @input_in_residual
// CHECK-NOT: residual
// CHECK: %[[Y:.*]] = sol.linear %{{.*}}#1, %{{.*}} : (tensor<?x32xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
// CHECK: sol.add %{{.*}}, %[[Y]]
func.func @input_in_residual(%ids: tensor<?xi32>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %p:2 = sol.split %r : tensor<?x64xbf16> -> tensor<?x32xbf16>, tensor<?x32xbf16>
  %w = sol.weight @o.weight : tensor<64x32xbf16>
  %y = sol.linear %p#1, %w : (tensor<?x32xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %y : tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}

// Near-miss: the linear reads the residual itself.
// CHECK-LABEL: func.func @input_is_residual
// CHECK-NOT: residual
// CHECK: %[[Y:.*]] = sol.linear %[[R:.*]], %{{.*}} :
// CHECK: sol.add %[[R]], %[[Y]]
func.func @input_is_residual(%ids: tensor<?xi32>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %r, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %y : tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}

// Near-miss: the linear already has an epilogue.
// CHECK-LABEL: func.func @swiglu_epilogue
// CHECK-NOT: residual
// CHECK: sol.linear %arg1, %{{.*}} {epilogue = #sol<epilogue swiglu>}
// CHECK: sol.add
func.func @swiglu_epilogue(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> tensor<?x32xbf16> {
  %e = sol.weight @embed : tensor<256x32xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x32xbf16>) -> tensor<?x32xbf16>
  %w = sol.weight @gate_up : tensor<64x64xbf16>
  %y = sol.linear %x, %w {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x32xbf16>
  %s = sol.add %r, %y : tensor<?x32xbf16>
  return %s : tensor<?x32xbf16>
}

// Near-miss: the linear is both operands.
// CHECK-LABEL: func.func @same_operand
// CHECK-NOT: residual
// CHECK: %[[Y:.*]] = sol.linear
// CHECK: sol.add %[[Y]], %[[Y]]
func.func @same_operand(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %y, %y : tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}

// The sum of two linears written right to left: the residual must exist
// where the fused linear runs, so the add folds into the later linear (%y2),
// with the earlier one as its residual.
// CHECK-LABEL: func.func @two_linears_reversed
// CHECK: %[[Y1:.*]] = sol.linear %arg0, %{{.*}} : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
// CHECK: %[[S:.*]] = sol.linear %arg1, %{{.*}} residual %[[Y1]] {epilogue = #sol<epilogue residual>}
// CHECK-NOT: sol.add
// CHECK: return %[[S]]
func.func @two_linears_reversed(%x: tensor<?x64xbf16>, %x2: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %w1 = sol.weight @a : tensor<64x64xbf16>
  %w2 = sol.weight @b : tensor<64x64xbf16>
  %y1 = sol.linear %x, %w1 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %y2 = sol.linear %x2, %w2 : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %y2, %y1 : tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}

// Near miss: the residual is computed after the linear (an embedding between
// the linear and the add), so the linear cannot add into it.
// CHECK-LABEL: func.func @residual_defined_after_linear
// CHECK: sol.linear %arg1, %{{.*}} : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
// CHECK: sol.add
func.func @residual_defined_after_linear(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %y : tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}

// A quantized linear keeps its scales, zero points, scheme and group size.
// CHECK-LABEL: func.func @quantized
// CHECK: %[[R:.*]] = sol.embedding
// CHECK: %[[S:.*]] = sol.linear %arg1, %{{.*}} residual %[[R]] scales %{{.*}} zeros %{{.*}} {epilogue = #sol<epilogue residual>, group_size = 32 : i64, quant = #sol<quant int4>} : (tensor<?x64xbf16>, tensor<64x64xi4> residual tensor<?x64xbf16> scales tensor<64x2xf32> zeros tensor<64x2xui8>) -> tensor<?x64xbf16>
// CHECK-NOT: sol.add
// CHECK: return %[[S]]
func.func @quantized(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @"o~int4" : tensor<64x64xi4>
  %sc = sol.weight @"o~int4.scales" : tensor<64x2xf32>
  %z = sol.weight @"o~int4.zeros" : tensor<64x2xui8>
  %y = sol.linear %x, %w scales %sc zeros %z {group_size = 32 : i64, quant = #sol<quant int4>} : (tensor<?x64xbf16>, tensor<64x64xi4> scales tensor<64x2xf32> zeros tensor<64x2xui8>) -> tensor<?x64xbf16>
  %s = sol.add %r, %y : tensor<?x64xbf16>
  return %s : tensor<?x64xbf16>
}
