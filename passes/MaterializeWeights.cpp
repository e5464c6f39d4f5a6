//===- MaterializeWeights.cpp - sol-materialize-weights -------------------===//
//
// Weight layout is a compile-time decision expressed in the IR (a fused
// projection's stacked rows, SwiGLU's interleaved gate/up rows, a converted
// dtype, AWQ's scaling and clipping, quantization, a tensor-parallel rank's
// slice). This pass turns each transform tree into one tensor of the weight
// store, computed only when the plan writer streams it (for each rank, when
// a rank's slice is among its sources), so the writer copies bytes and
// knows nothing of layouts.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "ir/QuantizedOutputs.h"

#include "runtime/support/DType.h"
#include "runtime/support/Error.h"
#include "runtime/support/Fp8.h"
#include "runtime/support/ParallelChunks.h"
#include "runtime/support/Quantize.h"
#include "runtime/support/QuantizedCheckpoint.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstring>

namespace sol {
#define GEN_PASS_DEF_SOLMATERIALIZEWEIGHTS
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

/// The store's dtype of an element type.
DType storeDType(Type t) {
  if (t.isBF16())
    return DType::BF16;
  if (t.isF16())
    return DType::F16;
  if (t.isF32())
    return DType::F32;
  if (isa<Float8E4M3FNType>(t))
    return DType::F8E4M3;
  if (t.isUnsignedInteger(8))
    return DType::U8;
  if (t.isInteger(8))
    return DType::I8;
  if (t.isInteger(4))
    return DType::I4;
  fail("internal error: no store dtype for a weight element type");
}

/// The name of a fused weight: the shared prefix and suffix of the sources'
/// names around their differing parts, e.g.
/// `model.layers.0.self_attn.{q_proj,k_proj,v_proj}.weight`.
std::string fusedWeightName(ArrayRef<StringRef> names) {
  StringRef first = names.front();
  size_t prefix = first.size(), suffix = first.size();
  for (StringRef name : names.drop_front()) {
    size_t p = 0;
    while (p < std::min(prefix, name.size()) && first[p] == name[p])
      ++p;
    prefix = p;
    size_t s = 0;
    while (s < std::min(suffix, name.size()) &&
           first[first.size() - 1 - s] == name[name.size() - 1 - s])
      ++s;
    suffix = s;
  }
  // Cut at dots so that the parts are whole name components.
  prefix = first.substr(0, prefix).rfind('.') + 1; // npos + 1 == 0
  size_t dot = first.substr(first.size() - suffix).find('.');
  suffix = dot == StringRef::npos ? 0 : suffix - dot;
  if (prefix + suffix > first.size())
    suffix = 0;
  std::string result = first.substr(0, prefix).str() + "{";
  for (auto [i, name] : llvm::enumerate(names)) {
    if (i)
      result += ",";
    result += name.substr(prefix, name.size() - prefix - suffix).str();
  }
  return result + "}" + first.substr(first.size() - suffix).str();
}

/// Elements [begin, end) of convertElements.
void convertRange(std::span<const std::byte> src, DType from, DType to,
                  std::vector<std::byte> &out, size_t begin, size_t end) {
  const size_t outBytes = dtypeBits(to) / 8;
  for (size_t i = begin; i < end; ++i) {
    float f = 0;
    uint16_t h = 0;
    switch (from) {
    case DType::F32:
      std::memcpy(&f, src.data() + 4 * i, 4);
      break;
    case DType::F16:
      std::memcpy(&h, src.data() + 2 * i, 2);
      f = halfToFloat(h);
      break;
    default: // BF16
      std::memcpy(&h, src.data() + 2 * i, 2);
      f = bf16ToFloat(h);
      break;
    }
    std::byte *dst = out.data() + outBytes * i;
    if (to == DType::F32) {
      std::memcpy(dst, &f, 4);
    } else {
      h = to == DType::F16 ? floatToHalf(f) : floatToBf16(f);
      std::memcpy(dst, &h, 2);
    }
  }
}

/// Converts `count` elements from `from` to `to` (f32, f16, bf16; round to
/// nearest even) into `out`, on every core (a model's weights pass here).
void convertElements(std::span<const std::byte> src, DType from, DType to,
                     std::vector<std::byte> &out) {
  const size_t inBytes = dtypeBits(from) / 8, outBytes = dtypeBits(to) / 8;
  const size_t count = src.size() / inBytes;
  out.resize(count * outBytes);
  const auto n = static_cast<int64_t>(count);
  parallelChunks(n, n, [&](int64_t begin, int64_t end) {
    convertRange(src, from, to, out, static_cast<size_t>(begin),
                 static_cast<size_t>(end));
  });
}

/// `values` as `to` (f32, f16 or bf16) bytes.
std::vector<std::byte> fromFloat(std::span<const float> values, DType to) {
  std::vector<std::byte> out;
  convertElements(std::as_bytes(values), DType::F32, to, out);
  return out;
}

/// The codes, scales and zeros `scheme` gives the float weight `source`
/// ([rows, cols]).
quant::QuantizedWeight quantizeStored(const WeightStore &store, int rank,
                                      const std::string &source,
                                      quant::Scheme scheme, int64_t rows,
                                      int64_t cols, int64_t groupSize,
                                      bool clipSearch) {
  std::vector<float> w = store.readFloat(source, rank);
  switch (scheme) {
  case quant::Scheme::Int8:
    return quant::quantizeInt8(w, rows, cols);
  case quant::Scheme::Fp8:
    return quant::quantizeFp8(w, rows, cols);
  default: {
    std::vector<float> clip;
    if (clipSearch)
      clip = quant::searchInt4Clip(w, rows, cols, groupSize);
    return quant::quantizeInt4(w, rows, cols, groupSize, clip);
  }
  }
}

struct SolMaterializeWeightsPass
    : sol::impl::SolMaterializeWeightsBase<SolMaterializeWeightsPass> {
  SolMaterializeWeightsPass() = default;
  explicit SolMaterializeWeightsPass(WeightStore *store) : store(store) {}

  void runOnOperation() override {
    // Program order: a transform's operands are sol.weight ops by the time
    // it is reached (earlier transforms were already replaced).
    SmallVector<Operation *> transforms;
    getOperation().walk([&](Operation *op) {
      if (op->hasTrait<WeightTransform>())
        transforms.push_back(op);
    });
    for (Operation *op : transforms)
      if (failed(materialize(op)))
        return signalPassFailure();
  }

  LogicalResult materialize(Operation *op) {
    SmallVector<std::string> sources;
    SmallVector<StringRef> sourceRefs;
    for (Value operand : op->getOperands()) {
      auto w = operand.getDefiningOp<WeightOp>();
      if (!w)
        return op->emitOpError("has an operand that is not a sol.weight after "
                               "its own operands were materialised");
      sources.push_back(w.getName().str());
      sourceRefs.push_back(w.getName());
    }
    // A rank's slice, or a tensor derived from one, differs between ranks.
    sharded = isa<ShardWeightOp, FirstRankWeightOp>(op) ||
              (store && llvm::any_of(sources, [&](const std::string &src) {
                 return store->get(src).sharded;
               }));
    if (auto q = dyn_cast<QuantizeWeightOp>(op))
      return materializeQuantized(q, sources[0]);
    if (auto unpack = dyn_cast<UnpackNBitsOp>(op))
      return materializeNBits(unpack, sources);
    if (auto dequantize = dyn_cast<DequantizeWeightOp>(op))
      return materializeDequantized(dequantize, sources);
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    const DType dtype = storeDType(type.getElementType());
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());

    std::string name;
    WeightStore::Producer produce;
    if (isa<ConcatWeightsOp>(op)) {
      name = sources.size() > 1 ? fusedWeightName(sourceRefs) : sources[0];
      produce = [sources](const WeightStore &s, const ByteSink &sink,
                          int rank) {
        for (const std::string &src : sources)
          s.read(src, sink, rank);
      };
    } else if (isa<InterleaveRowsOp>(op)) {
      name = fusedWeightName(sourceRefs);
      const int64_t rows = shape[0] / 2;
      produce = [sources, rows](const WeightStore &s, const ByteSink &sink,
                                int rank) {
        std::vector<std::byte> scratchA, scratchB;
        auto a = s.contiguous(sources[0], scratchA, rank);
        auto b = s.contiguous(sources[1], scratchB, rank);
        const size_t rowBytes = a.size() / static_cast<size_t>(rows);
        for (int64_t r = 0; r < rows; ++r) {
          sink(a.subspan(r * rowBytes, rowBytes));
          sink(b.subspan(r * rowBytes, rowBytes));
        }
      };
    } else if (auto slice = dyn_cast<SliceRowsOp>(op)) {
      auto inType = slice.getInput().getType();
      const int64_t first = slice.getOffset(), count = shape[0];
      const int64_t rowBits = (inType.getNumElements() / inType.getDimSize(0)) *
                              static_cast<int64_t>(dtypeBits(dtype));
      if (rowBits % 8 != 0)
        return op->emitOpError("cannot slice rows of packed 4-bit weights "
                               "that do not fill whole bytes");
      const int64_t stride = slice.getStride();
      name = sources[0] + "~rows" + std::to_string(first) + "+" +
             std::to_string(count) +
             (stride > 1 ? "/" + std::to_string(stride) : std::string());
      const size_t rowBytes = static_cast<size_t>(rowBits / 8);
      produce = [src = sources[0], first, count, stride, rowBytes](
                    const WeightStore &s, const ByteSink &sink, int rank) {
        std::vector<std::byte> scratch;
        auto in = s.contiguous(src, scratch, rank);
        if (stride == 1) {
          sink(in.subspan(static_cast<size_t>(first) * rowBytes,
                          static_cast<size_t>(count) * rowBytes));
          return;
        }
        for (int64_t r = 0; r < count; ++r)
          sink(in.subspan(static_cast<size_t>(first + r * stride) * rowBytes,
                          rowBytes));
      };
    } else if (auto shard = dyn_cast<ShardWeightOp>(op)) {
      auto inType = shard.getInput().getType();
      const int64_t axis = shard.getAxis(), groups = shard.getGroups(),
                    shards = shard.getShards(), ranks = shard.getRanks();
      const int64_t rows = inType.getDimSize(0);
      const int64_t cols = inType.getRank() == 2 ? inType.getDimSize(1) : 1;
      const int64_t bits = static_cast<int64_t>(dtypeBits(dtype));
      if ((axis == 0 && (cols * bits) % 8 != 0) ||
          (axis == 1 && (cols / shards * bits) % 8 != 0) ||
          (inType.getRank() == 1 && (rows / shards / groups * bits) % 8 != 0))
        return op->emitOpError("cannot cut packed 4-bit weights between the "
                               "two values of a byte");
      name = sources[0] + "~shard" + std::to_string(axis) + "/" +
             std::to_string(shards) +
             (groups > 1 ? "x" + std::to_string(groups) : std::string());
      produce = [src = sources[0], axis, groups, shards, ranks, rows, cols,
                 bits](const WeightStore &s, const ByteSink &sink, int rank) {
        std::vector<std::byte> scratch;
        auto in = s.contiguous(src, scratch, rank);
        const int64_t block = rank / (ranks / shards);
        if (axis == 0) {
          // Each group's block of rows (elements, for a 1-D weight).
          const size_t rowBytes = static_cast<size_t>(cols * bits / 8);
          const int64_t perGroup = rows / groups, perBlock = perGroup / shards;
          for (int64_t g = 0; g < groups; ++g)
            sink(in.subspan(
                static_cast<size_t>(g * perGroup + block * perBlock) * rowBytes,
                static_cast<size_t>(perBlock) * rowBytes));
          return;
        }
        // Each row's block of columns.
        const size_t rowBytes = static_cast<size_t>(cols * bits / 8);
        const size_t blockBytes = rowBytes / static_cast<size_t>(shards);
        for (int64_t r = 0; r < rows; ++r)
          sink(in.subspan(static_cast<size_t>(r) * rowBytes +
                              static_cast<size_t>(block) * blockBytes,
                          blockBytes));
      };
    } else if (isa<FirstRankWeightOp>(op)) {
      name = sources[0] + "~rank0";
      const uint64_t bytes = *dtypeStorageBytes(
          dtype, static_cast<uint64_t>(type.getNumElements()));
      produce = [src = sources[0], bytes](const WeightStore &s,
                                          const ByteSink &sink, int rank) {
        if (rank == 0) {
          s.read(src, sink, rank);
          return;
        }
        const std::vector<std::byte> zeros(static_cast<size_t>(bytes));
        sink(zeros);
      };
    } else if (auto permute = dyn_cast<PermuteHeadDimsOp>(op)) {
      const int64_t headDim = permute.getHeadDim(),
                    rotary = permute.getRotaryDim();
      const int64_t rowBits = (type.getNumElements() / type.getDimSize(0)) *
                              static_cast<int64_t>(dtypeBits(dtype));
      if (rowBits % 8 != 0)
        return op->emitOpError("cannot permute rows of packed 4-bit weights "
                               "that do not fill whole bytes");
      name = sources[0] + "~rot" + std::to_string(rotary);
      const size_t rowBytes = static_cast<size_t>(rowBits / 8);
      produce = [src = sources[0], headDim, rotary, rowBytes, rows = shape[0]](
                    const WeightStore &s, const ByteSink &sink, int rank) {
        std::vector<std::byte> scratch;
        auto in = s.contiguous(src, scratch, rank);
        // Within a head: rotated first half, passed first half, rotated
        // second half, passed second half.
        const int64_t r2 = rotary / 2, p2 = (headDim - rotary) / 2;
        for (int64_t head = 0; head < rows / headDim; ++head) {
          auto rowsOf = [&](int64_t from, int64_t n) {
            sink(in.subspan(static_cast<size_t>(head * headDim + from) *
                                rowBytes,
                            static_cast<size_t>(n) * rowBytes));
          };
          rowsOf(0, r2);
          rowsOf(rotary, p2);
          rowsOf(r2, r2);
          rowsOf(rotary + p2, p2);
        }
      };
    } else if (auto offset = dyn_cast<OffsetWeightOp>(op)) {
      const float add = offset.getOffset().convertToFloat();
      name = sources[0] + "~plus" + llvm::formatv("{0}", add).str();
      produce = [src = sources[0], add](const WeightStore &s,
                                        const ByteSink &sink, int rank) {
        std::vector<float> w = s.readFloat(src, rank);
        for (float &v : w)
          v += add;
        sink(std::as_bytes(std::span<const float>(w)));
      };
    } else if (auto convert = dyn_cast<ConvertWeightOp>(op)) {
      name = sources[0] + "~" + std::string(dtypeName(dtype));
      const DType from =
          storeDType(convert.getInput().getType().getElementType());
      produce = [src = sources[0], from,
                 dtype](const WeightStore &s, const ByteSink &sink, int rank) {
        std::vector<std::byte> converted;
        s.read(
            src,
            [&](std::span<const std::byte> piece) {
              convertElements(piece, from, dtype, converted);
              sink(converted);
            },
            rank);
      };
    } else if (auto transpose = dyn_cast<TransposeWeightOp>(op)) {
      name = sources[0] + "~t";
      auto inType = transpose.getInput().getType();
      const int64_t rank = inType.getRank();
      // Each [rows, cols] matrix of the input (one per expert of a 3-D one).
      const size_t rows = static_cast<size_t>(inType.getDimSize(rank - 2)),
                   cols = static_cast<size_t>(inType.getDimSize(rank - 1)),
                   matrices = rank == 3
                                  ? static_cast<size_t>(inType.getDimSize(0))
                                  : 1,
                   element = dtypeBits(dtype) / 8;
      if (element == 0)
        return op->emitOpError("cannot transpose packed 4-bit weights");
      produce = [src = sources[0], rows, cols, matrices, element](
                    const WeightStore &s, const ByteSink &sink, int rank) {
        std::vector<std::byte> scratch, row(rows * element);
        auto in = s.contiguous(src, scratch, rank);
        // Row c of a result matrix is column c of its [rows, cols] input.
        for (size_t m = 0; m < matrices; ++m) {
          const std::byte *matrix = in.data() + m * rows * cols * element;
          for (size_t c = 0; c < cols; ++c) {
            for (size_t r = 0; r < rows; ++r)
              std::memcpy(row.data() + r * element,
                          matrix + (r * cols + c) * element, element);
            sink(row);
          }
        }
      };
    } else if (isa<ReshapeWeightOp>(op)) {
      name = sources[0] + "~reshaped";
      produce = [src = sources[0]](const WeightStore &s, const ByteSink &sink,
                                   int rank) { s.read(src, sink, rank); };
    } else if (isa<DequantizeMxfp4Op>(op)) {
      name = sources[0] + "~bf16";
      produce = [blocks = sources[0], scales = sources[1]](
                    const WeightStore &s, const ByteSink &sink, int rank) {
        std::vector<std::byte> scratchB, scratchS;
        auto codes = s.contiguous(blocks, scratchB, rank);
        auto exponents = s.contiguous(scales, scratchS, rank);
        std::vector<uint16_t> group(32);
        for (size_t g = 0; g < exponents.size(); ++g) {
          quant::dequantizeMxfp4Group(codes.subspan(g * 16, 16),
                                      std::to_integer<uint8_t>(exponents[g]),
                                      group);
          sink(std::as_bytes(std::span<const uint16_t>(group)));
        }
      };
    } else if (auto fp8 = dyn_cast<DequantizeFp8BlocksOp>(op)) {
      name = sources[0] + "~bf16";
      const int64_t blockRows = fp8.getBlockRows(),
                    blockCols = fp8.getBlockCols(), cols = shape[1];
      produce = [codesName = sources[0], scalesName = sources[1], blockRows,
                 blockCols,
                 cols](const WeightStore &s, const ByteSink &sink, int rank) {
        std::vector<std::byte> scratch;
        auto codes = s.contiguous(codesName, scratch, rank);
        const std::vector<float> scales = s.readFloat(scalesName, rank);
        const int64_t scaleCols = (cols + blockCols - 1) / blockCols;
        std::vector<uint16_t> row(cols);
        for (size_t r = 0; r * cols < codes.size(); ++r) {
          const float *rowScales = scales.data() + r / blockRows * scaleCols;
          for (int64_t c = 0; c < cols; ++c)
            row[c] = floatToBf16(
                e4m3ToFloat(std::to_integer<uint8_t>(codes[r * cols + c])) *
                rowScales[c / blockCols]);
          sink(std::as_bytes(std::span<const uint16_t>(row)));
        }
      };
    } else if (auto scale = dyn_cast<ScaleWeightOp>(op)) {
      name = sources[0] + "~scaled";
      const int64_t axis = scale.getAxis();
      const bool divide = scale.getDivide();
      produce = [src = sources[0], scalesName = sources[1], dtype, shape, axis,
                 divide](const WeightStore &s, const ByteSink &sink, int rank) {
        std::vector<float> w = s.readFloat(src, rank);
        const std::vector<float> scales = s.readFloat(scalesName, rank);
        const int64_t cols = shape.size() == 2 ? shape[1] : shape[0];
        const auto count = static_cast<int64_t>(w.size());
        // [B, cols] scales of axis 1: a row of scales per block of rows.
        const int64_t blocks =
            axis == 1 ? static_cast<int64_t>(scales.size()) / cols : 1;
        const int64_t blockElements = count / std::max<int64_t>(blocks, 1);
        parallelChunks(count, count, [&](int64_t begin, int64_t end) {
          for (int64_t at = begin; at < end; ++at) {
            const float f = axis == 1 || shape.size() == 1
                                ? scales[at / blockElements * cols + at % cols]
                                : scales[at / cols];
            w[at] = divide ? w[at] / f : w[at] * f;
          }
        });
        sink(fromFloat(w, dtype));
      };
    } else if (auto clamp = dyn_cast<ClampWeightOp>(op)) {
      name = sources[0] + "~clamped";
      const int64_t group = clamp.getGroupSize();
      produce = [src = sources[0], ratiosName = sources[1], dtype, shape,
                 group](const WeightStore &s, const ByteSink &sink, int rank) {
        std::vector<float> w = s.readFloat(src, rank);
        const std::vector<float> ratios = s.readFloat(ratiosName, rank);
        const auto groups = static_cast<int64_t>(ratios.size());
        parallelChunks(
            groups, groups * group, [&](int64_t first, int64_t last) {
              for (int64_t g = first; g < last; ++g) {
                float *begin = w.data() + g * group, *end = begin + group;
                const auto [lo, hi] = std::minmax_element(begin, end);
                const float low = *lo * ratios[g], high = *hi * ratios[g];
                for (float *v = begin; v != end; ++v)
                  *v = std::clamp(*v, low, high);
              }
            });
        sink(fromFloat(w, dtype));
      };
    } else {
      return op->emitOpError("is a weight transform this pass does not know");
    }

    replaceByStored(op->getResult(0), name, std::move(produce));
    op->erase();
    return success();
  }

  /// Codes, scales and zeros: `name~int8`, `name~int8.scales`...
  LogicalResult materializeQuantized(QuantizeWeightOp op,
                                     const std::string &source) {
    auto input = op.getInput().getType();
    const auto scheme = static_cast<quant::Scheme>(op.getScheme());
    const int outputs = op.getZeros() ? 3 : 2;
    const int64_t rows = input.getDimSize(0), cols = input.getDimSize(1),
                  group = op.getGroupSize();
    const bool clip = op.getClipSearch();
    // Computed on the first read of any output, dropped after the last.
    auto once = std::make_shared<QuantizedOutputs>(
        [=](const WeightStore &store, int rank) {
          return quantizeStored(store, rank, source, scheme, rows, cols, group,
                                clip);
        },
        outputs);
    const std::string base =
        source + "~" + std::string(quant::schemeName(scheme));
    static const char *const suffixes[] = {"", ".scales", ".zeros"};
    for (int which = 0; which < outputs; ++which)
      replaceByStored(
          op->getResult(which), base + suffixes[which],
          [once, which](const WeightStore &s, const ByteSink &sink, int rank) {
            once->write(s, which, sink, rank);
          });
    op->erase();
    return success();
  }

  /// (codes - zero points) * scales: `codes~bf16`, or Sol's int8 or int4
  /// of the transposed weight (`codes~int8`, `.scales`, `.zeros`).
  LogicalResult
  materializeDequantized(DequantizeWeightOp op,
                         const SmallVector<std::string> &sources) {
    auto codesType = op.getCodes().getType();
    Type element = codesType.getElementType();
    const int64_t rows = codesType.getDimSize(0),
                  cols = codesType.getDimSize(1),
                  bits = element.isInteger(4) ? 4 : 8, axis = op.getAxis(),
                  block = op.getBlockSize();
    const bool isSigned = !element.isUnsignedInteger();
    // Reads the op's tensors and calls `use` with them.
    auto withWeight = [=](const WeightStore &s, int rank, auto &&use) {
      std::vector<std::byte> codeBytes, zeroBytes;
      auto codes = s.contiguous(sources[0], codeBytes, rank);
      const std::vector<float> scales = s.readFloat(sources[1], rank);
      std::span<const std::byte> zeros;
      if (sources.size() > 2)
        zeros = s.contiguous(sources[2], zeroBytes, rank);
      quant::LinearQuantWeight w;
      w.rows = rows;
      w.cols = cols;
      w.bits = bits;
      w.isSigned = isSigned;
      w.axis = axis;
      w.blockSize = block;
      w.codes = {reinterpret_cast<const uint8_t *>(codes.data()), codes.size()};
      w.scales = scales;
      w.zeros = {reinterpret_cast<const uint8_t *>(zeros.data()), zeros.size()};
      return use(w);
    };
    auto outputs = op.getOutputs();
    if (outputs.size() == 1) {
      replaceByStored(
          outputs[0], sources[0] + "~bf16",
          [withWeight](const WeightStore &s, const ByteSink &sink, int rank) {
            sink(fromFloat(withWeight(s, rank,
                                      [](const quant::LinearQuantWeight &w) {
                                        return quant::dequantizeLinear(w);
                                      }),
                           DType::BF16));
          });
      op->erase();
      return success();
    }
    const bool int8 = outputs.size() == 2;
    auto once = std::make_shared<QuantizedOutputs>(
        [withWeight, int8](const WeightStore &s, int rank) {
          return withWeight(s, rank, [int8](const quant::LinearQuantWeight &w) {
            return int8 ? quant::toSolInt8(w) : quant::toSolInt4(w);
          });
        },
        static_cast<int>(outputs.size()));
    static const char *const suffixes[] = {"", ".scales", ".zeros"};
    for (unsigned which = 0; which < outputs.size(); ++which)
      replaceByStored(
          outputs[which],
          sources[0] + (int8 ? "~int8" : "~int4") + suffixes[which],
          [once, which](const WeightStore &s, const ByteSink &sink, int rank) {
            once->write(s, static_cast<int>(which), sink, rank);
          });
    op->erase();
    return success();
  }

  /// A MatMulNBits weight: Sol's int4 (`packed~int4`, `.scales`, `.zeros`)
  /// or a bf16 dequantization (`packed~bf16`).
  LogicalResult materializeNBits(UnpackNBitsOp op,
                                 const SmallVector<std::string> &sources) {
    auto packedType = op.getPacked().getType();
    const int64_t rows = packedType.getDimSize(0), bits = op.getBits(),
                  block = op.getBlockSize();
    const bool floatZeros =
        op.getZeroPoints() &&
        isa<FloatType>(getElementTypeOrSelf(op.getZeroPoints().getType()));
    const bool dequantize = op.getOutputs().size() == 1;
    const int64_t cols =
        cast<RankedTensorType>(op.getOutputs()[0].getType()).getDimSize(1);
    std::vector<int32_t> columns;
    if (std::optional<ArrayRef<int32_t>> order = op.getColumns())
      columns.assign(order->begin(), order->end());
    // Reads the op's tensors and calls `use` with them.
    auto withWeight = [=](const WeightStore &s, int rank, auto &&use) {
      std::vector<std::byte> packedBytes, zeroBytes;
      auto packed = s.contiguous(sources[0], packedBytes, rank);
      std::vector<float> scales = s.readFloat(sources[1], rank), zeroFloats;
      quant::NBitsWeight w;
      w.rows = rows;
      w.cols = cols;
      w.bits = bits;
      w.blockSize = block;
      w.packed = {reinterpret_cast<const uint8_t *>(packed.data()),
                  packed.size()};
      w.scales = scales;
      w.columns = columns;
      if (sources.size() > 2 && floatZeros) {
        zeroFloats = s.readFloat(sources[2], rank);
        w.zeroFloats = zeroFloats;
      } else if (sources.size() > 2) {
        auto zeros = s.contiguous(sources[2], zeroBytes, rank);
        w.zeroCodes = {reinterpret_cast<const uint8_t *>(zeros.data()),
                       zeros.size()};
      }
      return use(w);
    };
    if (dequantize) {
      replaceByStored(
          op.getOutputs()[0], sources[0] + "~bf16",
          [withWeight](const WeightStore &s, const ByteSink &sink, int rank) {
            sink(fromFloat(withWeight(s, rank,
                                      [](const quant::NBitsWeight &w) {
                                        return quant::dequantizeNBits(w);
                                      }),
                           DType::BF16));
          });
      op->erase();
      return success();
    }
    auto once = std::make_shared<QuantizedOutputs>(
        [withWeight](const WeightStore &s, int rank) {
          return withWeight(s, rank, [](const quant::NBitsWeight &w) {
            return quant::unpackNBits(w);
          });
        },
        3);
    static const char *const suffixes[] = {"", ".scales", ".zeros"};
    for (int which = 0; which < 3; ++which)
      replaceByStored(
          op.getOutputs()[which], sources[0] + "~int4" + suffixes[which],
          [once, which](const WeightStore &s, const ByteSink &sink, int rank) {
            once->write(s, which, sink, rank);
          });
    op->erase();
    return success();
  }

  /// Adds `produce` to the store as a tensor named after `name` and replaces
  /// `result` by a sol.weight of it.
  void replaceByStored(Value result, const std::string &name,
                       WeightStore::Producer produce) {
    auto type = cast<RankedTensorType>(result.getType());
    // Distinct transforms may derive the same name (a concatenation and an
    // interleave of the same weights).
    std::string unique = name;
    for (int n = 2; store ? store->contains(unique) : taken.contains(unique);
         ++n)
      unique = name + "#" + std::to_string(n);
    taken.insert(unique);
    if (store)
      store->addProduced(unique, storeDType(type.getElementType()),
                         {type.getShape().begin(), type.getShape().end()},
                         std::move(produce), sharded);
    OpBuilder b(result.getContext());
    b.setInsertionPointAfterValue(result);
    auto weight = b.create<WeightOp>(
        result.getLoc(), type, FlatSymbolRefAttr::get(&getContext(), unique));
    result.replaceAllUsesWith(weight.getResult());
  }

  WeightStore *store = nullptr;
  llvm::StringSet<> taken;
  /// Whether the transform being materialised differs between ranks.
  bool sharded = false;
};

} // namespace

std::unique_ptr<Pass> sol::createSolMaterializeWeights(WeightStore &store) {
  return std::make_unique<SolMaterializeWeightsPass>(&store);
}
