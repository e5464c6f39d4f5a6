//===- TensorEvaluatorTest.cpp - calibration's float32 GEMM ---------------===//
//
// linearFloat (packed panels, tiles of 6 x 16, FMA where the CPU has it)
// against a double-precision reference on shapes that leave partial tiles,
// panels and row chunks, with and without bias; every output is written.
//
//===----------------------------------------------------------------------===//
#include "passes/TensorEvaluator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace sol {
namespace {

void checkLinear(int64_t rows, int64_t n, int64_t k, bool withBias) {
  SCOPED_TRACE(testing::Message() << rows << "x" << n << "x" << k
                                  << (withBias ? " with bias" : ""));
  std::mt19937 rng(static_cast<unsigned>(rows * 131 + n * 7 + k));
  std::normal_distribution<float> normal;
  std::vector<float> x(rows * k), w(n * k), bias;
  for (float &v : x)
    v = normal(rng);
  for (float &v : w)
    v = normal(rng);
  if (withBias)
    for (int64_t i = 0; i < n; ++i)
      bias.push_back(normal(rng));
  std::vector<float> out(rows * n, NAN);
  linearFloat(out, x, w, bias, rows, n, k);
  double errSquared = 0.0, refSquared = 0.0;
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t c = 0; c < n; ++c) {
      double ref = withBias ? bias[c] : 0.0;
      for (int64_t i = 0; i < k; ++i)
        ref += static_cast<double>(x[t * k + i]) * w[c * k + i];
      const float got = out[t * n + c];
      ASSERT_TRUE(std::isfinite(got)) << "output " << t << ", " << c;
      errSquared += (got - ref) * (got - ref);
      refSquared += ref * ref;
    }
  EXPECT_LT(std::sqrt(errSquared / refSquared), 1e-6);
}

TEST(TensorEvaluatorTest, LinearFloatMatchesDouble) {
  checkLinear(1, 1, 1, false);
  checkLinear(5, 15, 7, true);
  checkLinear(13, 37, 29, true);
  checkLinear(97, 16, 64, false); // two row chunks, one full panel
  checkLinear(200, 33, 384, true);
}

} // namespace
} // namespace sol
