//===- ShardTensorParallel.cpp - sol-shard-tensor-parallel ----------------===//
//
// Tensor parallelism as a rewrite of the tensor-level module into the
// program every rank runs (SPMD): each weight operand that differs between
// ranks becomes a `sol.shard_weight` of it, shapes become the rank's own,
// and the ranks meet at `sol.all_reduce` (after each row-parallel
// projection) and `sol.all_gather` (the logits). Everything after this pass
// (fusions, quantization, lowering, both executors) sees an ordinary model
// with fewer heads and narrower MLPs, so no other pass knows about ranks.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace sol {
#define GEN_PASS_DEF_SOLSHARDTENSORPARALLEL
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

RankedTensorType rowsOf(Value like, int64_t columns) {
  auto t = cast<RankedTensorType>(like.getType());
  return RankedTensorType::get({ShapedType::kDynamic, columns},
                               t.getElementType());
}

int64_t columnsOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getDimSize(1);
}

class Sharder {
public:
  Sharder(func::FuncOp fn, int64_t ranks) : fn(fn), ranks(ranks) {}

  LogicalResult run() {
    // An act-order linear's input permutation spans the whole input, which
    // a row-parallel split would cut.
    WalkResult gathered = fn.walk([&](GatherColumnsOp g) {
      g.emitOpError() << "gathers the inputs of a GPTQ act-order (desc_act) "
                      << "linear, which cannot be split over " << ranks
                      << " GPUs yet; compile without --tensor-parallel-size, "
                      << "or use a checkpoint quantized with desc_act false";
      return WalkResult::interrupt();
    });
    if (gathered.wasInterrupted())
      return failure();
    // Collected first: the rewrites insert ops.
    SmallVector<AttentionOp> attentions;
    SmallVector<SwigluOp> mlps;
    SmallVector<MoeOp> moes;
    SmallVector<LogitsOp> heads;
    fn.walk([&](Operation *op) {
      if (auto a = dyn_cast<AttentionOp>(op))
        attentions.push_back(a);
      else if (auto s = dyn_cast<SwigluOp>(op))
        mlps.push_back(s);
      else if (auto m = dyn_cast<MoeOp>(op))
        moes.push_back(m);
      else if (auto l = dyn_cast<LogitsOp>(op))
        heads.push_back(l);
    });
    for (AttentionOp a : attentions)
      if (failed(shardAttention(a)))
        return failure();
    for (SwigluOp s : mlps)
      if (failed(shardMlp(s)))
        return failure();
    for (MoeOp m : moes)
      if (failed(shardMoe(m)))
        return failure();
    for (LogitsOp l : heads)
      shardLmHead(l);
    return success();
  }

private:
  /// `w` cut along `axis` into `shards` blocks per group: this rank's.
  Value shard(OpBuilder &b, Value w, int64_t axis, int64_t shards,
              int64_t groups = 1) {
    auto type = cast<RankedTensorType>(w.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] /= shards;
    return b.create<ShardWeightOp>(
        w.getLoc(), RankedTensorType::get(shape, type.getElementType()), w,
        b.getI64IntegerAttr(axis), b.getI64IntegerAttr(groups),
        b.getI64IntegerAttr(shards), b.getI64IntegerAttr(ranks));
  }

  /// A linear the rewrite may change: tensor level, read by one op only.
  LogicalResult checkLinear(LinearOp l, Operation *user, StringRef role) {
    if (l.getEpilogue() != LinearEpilogue::None || l.getResidual())
      return user->emitOpError()
             << "cannot be split over " << ranks << " ranks: its " << role
             << " projection has a fused epilogue (run the sharding before "
                "the fusions)";
    if (!l->hasOneUse())
      return user->emitOpError()
             << "cannot be split over " << ranks << " ranks: its " << role
             << " projection has other readers";
    return success();
  }

  /// The linear that alone reads `op`'s result (the row-parallel projection
  /// after an attention or a SwiGLU), or one error saying why there is none.
  FailureOr<LinearOp> soleReader(Operation *op, StringRef role) {
    if (!op->hasOneUse())
      return op->emitOpError() << "cannot be split over " << ranks
                               << " ranks: its result has more than one "
                                  "reader",
             failure();
    auto l = dyn_cast<LinearOp>(*op->getUsers().begin());
    if (!l || l.getInput() != op->getResult(0))
      return op->emitOpError() << "cannot be split over " << ranks
                               << " ranks: its result is not the input of "
                                  "its "
                               << role << " projection",
             failure();
    if (failed(checkLinear(l, op, role)))
      return failure();
    return l;
  }

  /// Column-parallel: the linear keeps `shards` blocks' worth of its output
  /// rows (weight, bias, scales and zero points alike).
  void shardRows(LinearOp l, int64_t shards) {
    OpBuilder b(l);
    l.getWeightMutable().assign(shard(b, l.getWeight(), 0, shards));
    if (Value bias = l.getBias())
      l.getBiasMutable().assign(shard(b, bias, 0, shards));
    if (Value scales = l.getWeightScales())
      l.getWeightScalesMutable().assign(shard(b, scales, 0, shards));
    if (Value zeros = l.getWeightZeros())
      l.getWeightZerosMutable().assign(shard(b, zeros, 0, shards));
    l.getResult().setType(
        rowsOf(l.getResult(), columnsOf(l.getResult()) / shards));
  }

  /// Row-parallel: the linear takes its rank's input columns (rank 0 adds
  /// the bias), and a sol.all_reduce after it sums the ranks' products.
  LogicalResult shardColumns(LinearOp l, Operation *layer, StringRef role) {
    auto weight = cast<RankedTensorType>(l.getWeight().getType());
    const int64_t inputs = weight.getDimSize(1);
    if (inputs % ranks != 0)
      return layer->emitOpError()
             << "cannot be split over " << ranks << " ranks: its " << role
             << " projection has " << inputs << " inputs";
    if (l.getQuant() == QuantScheme::Int4 &&
        (inputs / ranks) % l.getGroupSize() != 0)
      return layer->emitOpError()
             << "cannot be split over " << ranks << " ranks: its " << role
             << " projection's int4 groups of " << l.getGroupSize()
             << " inputs do not divide its " << inputs / ranks
             << " inputs per rank";
    OpBuilder b(l);
    l.getWeightMutable().assign(shard(b, l.getWeight(), 1, ranks));
    // Int4 scales and zero points are per group of inputs; int8 and fp8
    // ones per output row, the same for every rank.
    if (l.getQuant() == QuantScheme::Int4) {
      l.getWeightScalesMutable().assign(
          shard(b, l.getWeightScales(), 1, ranks));
      l.getWeightZerosMutable().assign(shard(b, l.getWeightZeros(), 1, ranks));
    }
    if (Value bias = l.getBias())
      l.getBiasMutable().assign(b.create<FirstRankWeightOp>(
          bias.getLoc(), bias.getType(), bias, b.getI64IntegerAttr(ranks)));
    b.setInsertionPointAfter(l);
    auto sum = b.create<AllReduceOp>(l.getLoc(), l.getType(), l.getResult(),
                                     b.getI64IntegerAttr(ranks));
    l.getResult().replaceAllUsesExcept(sum.getResult(), sum);
    return success();
  }

  /// A linear whose result a sol.split cuts into parts (a graph's packed
  /// QKV or gate/up projection) becomes one linear per part over its rows
  /// (sol.slice_rows), so that each part can be split over the ranks on its
  /// own; sol-fuse-projections packs each rank's parts again. Returns the
  /// parts' linears' results, none when `split` is not of that form.
  SmallVector<Value> unpackSplit(SplitOp split) {
    SmallVector<Value> parts;
    auto l = split.getInput().getDefiningOp<LinearOp>();
    if (!l || !l->hasOneUse() || l.getEpilogue() != LinearEpilogue::None ||
        l.getResidual())
      return parts;
    OpBuilder b(split);
    auto rows = [&](Value w, int64_t offset, int64_t count) -> Value {
      if (!w)
        return {};
      auto type = cast<RankedTensorType>(w.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = count;
      return b.create<SliceRowsOp>(
          w.getLoc(), RankedTensorType::get(shape, type.getElementType()), w,
          b.getI64IntegerAttr(offset), b.getI64IntegerAttr(1));
    };
    int64_t offset = 0;
    for (Value part : split.getResults()) {
      const int64_t width = columnsOf(part);
      auto piece = b.create<LinearOp>(
          l.getLoc(), part.getType(), l.getInput(),
          rows(l.getWeight(), offset, width), rows(l.getBias(), offset, width),
          Value(), rows(l.getWeightScales(), offset, width),
          rows(l.getWeightZeros(), offset, width), l.getEpilogue(),
          l.getQuant(), l.getGroupSize());
      part.replaceAllUsesWith(piece.getResult());
      parts.push_back(piece.getResult());
      offset += width;
    }
    split.erase();
    l.erase();
    return parts;
  }

  /// The linear computing attention operand `v`, and the per-head ops in
  /// between (rope, q/k norms), whose heads the rank keeps.
  FailureOr<LinearOp> headProjection(AttentionOp a, Value v, StringRef role,
                                     SmallVectorImpl<Operation *> &chain) {
    const int64_t headDim = a.getHeadDim();
    while (true) {
      Operation *def = v.getDefiningOp();
      if (!def || !v.hasOneUse())
        break;
      if (auto l = dyn_cast<LinearOp>(def)) {
        if (failed(checkLinear(l, a, role)))
          return failure();
        return l;
      }
      if (auto split = dyn_cast<SplitOp>(def)) {
        const unsigned index = cast<OpResult>(v).getResultNumber();
        SmallVector<Value> parts = unpackSplit(split);
        if (parts.empty())
          break;
        v = parts[index];
        continue;
      }
      if (auto rope = dyn_cast<RopeOp>(def)) {
        chain.push_back(rope);
        v = rope.getInput();
        continue;
      }
      auto norm = dyn_cast<RmsNormOp>(def);
      if (!norm || norm.getWeight().getType().getDimSize(0) != headDim)
        break;
      chain.push_back(norm);
      v = norm.getInput();
    }
    return a.emitOpError() << "cannot be split over " << ranks << " ranks: its "
                           << role
                           << " is not a projection of its own (a sol.linear, "
                              "then rope or per-head norms)",
           failure();
  }

  LogicalResult shardAttention(AttentionOp a) {
    const int64_t heads = a.getNumHeads(), kvHeads = a.getNumKvHeads(),
                  headDim = a.getHeadDim();
    if (heads % ranks != 0)
      return a.emitOpError()
             << "has " << heads << " query heads, which " << ranks
             << " ranks cannot share evenly; choose a tensor-parallel size "
                "that divides "
             << heads;
    // Key/value heads split when there are enough, else each rank keeps
    // the one its query heads read.
    int64_t kvShards = ranks;
    if (kvHeads % ranks != 0) {
      if (ranks % kvHeads != 0)
        return a.emitOpError()
               << "has " << kvHeads << " key/value heads, which " << ranks
               << " ranks can neither split nor replicate evenly; choose a "
                  "tensor-parallel size that divides or is a multiple of "
               << kvHeads;
      kvShards = kvHeads;
    }
    SmallVector<Operation *> qChain, kChain, vChain;
    FailureOr<LinearOp> q = headProjection(a, a.getQuery(), "query", qChain);
    if (failed(q))
      return failure();
    FailureOr<LinearOp> k = headProjection(a, a.getKey(), "key", kChain);
    if (failed(k))
      return failure();
    FailureOr<LinearOp> v = headProjection(a, a.getValue(), "value", vChain);
    if (failed(v))
      return failure();
    FailureOr<LinearOp> out = soleReader(a, "output");
    if (failed(out))
      return failure();

    const int64_t localHeads = heads / ranks, localKv = kvHeads / kvShards;
    shardRows(*q, ranks);
    shardRows(*k, kvShards);
    shardRows(*v, kvShards);
    auto localize = [&](ArrayRef<Operation *> chain, int64_t n) {
      for (Operation *op : chain) {
        op->getResult(0).setType(rowsOf(op->getResult(0), n * headDim));
        if (auto rope = dyn_cast<RopeOp>(op))
          rope.setNumHeads(n);
      }
    };
    localize(qChain, localHeads);
    localize(kChain, localKv);
    localize(vChain, localKv);
    if (Value sinks = a.getSinks()) {
      OpBuilder b(a);
      a.getSinksMutable().assign(shard(b, sinks, 0, ranks));
    }
    a.setNumHeads(localHeads);
    a.setNumKvHeads(localKv);
    a.getResult().setType(rowsOf(a.getResult(), localHeads * headDim));
    return shardColumns(*out, a, "output");
  }

  LogicalResult shardMlp(SwigluOp s) {
    if (!s.getUp())
      return success(); // kernel level: nothing to shard here
    for (Value v : {s.getGate(), s.getUp()})
      if (auto split = v.getDefiningOp<SplitOp>())
        unpackSplit(split);
    auto gate = s.getGate().getDefiningOp<LinearOp>();
    auto up = s.getUp().getDefiningOp<LinearOp>();
    if (!gate || !up)
      return s.emitOpError() << "cannot be split over " << ranks
                             << " ranks: its gate and up are not "
                                "projections of their own",
             failure();
    if (failed(checkLinear(gate, s, "gate")) ||
        failed(checkLinear(up, s, "up")))
      return failure();
    const int64_t width = columnsOf(s.getResult());
    if (width % ranks != 0)
      return s.emitOpError()
                 << "has an intermediate size of " << width << ", which "
                 << ranks << " ranks cannot share evenly",
             failure();
    FailureOr<LinearOp> down = soleReader(s, "down");
    if (failed(down))
      return failure();
    shardRows(gate, ranks);
    shardRows(up, ranks);
    s.getResult().setType(rowsOf(s.getResult(), width / ranks));
    return shardColumns(*down, s, "down");
  }

  /// MXFP4 experts in bf16 (sol.dequantize_mxfp4 of each projection),
  /// for splits that would cut their groups of 32.
  void dequantizeExperts(OpBuilder &b, MoeOp m) {
    auto dequantize = [&](Value codes, Value scales) -> Value {
      auto c = cast<RankedTensorType>(codes.getType());
      const int64_t rows = c.getDimSize(0), groups = c.getDimSize(1) / 16;
      Value blocks = b.create<ReshapeWeightOp>(
          m.getLoc(),
          RankedTensorType::get({rows, groups, 16}, c.getElementType()), codes);
      return b.create<DequantizeMxfp4Op>(
          m.getLoc(),
          RankedTensorType::get({rows, groups * 32}, b.getBF16Type()), blocks,
          scales);
    };
    SmallVector<Value, 3> scales(m.getScales());
    m.getGateMutable().assign(dequantize(m.getGate(), scales[0]));
    m.getUpMutable().assign(dequantize(m.getUp(), scales[1]));
    m.getDownMutable().assign(dequantize(m.getDown(), scales[2]));
    m.getScalesMutable().clear();
  }

  LogicalResult shardMoe(MoeOp m) {
    const int64_t experts = m.getNumExperts(), width = m.getExpertWidth();
    const QuantScheme quant = m.getExpertQuant();
    // Quantized experts here were imported so (an AutoAWQ, GPTQ or fp8
    // checkpoint, an ONNX QMoE): sol-quantize runs after this pass.
    if (width % ranks != 0)
      return m.emitOpError()
                 << "has experts of intermediate size " << width << ", which "
                 << ranks << " ranks cannot share evenly",
             failure();
    if (quant == QuantScheme::Int4 &&
        (width / ranks) % m.getExpertGroupSize() != 0)
      return m.emitOpError()
                 << "cannot be split over " << ranks
                 << " ranks: its int4 experts' groups of "
                 << m.getExpertGroupSize() << " inputs do not divide the "
                 << width / ranks << " inputs of down per rank",
             failure();
    OpBuilder b(m);
    // MXFP4 down projections split by columns at whole groups of 32; where
    // a rank's share is no whole number of groups, the experts go bf16.
    if (m.isMxfp4() && (width / ranks) % 32 != 0)
      dequantizeExperts(b, m);
    // Every expert's rows of gate and up, its columns of down; the router
    // stays whole, so every rank routes each row alike. MXFP4 scales follow
    // their codes.
    m.getGateMutable().assign(shard(b, m.getGate(), 0, ranks, experts));
    m.getUpMutable().assign(shard(b, m.getUp(), 0, ranks, experts));
    m.getDownMutable().assign(shard(b, m.getDown(), 1, ranks));
    // Scales (MXFP4, int4) and zero points (int4) follow their codes: one
    // a row's group of inputs. int8 and fp8 scales are one a row: gate's and
    // up's follow their rows, down's rows are whole on every rank.
    const bool perRow = quant == QuantScheme::Int8 || quant == QuantScheme::Fp8;
    auto followCodes = [&](ValueRange values) -> SmallVector<Value, 3> {
      return {shard(b, values[0], 0, ranks, experts),
              shard(b, values[1], 0, ranks, experts),
              perRow ? values[2] : shard(b, values[2], 1, ranks)};
    };
    if (!m.getScales().empty())
      m.getScalesMutable().assign(followCodes(m.getScales()));
    if (!m.getZeros().empty())
      m.getZerosMutable().assign(followCodes(m.getZeros()));
    if (!m.getBiases().empty()) {
      // The router's bias stays whole; gate's and up's follow their rows;
      // down's is added once, by rank 0, before the sum.
      Value router = m.getBiases()[0], gate = m.getBiases()[1],
            up = m.getBiases()[2], down = m.getBiases()[3];
      Value firstRank = b.create<FirstRankWeightOp>(
          down.getLoc(), down.getType(), down, b.getI64IntegerAttr(ranks));
      m.getBiasesMutable().assign(
          ValueRange{router, shard(b, gate, 0, ranks, experts),
                     shard(b, up, 0, ranks, experts), firstRank});
    }
    b.setInsertionPointAfter(m);
    auto sum = b.create<AllReduceOp>(m.getLoc(), m.getType(), m.getResult(),
                                     b.getI64IntegerAttr(ranks));
    m.getResult().replaceAllUsesExcept(sum.getResult(), sum);
    return success();
  }

  /// The LM head by vocabulary, when the ranks divide it (else it stays
  /// whole on every rank).
  void shardLmHead(LogitsOp l) {
    auto head = cast<RankedTensorType>(l.getLmHead().getType());
    const int64_t vocab = head.getDimSize(0);
    if (vocab % ranks != 0)
      return;
    OpBuilder b(l);
    l.getLmHeadMutable().assign(shard(b, l.getLmHead(), 0, ranks));
    auto full = l.getType();
    l.getResult().setType(rowsOf(l.getResult(), vocab / ranks));
    b.setInsertionPointAfter(l);
    auto gathered = b.create<AllGatherOp>(l.getLoc(), full, l.getResult(),
                                          b.getI64IntegerAttr(ranks));
    l.getResult().replaceAllUsesExcept(gathered.getResult(), gathered);
  }

  func::FuncOp fn;
  int64_t ranks;
};

struct SolShardTensorParallelPass
    : sol::impl::SolShardTensorParallelBase<SolShardTensorParallelPass> {
  using SolShardTensorParallelBase::SolShardTensorParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks < 1) {
      module.emitError() << "the tensor-parallel size must be at least 1, got "
                         << ranks;
      return signalPassFailure();
    }
    if (ranks == 1)
      return;
    if (module->hasAttr(kTensorParallelSizeAttr)) {
      module.emitError("the module is split over ranks already");
      return signalPassFailure();
    }
    for (auto fn : module.getOps<func::FuncOp>())
      if (failed(Sharder(fn, ranks).run()))
        return signalPassFailure();
    module->setAttr(kTensorParallelSizeAttr,
                    IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                     static_cast<int64_t>(ranks)));
  }
};

} // namespace
