//===- QuantizedCheckpoint.h - AutoAWQ and GPTQ int4 into Sol's -*- C++ -*-===//
//
// Already-quantized Hugging Face checkpoints store 4-bit weights packed into
// int32 words along a different axis than Sol's int4 format (Quantize.h:
// [N, K/2] bytes, low nibble = even k). These functions only repack: they
// take the raw tensors of one linear (K inputs, N outputs, group size g)
// and return the same codes, zero points and scales in Sol's layout, so
// (q - zero) * scale gives the values the checkpoint's own kernels compute.
// Finding the tensors in safetensors files is the importer's job.
//
// AutoAWQ, version "gemm" (quant_method "awq"):
//   qweight int32 [K, N/8], qzeros int32 [K/g, N/8], scales fp16 [K/g, N].
//   AutoAWQ packs word c of a row as
//     word |= value[c*8 + kAwqOrder[i]] << (4*i),  i = 0..7,
//   so nibble i of the word holds column c*8 + kAwqOrder[i]. qzeros uses the
//   same packing and holds the zero points themselves.
//
// GPTQ (quant_method "gptq", 4 bits):
//   qweight int32 [K/8, N]: nibble j (low first) of word (r, n) is input
//   k = r*8 + j. qzeros int32 [K/g, N/8]: nibble j of word (group, c) is
//   column c*8 + j. scales fp16 [K/g, N]. g_idx int32 [K]: the group of
//   each input k. The classic (v1) format stores zero - 1, so zero =
//   stored + 1 (8 for sym=true); "gptq_v2" checkpoints store the zero.
//   With desc_act the groups are not contiguous in k; then the result's
//   columns are the inputs reordered so that they are (see GptqWeight).
//
// onnxruntime's MatMulNBits (com.microsoft; also GatherBlockQuantized's
// table), bits b in {2, 4, 8}, block size g:
//   packed uint8 [N, blocks, g*b/8]: row n's codes in order, code k at bit
//   offset k*b of the row's bytes (low bits first); K <= blocks * g.
//   scales float [N * blocks]. zero points: packed the same way, each row
//   padded to whole bytes ([N, ceil(blocks*b/8)]), or one float per block,
//   or none (2^(b-1)). Value = (q - zero) * scale.
//   For b = 4, K = blocks * g and integer zero points this is Sol's int4 with
//   group g: the codes' bytes are already Sol's layout.
//
// MXFP4 (OCP microscaling; gpt-oss's experts, quant_method "mxfp4"):
//   blocks uint8 [..., G, 16], scales uint8 [..., G]: 32 FP4 (E2M1) values
//   per group, two per byte with the low nibble first, times the group's
//   shared E8M0 exponent 2^(scale - 127).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Quantize.h"

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace sol::quant {

/// The value of an FP4 (E2M1) code: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and, with
/// bit 3 set, their negatives.
float fp4E2M1Value(uint8_t code);

/// One MXFP4 group (16 bytes, 32 values) with shared exponent byte
/// `scale`, as bf16 bit patterns (exact: every value fits bf16).
void dequantizeMxfp4Group(std::span<const std::byte> bytes, uint8_t scale,
                          std::span<uint16_t> out);

/// AutoAWQ's AWQ_ORDER: nibble i of a packed word holds column
/// c*8 + kAwqOrder[i].
inline constexpr std::array<int, 8> kAwqOrder = {0, 2, 4, 6, 1, 3, 5, 7};

/// One AutoAWQ GEMM linear as Sol's int4 [N, K] with group size g.
QuantizedWeight unpackAutoAwq(std::span<const int32_t> qweight,
                              std::span<const int32_t> qzeros,
                              std::span<const uint16_t> scalesFp16, int64_t K,
                              int64_t N, int64_t groupSize);

/// How a GPTQ checkpoint stores its zero points.
enum class GptqZeros {
  StoredMinusOne, ///< classic format (checkpoint_format "gptq"): zero - 1
  Stored,         ///< checkpoint_format "gptq_v2": the zero itself
};

/// A GPTQ linear in Sol's layout.
struct GptqWeight {
  /// int4 [N, K]; column j holds input inputPermutation[j] (or j when the
  /// permutation is empty), so groups are contiguous runs of g columns.
  QuantizedWeight weight;
  /// Empty when g_idx is trivial (g_idx[k] == k / g). Otherwise the inputs
  /// stably sorted by g_idx: the runtime must feed x[:, perm[j]] as input
  /// j, i.e. permute the activations' columns exactly like W's.
  std::vector<int32_t> inputPermutation;
};

/// GptqWeight::inputPermutation for `gIdx` (K entries, or none): empty when
/// every input k sits in group k / groupSize, else the inputs stably sorted
/// by group. Fails when g_idx does not give every group exactly groupSize
/// inputs.
std::vector<int32_t> gptqInputPermutation(std::span<const int32_t> gIdx,
                                          int64_t K, int64_t groupSize);

/// One GPTQ linear; `gIdx` may be empty (then groups are k / g). Fails when
/// g_idx does not give every group exactly g inputs.
GptqWeight unpackGptq(std::span<const int32_t> qweight,
                      std::span<const int32_t> qzeros,
                      std::span<const uint16_t> scalesFp16,
                      std::span<const int32_t> gIdx, int64_t K, int64_t N,
                      int64_t groupSize,
                      GptqZeros zeros = GptqZeros::StoredMinusOne);

/// One MatMulNBits weight (N rows of K inputs). `zeroCodes` and
/// `zeroFloats` are both empty when the op has no zero points. With
/// `columns` (a permutation of the K inputs, from a g_idx), the result's
/// column j is the stored column columns[j], in block j / blockSize.
struct NBitsWeight {
  int64_t rows = 0, cols = 0, bits = 4, blockSize = 32;
  std::span<const uint8_t> packed;
  std::span<const float> scales;
  std::span<const uint8_t> zeroCodes;
  std::span<const float> zeroFloats;
  std::span<const int32_t> columns;
};

/// Throws sol::Error (naming `what`) unless the arrays have the sizes the
/// shape and bits give.
void checkNBits(const NBitsWeight &w, std::string_view what);
/// Sol's int4 with group blockSize; needs bits 4, cols == blocks * blockSize
/// and no float zero points.
QuantizedWeight unpackNBits(const NBitsWeight &w);
/// The weight as float32 [rows, cols].
std::vector<float> dequantizeNBits(const NBitsWeight &w);

/// An integer weight as ONNX's DequantizeLinear (or MatMulInteger) stores
/// it: codes [rows, cols] row-major, 8 bits a byte or 4 bits two a byte
/// (element i in the low nibble of byte i / 2 when i is even), signed or
/// not; `scales` one for the tensor, one per index of `axis`, or with
/// `blockSize` > 0 one per block of that many along `axis` (the codes'
/// shape with dimension `axis` divided, rounded up); `zeros` (empty: 0)
/// codes of the scales' shape in the codes' type and packing.
struct LinearQuantWeight {
  int64_t rows = 0, cols = 0, bits = 8;
  bool isSigned = true;
  int64_t axis = 1, blockSize = 0;
  std::span<const uint8_t> codes;
  std::span<const float> scales;
  std::span<const uint8_t> zeros;
};

/// Throws sol::Error (naming `what`) unless the arrays have the sizes the
/// shape, bits, axis and block size give.
void checkLinearQuant(const LinearQuantWeight &w, std::string_view what);
/// (q - z) * s as float32 [rows, cols], in the stored layout.
std::vector<float> dequantizeLinear(const LinearQuantWeight &w);
/// Whether the transposed weight ([cols, rows]: a MatMul's [in, out] as a
/// linear's [out, in]) is Sol's int8 as it is: signed 8-bit codes, no zero
/// point but 0, scales per tensor or per column (axis 1).
bool isSolInt8(const LinearQuantWeight &w);
/// That int8 weight (scales broadcast to one per row).
QuantizedWeight toSolInt8(const LinearQuantWeight &w);
/// Whether the transposed weight is Sol's int4 as it is: 4-bit codes in
/// blocks along axis 0 (the MatMul's inputs) that divide the rows, an even
/// row count.
bool isSolInt4(const LinearQuantWeight &w);
/// That int4 weight, group = blockSize (signed codes and zero points moved
/// up by 8 into 0..15; a missing zero point is the type's 0).
QuantizedWeight toSolInt4(const LinearQuantWeight &w);

} // namespace sol::quant
