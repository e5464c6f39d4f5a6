//===- ReferenceWeights.cpp - The plan's weights in float32 ---------------===//

#include "runtime/reference/ReferenceWeights.h"

#include "runtime/plan/PlanFile.h"
#include "runtime/reference/ReferencePlan.h"
#include "runtime/support/DType.h"
#include "runtime/support/Error.h"

#include <cstring>
#include <new>

namespace sol::reference {
namespace {

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
                                   const ReferencePlan &plan) {
  const auto &infos = plan.weights();
  values_.resize(infos.size());
  for (size_t i = 0; i < infos.size(); ++i) {
    if (!plan.weightIsUsed()[i])
      continue;
    const WeightInfo &info = infos[i];
    const std::span<const std::byte> bytes =
        file.weightBytes(static_cast<int>(i));
    const uint64_t elementBytes =
        static_cast<uint64_t>(dtypeBits(info.dtype)) / 8;
    const uint64_t expected =
        static_cast<uint64_t>(info.elements) * elementBytes;
    if (bytes.size() != expected)
      fail("plan ", file.path().string(), ": weight '", info.name, "' has ",
           bytes.size(), " bytes, but its shape and dtype ", info.dtype,
           " need ", expected);
    std::vector<float> &out = values_[i];
    try {
      out.resize(static_cast<size_t>(info.elements));
    } catch (const std::bad_alloc &) {
      fail("out of memory converting weight '", info.name, "' (", info.elements,
           " elements) to float32 for the reference executor");
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
