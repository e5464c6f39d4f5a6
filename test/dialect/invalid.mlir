// RUN: solc-opt %s -split-input-file -verify-diagnostics

// Every verifier branch of the sol dialect's ops and attributes, one case
// each, with the message it gives. (#sol.kv_cache_layout's are in
// test/passes/sol-plan-kv-cache-invalid.mlir.)

// A weight's shape is static.
func.func @weight_dynamic() {
  // expected-error @+1 {{'sol.weight' op weight @w must have a static shape, but has [?, 4]}}
  %w = sol.weight @w : tensor<?x4xbf16>
  return
}

// -----

// Weights are in a Sol storage type.
func.func @weight_type() {
  // expected-error @+1 {{result #0 must be ranked tensor of}}
  %w = sol.weight @w : tensor<4xi64>
  return
}

// -----

// A weight transform's operands are weights: not function arguments...
func.func @transform_operand_argument(%a: tensor<4x8xbf16>) {
  // expected-error @+1 {{'sol.convert_weight' op operand #0 must be a weight (sol.weight or a weight transform)}}
  %c = sol.convert_weight %a : tensor<4x8xbf16> -> tensor<4x8xf32>
  return
}

// -----

// ... nor activations (here the second operand of a concatenation).
func.func @transform_operand_activation(%ids: tensor<?xi32>) {
  %t = sol.weight @t : tensor<4x8xbf16>
  %e = sol.embedding %ids, %t : (tensor<?xi32>, tensor<4x8xbf16>) -> tensor<?x8xbf16>
  %w = sol.weight @w : tensor<4x8xbf16>
  // expected-error @+1 {{'sol.concat_weights' op operand #1 must be a weight (sol.weight or a weight transform)}}
  %c = "sol.concat_weights"(%w, %e) : (tensor<4x8xbf16>, tensor<?x8xbf16>) -> tensor<8x8xbf16>
  return
}

// -----

// ... nor arguments of sol.interleave_rows...
func.func @transform_operand_interleave(%a: tensor<4x8xbf16>) {
  %w = sol.weight @w : tensor<4x8xbf16>
  // expected-error @+1 {{'sol.interleave_rows' op operand #1 must be a weight (sol.weight or a weight transform)}}
  %c = sol.interleave_rows %w, %a : tensor<4x8xbf16> -> tensor<8x8xbf16>
  return
}

// -----

// ... nor of sol.transpose_weight.
func.func @transform_operand_transpose(%a: tensor<4x8xbf16>) {
  // expected-error @+1 {{'sol.transpose_weight' op operand #0 must be a weight (sol.weight or a weight transform)}}
  %c = sol.transpose_weight %a : tensor<4x8xbf16> -> tensor<8x4xbf16>
  return
}

// -----

// sol.concat_weights: at least one input (generic form)...
func.func @concat_weights_empty() {
  // expected-error @+1 {{'sol.concat_weights' op needs at least one input}}
  %c = "sol.concat_weights"() : () -> tensor<4x8xbf16>
  return
}

// -----

// ... of at least one dimension...
func.func @concat_weights_scalar() {
  %a = sol.weight @a : tensor<bf16>
  // expected-error @+1 {{'sol.concat_weights' op inputs must have at least one dimension}}
  %c = sol.concat_weights %a, %a : (tensor<bf16>, tensor<bf16>) -> tensor<2xbf16>
  return
}

// -----

// ... with one element type...
func.func @concat_weights_element_type() {
  %a = sol.weight @a : tensor<4x8xbf16>
  %b = sol.weight @b : tensor<2x8xf16>
  // expected-error @+1 {{'sol.concat_weights' op input #1 has shape [2, 8] of 'f16', but stacking needs the element type and trailing dimensions of input #0 [4, 8] of 'bf16'}}
  %c = sol.concat_weights %a, %b : (tensor<4x8xbf16>, tensor<2x8xf16>) -> tensor<6x8xbf16>
  return
}

// -----

// ... and one row size.
func.func @concat_weights_trailing() {
  %a = sol.weight @a : tensor<4x8xbf16>
  %b = sol.weight @b : tensor<2x16xbf16>
  // expected-error @+1 {{'sol.concat_weights' op input #1 has shape [2, 16] of 'bf16', but stacking needs the element type and trailing dimensions of input #0 [4, 8] of 'bf16'}}
  %c = sol.concat_weights %a, %b : (tensor<4x8xbf16>, tensor<2x16xbf16>) -> tensor<6x8xbf16>
  return
}

// -----

// The result has the rows of all inputs...
func.func @concat_weights_rows() {
  %a = sol.weight @a : tensor<4x8xbf16>
  %b = sol.weight @b : tensor<2x8xbf16>
  // expected-error @+1 {{'sol.concat_weights' op result must have shape [6, ...] of the inputs' element type, but has [8, 8] of 'bf16'}}
  %c = sol.concat_weights %a, %b : (tensor<4x8xbf16>, tensor<2x8xbf16>) -> tensor<8x8xbf16>
  return
}

// -----

// ... and their element type.
func.func @concat_weights_result_type() {
  %a = sol.weight @a : tensor<4x8xbf16>
  %b = sol.weight @b : tensor<2x8xbf16>
  // expected-error @+1 {{'sol.concat_weights' op result must have shape [6, ...] of the inputs' element type, but has [6, 8] of 'f32'}}
  %c = sol.concat_weights %a, %b : (tensor<4x8xbf16>, tensor<2x8xbf16>) -> tensor<6x8xf32>
  return
}

// -----

// sol.interleave_rows: both inputs have one type (generic form: the custom
// one names a single type)...
func.func @interleave_rows_types() {
  %a = sol.weight @a : tensor<4x8xbf16>
  %b = sol.weight @b : tensor<4x16xbf16>
  // expected-error @+1 {{'sol.interleave_rows' op requires all operands to have the same type}}
  %c = "sol.interleave_rows"(%a, %b) : (tensor<4x8xbf16>, tensor<4x16xbf16>) -> tensor<8x8xbf16>
  return
}

// -----

// ... of at least one dimension...
func.func @interleave_rows_scalar() {
  %a = sol.weight @a : tensor<bf16>
  // expected-error @+1 {{'sol.interleave_rows' op inputs must have at least one dimension}}
  %c = sol.interleave_rows %a, %a : tensor<bf16> -> tensor<2xbf16>
  return
}

// -----

// ... and the result has twice their rows.
func.func @interleave_rows_result() {
  %a = sol.weight @a : tensor<4x8xbf16>
  // expected-error @+1 {{'sol.interleave_rows' op result must have twice the rows of the inputs (8) of their element type 'bf16', but has shape [4, 16] of 'bf16'}}
  %c = sol.interleave_rows %a, %a : tensor<4x8xbf16> -> tensor<4x16xbf16>
  return
}

// -----

// ... in their element type.
func.func @interleave_rows_element_type() {
  %a = sol.weight @a : tensor<4xbf16>
  // expected-error @+1 {{'sol.interleave_rows' op result must have twice the rows of the inputs (8) of their element type 'bf16', but has shape [8] of 'f16'}}
  %c = sol.interleave_rows %a, %a : tensor<4xbf16> -> tensor<8xf16>
  return
}

// -----

// sol.convert_weight keeps the shape...
func.func @convert_weight_shape() {
  %a = sol.weight @a : tensor<4x8xf32>
  // expected-error @+1 {{'sol.convert_weight' op result shape [8, 4] must equal the input's [4, 8]}}
  %c = sol.convert_weight %a : tensor<4x8xf32> -> tensor<8x4xbf16>
  return
}

// -----

// ... and converts between float types only.
func.func @convert_weight_int() {
  %a = sol.weight @a : tensor<4x8xi8>
  // expected-error @+1 {{'sol.convert_weight' op converts between f32, f16 and bf16, not 'i8' to 'bf16'}}
  %c = sol.convert_weight %a : tensor<4x8xi8> -> tensor<4x8xbf16>
  return
}

// -----

// ... (fp8 is a quantized storage type, not a conversion target).
func.func @convert_weight_fp8() {
  %a = sol.weight @a : tensor<4x8xbf16>
  // expected-error @+1 {{'sol.convert_weight' op converts between f32, f16 and bf16, not 'bf16' to 'f8E4M3FN'}}
  %c = sol.convert_weight %a : tensor<4x8xbf16> -> tensor<4x8xf8E4M3FN>
  return
}

// -----

// sol.transpose_weight takes 2-D weights...
func.func @transpose_weight_rank() {
  %a = sol.weight @a : tensor<8xbf16>
  // expected-error @+1 {{'sol.transpose_weight' op transposes 2-D weights (or each matrix of a 3-D one), but the input has shape [8]}}
  %c = sol.transpose_weight %a : tensor<8xbf16> -> tensor<8xbf16>
  return
}

// -----

// ... to their transposed shape...
func.func @transpose_weight_shape() {
  %a = sol.weight @a : tensor<4x8xbf16>
  // expected-error @+1 {{'sol.transpose_weight' op result must have shape [8, 4] of the input's element type, but has [4, 8]}}
  %c = sol.transpose_weight %a : tensor<4x8xbf16> -> tensor<4x8xbf16>
  return
}

// -----

// ... in their element type.
func.func @transpose_weight_element_type() {
  %a = sol.weight @a : tensor<4x8xbf16>
  // expected-error @+1 {{'sol.transpose_weight' op result must have shape [8, 4] of the input's element type, but has [8, 4]}}
  %c = sol.transpose_weight %a : tensor<4x8xbf16> -> tensor<8x4xf32>
  return
}

// -----

// sol.embedding: the table is 2-D [vocab, hidden].
func.func @embedding_table_rank(%ids: tensor<?xi32>) {
  %t = sol.weight @t : tensor<256xbf16>
  // expected-error @+1 {{operand #1 (table) must be 2-D [vocab, hidden], but has shape [256]}}
  %e = sol.embedding %ids, %t : (tensor<?xi32>, tensor<256xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// One id per token.
func.func @embedding_ids_rank(%ids: tensor<?x2xi32>) {
  %t = sol.weight @t : tensor<256x64xbf16>
  // expected-error @+1 {{operand #0 (ids) must be a 1-D tensor of i32 (one entry per token), but has shape [?, 2]}}
  %e = sol.embedding %ids, %t : (tensor<?x2xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// The result's rows are the table's.
func.func @embedding_result(%ids: tensor<?xi32>) {
  %t = sol.weight @t : tensor<256x64xbf16>
  // expected-error @+1 {{result must have shape [?, 64] to match the table, but has shape [?, 32]}}
  %e = sol.embedding %ids, %t : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// The result has the table's element type.
func.func @embedding_element_type(%ids: tensor<?xi32>) {
  %t = sol.weight @t : tensor<256x64xbf16>
  // expected-error @+1 {{result element type 'f32' must match the table's 'bf16'}}
  %e = sol.embedding %ids, %t : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xf32>
  return
}

// -----

// sol.linear: shapes of input, weight, bias and result.
func.func @linear_k(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<32x48xbf16>
  // expected-error @+1 {{weight has 48 input features but operand #0 (input) has 64 (weight shape [32, 48], input shape [?, 64])}}
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<32x48xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// The weight is 2-D [out, in].
func.func @linear_weight_rank(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<64xbf16>
  // expected-error @+1 {{'sol.linear' op weight must be 2-D [out, in], but has shape [64]}}
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// The bias has one element per output feature.
func.func @linear_bias(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  %b = sol.weight @b : tensor<64xbf16>
  // expected-error @+1 {{'sol.linear' op bias must have shape [32], but has shape [64]}}
  %y = sol.linear %x, %w, %b : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @linear_bias_type(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  %b = sol.weight @b : tensor<32xf16>
  // expected-error @+1 {{'sol.linear' op bias element type 'f16' must be the weight's, 'bf16'}}
  %y = sol.linear %x, %w, %b : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xf16>) -> tensor<?x32xbf16>
  return
}

// -----

// The result has one column per output feature.
func.func @linear_result(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{result must have shape [?, 32], but has shape [?, 64]}}
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// The input is token-major: tokens dynamic, features static...
func.func @linear_static_tokens(%x: tensor<4x?xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{operand #0 (input) must have static dimensions after the token dimension, but has shape [4, ?]}}
  %y = sol.linear %x, %w : (tensor<4x?xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// ... and 2-D.
func.func @linear_input_rank(%x: tensor<?xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{operand #0 (input) must have rank 2 (tokens first), but has shape [?]}}
  %y = sol.linear %x, %w : (tensor<?xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// The swiglu epilogue halves an even number of output features...
func.func @linear_swiglu_odd(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<33x64xbf16>
  // expected-error @+1 {{the swiglu epilogue needs an even number of output features, weight has 33}}
  %y = sol.linear %x, %w {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<33x64xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

// ... and the result has half of them.
func.func @linear_swiglu_result(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<64x64xbf16>
  // expected-error @+1 {{result must have shape [?, 32], but has shape [?, 64]}}
  %y = sol.linear %x, %w {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// The residual operand goes with the residual epilogue: not without it...
func.func @linear_residual_without_epilogue(%x: tensor<?x64xbf16>, %r: tensor<?x32xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{'sol.linear' op the residual operand goes with the residual epilogue, and only with it}}
  %y = sol.linear %x, %w residual %r : (tensor<?x64xbf16>, tensor<32x64xbf16> residual tensor<?x32xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// ... nor with another epilogue...
func.func @linear_residual_with_swiglu(%x: tensor<?x64xbf16>, %r: tensor<?x32xbf16>) {
  %w = sol.weight @w : tensor<64x64xbf16>
  // expected-error @+1 {{'sol.linear' op the residual operand goes with the residual epilogue, and only with it}}
  %y = sol.linear %x, %w residual %r {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<64x64xbf16> residual tensor<?x32xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// ... and the epilogue needs it.
func.func @linear_residual_missing(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{'sol.linear' op the residual operand goes with the residual epilogue, and only with it}}
  %y = sol.linear %x, %w {epilogue = #sol<epilogue residual>} : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// The residual has the result's type.
func.func @linear_residual_type(%x: tensor<?x64xbf16>, %r: tensor<?x32xf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{'sol.linear' op residual must have the result type 'tensor<?x32xbf16>', but has 'tensor<?x32xf16>'}}
  %y = sol.linear %x, %w residual %r {epilogue = #sol<epilogue residual>} : (tensor<?x64xbf16>, tensor<32x64xbf16> residual tensor<?x32xf16>) -> tensor<?x32xbf16>
  return
}

// -----

// The result has the input's element type, or f32 (logits)...
func.func @linear_result_f16(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{'sol.linear' op result element type 'f16' must be the input's ('bf16'), or f32 without an epilogue (logits)}}
  %y = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xf16>
  return
}

// -----

// ... but f32 only without an epilogue.
func.func @linear_result_f32_swiglu(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<64x64xbf16>
  // expected-error @+1 {{'sol.linear' op result element type 'f32' must be the input's ('bf16'), or f32 without an epilogue (logits)}}
  %y = sol.linear %x, %w {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x32xf32>
  return
}

// -----

// ... the residual epilogue included.
func.func @linear_result_f32_residual(%x: tensor<?x64xbf16>, %r: tensor<?x32xf32>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{'sol.linear' op result element type 'f32' must be the input's ('bf16'), or f32 without an epilogue (logits)}}
  %y = sol.linear %x, %w residual %r {epilogue = #sol<epilogue residual>} : (tensor<?x64xbf16>, tensor<32x64xbf16> residual tensor<?x32xf32>) -> tensor<?x32xf32>
  return
}

// -----

// An unknown epilogue does not parse.
func.func @linear_epilogue_unknown(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+2 {{expected ::sol::LinearEpilogue to be one of: none, residual, swiglu}}
  // expected-error @+1 {{failed to parse Sol_LinearEpilogueAttr parameter 'value'}}
  %y = sol.linear %x, %w {epilogue = #sol<epilogue gelu>} : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// sol.norm_linear: the checks of sol.linear...
func.func @norm_linear_k(%x: tensor<?x64xbf16>) {
  %n = sol.weight @n : tensor<64xbf16>
  %w = sol.weight @w : tensor<32x48xbf16>
  // expected-error @+1 {{'sol.norm_linear' op weight has 48 input features but operand #0 (input) has 64}}
  %y = sol.norm_linear %x, %n, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<32x48xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// ... its residual rule...
func.func @norm_linear_residual_missing(%x: tensor<?x64xbf16>) {
  %n = sol.weight @n : tensor<64xbf16>
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{'sol.norm_linear' op the residual operand goes with the residual epilogue, and only with it}}
  %y = sol.norm_linear %x, %n, %w {epilogue = #sol<epilogue residual>, epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// ... its f32 rule...
func.func @norm_linear_swiglu_f32(%x: tensor<?x64xbf16>) {
  %n = sol.weight @n : tensor<64xbf16>
  %w = sol.weight @w : tensor<64x64xbf16>
  // expected-error @+1 {{'sol.norm_linear' op result element type 'f32' must be the input's ('bf16'), or f32 without an epilogue (logits)}}
  %y = sol.norm_linear %x, %n, %w {epilogue = #sol<epilogue swiglu>, epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>) -> tensor<?x32xf32>
  return
}

// -----

// ... a norm weight covering the whole row (no per-head norm)...
func.func @norm_linear_norm_weight(%x: tensor<?x64xbf16>) {
  %n = sol.weight @n : tensor<16xbf16>
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{'sol.norm_linear' op norm_weight must have shape [64], but has shape [16]}}
  %y = sol.norm_linear %x, %n, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<16xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// ... and a positive epsilon.
func.func @norm_linear_epsilon(%x: tensor<?x64xbf16>) {
  %n = sol.weight @n : tensor<64xbf16>
  %w = sol.weight @w : tensor<32x64xbf16>
  // expected-error @+1 {{'sol.norm_linear' op epsilon must be positive}}
  %y = sol.norm_linear %x, %n, %w {epsilon = 0.0 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// sol.rms_norm: the weight's size divides the row (whole rows, or heads).
func.func @rms_norm_group(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<24xbf16>
  // expected-error @+1 {{operand #1 (weight) must be 1-D with a size that divides the row size 64, but has shape [24]}}
  %y = sol.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<24xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// A positive epsilon.
func.func @rms_norm_epsilon(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<64xbf16>
  // expected-error @+1 {{epsilon must be positive}}
  %y = sol.rms_norm %x, %w {epsilon = 0.0 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// A token-major input.
func.func @rms_norm_rank(%x: tensor<?x4x16xbf16>) {
  %w = sol.weight @w : tensor<16xbf16>
  // expected-error @+1 {{operand #0 (input) must have rank 2 (tokens first), but has shape [?, 4, 16]}}
  %y = sol.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x4x16xbf16>, tensor<16xbf16>) -> tensor<?x4x16xbf16>
  return
}

// -----

// The result has the input's type.
func.func @rms_norm_result(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<64xbf16>
  // expected-error @+1 {{result type must equal the input type 'tensor<?x64xbf16>'}}
  %y = sol.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xf32>
  return
}

// -----

// sol.add_rms_norm: a token-major input...
func.func @add_rms_norm_rank(%x: tensor<?xbf16>) {
  %w = sol.weight @w : tensor<64xbf16>
  // expected-error @+1 {{'sol.add_rms_norm' op operand #0 (input) must have rank 2 (tokens first), but has shape [?]}}
  %n, %s = sol.add_rms_norm %x, %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?xbf16>, tensor<?xbf16>, tensor<64xbf16>) -> (tensor<?xbf16>, tensor<?xbf16>)
  return
}

// -----

// ... the residual and both results of its type...
func.func @add_rms_norm_residual(%x: tensor<?x64xbf16>, %r: tensor<?x64xf32>) {
  %w = sol.weight @w : tensor<64xbf16>
  // expected-error @+1 {{'sol.add_rms_norm' op input, residual and both results must have one type, 'tensor<?x64xbf16>'}}
  %n, %s = sol.add_rms_norm %x, %r, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<?x64xf32>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>)
  return
}

// -----

// ... (the results too)...
func.func @add_rms_norm_result(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<64xbf16>
  // expected-error @+1 {{'sol.add_rms_norm' op input, residual and both results must have one type, 'tensor<?x64xbf16>'}}
  %n, %s = sol.add_rms_norm %x, %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>)
  return
}

// -----

// ... a weight covering the whole row...
func.func @add_rms_norm_weight(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<16xbf16>
  // expected-error @+1 {{'sol.add_rms_norm' op operand #2 (weight) must have shape [64], but has shape [16]}}
  %n, %s = sol.add_rms_norm %x, %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<16xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>)
  return
}

// -----

// ... and a positive epsilon.
func.func @add_rms_norm_epsilon(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<64xbf16>
  // expected-error @+1 {{'sol.add_rms_norm' op epsilon must be positive}}
  %n, %s = sol.add_rms_norm %x, %x, %w {epsilon = -1.0 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>)
  return
}

// -----

// sol.head_rms_norm: a token-major input...
func.func @head_rms_norm_rank(%x: tensor<?xbf16>) {
  %w = sol.weight @w : tensor<16xbf16>
  // expected-error @+1 {{'sol.head_rms_norm' op operand #0 (input) must have rank 2 (tokens first), but has shape [?]}}
  %y = sol.head_rms_norm %x, %w {column = 0, num_heads = 4, epsilon = 1.0e-6 : f32} : (tensor<?xbf16>, tensor<16xbf16>) -> tensor<?xbf16>
  return
}

// -----

// ... a 1-D weight (one head)...
func.func @head_rms_norm_weight(%x: tensor<?x128xbf16>) {
  %w = sol.weight @w : tensor<4x16xbf16>
  // expected-error @+1 {{'sol.head_rms_norm' op operand #1 (weight) must be 1-D (one head), but has shape [4, 16]}}
  %y = sol.head_rms_norm %x, %w {column = 0, num_heads = 4, epsilon = 1.0e-6 : f32} : (tensor<?x128xbf16>, tensor<4x16xbf16>) -> tensor<?x128xbf16>
  return
}

// -----

// ... columns within the input: past its end...
func.func @head_rms_norm_past_end(%x: tensor<?x128xbf16>) {
  %w = sol.weight @w : tensor<16xbf16>
  // expected-error @+1 {{'sol.head_rms_norm' op columns [96, 160) must lie within the input's 128}}
  %y = sol.head_rms_norm %x, %w {column = 96, num_heads = 4, epsilon = 1.0e-6 : f32} : (tensor<?x128xbf16>, tensor<16xbf16>) -> tensor<?x128xbf16>
  return
}

// -----

// ... from a negative column...
func.func @head_rms_norm_negative_column(%x: tensor<?x128xbf16>) {
  %w = sol.weight @w : tensor<16xbf16>
  // expected-error @+1 {{'sol.head_rms_norm' op columns [-16, 16) must lie within the input's 128}}
  %y = sol.head_rms_norm %x, %w {column = -16, num_heads = 2, epsilon = 1.0e-6 : f32} : (tensor<?x128xbf16>, tensor<16xbf16>) -> tensor<?x128xbf16>
  return
}

// -----

// ... or of no head at all...
func.func @head_rms_norm_no_heads(%x: tensor<?x128xbf16>) {
  %w = sol.weight @w : tensor<16xbf16>
  // expected-error @+1 {{'sol.head_rms_norm' op columns [0, 0) must lie within the input's 128}}
  %y = sol.head_rms_norm %x, %w {column = 0, num_heads = 0, epsilon = 1.0e-6 : f32} : (tensor<?x128xbf16>, tensor<16xbf16>) -> tensor<?x128xbf16>
  return
}

// -----

// ... a positive epsilon...
func.func @head_rms_norm_epsilon(%x: tensor<?x128xbf16>) {
  %w = sol.weight @w : tensor<16xbf16>
  // expected-error @+1 {{'sol.head_rms_norm' op epsilon must be positive}}
  %y = sol.head_rms_norm %x, %w {column = 0, num_heads = 4, epsilon = 0.0 : f32} : (tensor<?x128xbf16>, tensor<16xbf16>) -> tensor<?x128xbf16>
  return
}

// -----

// ... and the input's type (generic form: the custom one names it once).
func.func @head_rms_norm_result(%x: tensor<?x128xbf16>) {
  %w = sol.weight @w : tensor<16xbf16>
  // expected-error @+1 {{'sol.head_rms_norm' op failed to verify that all of {input, result} have same type}}
  %y = "sol.head_rms_norm"(%x, %w) {column = 0 : i64, num_heads = 4 : i64, epsilon = 1.0e-6 : f32} : (tensor<?x128xbf16>, tensor<16xbf16>) -> tensor<?x128xf16>
  return
}

// -----

// sol.rope: the input is num_heads × head_dim wide.
func.func @rope_heads(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{operand #0 (input) has 64 features per token, but num_heads × head_dim = 48}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 3, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// Heads rotate pairs: an even head dim.
func.func @rope_odd(%x: tensor<?x60xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{num_heads must be positive and head_dim positive and even, got num_heads = 4, head_dim = 15}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 15} : (tensor<?x60xbf16>, tensor<?xi32>) -> tensor<?x60xbf16>
  return
}

// -----

// One position per token.
func.func @rope_positions(%x: tensor<?x64xbf16>, %p: tensor<?x1xi32>) {
  // expected-error @+1 {{operand #1 (positions) must be a 1-D tensor of i32 (one entry per token), but has shape [?, 1]}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?x1xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// The result has the input's type.
func.func @rope_result(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{result type must equal the input type 'tensor<?x64xbf16>'}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xf16>
  return
}

// -----

// #sol.rope: a positive base...
func.func @rope_theta(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope theta must be positive, got -1}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = -1.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// ... a positive scaling factor when scaling...
func.func @rope_factor(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope scaling factor must be positive, got 0}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0, kind = linear, factor = 0.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// ... llama3 needs the original context...
func.func @rope_llama3(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{llama3 rope scaling needs original_max_position > 0}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0, kind = llama3, factor = 8.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// ... and ordered frequency factors...
func.func @rope_llama3_freq_factors(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{llama3 rope scaling needs high_freq_factor (1.000000e+00) > low_freq_factor (2.000000e+00)}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0, kind = llama3, factor = 8.0, low_freq_factor = 2.0, high_freq_factor = 1.0, original_max_position = 64>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// ... and yarn the original context.
func.func @rope_yarn(%x: tensor<?x64xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{yarn rope scaling needs original_max_position > 0}}
  %y = sol.rope %x, %p {rope = #sol.rope<theta = 10000.0, kind = yarn, factor = 4.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// sol.attention: query heads are a multiple of kv heads (GQA).
func.func @attention_gqa(%q: tensor<?x48xbf16>, %k: tensor<?x32xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{num_heads (3) must be a multiple of num_kv_heads (2)}}
  %a = sol.attention %q, %k, %k, %p, %p {layer = 0, num_heads = 3, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x48xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x48xbf16>
  return
}

// -----

// Heads and head dim are positive.
func.func @attention_positive(%q: tensor<?x64xbf16>, %k: tensor<?x32xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{num_heads, num_kv_heads and head_dim must be positive}}
  %a = sol.attention %q, %k, %k, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 0, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// Layers count from 0.
func.func @attention_layer(%q: tensor<?x64xbf16>, %k: tensor<?x32xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{layer must be non-negative}}
  %a = sol.attention %q, %k, %k, %p, %p {layer = -1, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// Key (and value) have the kv heads' width.
func.func @attention_key(%q: tensor<?x64xbf16>, %k: tensor<?x16xbf16>, %v: tensor<?x32xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{operand #1 (key) has 16 features per token, expected 32}}
  %a = sol.attention %q, %k, %v, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x16xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// A sliding window is positive.
func.func @attention_window(%q: tensor<?x64xbf16>, %k: tensor<?x32xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{sliding_window must be positive when set}}
  %a = sol.attention %q, %k, %k, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32, sliding_window = 0} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// One position per token.
func.func @attention_positions(%q: tensor<?x64xbf16>, %k: tensor<?x32xbf16>, %p: tensor<?x2xi32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{operand #3 (positions) must be a 1-D tensor of i32 (one entry per token), but has shape [?, 2]}}
  %a = sol.attention %q, %k, %k, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x2xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// The result has the query's type.
func.func @attention_result(%q: tensor<?x64xbf16>, %k: tensor<?x32xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{result type must equal the query type 'tensor<?x64xbf16>'}}
  %a = sol.attention %q, %k, %k, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xf32>
  return
}

// -----

// sol.rope_kv_write: the attention shape rules...
func.func @rope_kv_write_gqa(%qkv: tensor<?x112xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.rope_kv_write' op num_heads (3) must be a multiple of num_kv_heads (2)}}
  %r = sol.rope_kv_write %qkv, %p, %p {layer = 0, num_heads = 3, num_kv_heads = 2, head_dim = 16, rope = #sol.rope<theta = 10000.0>} : (tensor<?x112xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x112xbf16>
  return
}

// -----

// ... positive head dim...
func.func @rope_kv_write_positive(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.rope_kv_write' op num_heads, num_kv_heads and head_dim must be positive}}
  %r = sol.rope_kv_write %qkv, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 0, rope = #sol.rope<theta = 10000.0>} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  return
}

// -----

// ... a non-negative layer...
func.func @rope_kv_write_layer(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.rope_kv_write' op layer must be non-negative}}
  %r = sol.rope_kv_write %qkv, %p, %p {layer = -2, num_heads = 4, num_kv_heads = 2, head_dim = 16, rope = #sol.rope<theta = 10000.0>} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  return
}

// -----

// ... an even head dim (rope rotates pairs)...
func.func @rope_kv_write_odd(%qkv: tensor<?x120xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.rope_kv_write' op rope needs an even head_dim, got 15}}
  %r = sol.rope_kv_write %qkv, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 15, rope = #sol.rope<theta = 10000.0>} : (tensor<?x120xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x120xbf16>
  return
}

// -----

// ... a packed QKV of (H + 2 Hkv) heads...
func.func @rope_kv_write_width(%qkv: tensor<?x96xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.rope_kv_write' op operand #0 (qkv) has 96 features per token, expected (num_heads + 2 × num_kv_heads) × head_dim = 128}}
  %r = sol.rope_kv_write %qkv, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, rope = #sol.rope<theta = 10000.0>} : (tensor<?x96xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x96xbf16>
  return
}

// -----

// ... 2-D...
func.func @rope_kv_write_rank(%qkv: tensor<?x8x16xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.rope_kv_write' op operand #0 (qkv) must have rank 2 (tokens first), but has shape [?, 8, 16]}}
  %r = sol.rope_kv_write %qkv, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, rope = #sol.rope<theta = 10000.0>} : (tensor<?x8x16xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x16xbf16>
  return
}

// -----

// ... 1-D positions...
func.func @rope_kv_write_positions(%qkv: tensor<?x128xbf16>, %p: tensor<?x2xi32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'sol.rope_kv_write' op operand #1 (positions) must be a 1-D tensor of i32 (one entry per token), but has shape [?, 2]}}
  %r = sol.rope_kv_write %qkv, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, rope = #sol.rope<theta = 10000.0>} : (tensor<?x128xbf16>, tensor<?x2xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  return
}

// -----

// ... and token sequences...
func.func @rope_kv_write_token_seq(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>, %s: tensor<?x2xi32>) {
  // expected-error @+1 {{'sol.rope_kv_write' op operand #2 (token_seq) must be a 1-D tensor of i32 (one entry per token), but has shape [?, 2]}}
  %r = sol.rope_kv_write %qkv, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, rope = #sol.rope<theta = 10000.0>} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?x2xi32>) -> tensor<?x128xbf16>
  return
}

// -----

// ... a valid #sol.rope...
func.func @rope_kv_write_rope(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{yarn rope scaling needs original_max_position > 0}}
  %r = sol.rope_kv_write %qkv, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, rope = #sol.rope<theta = 10000.0, kind = yarn, factor = 4.0>} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  return
}

// -----

// ... and the result of the qkv's type (generic form).
func.func @rope_kv_write_result(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.rope_kv_write' op failed to verify that all of {qkv, result} have same type}}
  %r = "sol.rope_kv_write"(%qkv, %p, %p) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rope = #sol.rope<theta = 10000.0>} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xf16>
  return
}

// -----

// sol.kv_attention: the attention shape rules...
func.func @kv_attention_gqa(%qkv: tensor<?x112xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.kv_attention' op num_heads (3) must be a multiple of num_kv_heads (2)}}
  %a = sol.kv_attention %qkv, %p, %p {layer = 0, num_heads = 3, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x112xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x48xbf16>
  return
}

// -----

// ... positive heads...
func.func @kv_attention_positive(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.kv_attention' op num_heads, num_kv_heads and head_dim must be positive}}
  %a = sol.kv_attention %qkv, %p, %p {layer = 0, num_heads = 0, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// ... a non-negative layer...
func.func @kv_attention_layer(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.kv_attention' op layer must be non-negative}}
  %a = sol.kv_attention %qkv, %p, %p {layer = -1, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// ... a positive sliding window when set...
func.func @kv_attention_window(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.kv_attention' op sliding_window must be positive when set}}
  %a = sol.kv_attention %qkv, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32, sliding_window = 0} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// ... a packed QKV...
func.func @kv_attention_width(%qkv: tensor<?x64xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.kv_attention' op operand #0 (qkv) has 64 features per token, expected (num_heads + 2 × num_kv_heads) × head_dim = 128}}
  %a = sol.kv_attention %qkv, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// ... with static columns...
func.func @kv_attention_static(%qkv: tensor<?x?xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.kv_attention' op operand #0 (qkv) must have static dimensions after the token dimension, but has shape [?, ?]}}
  %a = sol.kv_attention %qkv, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x?xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// ... 1-D token sequences...
func.func @kv_attention_token_seq(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>, %s: tensor<2x?xi32>) {
  // expected-error @+1 {{'sol.kv_attention' op operand #2 (token_seq) must be a 1-D tensor of i32 (one entry per token), but has shape [2, ?]}}
  %a = sol.kv_attention %qkv, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<2x?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// ... and a result of the query heads' width...
func.func @kv_attention_result(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.kv_attention' op result must have shape [?, 64] of the qkv's element type, but has [?, 128]}}
  %a = sol.kv_attention %qkv, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
  return
}

// -----

// ... in the qkv's element type.
func.func @kv_attention_result_type(%qkv: tensor<?x128xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'sol.kv_attention' op result must have shape [?, 64] of the qkv's element type, but has [?, 64]}}
  %a = sol.kv_attention %qkv, %p, %p {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xf32>
  return
}

// -----

// sol.add: operands and result of one type...
func.func @add_shapes(%x: tensor<?x64xbf16>, %y: tensor<?x64xf16>) {
  // expected-error @+1 {{'sol.add' op requires the same type for all operands and results}}
  %z = "sol.add"(%x, %y) : (tensor<?x64xbf16>, tensor<?x64xf16>) -> tensor<?x64xbf16>
  return
}

// -----

// Activations are float tensors.
func.func @add_type(%x: tensor<?x64xi32>) {
  // expected-error @+1 {{'sol.add' op operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<?x64xi32>'}}
  %z = "sol.add"(%x, %x) : (tensor<?x64xi32>, tensor<?x64xi32>) -> tensor<?x64xi32>
  return
}

// -----

// sol.swiglu: the two-operand form's up has the gate's type.
func.func @swiglu_up(%g: tensor<?x64xbf16>, %u: tensor<?x32xbf16>) {
  // expected-error @+1 {{operand #1 (up) must have the type of operand #0 (gate) 'tensor<?x64xbf16>', but has 'tensor<?x32xbf16>'}}
  %s = sol.swiglu %g, %u : (tensor<?x64xbf16>, tensor<?x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// The one-operand form halves the columns...
func.func @swiglu_one_operand(%g: tensor<?x64xbf16>) {
  // expected-error @+1 {{result must have shape [?, 32], but has shape [?, 64]}}
  %s = sol.swiglu %g : (tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// ... of an even number.
func.func @swiglu_odd(%g: tensor<?x63xbf16>) {
  // expected-error @+1 {{the one-operand form needs an even number of columns (gate then up), got 63}}
  %s = sol.swiglu %g : (tensor<?x63xbf16>) -> tensor<?x31xbf16>
  return
}

// -----

// The result has the gate's element type.
func.func @swiglu_element_type(%g: tensor<?x64xbf16>) {
  // expected-error @+1 {{result element type 'f32' must match the element type 'bf16' of operand #0 (gate)}}
  %s = sol.swiglu %g, %g : (tensor<?x64xbf16>, tensor<?x64xbf16>) -> tensor<?x64xf32>
  return
}

// -----

// sol.split: the parts' columns add up to the input's.
func.func @split_sum(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{results have 48 columns in all, but the input has 64}}
  %a:2 = sol.split %x : tensor<?x64xbf16> -> tensor<?x16xbf16>, tensor<?x32xbf16>
  return
}

// -----

// At least one part (generic form).
func.func @split_none(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{must produce at least one part}}
  "sol.split"(%x) : (tensor<?x64xbf16>) -> ()
  return
}

// -----

// Parts have static columns...
func.func @split_dynamic(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{result #1 must be 2-D with static columns, but has shape [?, ?]}}
  %a:2 = sol.split %x : tensor<?x64xbf16> -> tensor<?x16xbf16>, tensor<?x?xbf16>
  return
}

// -----

// ... and the input's element type.
func.func @split_element_type(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{result element type 'f16' must match the element type 'bf16' of operand #0 (input)}}
  %a:2 = sol.split %x : tensor<?x64xbf16> -> tensor<?x16xbf16>, tensor<?x48xf16>
  return
}

// -----

// sol.concat_columns: at least one input (generic form)...
func.func @concat_columns_empty() {
  // expected-error @+1 {{'sol.concat_columns' op needs at least one input}}
  %c = "sol.concat_columns"() : () -> tensor<?x64xbf16>
  return
}

// -----

// ... token-major inputs...
func.func @concat_columns_rank(%a: tensor<?x64xbf16>, %b: tensor<?xbf16>) {
  // expected-error @+1 {{'sol.concat_columns' op an input must have rank 2 (tokens first), but has shape [?]}}
  %c = sol.concat_columns %a, %b : (tensor<?x64xbf16>, tensor<?xbf16>) -> tensor<?x65xbf16>
  return
}

// -----

// ... of one element type...
func.func @concat_columns_element_type(%a: tensor<?x64xbf16>, %b: tensor<?x32xf16>) {
  // expected-error @+1 {{'sol.concat_columns' op input #1 has element type 'f16', input #0 'bf16'}}
  %c = sol.concat_columns %a, %b : (tensor<?x64xbf16>, tensor<?x32xf16>) -> tensor<?x96xbf16>
  return
}

// -----

// ... and a result with all their columns...
func.func @concat_columns_result(%a: tensor<?x64xbf16>, %b: tensor<?x32xbf16>) {
  // expected-error @+1 {{'sol.concat_columns' op result must have shape [?, 96] of the inputs' element type, but has [?, 64]}}
  %c = sol.concat_columns %a, %b : (tensor<?x64xbf16>, tensor<?x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// ... in their element type.
func.func @concat_columns_result_type(%a: tensor<?x64xbf16>, %b: tensor<?x32xbf16>) {
  // expected-error @+1 {{'sol.concat_columns' op result must have shape [?, 96] of the inputs' element type, but has [?, 96]}}
  %c = sol.concat_columns %a, %b : (tensor<?x64xbf16>, tensor<?x32xbf16>) -> tensor<?x96xf32>
  return
}

// -----

// sol.gather_rows: a token-major input...
func.func @gather_rows_rank(%x: tensor<?xbf16>, %r: tensor<?xi32>) {
  // expected-error @+1 {{'sol.gather_rows' op operand #0 (input) must have rank 2 (tokens first), but has shape [?]}}
  %g = sol.gather_rows %x, %r : (tensor<?xbf16>, tensor<?xi32>) -> tensor<?xbf16>
  return
}

// -----

// ... 1-D rows...
func.func @gather_rows_rows(%x: tensor<?x64xbf16>, %r: tensor<?x1xi32>) {
  // expected-error @+1 {{'sol.gather_rows' op operand #1 (rows) must be a 1-D tensor of i32 (one entry per token), but has shape [?, 1]}}
  %g = sol.gather_rows %x, %r : (tensor<?x64xbf16>, tensor<?x1xi32>) -> tensor<?x64xbf16>
  return
}

// -----

// ... and the input's type.
func.func @gather_rows_result(%x: tensor<?x64xbf16>, %r: tensor<?xi32>) {
  // expected-error @+1 {{'sol.gather_rows' op result type must equal the input type 'tensor<?x64xbf16>'}}
  %g = sol.gather_rows %x, %r : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  return
}

// -----

// sol.logits: the LM head is [vocab, hidden].
func.func @logits_head(%h: tensor<?x64xbf16>, %r: tensor<?xi32>) {
  %n = sol.weight @n : tensor<64xbf16>
  %w = sol.weight @w : tensor<256x32xbf16>
  // expected-error @+1 {{operand #2 (lm_head) must have shape [vocab, 64], but has shape [256, 32]}}
  %l = sol.logits %h, %n, %w, %r {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x32xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
  return
}

// -----

// The final norm covers the whole row.
func.func @logits_norm_weight(%h: tensor<?x64xbf16>, %r: tensor<?xi32>) {
  %n = sol.weight @n : tensor<32xbf16>
  %w = sol.weight @w : tensor<256x64xbf16>
  // expected-error @+1 {{operand #1 (norm_weight) must have shape [64], but has shape [32]}}
  %l = sol.logits %h, %n, %w, %r {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<32xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
  return
}

// -----

// One logit per vocabulary entry.
func.func @logits_result(%h: tensor<?x64xbf16>, %r: tensor<?xi32>) {
  %n = sol.weight @n : tensor<64xbf16>
  %w = sol.weight @w : tensor<256x64xbf16>
  // expected-error @+1 {{result must have shape [?, 256] (one row of vocabulary logits per selected row), but has shape [?, 128]}}
  %l = sol.logits %h, %n, %w, %r {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x128xf32>
  return
}

// -----

// #sol.model: an architecture name...
// expected-error @+1 {{sol.model needs an architecture name}}
module attributes {sol.model = #sol.model<architecture = "", vocab_size = 256, hidden_size = 64, num_layers = 1, max_position_embeddings = 128>} {}

// -----

// ... and positive sizes.
// expected-error @+1 {{sol.model needs positive vocab_size, hidden_size, num_layers and max_position_embeddings, got 256, 64, 0, 128}}
module attributes {sol.model = #sol.model<architecture = "LlamaForCausalLM", vocab_size = 256, hidden_size = 64, num_layers = 0, max_position_embeddings = 128>} {}

// -----

// ... (the vocabulary too).
// expected-error @+1 {{sol.model needs positive vocab_size, hidden_size, num_layers and max_position_embeddings, got -1, 64, 2, 128}}
module attributes {sol.model = #sol.model<architecture = "LlamaForCausalLM", vocab_size = -1, hidden_size = 64, num_layers = 2, max_position_embeddings = 128>} {}

// -----

// Every parameter but position_limit is required.
// expected-error @+1 {{struct is missing required parameter: max_position_embeddings}}
module attributes {sol.model = #sol.model<architecture = "LlamaForCausalLM", vocab_size = 256, hidden_size = 64, num_layers = 2>} {}

// -----

// sol.quantize_weight: the codes' element type follows the scheme.
func.func @quantize_codes_type() {
  %w = sol.weight @w : tensor<8x32xbf16>
  // expected-error @+1 {{'sol.quantize_weight' op int8 weights must have 'i8' elements, not 'i4'}}
  %q, %s = sol.quantize_weight %w {scheme = #sol<quant int8>} : tensor<8x32xbf16> -> (tensor<8x32xi4>, tensor<8xf32>)
  return
}

// -----

// int4 groups divide the input features.
func.func @quantize_group() {
  %w = sol.weight @w : tensor<8x32xbf16>
  // expected-error @+1 {{'sol.quantize_weight' op int4 needs an even group_size that divides the 32 input features, got 12}}
  %q, %s, %z = sol.quantize_weight %w {scheme = #sol<quant int4>, group_size = 12} : tensor<8x32xbf16> -> (tensor<8x32xi4>, tensor<8x2xf32>, tensor<8x2xui8>)
  return
}

// -----

// int4 scales are per group.
func.func @quantize_scale_shape() {
  %w = sol.weight @w : tensor<8x32xbf16>
  // expected-error @+1 {{'sol.quantize_weight' op scales must be f32 of shape [8, 2], but are 'tensor<8xf32>'}}
  %q, %s, %z = sol.quantize_weight %w {scheme = #sol<quant int4>, group_size = 16} : tensor<8x32xbf16> -> (tensor<8x32xi4>, tensor<8xf32>, tensor<8x2xui8>)
  return
}

// -----

// Zero points go with int4 only.
func.func @quantize_zeros() {
  %w = sol.weight @w : tensor<8x32xbf16>
  // expected-error @+1 {{'sol.quantize_weight' op zero points go with int4 weights, and only with them}}
  %q, %s, %z = sol.quantize_weight %w {scheme = #sol<quant int8>} : tensor<8x32xbf16> -> (tensor<8x32xi8>, tensor<8xf32>, tensor<8xui8>)
  return
}

// -----

// A quantized linear needs its scales.
func.func @linear_quant_scales(%x: tensor<?x32xbf16>) {
  %w = sol.weight @w : tensor<8x32xi8>
  // expected-error @+1 {{'sol.linear' op an int8 weight needs its scales}}
  %y = sol.linear %x, %w {quant = #sol<quant int8>} : (tensor<?x32xbf16>, tensor<8x32xi8>) -> tensor<?x8xbf16>
  return
}

// -----

// Scales without a quantized weight are an error.
func.func @linear_scales_unquantized(%x: tensor<?x32xbf16>) {
  %w = sol.weight @w : tensor<8x32xbf16>
  %s = sol.weight @s : tensor<8xf32>
  // expected-error @+1 {{'sol.linear' op scales, zeros and group_size go with a quantized weight (quant = int8, fp8, int4)}}
  %y = sol.linear %x, %w scales %s : (tensor<?x32xbf16>, tensor<8x32xbf16> scales tensor<8xf32>) -> tensor<?x8xbf16>
  return
}

// -----

// clip_search is an int4 option.
func.func @quantize_clip() {
  %w = sol.weight @w : tensor<8x32xbf16>
  // expected-error @+1 {{'sol.quantize_weight' op clip_search applies to int4 only}}
  %q, %s = sol.quantize_weight %w {scheme = #sol<quant fp8>, clip_search = true} : tensor<8x32xbf16> -> (tensor<8x32xf8E4M3FN>, tensor<8xf32>)
  return
}

// -----

// sol.scale_weight: one scale per element of the scaled dimension.
func.func @scale_weight_size() {
  %w = sol.weight @w : tensor<8x32xbf16>
  %s = sol.weight @s : tensor<8xf32>
  // expected-error @+1 {{'sol.scale_weight' op scales must be tensor<32xf32> (dimension 1 of [8, 32]), or tensor<Bx32xf32> for B blocks of rows with axis 1, not [8] of 'f32'}}
  %x = sol.scale_weight %w, %s {axis = 1 : i64} : tensor<8x32xbf16>, tensor<8xf32>
  return
}

// -----

// sol.scale_weight: [B, K] scales need B to divide the rows.
func.func @scale_weight_blocks() {
  %w = sol.weight @w : tensor<8x32xbf16>
  %s = sol.weight @s : tensor<3x32xf32>
  // expected-error @+1 {{'sol.scale_weight' op scales must be tensor<32xf32> (dimension 1 of [8, 32]), or tensor<Bx32xf32> for B blocks of rows with axis 1, not [3, 32] of 'f32'}}
  %x = sol.scale_weight %w, %s {axis = 1 : i64} : tensor<8x32xbf16>, tensor<3x32xf32>
  return
}

// -----

func.func @scale_weight_axis() {
  %w = sol.weight @w : tensor<32xbf16>
  %s = sol.weight @s : tensor<32xf32>
  // expected-error @+1 {{'sol.scale_weight' op axis 1 is not a dimension of [32]}}
  %x = sol.scale_weight %w, %s {axis = 1 : i64} : tensor<32xbf16>, tensor<32xf32>
  return
}

// -----

// sol.clamp_weight: one ratio per int4 group.
func.func @clamp_weight_ratios() {
  %w = sol.weight @w : tensor<8x32xbf16>
  %r = sol.weight @r : tensor<8x4xf32>
  // expected-error @+1 {{'sol.clamp_weight' op ratios must be tensor<8x2xf32>, not [8, 4] of 'f32'}}
  %x = sol.clamp_weight %w, %r {group_size = 16 : i64} : tensor<8x32xbf16>, tensor<8x4xf32>
  return
}

// -----

func.func @clamp_weight_group() {
  %w = sol.weight @w : tensor<8x32xbf16>
  %r = sol.weight @r : tensor<8x2xf32>
  // expected-error @+1 {{'sol.clamp_weight' op group size 12 must divide the 32 inputs}}
  %x = sol.clamp_weight %w, %r {group_size = 12 : i64} : tensor<8x32xbf16>, tensor<8x2xf32>
  return
}

// -----

// sol.dequantize_weight: 8- or 4-bit codes, scales per tensor, per index or
// per block of the axis, zero points like the scales, and the result forms
// (bf16, Sol's int8, Sol's int4) only where the codes are that.
func.func @dequantize_weight_codes() {
  %q = sol.weight @q : tensor<8x32xbf16>
  %s = sol.weight @s : tensor<32xf32>
  // expected-error @+1 {{'sol.dequantize_weight' op dequantizes 2-D 8- or 4-bit integer codes, not [8, 32]}}
  %w = sol.dequantize_weight %q, %s : (tensor<8x32xbf16>, tensor<32xf32>) -> (tensor<8x32xbf16>)
  return
}

// -----

func.func @dequantize_weight_axis() {
  %q = sol.weight @q : tensor<8x32xi8>
  %s = sol.weight @s : tensor<32xf32>
  // expected-error @+1 {{'sol.dequantize_weight' op axis must be 0 or 1, not 2}}
  %w = sol.dequantize_weight %q, %s {axis = 2 : i64} : (tensor<8x32xi8>, tensor<32xf32>) -> (tensor<8x32xbf16>)
  return
}

// -----

func.func @dequantize_weight_scales() {
  %q = sol.weight @q : tensor<8x32xi8>
  %s = sol.weight @s : tensor<8xf32>
  // expected-error @+1 {{'sol.dequantize_weight' op scales must be one float, or one per index (or block) of axis 1, not [8]}}
  %w = sol.dequantize_weight %q, %s : (tensor<8x32xi8>, tensor<8xf32>) -> (tensor<8x32xbf16>)
  return
}

// -----

func.func @dequantize_weight_block_scales() {
  %q = sol.weight @q : tensor<64x16xi4>
  %s = sol.weight @s : tensor<3x16xf32>
  // expected-error @+1 {{'sol.dequantize_weight' op scales must be one float, or one per index (or block) of axis 0, not [3, 16]}}
  %w = sol.dequantize_weight %q, %s {axis = 0 : i64, block_size = 32 : i64} : (tensor<64x16xi4>, tensor<3x16xf32>) -> (tensor<64x16xbf16>)
  return
}

// -----

func.func @dequantize_weight_zeros() {
  %q = sol.weight @q : tensor<8x32xi8>
  %s = sol.weight @s : tensor<32xf32>
  %z = sol.weight @z : tensor<32xui8>
  // expected-error @+1 {{'sol.dequantize_weight' op zero points must have the scales' shape and the codes' type, not [32]}}
  %w = sol.dequantize_weight %q, %s, %z : (tensor<8x32xi8>, tensor<32xf32>, tensor<32xui8>) -> (tensor<8x32xbf16>)
  return
}

// -----

func.func @dequantize_weight_bf16() {
  %q = sol.weight @q : tensor<8x32xi8>
  %s = sol.weight @s : tensor<32xf32>
  // expected-error @+1 {{'sol.dequantize_weight' op result must be bf16 of the codes' shape [8, 32]}}
  %w = sol.dequantize_weight %q, %s : (tensor<8x32xi8>, tensor<32xf32>) -> (tensor<32x8xbf16>)
  return
}

// -----

func.func @dequantize_weight_int8_form() {
  %q = sol.weight @q : tensor<8x32xi8>
  %s = sol.weight @s : tensor<8xf32>
  // expected-error @+1 {{'sol.dequantize_weight' op gives Sol's int8 only for signed 8-bit codes scaled per tensor or per column}}
  %c, %cs = sol.dequantize_weight %q, %s {axis = 0 : i64} : (tensor<8x32xi8>, tensor<8xf32>) -> (tensor<32x8xi8>, tensor<32xf32>)
  return
}

// -----

func.func @dequantize_weight_int8_types() {
  %q = sol.weight @q : tensor<8x32xi8>
  %s = sol.weight @s : tensor<32xf32>
  // expected-error @+1 {{'sol.dequantize_weight' op int8 results must be [32, 8] i8 codes and [32] f32 scales}}
  %c, %cs = sol.dequantize_weight %q, %s : (tensor<8x32xi8>, tensor<32xf32>) -> (tensor<8x32xi8>, tensor<32xf32>)
  return
}

// -----

func.func @dequantize_weight_int4_form() {
  %q = sol.weight @q : tensor<64x16xi4>
  %s = sol.weight @s : tensor<64xf32>
  // expected-error @+1 {{'sol.dequantize_weight' op gives Sol's int4 only for 4-bit codes in blocks along axis 0 that divide it}}
  %c, %cs, %cz = sol.dequantize_weight %q, %s {axis = 0 : i64} : (tensor<64x16xi4>, tensor<64xf32>) -> (tensor<16x64xi4>, tensor<16x2xf32>, tensor<16x2xui8>)
  return
}

// -----

func.func @dequantize_weight_int4_types() {
  %q = sol.weight @q : tensor<64x16xi4>
  %s = sol.weight @s : tensor<2x16xf32>
  // expected-error @+1 {{'sol.dequantize_weight' op int4 results must be [16, 64] i4 codes, [16, 2] f32 scales and ui8 zeros}}
  %c, %cs, %cz = sol.dequantize_weight %q, %s {axis = 0 : i64, block_size = 32 : i64} : (tensor<64x16xi4>, tensor<2x16xf32>) -> (tensor<16x64xi4>, tensor<16x2xf32>, tensor<16x2xi8>)
  return
}

// -----

func.func @dequantize_weight_results() {
  %q = sol.weight @q : tensor<8x32xi8>
  %s = sol.weight @s : tensor<32xf32>
  // expected-error @+1 {{'sol.dequantize_weight' op has 1, 2 or 3 results, not 4}}
  %a, %b, %c, %d = sol.dequantize_weight %q, %s : (tensor<8x32xi8>, tensor<32xf32>) -> (tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>)
  return
}

// -----

func.func @dequantize_weight_block() {
  %q = sol.weight @q : tensor<8x32xi8>
  %s = sol.weight @s : tensor<32xf32>
  // expected-error @+1 {{'sol.dequantize_weight' op block_size must not be negative}}
  %w = sol.dequantize_weight %q, %s {block_size = -1 : i64} : (tensor<8x32xi8>, tensor<32xf32>) -> (tensor<8x32xbf16>)
  return
}

// -----

// sol.slice_rows stays within its input's rows.
func.func @slice_rows_range() {
  %a = sol.weight @a : tensor<8x4xbf16>
  // expected-error @+1 {{'sol.slice_rows' op rows [6, 10) must lie within the input's 8}}
  %b = sol.slice_rows %a {offset = 6 : i64} : tensor<8x4xbf16> -> tensor<4x4xbf16>
  return
}

// -----

// sol.permute_head_dims needs whole heads.
func.func @permute_head_dims_heads() {
  %a = sol.weight @a : tensor<24x4xbf16>
  // expected-error @+1 {{'sol.permute_head_dims' op permutes the rows of 1-D or 2-D weights made of heads of 16 rows}}
  %b = sol.permute_head_dims %a {head_dim = 16 : i64, rotary_dim = 8 : i64} : tensor<24x4xbf16>
  return
}

// -----

// sol.offset_weight gives f32.
func.func @offset_weight_type() {
  %a = sol.weight @a : tensor<8xbf16>
  // expected-error @+1 {{'sol.offset_weight' op adds to a float weight, giving f32 of its shape}}
  %b = sol.offset_weight %a {offset = 1.0 : f32} : tensor<8xbf16> -> tensor<8xbf16>
  return
}

// -----

// A soft cap is positive.
func.func @softcap_positive(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'sol.softcap' op cap must be positive, got -1}}
  %y = sol.softcap %x {cap = -1.0 : f32} : tensor<?x8xf32>
  return
}

// -----

// longrope needs its factors.
func.func @longrope_factors(%x: tensor<?x32xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{short_factor and long_factor go with longrope scaling, and only with it}}
  %y = sol.rope %x, %p {head_dim = 32 : i64, num_heads = 1 : i64, rope = #sol.rope<theta = 10000.0, kind = longrope, factor = 4.0, original_max_position = 32>} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  return
}

// -----

// sol.add_rms_norm: an input norm needs its epsilon...
func.func @add_rms_norm_input_norm_eps(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<64xbf16>
  // expected-error @+1 {{'sol.add_rms_norm' op input_weight and input_epsilon come together}}
  %n, %s = sol.add_rms_norm %x, %x, %w input_norm %w : tensor<64xbf16> {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>)
  return
}

// -----

// ...and a weight as wide as a row.
func.func @add_rms_norm_input_norm_width(%x: tensor<?x64xbf16>) {
  %w = sol.weight @w : tensor<64xbf16>
  %v = sol.weight @v : tensor<32xbf16>
  // expected-error @+1 {{'sol.add_rms_norm' op input_weight}}
  %n, %s = sol.add_rms_norm %x, %x, %w input_norm %v : tensor<32xbf16> {epsilon = 1.0e-5 : f32, input_epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>)
  return
}

// -----

// sol.head_rms_norm: a second weight comes with its head count...
func.func @head_rms_norm_second_heads(%x: tensor<?x128xbf16>) {
  %w = sol.weight @w : tensor<32xbf16>
  // expected-error @+1 {{'sol.head_rms_norm' op second_weight and a nonzero second_heads come together}}
  %y = sol.head_rms_norm %x, %w then %w : tensor<32xbf16> {column = 0 : i64, num_heads = 2 : i64, epsilon = 1.0e-6 : f32} : (tensor<?x128xbf16>, tensor<32xbf16>) -> tensor<?x128xbf16>
  return
}

// -----

// ...and both head ranges fit in the row.
func.func @head_rms_norm_second_range(%x: tensor<?x128xbf16>) {
  %w = sol.weight @w : tensor<32xbf16>
  // expected-error @+1 {{'sol.head_rms_norm' op columns [32, 160) must lie within the input's 128}}
  %y = sol.head_rms_norm %x, %w then %w : tensor<32xbf16> {column = 32 : i64, num_heads = 2 : i64, second_heads = 2 : i64, epsilon = 1.0e-6 : f32} : (tensor<?x128xbf16>, tensor<32xbf16>) -> tensor<?x128xbf16>
  return
}

// -----

// sol.moe: the router is [experts, hidden].
func.func @moe_router(%x: tensor<?x64xbf16>, %r: tensor<4x32xbf16>, %g: tensor<128x64xbf16>, %d: tensor<256x32xbf16>) {
  // expected-error @+1 {{router must have shape [experts, 64], but has shape [4, 32]}}
  %y = sol.moe %x, %r, %g, %g, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x32xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// The gate holds a whole number of rows per expert...
func.func @moe_gate(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<126x64xbf16>, %d: tensor<256x32xbf16>) {
  // expected-error @+1 {{gate must have shape [4 * intermediate, 64], but has shape [126, 64]}}
  %y = sol.moe %x, %r, %g, %g, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<126x64xbf16>, tensor<126x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// ... up has the gate's shape...
func.func @moe_up(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<128x64xbf16>, %u: tensor<64x64xbf16>, %d: tensor<256x32xbf16>) {
  // expected-error @+1 {{up must have gate's shape [128, 64], but has shape [64, 64]}}
  %y = sol.moe %x, %r, %g, %u, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<64x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// ... and down is [experts * hidden, intermediate].
func.func @moe_down(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<128x64xbf16>, %d: tensor<256x64xbf16>) {
  // expected-error @+1 {{down must have shape [256, 32], but has shape [256, 64]}}
  %y = sol.moe %x, %r, %g, %g, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// top_k picks between 1 and all the experts.
func.func @moe_top_k(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<128x64xbf16>, %d: tensor<256x32xbf16>) {
  // expected-error @+1 {{top_k must be in [1, 4], got 5}}
  %y = sol.moe %x, %r, %g, %g, %d {top_k = 5 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// Quantized experts are all of one code type.
func.func @moe_quantized_mixed(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<128x64xi8>, %d: tensor<256x32xbf16>) {
  // expected-error @+1 {{down must be a 2-D bf16, f16 or f32 weight, or ui8 MXFP4, i8, f8E4M3FN or i4 codes of gate's type, but has type 'tensor<256x32xbf16>'}}
  %y = sol.moe %x, %r, %g, %g, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xi8>, tensor<128x64xi8>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// int8 experts take an f32 scale a row of each projection.
func.func @moe_int8_without_scales(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<128x64xi8>, %d: tensor<256x32xi8>) {
  // expected-error @+1 {{takes 3 scales and 0 zero points for its experts (int8), got 0 and 0}}
  %y = sol.moe %x, %r, %g, %g, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xi8>, tensor<128x64xi8>, tensor<256x32xi8>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @moe_fp8_scale_shape(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<128x64xf8E4M3FN>, %d: tensor<256x32xf8E4M3FN>, %gs: tensor<128xf32>, %ds: tensor<128xf32>) {
  // expected-error @+1 {{the down scales must be f32 [256], but have type 'tensor<128xf32>'}}
  %y = sol.moe %x, %r, %g, %g, %d scales(%gs, %gs, %ds) {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xf8E4M3FN>, tensor<128x64xf8E4M3FN>, tensor<256x32xf8E4M3FN>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<?x64xbf16>
  return
}

// -----

// int4 experts: groups along the inputs that divide both H and I, and a zero
// point beside each scale.
func.func @moe_int4_group(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<128x64xi4>, %d: tensor<256x32xi4>, %gs: tensor<128x1xf32>, %ds: tensor<256x1xf32>, %gz: tensor<128x1xui8>, %dz: tensor<256x1xui8>) {
  // expected-error @+1 {{int4 experts need an even group size that divides the hidden size (64) and the experts' width (32), but the gate scales have type 'tensor<128x1xf32>'}}
  %y = sol.moe %x, %r, %g, %g, %d scales(%gs, %gs, %ds) zeros(%gz, %gz, %dz) {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xi4>, tensor<128x64xi4>, tensor<256x32xi4>, tensor<128x1xf32>, tensor<128x1xf32>, tensor<256x1xf32>, tensor<128x1xui8>, tensor<128x1xui8>, tensor<256x1xui8>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @moe_int4_zeros(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<128x64xi4>, %d: tensor<256x32xi4>, %gs: tensor<128x2xf32>, %ds: tensor<256x1xf32>, %gz: tensor<128x2xui8>, %dz: tensor<256x2xui8>) {
  // expected-error @+1 {{the down zero points must be ui8 [256, 1], but have type 'tensor<256x2xui8>'}}
  %y = sol.moe %x, %r, %g, %g, %d scales(%gs, %gs, %ds) zeros(%gz, %gz, %dz) {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xi4>, tensor<128x64xi4>, tensor<256x32xi4>, tensor<128x2xf32>, tensor<128x2xf32>, tensor<256x1xf32>, tensor<128x2xui8>, tensor<128x2xui8>, tensor<256x2xui8>) -> tensor<?x64xbf16>
  return
}

// -----

// The result has the input's type.
func.func @moe_result(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<128x64xbf16>, %d: tensor<256x32xbf16>) {
  // expected-error @+1 {{result must have the input's type 'tensor<?x64xbf16>', but has 'tensor<?x64xf32>'}}
  %y = sol.moe %x, %r, %g, %g, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xf32>
  return
}

// -----

// sol.shard_weight cuts an axis into equal blocks, one per rank or shared.
func.func @shard_uneven() {
  %w = sol.weight @w : tensor<6x4xbf16>
  // expected-error @+1 {{cannot cut dimension 0 of [6, 4] into 1 group(s) of 4 equal blocks}}
  %s = sol.shard_weight %w {axis = 0 : i64, shards = 4 : i64, ranks = 4 : i64} : tensor<6x4xbf16> -> tensor<1x4xbf16>
  return
}

// -----

func.func @shard_ranks() {
  %w = sol.weight @w : tensor<8x4xbf16>
  // expected-error @+1 {{needs ranks a multiple of shards and at least one group, got ranks 4, shards 3, groups 1}}
  %s = sol.shard_weight %w {axis = 0 : i64, shards = 3 : i64, ranks = 4 : i64} : tensor<8x4xbf16> -> tensor<2x4xbf16>
  return
}

// -----

func.func @shard_result() {
  %w = sol.weight @w : tensor<8x4xbf16>
  // expected-error @+1 {{result must be [8, 4] with dimension 1 divided by 2 and the same element type, but is 'tensor<8x4xbf16>'}}
  %s = sol.shard_weight %w {axis = 1 : i64, shards = 2 : i64, ranks = 2 : i64} : tensor<8x4xbf16> -> tensor<8x4xbf16>
  return
}

// -----

func.func @shard_packed_odd() {
  %w = sol.weight @w : tensor<8x6xi4>
  // expected-error @+1 {{cannot cut packed 4-bit rows into blocks of an odd number of columns}}
  %s = sol.shard_weight %w {axis = 1 : i64, shards = 2 : i64, ranks = 2 : i64} : tensor<8x6xi4> -> tensor<8x3xi4>
  return
}

// -----

func.func @first_rank_one_rank() {
  %b = sol.weight @b : tensor<32xbf16>
  // expected-error @+1 {{needs at least 2 ranks, got 1}}
  %y = sol.first_rank_weight %b {ranks = 1 : i64} : tensor<32xbf16>
  return
}

// -----

func.func @all_reduce_one_rank(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{needs at least 2 ranks, got 1}}
  %y = sol.all_reduce %x {ranks = 1 : i64} : tensor<?x64xbf16>
  return
}

// -----

func.func @all_gather_width(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{result must be 2 inputs side by side, [?, 128] of 'f32', but is 'tensor<?x64xf32>'}}
  %y = sol.all_gather %x {ranks = 2 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

// gpt-oss: sinks are one float per query head.
func.func @attention_sinks_shape(%q: tensor<?x64xbf16>, %pos: tensor<?xi32>, %seq: tensor<?xi32>) {
  %s = sol.weight @sinks : tensor<8xbf16>
  // expected-error @+1 {{sinks must be a [4] bf16, f16 or f32 weight (one per query head), but has type 'tensor<8xbf16>'}}
  %a = sol.attention %q, %q, %q, %pos, %seq sinks %s {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<8xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @moe_bias_count(%x: tensor<?x64xbf16>) {
  %r = sol.weight @router : tensor<4x64xbf16>
  %g = sol.weight @gate : tensor<128x64xbf16>
  %d = sol.weight @down : tensor<256x32xbf16>
  %rb = sol.weight @rb : tensor<4xbf16>
  // expected-error @+1 {{takes four biases (router, gate, up, down) or none, got 1}}
  %y = sol.moe %x, %r, %g, %g, %d biases(%rb) {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>, tensor<4xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @moe_bias_shape(%x: tensor<?x64xbf16>) {
  %r = sol.weight @router : tensor<4x64xbf16>
  %g = sol.weight @gate : tensor<128x64xbf16>
  %d = sol.weight @down : tensor<256x32xbf16>
  %rb = sol.weight @rb : tensor<4xbf16>
  %gb = sol.weight @gb : tensor<128xbf16>
  %db = sol.weight @db : tensor<128xbf16>
  // expected-error @+1 {{the down bias must be a [256] float weight, but has type 'tensor<128xbf16>'}}
  %y = sol.moe %x, %r, %g, %g, %d biases(%rb, %gb, %gb, %db) {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>, tensor<4xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @moe_clamped_needs_limit(%x: tensor<?x64xbf16>) {
  %r = sol.weight @router : tensor<4x64xbf16>
  %g = sol.weight @gate : tensor<128x64xbf16>
  %d = sol.weight @down : tensor<256x32xbf16>
  // expected-error @+1 {{activation_limit goes with clamped_silu, and only with it}}
  %y = sol.moe %x, %r, %g, %g, %d {top_k = 2 : i64, normalize_top_k = true, activation = #sol<activation clamped_silu>} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @swiglu_clamped(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{clamped_silu is an activation of sol.moe only}}
  %y = sol.swiglu %x, %x {activation = #sol<activation clamped_silu>} : (tensor<?x64xbf16>, tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @sigmoid_gate_weight(%v: tensor<?x64xbf16>, %x: tensor<?x32xbf16>) {
  %w = sol.weight @gate : tensor<1x64xbf16>
  // expected-error @+1 {{weight must be a [1, 32] float weight, but has type 'tensor<1x64xbf16>'}}
  %y = sol.sigmoid_gate %v, %x, %w : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<1x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @slice_rows_stride() {
  %w = sol.weight @w : tensor<8x4xbf16>
  // expected-error @+1 {{rows 1..9 (stride 2) must lie within the input's 8}}
  %s = sol.slice_rows %w {offset = 1 : i64, stride = 2 : i64} : tensor<8x4xbf16> -> tensor<5x4xbf16>
  return
}

// -----

func.func @reshape_weight_count() {
  %w = sol.weight @w : tensor<4x8xbf16>
  // expected-error @+1 {{keeps the element type and count; input 'tensor<4x8xbf16>', result 'tensor<30xbf16>'}}
  %s = sol.reshape_weight %w : tensor<4x8xbf16> -> tensor<30xbf16>
  return
}

// -----

func.func @mxfp4_shapes() {
  %b = sol.weight @blocks : tensor<4x64x2x16xui8>
  %s = sol.weight @scales : tensor<4x64x3xui8>
  // expected-error @+1 {{needs ui8 blocks [..., G, 16] and ui8 scales [..., G], got [4, 64, 2, 16] and [4, 64, 3]}}
  %w = sol.dequantize_mxfp4 %b, %s : (tensor<4x64x2x16xui8>, tensor<4x64x3xui8>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @mxfp4_result() {
  %b = sol.weight @blocks : tensor<4x64x2x16xui8>
  %s = sol.weight @scales : tensor<4x64x2xui8>
  // expected-error @+1 {{result must be [256, 64] bf16, but is 'tensor<64x256xbf16>'}}
  %w = sol.dequantize_mxfp4 %b, %s : (tensor<4x64x2x16xui8>, tensor<4x64x2xui8>) -> tensor<64x256xbf16>
  return
}

// -----

func.func @fp8_blocks_scales() {
  %c = sol.weight @codes : tensor<256x384xf8E4M3FN>
  %s = sol.weight @scales : tensor<2x2xf32>
  // expected-error @+1 {{needs [2, 3] f32 scales (one a block of 128 x 128 codes of [256, 384])}}
  %w = sol.dequantize_fp8_blocks %c, %s {block_rows = 128, block_cols = 128} : (tensor<256x384xf8E4M3FN>, tensor<2x2xf32>) -> tensor<256x384xbf16>
  return
}

// -----

func.func @fp8_blocks_codes() {
  %c = sol.weight @codes : tensor<256x384xbf16>
  %s = sol.weight @scales : tensor<2x3xf32>
  // expected-error @+1 {{needs [N, K] f8E4M3FN codes}}
  %w = sol.dequantize_fp8_blocks %c, %s {block_rows = 128, block_cols = 128} : (tensor<256x384xbf16>, tensor<2x3xf32>) -> tensor<256x384xbf16>
  return
}

// -----

func.func @fp8_blocks_block_size() {
  %c = sol.weight @codes : tensor<256x384xf8E4M3FN>
  %s = sol.weight @scales : tensor<2x3xf32>
  // expected-error @+1 {{needs positive block sizes, got 0 x 128}}
  %w = sol.dequantize_fp8_blocks %c, %s {block_rows = 0, block_cols = 128} : (tensor<256x384xf8E4M3FN>, tensor<2x3xf32>) -> tensor<256x384xbf16>
  return
}

// -----

func.func @fp8_blocks_result() {
  %c = sol.weight @codes : tensor<256x384xf8E4M3FN>
  %s = sol.weight @scales : tensor<2x3xf32>
  // expected-error @+1 {{result must be [256, 384] bf16, but is 'tensor<256x384xf32>'}}
  %w = sol.dequantize_fp8_blocks %c, %s {block_rows = 128, block_cols = 128} : (tensor<256x384xf8E4M3FN>, tensor<2x3xf32>) -> tensor<256x384xf32>
  return
}

// -----

func.func @rope_truncate_without_yarn(%q: tensor<?x64xbf16>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{rope truncate = false goes with yarn scaling only}}
  %r = sol.rope %q, %pos {rope = #sol.rope<theta = 10000.0, truncate = false>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @moe_mxfp4_scales(%x: tensor<?x64xbf16>) {
  %r = sol.weight @router : tensor<4x64xbf16>
  %g = sol.weight @gate : tensor<128x32xui8>
  %d = sol.weight @down : tensor<256x16xui8>
  %gs = sol.weight @gate.scales : tensor<128x2xui8>
  %ds = sol.weight @down.scales : tensor<256x2xui8>
  // expected-error @+1 {{the down scales must be ui8 [256, 1], but have type 'tensor<256x2xui8>'}}
  %y = sol.moe %x, %r, %g, %g, %d scales(%gs, %gs, %ds) {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x32xui8>, tensor<128x32xui8>, tensor<256x16xui8>, tensor<128x2xui8>, tensor<128x2xui8>, tensor<256x2xui8>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @moe_mxfp4_without_scales(%x: tensor<?x64xbf16>) {
  %r = sol.weight @router : tensor<4x64xbf16>
  %g = sol.weight @gate : tensor<128x32xui8>
  %d = sol.weight @down : tensor<256x16xui8>
  // expected-error @+1 {{takes 3 scales and 0 zero points for its experts (MXFP4), got 0 and 0}}
  %y = sol.moe %x, %r, %g, %g, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x32xui8>, tensor<128x32xui8>, tensor<256x16xui8>) -> tensor<?x64xbf16>
  return
}

// -----

// sol.gather_columns: a permutation of the input's columns.
func.func @gather_columns_repeat(%x: tensor<?x4xbf16>) {
  // expected-error @+1 {{columns[2] = 0 repeats a column of [0, 4)}}
  %p = sol.gather_columns %x {columns = array<i32: 2, 0, 0, 1>} : (tensor<?x4xbf16>) -> tensor<?x4xbf16>
  return
}

// -----

func.func @gather_columns_count(%x: tensor<?x4xbf16>) {
  // expected-error @+1 {{columns must name each of the 4 input columns once, but has 3 entries}}
  %p = sol.gather_columns %x {columns = array<i32: 2, 0, 1>} : (tensor<?x4xbf16>) -> tensor<?x4xbf16>
  return
}

// -----

func.func @gather_columns_range(%x: tensor<?x4xbf16>) {
  // expected-error @+1 {{columns[0] = 4 is outside [0, 4)}}
  %p = sol.gather_columns %x {columns = array<i32: 4, 0, 1, 2>} : (tensor<?x4xbf16>) -> tensor<?x4xbf16>
  return
}
