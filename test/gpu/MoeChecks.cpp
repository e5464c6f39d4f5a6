//===- MoeChecks.cpp - the mixture-of-experts kernels ---------------------===//
//
// moe: the chain after the router's linear as the CUDA executor launches it
// (one row: moe_gate_up_row and moe_down_row; a few: moe_route,
// moe_gate_up, moe_down, moe_combine; from MoeSpec::grouped's step size:
// moe_route, moe_sort, the two moe_grouped_gemm, moe_combine), on
// random bf16 router logits, activations and experts (MXFP4 codes and
// exponents for gpt-oss's format), against a float64 reference that routes
// from the same logits (softmax, top k, lower expert first on ties,
// renormalised) and rounds where the kernels document: g and u to bf16 (plus
// the bias, rounded), the activation, the product; down to bf16 (plus the
// bias); each weighted output and running sum. Shapes: Qwen3-30B-A3B's (128
// experts, 8 a token) at 1 row (the one-row kernels), 8 rows (the few-rows
// kernels) and 16 to 128 rows (the grouped GEMMs, in tiles of 16, 32 and 64
// slots each), and with sol-quantize's
// int8, fp8 and int4 (groups of 128) experts at 1 and 128 rows; gpt-oss-20b's
// with bf16 biased experts and the clamped SwiGLU and with MXFP4 experts (1
// and 64 rows each). Qwen3-30B-A3B's bf16 experts also run 8, 16 and 32 rows
// the other way (few-rows kernels against grouped GEMMs), the measurement
// MoeSpec::grouped's threshold is chosen from; one row also runs the
// few-rows chain beside the one-row kernels. Timed as one chain; bytes are the
// weights of the experts the step routes to (each read once). moe_row: the
// steps of one row only (quick: batch-1 decode's kernels).
//
//===----------------------------------------------------------------------===//

#include "Checks.h"

#include "runtime/support/Fp8.h"
#include "runtime/support/ParallelChunks.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;
using cuda::KernelInstance;
using cuda::MoeSpec;

struct MoeCase {
  const char *shape;
  MoeSpec spec;
  bool biased = false; // gpt-oss: biases and the clamped SwiGLU (limit 7)
  std::vector<int> rows;
  // Rows also run through the other of the few-rows kernels and the
  // grouped GEMMs, to compare both paths at one step size around
  // MoeSpec::grouped's threshold.
  std::vector<int> bothWays = {};
};

const std::vector<MoeCase> &moeCases() {
  using F = fb::ExpertFormat;
  static const std::vector<MoeCase> cases = {
      {"qwen3-30b-a3b",
       MoeSpec{128, 8, 2048, 768},
       false,
       {1, 8, 16, 32, 64, 128},
       {8, 16, 32}},
      {"qwen3-30b-a3b int8",
       MoeSpec{128, 8, 2048, 768, F::Int8},
       false,
       {1, 128}},
      {"qwen3-30b-a3b fp8",
       MoeSpec{128, 8, 2048, 768, F::Fp8},
       false,
       {1, 128}},
      {"qwen3-30b-a3b int4",
       MoeSpec{128, 8, 2048, 768, F::Int4, 128},
       false,
       {1, 128}},
      {"gpt-oss-20b bf16", MoeSpec{32, 4, 2880, 2880}, true, {1, 64}},
      {"gpt-oss-20b mxfp4",
       MoeSpec{32, 4, 2880, 2880, F::Mxfp4},
       true,
       {1, 64}},
  };
  return cases;
}

using Path = MoeSpec::Path;

/// One way of running a step: the kernels' path and, for the grouped GEMMs,
/// their tile rows.
struct MoeVariant {
  Path path;
  int tileRows = 0;
};

/// Each step size of a case and the ways it runs: the path the executor
/// takes (with its tile rows), every other tile size of the grouped GEMMs
/// (what MoeSpec::groupedTileRows is chosen from), the few-rows chain beside
/// the one-row kernels, and bothWays' other path.
std::vector<std::pair<int, std::vector<MoeVariant>>> stepsOf(const MoeCase &m) {
  std::vector<std::pair<int, std::vector<MoeVariant>>> steps;
  auto variants = [&](int rows, bool otherPath) {
    std::vector<MoeVariant> v;
    const Path path = m.spec.path(rows);
    if (path == Path::Grouped) {
      const int chosen = m.spec.groupedTileRows(rows);
      v.push_back({path, chosen});
      for (int t : {16, 32, 64})
        if (t != chosen)
          v.push_back({path, t});
    } else {
      v.push_back({path});
    }
    if (path == Path::Row)
      v.push_back({Path::Slots});
    if (otherPath) {
      if (path == Path::Grouped)
        v.push_back({Path::Slots});
      else
        v.push_back({Path::Grouped, m.spec.groupedTileRows(rows)});
    }
    return v;
  };
  for (int rows : m.rows)
    steps.emplace_back(rows,
                       variants(rows, std::count(m.bothWays.begin(),
                                                 m.bothWays.end(), rows) > 0));
  for (int rows : m.bothWays)
    if (std::count(m.rows.begin(), m.rows.end(), rows) == 0)
      steps.emplace_back(rows, variants(rows, true));
  return steps;
}

std::string variantName(const MoeVariant &v) {
  if (v.path == Path::Grouped)
    return sol::cat("grouped/", v.tileRows);
  return v.path == Path::Row ? "row" : "decode";
}

std::vector<KernelInstance> instancesOf(const MoeCase &m, const MoeVariant &v) {
  if (v.path == Path::Row)
    return {m.spec.gateUpRow(), m.spec.downRow()};
  std::vector<KernelInstance> out = {m.spec.route()};
  if (v.path == Path::Grouped)
    out.insert(out.end(),
               {m.spec.sort(v.tileRows), m.spec.groupedGateUp(v.tileRows),
                m.spec.groupedDown(v.tileRows)});
  else
    out.insert(out.end(), {m.spec.gateUp(), m.spec.down()});
  out.push_back(m.spec.combine());
  return out;
}

/// A row-major matrix of `rows` x `cols` expert weights in `format`: bf16
/// values; MXFP4 codes (cols / 2 bytes a row) and exponents (cols / 32 a
/// row); int8 or fp8 codes and an f32 scale a row; int4 codes (cols / 2
/// bytes a row) with an f32 scale and a u8 zero point a group.
struct ExpertMatrix {
  fb::ExpertFormat format = fb::ExpertFormat::Float;
  std::vector<Bf16> bf16;
  std::vector<unsigned char> codes, exponents, zeros;
  std::vector<float> scales;
  int cols = 0, group = 0;
  double at(long long row, int col) const {
    switch (format) {
    case fb::ExpertFormat::Float:
      return bf16ToFloat(bf16[row * cols + col]);
    case fb::ExpertFormat::Int8:
      return static_cast<signed char>(codes[row * cols + col]) *
             static_cast<double>(scales[row]);
    case fb::ExpertFormat::Fp8:
      return e4m3ToFloat(codes[row * cols + col]) *
             static_cast<double>(scales[row]);
    case fb::ExpertFormat::Int4: {
      const unsigned byte = codes[row * (cols / 2) + col / 2];
      const int code = static_cast<int>(col % 2 ? byte >> 4 : byte & 15u);
      const long long g = row * (cols / group) + col / group;
      return (code - zeros[g]) * static_cast<double>(scales[g]);
    }
    case fb::ExpertFormat::Mxfp4:
      break;
    }
    static const double kFp4[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    const unsigned byte = codes[row * (cols / 2) + col / 2];
    const unsigned code = col % 2 ? byte >> 4 : byte & 15u;
    return (code & 8u ? -1 : 1) *
           std::ldexp(kFp4[code & 7u],
                      exponents[row * (cols / 32) + col / 32] - 127);
  }
};

/// Random experts of values up to about `scale`.
ExpertMatrix randomExperts(Rng &rng, long long rows, int cols,
                           const MoeSpec &spec, float scale) {
  ExpertMatrix m;
  m.format = spec.format;
  m.cols = cols;
  m.group = spec.groupSize;
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  auto randomBytes = [&](std::size_t n, int lo, int hi) {
    std::vector<unsigned char> v(n);
    for (unsigned char &b : v)
      b = static_cast<unsigned char>(rng.uniformInt(lo, hi));
    return v;
  };
  // Scales spread around `scale / largest code`, as a trained layer's.
  auto randomScales = [&](std::size_t n, float largest) {
    std::vector<float> v(n);
    for (float &f : v)
      f = scale / largest * rng.uniform(0.5f, 1.5f);
    return v;
  };
  switch (spec.format) {
  case fb::ExpertFormat::Float:
    m.bf16 = randomBf16(rng, count, -scale, scale);
    break;
  case fb::ExpertFormat::Mxfp4:
    m.codes = randomBytes(count / 2, 0, 255);
    // 2^-8 .. 2^-6: values up to 6 * 2^-6, the spread of a trained layer.
    m.exponents = randomBytes(count / 32, 119, 121);
    break;
  case fb::ExpertFormat::Int8:
    m.codes = randomBytes(count, 0, 255);
    m.scales = randomScales(static_cast<std::size_t>(rows), 127);
    break;
  case fb::ExpertFormat::Fp8: {
    // Any sign, exponent fields 1..14 (no NaN), any mantissa: up to 240.
    m.codes.resize(count);
    for (unsigned char &b : m.codes)
      b = static_cast<unsigned char>(rng.uniformInt(0, 1) << 7 |
                                     rng.uniformInt(1, 14) << 3 |
                                     rng.uniformInt(0, 7));
    m.scales = randomScales(static_cast<std::size_t>(rows), 240);
    break;
  }
  case fb::ExpertFormat::Int4:
    m.codes = randomBytes(count / 2, 0, 255);
    m.scales = randomScales(count / m.group, 8);
    m.zeros = randomBytes(count / m.group, 6, 9);
    break;
  }
  return m;
}

/// The device copies of an ExpertMatrix: codes (or values), scales (or
/// exponents), zero points.
struct DeviceExperts {
  DeviceBuffer w, scales, zeros;
};
DeviceExperts uploadExperts(Checker &c, const ExpertMatrix &m) {
  DeviceExperts d;
  d.w = m.bf16.empty() ? c.upload(m.codes) : c.upload(m.bf16);
  if (!m.exponents.empty())
    d.scales = c.upload(m.exponents);
  if (!m.scales.empty())
    d.scales = c.upload(m.scales);
  if (!m.zeros.empty())
    d.zeros = c.upload(m.zeros);
  return d;
}

/// A buffer's address, 0 when it holds nothing.
CUdeviceptr addressOr0(const DeviceBuffer &b) {
  return b.size() ? b.address() : 0;
}

/// The bytes a weight takes in `format`, with its scales.
double bytesPerWeight(const MoeSpec &s) {
  switch (s.format) {
  case fb::ExpertFormat::Float:
    return 2.0;
  case fb::ExpertFormat::Mxfp4:
    return 17.0 / 32;
  case fb::ExpertFormat::Int8:
  case fb::ExpertFormat::Fp8:
    return 1.0;
  case fb::ExpertFormat::Int4:
    return 0.5 + 5.0 / s.groupSize;
  }
  return 2.0;
}

double silu(double g) { return g / (1 + std::exp(-g)); }

/// With oneRow, only the steps of one row (both chains): the quick check of
/// batch-1 decode.
void checkMoe(Checker &c, bool oneRow) {
  for (const MoeCase &m : moeCases()) {
    const MoeSpec &s = m.spec;
    const int E = s.experts, K = s.topK, H = s.hidden, I = s.width;
    const ExpertMatrix gate =
        randomExperts(c.rng, 1LL * E * I, H, s, m.biased ? 0.05f : 0.03f);
    const ExpertMatrix up =
        randomExperts(c.rng, 1LL * E * I, H, s, m.biased ? 0.05f : 0.03f);
    const ExpertMatrix down = randomExperts(c.rng, 1LL * E * H, I, s, 0.03f);
    std::vector<Bf16> gateBias, upBias, downBias;
    if (m.biased) {
      gateBias = randomBf16(c.rng, static_cast<std::size_t>(E) * I, -2, 2);
      upBias = randomBf16(c.rng, static_cast<std::size_t>(E) * I, -6, 6);
      downBias = randomBf16(c.rng, static_cast<std::size_t>(E) * H, -0.5, 0.5);
    }
    const DeviceExperts dGate = uploadExperts(c, gate),
                        dUp = uploadExperts(c, up),
                        dDown = uploadExperts(c, down);
    DeviceBuffer dGateB, dUpB, dDownB;
    if (m.biased) {
      dGateB = c.upload(gateBias);
      dUpB = c.upload(upBias);
      dDownB = c.upload(downBias);
    }
    for (const auto &[rows, variants] : stepsOf(m)) {
      if (oneRow && rows != 1)
        continue;
      const int slots = rows * K;
      const std::vector<Bf16> x =
          randomBf16(c.rng, static_cast<std::size_t>(rows) * H, -1, 1);
      const std::vector<Bf16> logits =
          randomBf16(c.rng, static_cast<std::size_t>(rows) * E, -3, 3);
      const DeviceBuffer dX = c.upload(x), dLogits = c.upload(logits);
      DeviceBuffer dIds(static_cast<std::size_t>(slots) * 4),
          dWeights(static_cast<std::size_t>(slots) * 4),
          dAct(static_cast<std::size_t>(slots) * I * 2),
          dOut(static_cast<std::size_t>(slots) * H * 2),
          dSorted(static_cast<std::size_t>(s.sortedInts(rows)) * 4);

      // The reference: routing from the same bf16 logits, then each slot;
      // rows over the host's cores.
      std::vector<double> ref(static_cast<std::size_t>(rows) * H);
      std::vector<int> chosenIds(static_cast<std::size_t>(slots));
      parallelChunks(
          rows, 3LL * rows * K * H * I, [&](int64_t begin, int64_t end) {
            for (int r = static_cast<int>(begin); r < end; ++r) {
              std::vector<double> p(E);
              double max = -1e30, sum = 0;
              for (int e = 0; e < E; ++e)
                max = std::max<double>(max, bf16ToFloat(logits[r * E + e]));
              for (int e = 0; e < E; ++e)
                sum += p[e] = std::exp(bf16ToFloat(logits[r * E + e]) - max);
              std::vector<int> order(E);
              std::iota(order.begin(), order.end(), 0);
              std::stable_sort(order.begin(), order.end(),
                               [&](int a, int b) { return p[a] > p[b]; });
              double chosenSum = 0;
              for (int k = 0; k < K; ++k)
                chosenSum += p[order[k]] / sum;
              // The row's slots in increasing expert order, as moe_combine
              // adds.
              std::vector<int> chosen(order.begin(), order.begin() + K);
              std::vector<int> sortedChosen = chosen;
              std::sort(sortedChosen.begin(), sortedChosen.end());
              std::copy(chosen.begin(), chosen.end(),
                        chosenIds.begin() + r * K);
              std::vector<float> acc(H, 0.0f);
              for (int e : sortedChosen) {
                const float w =
                    roundBf16(static_cast<float>(p[e] / sum / chosenSum));
                std::vector<float> act(I);
                for (int j = 0; j < I; ++j) {
                  const long long wr = 1LL * e * I + j;
                  double g = 0, u = 0;
                  for (int h = 0; h < H; ++h) {
                    const double xv = bf16ToFloat(x[r * H + h]);
                    g += gate.at(wr, h) * xv;
                    u += up.at(wr, h) * xv;
                  }
                  float gs = roundBf16(static_cast<float>(g)),
                        us = roundBf16(static_cast<float>(u));
                  if (m.biased) {
                    gs = roundBf16(gs + bf16ToFloat(gateBias[wr]));
                    us = roundBf16(us + bf16ToFloat(upBias[wr]));
                    gs = std::min(gs, 7.0f);
                    us = std::clamp(us, -7.0f, 7.0f);
                    const float sig = roundBf16(static_cast<float>(
                        1 / (1 + std::exp(-roundBf16(gs * 1.702f)))));
                    act[j] = roundBf16(roundBf16(us + 1) * roundBf16(gs * sig));
                  } else {
                    act[j] =
                        roundBf16(roundBf16(static_cast<float>(silu(gs))) * us);
                  }
                }
                for (int j = 0; j < H; ++j) {
                  const long long wr = 1LL * e * H + j;
                  double d = 0;
                  for (int i = 0; i < I; ++i)
                    d += down.at(wr, i) * act[i];
                  float o = roundBf16(static_cast<float>(d));
                  if (m.biased)
                    o = roundBf16(o + bf16ToFloat(downBias[wr]));
                  acc[j] = roundBf16(acc[j] + roundBf16(o * w));
                }
              }
              for (int j = 0; j < H; ++j)
                ref[static_cast<std::size_t>(r) * H + j] = acc[j];
            }
          });
      const std::set<int> touched(chosenIds.begin(), chosenIds.end());
      for (const MoeVariant &variant : variants) {
        const Path path = variant.path;
        const bool grouped = path == Path::Grouped;
        DeviceBuffer dY = c.poisoned(static_cast<std::size_t>(rows) * H * 2);
        if (grouped)
          for (const KernelInstance &i : {s.groupedGateUp(variant.tileRows),
                                          s.groupedDown(variant.tileRows)})
            c.kernels.kernel(i).setMaxDynamicSharedMemory(
                MoeSpec::groupedSharedBytes(variant.tileRows));
        std::function<void(int)> launch = [&](int) {
          if (path == Path::Row) {
            c.kernels.kernel(s.gateUpRow())
                .launch(s.gateUpRowDims(), c.stream,
                        kernels::MoeGateUpRowArgs{
                            .act = dAct.address(),
                            .x = dX.address(),
                            .logits = dLogits.address(),
                            .gate = dGate.w.address(),
                            .up = dUp.w.address(),
                            .normalize = 1,
                            .activation = m.biased ? 2 : 0,
                            .limit = 7.0f,
                            .groupSize = s.groupSize,
                            .gateBias = m.biased ? dGateB.address() : 0,
                            .upBias = m.biased ? dUpB.address() : 0,
                            .gateScales = addressOr0(dGate.scales),
                            .upScales = addressOr0(dUp.scales),
                            .gateZeros = addressOr0(dGate.zeros),
                            .upZeros = addressOr0(dUp.zeros)});
            c.kernels.kernel(s.downRow())
                .launch(s.downRowDims(), c.stream,
                        kernels::MoeDownRowArgs{
                            .y = dY.address(),
                            .act = dAct.address(),
                            .down = dDown.w.address(),
                            .logits = dLogits.address(),
                            .bias = m.biased ? dDownB.address() : 0,
                            .scales = addressOr0(dDown.scales),
                            .zeros = addressOr0(dDown.zeros),
                            .groupSize = s.groupSize,
                            .normalize = 1});
            return;
          }
          c.kernels.kernel(s.route()).launch(
              s.routeDims(rows), c.stream,
              kernels::MoeRouteArgs{.ids = dIds.address(),
                                    .weights = dWeights.address(),
                                    .logits = dLogits.address(),
                                    .rows = rows,
                                    .normalize = 1});
          if (grouped) {
            c.kernels.kernel(s.sort(variant.tileRows))
                .launch(s.sortDims(), c.stream,
                        kernels::MoeSortArgs{.sorted = dSorted.address(),
                                             .ids = dIds.address(),
                                             .rows = rows,
                                             .topK = K});
            for (bool gateUp : {true, false}) {
              c.kernels
                  .kernel(gateUp ? s.groupedGateUp(variant.tileRows)
                                 : s.groupedDown(variant.tileRows))
                  .launch(
                      gateUp ? s.groupedGateUpDims(rows, variant.tileRows)
                             : s.groupedDownDims(rows, variant.tileRows),
                      c.stream,
                      kernels::MoeGroupedGemmArgs{
                          .y = gateUp ? dAct.address() : dOut.address(),
                          .x = gateUp ? dX.address() : dAct.address(),
                          .w0 = (gateUp ? dGate : dDown).w.address(),
                          .w1 = gateUp ? dUp.w.address() : 0,
                          .sorted = dSorted.address(),
                          .bias0 = m.biased
                                       ? (gateUp ? dGateB : dDownB).address()
                                       : 0,
                          .bias1 = m.biased && gateUp ? dUpB.address() : 0,
                          .rows = rows,
                          .topK = K,
                          .activation = m.biased ? 2 : 0,
                          .limit = 7.0f,
                          .w0Scales =
                              addressOr0((gateUp ? dGate : dDown).scales),
                          .w1Scales = gateUp ? addressOr0(dUp.scales) : 0,
                          .w0Zeros = addressOr0((gateUp ? dGate : dDown).zeros),
                          .w1Zeros = gateUp ? addressOr0(dUp.zeros) : 0,
                          .groupSize = s.groupSize});
            }
          } else {
            c.kernels.kernel(s.gateUp())
                .launch(s.gateUpDims(rows), c.stream,
                        kernels::MoeGateUpArgs{
                            .act = dAct.address(),
                            .x = dX.address(),
                            .gate = dGate.w.address(),
                            .up = dUp.w.address(),
                            .ids = dIds.address(),
                            .rows = rows,
                            .topK = K,
                            .activation = m.biased ? 2 : 0,
                            .limit = 7.0f,
                            .gateBias = m.biased ? dGateB.address() : 0,
                            .upBias = m.biased ? dUpB.address() : 0,
                            .gateScales = addressOr0(dGate.scales),
                            .upScales = addressOr0(dUp.scales),
                            .gateZeros = addressOr0(dGate.zeros),
                            .upZeros = addressOr0(dUp.zeros),
                            .groupSize = s.groupSize});
            c.kernels.kernel(s.down()).launch(
                s.downDims(rows), c.stream,
                kernels::MoeDownArgs{.out = dOut.address(),
                                     .act = dAct.address(),
                                     .down = dDown.w.address(),
                                     .ids = dIds.address(),
                                     .rows = rows,
                                     .topK = K,
                                     .bias = m.biased ? dDownB.address() : 0,
                                     .scales = addressOr0(dDown.scales),
                                     .zeros = addressOr0(dDown.zeros),
                                     .groupSize = s.groupSize});
          }
          c.kernels.kernel(s.combine())
              .launch(s.combineDims(rows), c.stream,
                      kernels::MoeCombineArgs{.y = dY.address(),
                                              .out = dOut.address(),
                                              .weights = dWeights.address(),
                                              .ids = dIds.address(),
                                              .rows = rows});
        };
        launch(0);
        const std::vector<Bf16> y = c.download<Bf16>(dY);
        // The one-row kernels route inside their warps and write no ids:
        // their routing shows in y alone.
        int routingDiffers = 0;
        if (path != Path::Row) {
          const std::vector<int> ids = c.download<int>(dIds);
          for (int i = 0; i < slots; ++i)
            routingDiffers += ids[i] != chosenIds[i];
        }
        CheckRecord rec = makeRecord(
            c, "moe",
            sol::cat(m.shape, " rows=", rows, " ", variantName(variant)),
            instancesOf(m, variant)[path == Path::Row ? 0 : 1]);
        // A bf16 ulp here and there: the kernels' float sums differ in order
        // from the reference's double ones.
        judge(rec, relativeL2(toFloat(y), ref), 1e-2, countPoison(y));
        if (routingDiffers) { // the logits are bf16: ties are rare, not absent
          rec.note += sol::cat(routingDiffers, " routed slots differ; ");
          if (routingDiffers > slots / 100 + 1)
            rec.passed = false;
        }
        rec.bytes =
            static_cast<double>(touched.size()) * 3 * H * I * bytesPerWeight(s);
        c.finish(std::move(rec), &launch);
      }
    }
  }
}

} // namespace

std::vector<CheckFamily> moeChecks() {
  auto require = [](bool oneRow) {
    return [oneRow](KernelLibrary &k) {
      for (const MoeCase &m : moeCases())
        for (const auto &[rows, variants] : stepsOf(m))
          if (!oneRow || rows == 1)
            for (const MoeVariant &v : variants)
              for (const KernelInstance &i : instancesOf(m, v))
                k.require(i);
    };
  };
  return {{"moe", require(false), [](Checker &c) { checkMoe(c, false); }},
          {"moe_row", require(true), [](Checker &c) { checkMoe(c, true); }}};
}

} // namespace sol::check
