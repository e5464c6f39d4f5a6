//===- QuantizedCheckpoint.cpp - AutoAWQ and GPTQ int4 into Sol's ---------===//

#include "runtime/support/QuantizedCheckpoint.h"

#include "runtime/support/DType.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace sol::quant {
namespace {

uint8_t nibble(int32_t word, int index) {
  return (static_cast<uint32_t>(word) >> (4 * index)) & 0xF;
}

void checkTensor(std::string_view format, std::string_view tensor, size_t have,
                 int64_t rows, int64_t cols) {
  if (static_cast<int64_t>(have) != rows * cols)
    fail(format, " tensor '", tensor, "' has ", have, " elements, expected [",
         rows, ", ", cols, "] = ", rows * cols);
}

/// The common checks of both formats: Sol's int4 shape and N packable by 8.
void checkPackedShape(std::string_view format, int64_t K, int64_t N,
                      int64_t groupSize) {
  checkShape(Scheme::Int4, N, K, groupSize,
             std::string(format) + " weight [N, K]");
  if (N % 8 != 0)
    fail(format, " packs 8 output columns per int32, but N = ", N,
         " is not a multiple of 8");
}

/// scales[n, group] of Sol's layout from fp16 [groups, N].
std::vector<float> transposeScales(std::string_view format,
                                   std::span<const uint16_t> scalesFp16,
                                   int64_t groups, int64_t N) {
  std::vector<float> scales(N * groups);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < N; ++n) {
      const float s = halfToFloat(scalesFp16[g * N + n]);
      if (!std::isfinite(s))
        fail(format, " scale of group ", g, ", column ", n, " is ", s,
             "; the checkpoint is corrupt");
      scales[n * groups + g] = s;
    }
  return scales;
}

} // namespace

QuantizedWeight unpackAutoAwq(std::span<const int32_t> qweight,
                              std::span<const int32_t> qzeros,
                              std::span<const uint16_t> scalesFp16, int64_t K,
                              int64_t N, int64_t groupSize) {
  constexpr std::string_view kFormat = "AutoAWQ";
  checkPackedShape(kFormat, K, N, groupSize);
  const int64_t groups = K / groupSize;
  const int64_t words = N / 8;
  checkTensor(kFormat, "qweight", qweight.size(), K, words);
  checkTensor(kFormat, "qzeros", qzeros.size(), groups, words);
  checkTensor(kFormat, "scales", scalesFp16.size(), groups, N);

  QuantizedWeight q{Scheme::Int4, N, K, groupSize, {}, {}, {}};
  q.codes.assign(codeBytes(Scheme::Int4, N, K), 0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < words; ++c) {
      const int32_t word = qweight[k * words + c];
      for (int i = 0; i < 8; ++i)
        setInt4CodeAt(q.codes, K, c * 8 + kAwqOrder[i], k, nibble(word, i));
    }
  q.zeros.resize(N * groups);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t c = 0; c < words; ++c) {
      const int32_t word = qzeros[g * words + c];
      for (int i = 0; i < 8; ++i)
        q.zeros[(c * 8 + kAwqOrder[i]) * groups + g] = nibble(word, i);
    }
  q.scales = transposeScales(kFormat, scalesFp16, groups, N);
  return q;
}

std::vector<int32_t> gptqInputPermutation(std::span<const int32_t> gIdx,
                                          int64_t K, int64_t groupSize) {
  // GPTQ checkpoints and MatMulNBits graphs share this: the messages name
  // neither.
  if (!gIdx.empty() && static_cast<int64_t>(gIdx.size()) != K)
    fail("g_idx has ", gIdx.size(), " elements, expected K = ", K);
  bool trivial = true;
  for (int64_t k = 0; k < static_cast<int64_t>(gIdx.size()); ++k)
    trivial = trivial && gIdx[k] == k / groupSize;
  if (trivial)
    return {};
  // The inputs stably sorted by group (a counting sort).
  const int64_t groups = K / groupSize;
  std::vector<int64_t> next(groups + 1, 0);
  for (int64_t k = 0; k < K; ++k) {
    if (gIdx[k] < 0 || gIdx[k] >= groups)
      fail("g_idx[", k, "] = ", gIdx[k], " is not a group of ", groups,
           " (K / group size)");
    ++next[gIdx[k] + 1];
  }
  for (int64_t g = 0; g < groups; ++g)
    if (next[g + 1] != groupSize)
      fail("g_idx puts ", next[g + 1], " inputs in group ", g,
           ", but group size ", groupSize,
           " needs exactly that many in each: g_idx and the group size "
           "disagree");
  for (int64_t g = 0; g < groups; ++g)
    next[g + 1] += next[g];
  std::vector<int32_t> permutation(K);
  for (int64_t k = 0; k < K; ++k)
    permutation[next[gIdx[k]]++] = static_cast<int32_t>(k);
  return permutation;
}

GptqWeight unpackGptq(std::span<const int32_t> qweight,
                      std::span<const int32_t> qzeros,
                      std::span<const uint16_t> scalesFp16,
                      std::span<const int32_t> gIdx, int64_t K, int64_t N,
                      int64_t groupSize, GptqZeros zeroFormat) {
  constexpr std::string_view kFormat = "GPTQ";
  checkPackedShape(kFormat, K, N, groupSize);
  if (K % 8 != 0)
    fail(kFormat, " packs 8 inputs per int32, but K = ", K,
         " is not a multiple of 8");
  const int64_t groups = K / groupSize;
  checkTensor(kFormat, "qweight", qweight.size(), K / 8, N);
  checkTensor(kFormat, "qzeros", qzeros.size(), groups, N / 8);
  checkTensor(kFormat, "scales", scalesFp16.size(), groups, N);

  GptqWeight result;
  result.inputPermutation = gptqInputPermutation(gIdx, K, groupSize);
  const bool trivial = result.inputPermutation.empty();

  QuantizedWeight &q = result.weight;
  q = {Scheme::Int4, N, K, groupSize, {}, {}, {}};
  q.codes.assign(codeBytes(Scheme::Int4, N, K), 0);
  if (trivial) {
    // A word's bytes are already Sol's: nibble 2b (k even) low, 2b+1 high.
    for (int64_t r = 0; r < K / 8; ++r)
      for (int64_t n = 0; n < N; ++n) {
        const auto word = static_cast<uint32_t>(qweight[r * N + n]);
        for (int b = 0; b < 4; ++b)
          q.codes[n * (K / 2) + r * 4 + b] = (word >> (8 * b)) & 0xFF;
      }
  } else {
    for (int64_t j = 0; j < K; ++j) {
      const int64_t k = result.inputPermutation[j];
      for (int64_t n = 0; n < N; ++n)
        setInt4CodeAt(q.codes, K, n, j,
                      nibble(qweight[(k / 8) * N + n], k % 8));
    }
  }

  q.zeros.resize(N * groups);
  const int offset = zeroFormat == GptqZeros::StoredMinusOne ? 1 : 0;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < N; ++n) {
      const int zero = nibble(qzeros[g * (N / 8) + n / 8], n % 8) + offset;
      if (zero > kInt4Max)
        fail(kFormat, " zero point of group ", g, ", column ", n,
             " is stored as 15, which the classic format reads as 16, "
             "outside 0..15 (a sym=false checkpoint whose zero 0 wrapped); "
             "re-quantize with sym=true or in the gptq_v2 format");
      q.zeros[n * groups + g] = static_cast<uint8_t>(zero);
    }
  q.scales = transposeScales(kFormat, scalesFp16, groups, N);
  return result;
}

namespace {

/// Code `k` of a row of `bits`-bit codes packed low bits first.
uint8_t codeAt(std::span<const uint8_t> row, int64_t k, int64_t bits) {
  const int64_t bit = k * bits;
  return (row[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
}

int64_t nbitsBlocks(const NBitsWeight &w) {
  return (w.cols + w.blockSize - 1) / w.blockSize;
}

int64_t nbitsRowBytes(const NBitsWeight &w) {
  return nbitsBlocks(w) * w.blockSize * w.bits / 8;
}

int64_t nbitsZeroRowBytes(const NBitsWeight &w) {
  return (nbitsBlocks(w) * w.bits + 7) / 8;
}

/// The zero point of (row, block).
float zeroAt(const NBitsWeight &w, int64_t row, int64_t block) {
  if (!w.zeroFloats.empty())
    return w.zeroFloats[row * nbitsBlocks(w) + block];
  if (w.zeroCodes.empty())
    return static_cast<float>(1 << (w.bits - 1));
  const int64_t bytes = nbitsZeroRowBytes(w);
  return codeAt(w.zeroCodes.subspan(row * bytes, bytes), block, w.bits);
}

} // namespace

void checkNBits(const NBitsWeight &w, std::string_view what) {
  if (!(w.bits == 2 || w.bits == 4 || w.bits == 8))
    fail(what, ": MatMulNBits with ", w.bits, " bits (2, 4 or 8 are defined)");
  // One block a row (QMoE's per-row scales) may have any width.
  if (w.rows <= 0 || w.cols <= 0 || w.blockSize < 16 ||
      ((w.blockSize & (w.blockSize - 1)) != 0 && w.blockSize != w.cols))
    fail(what, ": MatMulNBits shape N=", w.rows, " K=", w.cols,
         " block_size=", w.blockSize,
         " (block_size must be a power of two of at least 16)");
  const int64_t blocks = nbitsBlocks(w);
  if (!w.columns.empty()) {
    std::vector<bool> seen(static_cast<size_t>(w.cols), false);
    bool permutation = static_cast<int64_t>(w.columns.size()) == w.cols;
    for (int32_t c : w.columns) {
      permutation = permutation && c >= 0 && c < w.cols && !seen[size_t(c)];
      if (permutation)
        seen[size_t(c)] = true;
    }
    if (!permutation)
      fail(what, ": its column order is not a permutation of its ", w.cols,
           " inputs");
  }
  checkTensor("MatMulNBits", std::string(what) + " codes", w.packed.size(),
              w.rows, nbitsRowBytes(w));
  checkTensor("MatMulNBits", std::string(what) + " scales", w.scales.size(),
              w.rows, blocks);
  if (!w.zeroCodes.empty())
    checkTensor("MatMulNBits", std::string(what) + " zero points",
                w.zeroCodes.size(), w.rows, nbitsZeroRowBytes(w));
  if (!w.zeroFloats.empty())
    checkTensor("MatMulNBits", std::string(what) + " zero points",
                w.zeroFloats.size(), w.rows, blocks);
}

QuantizedWeight unpackNBits(const NBitsWeight &w) {
  checkNBits(w, "weight");
  const int64_t blocks = nbitsBlocks(w);
  if (w.bits != 4 || w.cols != blocks * w.blockSize || !w.zeroFloats.empty())
    fail("MatMulNBits weight: only 4-bit codes with integer zero points and "
         "K a multiple of block_size are Sol's int4 (have ",
         w.bits, " bits, K=", w.cols, ", block_size=", w.blockSize, ")");
  QuantizedWeight q{Scheme::Int4, w.rows, w.cols, w.blockSize, {}, {}, {}};
  // Row bytes are Sol's: code k at nibble k, low nibble first.
  q.codes.assign(w.packed.begin(), w.packed.end());
  if (!w.columns.empty()) {
    const int64_t rowBytes = nbitsRowBytes(w);
    for (int64_t n = 0; n < w.rows; ++n) {
      std::span<const uint8_t> row = w.packed.subspan(n * rowBytes, rowBytes);
      uint8_t *out = q.codes.data() + n * rowBytes;
      std::fill(out, out + rowBytes, uint8_t{0});
      for (int64_t j = 0; j < w.cols; ++j)
        out[j / 2] |=
            static_cast<uint8_t>(codeAt(row, w.columns[j], 4) << (j % 2 * 4));
    }
  }
  q.scales.assign(w.scales.begin(), w.scales.end());
  q.zeros.resize(static_cast<size_t>(w.rows * blocks));
  for (int64_t n = 0; n < w.rows; ++n)
    for (int64_t b = 0; b < blocks; ++b)
      q.zeros[n * blocks + b] = static_cast<uint8_t>(zeroAt(w, n, b));
  return q;
}

std::vector<float> dequantizeNBits(const NBitsWeight &w) {
  checkNBits(w, "weight");
  const int64_t blocks = nbitsBlocks(w), rowBytes = nbitsRowBytes(w);
  std::vector<float> out(static_cast<size_t>(w.rows * w.cols));
  for (int64_t n = 0; n < w.rows; ++n) {
    std::span<const uint8_t> row = w.packed.subspan(n * rowBytes, rowBytes);
    for (int64_t k = 0; k < w.cols; ++k) {
      const int64_t b = k / w.blockSize;
      const int64_t stored = w.columns.empty() ? k : w.columns[k];
      out[n * w.cols + k] =
          (static_cast<float>(codeAt(row, stored, w.bits)) - zeroAt(w, n, b)) *
          w.scales[n * blocks + b];
    }
  }
  return out;
}

namespace {

/// Code `i` of a flat array of 8- or 4-bit codes, as a number.
int linearCodeAt(std::span<const uint8_t> codes, int64_t i, int64_t bits,
                 bool isSigned) {
  if (bits == 8)
    return isSigned ? static_cast<int8_t>(codes[i]) : codes[i];
  const int nibble = (codes[i / 2] >> (i % 2 * 4)) & 0xF;
  return isSigned && nibble >= 8 ? nibble - 16 : nibble;
}

/// The scale (and zero point) index of element (r, c).
int64_t linearParamIndex(const LinearQuantWeight &w, int64_t r, int64_t c) {
  if (w.scales.size() == 1)
    return 0;
  if (w.blockSize == 0)
    return w.axis == 0 ? r : c;
  if (w.axis == 0)
    return (r / w.blockSize) * w.cols + c;
  return r * ((w.cols + w.blockSize - 1) / w.blockSize) + c / w.blockSize;
}

int linearZeroAt(const LinearQuantWeight &w, int64_t index) {
  return w.zeros.empty() ? 0 : linearCodeAt(w.zeros, index, w.bits, w.isSigned);
}

} // namespace

void checkLinearQuant(const LinearQuantWeight &w, std::string_view what) {
  if (w.bits != 8 && w.bits != 4)
    fail(what, ": ", w.bits, "-bit codes (Sol reads 8- and 4-bit ones)");
  if (w.rows <= 0 || w.cols <= 0 || (w.axis != 0 && w.axis != 1) ||
      w.blockSize < 0)
    fail(what, ": codes [", w.rows, ", ", w.cols, "] with axis ", w.axis,
         " and block size ", w.blockSize);
  const int64_t count = w.rows * w.cols;
  if (static_cast<int64_t>(w.codes.size()) != (count * w.bits + 7) / 8)
    fail(what, ": ", w.codes.size(), " bytes of codes for [", w.rows, ", ",
         w.cols, "] at ", w.bits, " bits");
  int64_t params = w.axis == 0 ? w.rows : w.cols;
  if (w.blockSize > 0)
    params = (params + w.blockSize - 1) / w.blockSize *
             (w.axis == 0 ? w.cols : w.rows);
  if (w.scales.size() != 1 && static_cast<int64_t>(w.scales.size()) != params)
    fail(what, ": ", w.scales.size(), " scales where ", params,
         " (or one) are needed");
  if (!w.zeros.empty() &&
      static_cast<int64_t>(w.zeros.size()) !=
          (static_cast<int64_t>(w.scales.size()) * w.bits + 7) / 8)
    fail(what, ": ", w.zeros.size(), " bytes of zero points for ",
         w.scales.size(), " scales");
}

std::vector<float> dequantizeLinear(const LinearQuantWeight &w) {
  checkLinearQuant(w, "weight");
  std::vector<float> out(static_cast<size_t>(w.rows * w.cols));
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t c = 0; c < w.cols; ++c) {
      const int64_t p = linearParamIndex(w, r, c);
      out[r * w.cols + c] =
          static_cast<float>(
              linearCodeAt(w.codes, r * w.cols + c, w.bits, w.isSigned) -
              linearZeroAt(w, p)) *
          w.scales[p];
    }
  return out;
}

bool isSolInt8(const LinearQuantWeight &w) {
  return w.bits == 8 && w.isSigned && w.blockSize == 0 &&
         (w.scales.size() == 1 || w.axis == 1) &&
         std::all_of(w.zeros.begin(), w.zeros.end(),
                     [](uint8_t z) { return z == 0; });
}

QuantizedWeight toSolInt8(const LinearQuantWeight &w) {
  checkLinearQuant(w, "weight");
  if (!isSolInt8(w))
    fail("an int8 weight with zero points, unsigned codes, blocks or "
         "per-input scales is not Sol's int8");
  QuantizedWeight q{Scheme::Int8, w.cols, w.rows, 0, {}, {}, {}};
  q.codes.resize(static_cast<size_t>(w.rows * w.cols));
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t c = 0; c < w.cols; ++c)
      q.codes[c * w.rows + r] = w.codes[r * w.cols + c];
  q.scales.resize(static_cast<size_t>(w.cols));
  for (int64_t c = 0; c < w.cols; ++c)
    q.scales[c] = w.scales[w.scales.size() == 1 ? 0 : c];
  return q;
}

bool isSolInt4(const LinearQuantWeight &w) {
  return w.bits == 4 && w.axis == 0 && w.blockSize > 0 &&
         w.rows % w.blockSize == 0 && w.rows % 2 == 0;
}

QuantizedWeight toSolInt4(const LinearQuantWeight &w) {
  checkLinearQuant(w, "weight");
  if (!isSolInt4(w))
    fail("a 4-bit weight not in blocks along its inputs (axis 0) that "
         "divide them is not Sol's int4");
  const int64_t groups = w.rows / w.blockSize, shift = w.isSigned ? 8 : 0;
  QuantizedWeight q{Scheme::Int4, w.cols, w.rows, w.blockSize, {}, {}, {}};
  q.codes.assign(static_cast<size_t>(w.cols * w.rows / 2), 0);
  q.scales.resize(static_cast<size_t>(w.cols * groups));
  q.zeros.resize(static_cast<size_t>(w.cols * groups));
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t c = 0; c < w.cols; ++c)
      setInt4CodeAt(
          q.codes, w.rows, c, r,
          static_cast<uint8_t>(
              linearCodeAt(w.codes, r * w.cols + c, 4, w.isSigned) + shift));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t c = 0; c < w.cols; ++c) {
      const int64_t p = g * w.cols + c;
      q.scales[c * groups + g] = w.scales[w.scales.size() == 1 ? 0 : p];
      q.zeros[c * groups + g] = static_cast<uint8_t>(
          linearZeroAt(w, w.scales.size() == 1 ? 0 : p) + shift);
    }
  return q;
}

float fp4E2M1Value(uint8_t code) {
  static constexpr float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f,
                                           2.0f, 3.0f, 4.0f, 6.0f};
  const float m = kMagnitudes[code & 7];
  return (code & 8) ? -m : m;
}

void dequantizeMxfp4Group(std::span<const std::byte> bytes, uint8_t scale,
                          std::span<uint16_t> out) {
  if (bytes.size() != 16 || out.size() != 32)
    fail("internal error: an MXFP4 group is 16 bytes and 32 values");
  const float factor = std::ldexp(1.0f, int(scale) - 127);
  for (size_t j = 0; j < 16; ++j) {
    const auto byte = std::to_integer<uint8_t>(bytes[j]);
    out[2 * j] = floatToBf16(fp4E2M1Value(byte & 0xF) * factor);
    out[2 * j + 1] = floatToBf16(fp4E2M1Value(byte >> 4) * factor);
  }
}

} // namespace sol::quant
