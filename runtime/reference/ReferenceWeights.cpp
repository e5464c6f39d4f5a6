//===- ReferenceWeights.cpp - The plan's weights in float32 ---------------===//

#include "runtime/reference/ReferenceWeights.h"

#include "runtime/plan/PlanFile.h"
#include "runtime/plan/RandomWeights.h"
#include "runtime/reference/ReferencePlan.h"
#include "runtime/support/DType.h"
#include "runtime/support/Error.h"
#include "runtime/support/Quantize.h"
#include "runtime/support/QuantizedCheckpoint.h"

#include <cstring>
#include <new>

namespace sol::reference {
namespace {

static_assert(static_cast<int>(fb::WeightQuant::Int8) ==
                  static_cast<int>(quant::Scheme::Int8) &&
              static_cast<int>(fb::WeightQuant::Fp8) ==
                  static_cast<int>(quant::Scheme::Fp8) &&
              static_cast<int>(fb::WeightQuant::Int4) ==
                  static_cast<int>(quant::Scheme::Int4));

// Section bytes carry no alignment promise for 2- and 4-byte elements, so
// every element is read with memcpy (compiled to a plain load).
template <typename Bits, typename Convert>
void convert(std::span<const std::byte> bytes, std::span<float> out,
             Convert toFloat) {
  for (size_t i = 0; i < out.size(); ++i) {
    Bits bits;
    std::memcpy(&bits, bytes.data() + i * sizeof(Bits), sizeof(Bits));
    out[i] = toFloat(bits);
  }
}

} // namespace

ReferenceWeights::ReferenceWeights(const PlanFile &file,
                                   const ReferencePlan &plan, int rank) {
  const auto &infos = plan.weights();
  values_.resize(infos.size());
  // A quantized linear's or expert projection's codes are dequantized with
  // its scales (and zero points), which are read there and not converted on
  // their own.
  struct Dequantize {
    bool quantized = false;
    quant::Scheme scheme = quant::Scheme::Int8;
    int64_t groupSize = 0;
    int scales = -1, zeros = -1;
    int mxfp4Scales = -1; // an MXFP4 expert weight: its scales' index
  };
  std::vector<Dequantize> dequantize(infos.size());
  std::vector<bool> auxiliary(infos.size(), false);
  for (const PlanOp &op : plan.ops()) {
    if (op.hasMxfp4Experts()) {
      for (size_t j = 0; j < 3; ++j) {
        const int scales = op.weights[op.moeScalesWeight() + j];
        dequantize[static_cast<size_t>(op.weights[1 + j])].mxfp4Scales = scales;
        auxiliary[static_cast<size_t>(scales)] = true;
      }
      continue;
    }
    if (op.kind == OpKind::Moe && op.moeQuantWeights() > 0) {
      const quant::Scheme scheme =
          op.expertFormat == fb::ExpertFormat::Int8  ? quant::Scheme::Int8
          : op.expertFormat == fb::ExpertFormat::Fp8 ? quant::Scheme::Fp8
                                                     : quant::Scheme::Int4;
      const size_t s = op.moeScalesWeight();
      const bool int4 = scheme == quant::Scheme::Int4;
      for (size_t j = 0; j < 3; ++j) {
        Dequantize &d = dequantize[static_cast<size_t>(op.weights[1 + j])];
        d = {true,
             scheme,
             op.groupSize,
             op.weights[s + j],
             int4 ? op.weights[s + 3 + j] : -1,
             -1};
      }
      for (size_t j = s; j < op.weights.size(); ++j)
        auxiliary[static_cast<size_t>(op.weights[j])] = true;
      continue;
    }
    if (op.quant == fb::WeightQuant::None)
      continue;
    const size_t s = op.scalesWeight();
    dequantize[static_cast<size_t>(op.weights[op.linearWeight()])] = {
        true,
        static_cast<quant::Scheme>(op.quant),
        op.groupSize,
        op.weights[s],
        op.quant == fb::WeightQuant::Int4 ? op.weights[s + 1] : -1,
        -1};
    for (size_t j = s; j < op.weights.size(); ++j)
      auxiliary[static_cast<size_t>(op.weights[j])] = true;
  }
  // A plan without weight bytes (solc --load-format dummy) gets random ones.
  std::vector<std::byte> codeScratch, scaleScratch, zeroScratch;
  auto bytesOf = [&](size_t i, std::vector<std::byte> &scratch) {
    const WeightInfo &info = infos[i];
    const std::span<const std::byte> bytes =
        weightBytesOrRandom(file, static_cast<int>(i), rank, scratch);
    const uint64_t expected =
        (static_cast<uint64_t>(info.elements) * dtypeBits(info.dtype) + 7) / 8;
    if (bytes.size() != expected)
      fail("plan ", file.path().string(), ": weight '", info.name, "' has ",
           bytes.size(), " bytes, but its shape and dtype ", info.dtype,
           " need ", expected);
    return bytes;
  };
  for (size_t i = 0; i < infos.size(); ++i) {
    if (!plan.weightIsUsed()[i] || (auxiliary[i] && !dequantize[i].quantized))
      continue;
    const WeightInfo &info = infos[i];
    const std::span<const std::byte> bytes = bytesOf(i, codeScratch);
    std::vector<float> &out = values_[i];
    if (const int s = dequantize[i].mxfp4Scales; s >= 0) {
      // MXFP4 codes: 32 values from each 16 bytes and its exponent byte.
      const std::span<const std::byte> scales =
          bytesOf(static_cast<size_t>(s), scaleScratch);
      out.resize(scales.size() * 32);
      std::vector<uint16_t> group(32);
      for (size_t g = 0; g < scales.size(); ++g) {
        quant::dequantizeMxfp4Group(bytes.subspan(g * 16, 16),
                                    std::to_integer<uint8_t>(scales[g]), group);
        for (size_t j = 0; j < 32; ++j)
          out[g * 32 + j] = bf16ToFloat(group[j]);
      }
      bytes_ += out.size() * sizeof(float);
      continue;
    }
    try {
      out.resize(static_cast<size_t>(info.elements));
    } catch (const std::bad_alloc &) {
      fail("out of memory converting weight '", info.name, "' (", info.elements,
           " elements) to float32 for the reference executor");
    }
    if (const Dequantize &d = dequantize[i]; d.quantized) {
      const size_t s = static_cast<size_t>(d.scales);
      std::vector<float> scales(static_cast<size_t>(infos[s].elements));
      convert<float>(bytesOf(s, scaleScratch), scales,
                     [](float v) { return v; });
      std::span<const uint8_t> zeros;
      if (d.zeros >= 0) {
        const std::span<const std::byte> zb =
            bytesOf(static_cast<size_t>(d.zeros), zeroScratch);
        zeros = {reinterpret_cast<const uint8_t *>(zb.data()), zb.size()};
      }
      quant::dequantizeInto(d.scheme, info.shape[0], info.shape[1], d.groupSize,
                            bytes, scales, zeros, out);
      bytes_ += out.size() * sizeof(float);
      continue;
    }
    switch (info.dtype) {
    case DType::BF16:
      convert<uint16_t>(bytes, out, bf16ToFloat);
      break;
    case DType::F16:
      convert<uint16_t>(bytes, out, halfToFloat);
      break;
    case DType::F32:
      convert<float>(bytes, out, [](float v) { return v; });
      break;
    default: // ReferencePlan rejects other dtypes for used weights.
      fail("weight '", info.name, "' has dtype ", info.dtype,
           "; the reference executor runs only BF16, F16 and F32 weights");
    }
    bytes_ += out.size() * sizeof(float);
  }
}

} // namespace sol::reference
