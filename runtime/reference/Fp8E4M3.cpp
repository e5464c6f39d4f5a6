//===- Fp8E4M3.cpp - The fp8 KV cache's row scales on the host ------------===//

#include "runtime/reference/Fp8E4M3.h"

#include "runtime/support/Quantize.h"

namespace sol::reference {

// A KV row is quantized exactly like an fp8 activation row; one rule keeps
// the two from drifting apart.
float kvRowScale(std::span<const float> row) { return quant::fp8RowScale(row); }

float quantizeKvRow(std::span<float> row) {
  return quant::roundTripRowFp8(row);
}

} // namespace sol::reference
