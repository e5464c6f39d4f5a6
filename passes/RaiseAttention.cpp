//===- RaiseAttention.cpp - sol-raise-attention ---------------------------===//
//
// Eager attention as Hugging Face code exports it, over the KV cache the
// graph takes as inputs and returns as outputs:
//
//   k = Concat(past_key, k_new, axis 2)          (also the present output)
//   k = repeat_kv(k)                             (GQA: Unsqueeze, Expand,
//                                                 Reshape)
//   p = Softmax(q @ Transpose(k) * scale + mask) (Casts, an IsNaN guard)
//   o = Transpose(p @ repeat_kv(v), [0, 2, 1, 3])
//
// becomes sol.attention over Sol's paged cache of that layer. The mask is
// recognised by what it computes: it is evaluated for steps with and
// without cached tokens, and must be 0 where a causal (or sliding-window)
// attention lets a query see a key and very negative elsewhere (or true and
// false, for a boolean mask). Opset 23's Attention op over the same caches
// is raised the same way.
//
// A graph without a cache (no past inputs: keys and values are the new
// tokens' own, every call sees the whole sequence) computes what Sol's
// cached attention computes; its layers are numbered in program order and
// its mask is probed on whole sequences instead.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxEvaluator.h"
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <map>
#include <tuple>

namespace sol {
#define GEN_PASS_DEF_SOLRAISEATTENTION
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;
using namespace sol::raise;

namespace {

/// Mask entries at or below this are "masked" (finfo.min of f16 is -65504,
/// and some exporters use -1e4 or -inf).
constexpr double kMaskedBelow = -1e4;

/// The steps the mask is evaluated for: (cached tokens, new tokens). The
/// last one is long enough to see sliding windows of up to 4096 tokens.
const std::pair<int64_t, int64_t> kMaskSteps[] = {
    {0, 5}, {3, 4}, {12, 5}, {4500, 2}};
/// The same for a graph without a cache, where a step is a whole sequence
/// (its mask is tokens x tokens, so the last probe is shorter: a longer
/// window comes from config.json, see maskWindow).
const std::pair<int64_t, int64_t> kWholeSequenceSteps[] = {
    {0, 5}, {0, 12}, {0, 1100}};

/// x without a GQA repeat_kv: Reshape(Expand(Unsqueeze(x, 2))) -> x.
Value stripRepeatKv(Value v) {
  v = skipFloatCasts(v);
  if (OnnxOp reshape = producer(v, "Reshape"))
    if (OnnxOp expand = producer(reshape.getInputs()[0], "Expand"))
      if (OnnxOp unsqueeze = producer(expand.getInputs()[0], "Unsqueeze")) {
        std::optional<SmallVector<int64_t>> axes = axesOf(unsqueeze);
        if (axes && axes->size() == 1 && (*axes)[0] == 2)
          return unsqueeze.getInputs()[0];
      }
  return v;
}

/// The cached sequence of one layer: Concat(past, new, axis 2) with `past`
/// a function argument. Sets the two.
bool matchCacheConcat(Value v, BlockArgument &past, Value &fresh) {
  OnnxOp concat = producer(v, "Concat");
  if (!concat || concat.getInputs().size() != 2)
    return false;
  int64_t axis = intAttr(concat, "axis", 0);
  if (axis != 2 && axis != -2)
    return false;
  past = dyn_cast<BlockArgument>(skipFloatCasts(concat.getInputs()[0]));
  fresh = concat.getInputs()[1];
  return bool(past);
}

/// How many tokens a layer's cache keeps when its present output is cropped
/// (transformers 5's sliding-window layers: present = Slice(Concat(past,
/// new), -c, end, axis 2)); nullopt when the concatenation is kept whole.
std::optional<int64_t> croppedCache(Value concat) {
  for (Operation *user : concat.getUsers()) {
    auto slice = dyn_cast<OnnxOp>(user);
    if (!slice || slice.getOpType() != "Slice" || !slice.getDomain().empty() ||
        slice.getInputs().size() < 4)
      continue;
    auto in = slice.getInputs();
    std::optional<SmallVector<int64_t>> starts = intValues(in[1]),
                                        ends = intValues(in[2]),
                                        axes = intValues(in[3]);
    std::optional<SmallVector<int64_t>> steps =
        in.size() > 4 && !isa<NoneType>(in[4].getType())
            ? intValues(in[4])
            : SmallVector<int64_t>{1};
    if (starts && ends && axes && steps && starts->size() == 1 &&
        ends->size() == 1 && axes->size() == 1 && steps->size() == 1 &&
        (*starts)[0] < 0 && (*ends)[0] >= INT32_MAX &&
        ((*axes)[0] == 2 || (*axes)[0] == -2) && (*steps)[0] == 1)
      return -(*starts)[0];
  }
  return std::nullopt;
}

/// The token-major Sol value of a [batch, heads, seq, dim] head view: a
/// Transpose([0, 2, 1, 3]) of a view of it.
Value headsSource(Value v) {
  OnnxOp transpose = producer(skipFloatCasts(v), "Transpose");
  if (!transpose || !isPermutation(transpose, {0, 2, 1, 3}))
    return {};
  return viewedSolValue(transpose.getInputs()[0]);
}

/// The layer of a past input from its name ("past_key_values.3.key").
std::optional<int64_t> layerOf(BlockArgument past) {
  auto fn = cast<func::FuncOp>(past.getOwner()->getParentOp());
  auto name = fn.getArgAttrOfType<StringAttr>(past.getArgNumber(), "sol.name");
  if (!name)
    return std::nullopt;
  SmallVector<StringRef> parts;
  name.getValue().split(parts, '.');
  for (StringRef part : parts) {
    int64_t layer;
    if (!part.getAsInteger(10, layer))
      return layer;
  }
  return std::nullopt;
}

/// The scores q @ kᵀ and their scale: Mul by a constant, Div by one, or
/// both operands scaled (sdpa's decomposition, sqrt(scale) on each). Sets
/// the two operands of the product, without their scaling.
bool matchScores(Value v, Value &q, Value &kt, double &scale) {
  v = skipFloatCasts(v);
  scale = 1.0;
  OnnxOp matmul;
  if (OnnxOp mul = producer(v, "Mul")) {
    for (int i = 0; i < 2 && !matmul; ++i)
      if (std::optional<double> c = splatValue(mul.getInputs()[1 - i]))
        if ((matmul = producer(skipFloatCasts(mul.getInputs()[i]), "MatMul")))
          scale = *c;
  } else if (OnnxOp div = producer(v, "Div")) {
    std::optional<double> c = splatValue(div.getInputs()[1]);
    matmul = producer(skipFloatCasts(div.getInputs()[0]), "MatMul");
    if (!c || *c == 0)
      return false;
    scale = 1.0 / *c;
  } else {
    matmul = producer(v, "MatMul");
  }
  if (!matmul)
    return false;
  q = skipFloatCasts(matmul.getInputs()[0]);
  kt = skipFloatCasts(matmul.getInputs()[1]);
  // Each operand scaled by a constant.
  for (Value *operand : {&q, &kt})
    if (OnnxOp mul = producer(*operand, "Mul"))
      for (int i = 0; i < 2; ++i)
        if (std::optional<double> c = splatValue(mul.getInputs()[1 - i])) {
          scale *= *c;
          *operand = skipFloatCasts(mul.getInputs()[i]);
          break;
        }
  return true;
}

/// k of kᵀ: Transpose(k, [0, 1, 3, 2]), or the exporters' detour through
/// three dimensions, Reshape(Transpose(Reshape(k, [B·H, T, D]), [0, 2, 1]),
/// [B, H, D, T]) (its shapes evaluated for a step to check them); or null
/// with `why` set.
Value keysOf(Operation *at, Value kt, std::string &why) {
  why = "kᵀ is neither Transpose(k, [0, 1, 3, 2]) nor its 3-D detour";
  if (OnnxOp t = producer(kt, "Transpose"))
    return isPermutation(t, {0, 1, 3, 2}) ? t.getInputs()[0] : Value();
  OnnxOp outer = producer(kt, "Reshape");
  OnnxOp t = outer ? producer(outer.getInputs()[0], "Transpose") : OnnxOp();
  OnnxOp inner = t ? producer(t.getInputs()[0], "Reshape") : OnnxOp();
  if (!inner || !isPermutation(t, {0, 2, 1}))
    return {};
  OnnxEvaluator eval;
  if (!bindStep(eval, at->getParentOfType<func::FuncOp>(), 3, {3, 4, 5, 6}))
    return {};
  std::optional<EvalTensor> s1 = eval.evaluate(inner.getInputs()[1]);
  std::optional<EvalTensor> s2 = eval.evaluate(outer.getInputs()[1]);
  if (!s1 || !s2 || s1->shapeOnly || s2->shapeOnly) {
    why = "cannot evaluate the shapes of kᵀ's detour: " + eval.reason();
    return {};
  }
  if (s1->size() != 3 || s2->size() != 4) {
    why = "kᵀ's detour has shapes of other ranks";
    return {};
  }
  const std::vector<double> &a = s1->data, &b = s2->data;
  // [B·H (or -1), T, D] and [B, H, D, T] for a batch of one.
  if (b[0] != 1 || !(a[0] == b[1] || a[0] == -1) || a[1] != b[3] ||
      a[2] != b[2]) {
    why = "kᵀ's detour reshapes to other shapes";
    return {};
  }
  return inner.getInputs()[0];
}

/// What both spellings of attention give: queries, keys and values as
/// [batch, heads, seq, dim] values (keys and values perhaps repeated for
/// GQA), the mask (float: 0 visible, very negative hidden; or boolean:
/// true visible), and the scale.
struct AttentionParts {
  Value q, k, v, mask;
  bool booleanMask = false;
  double scale = 1.0;
};

/// True when `fn` takes a KV cache (past_key_values inputs).
bool takesPast(func::FuncOp fn) {
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto name = fn.getArgAttrOfType<StringAttr>(i, "sol.name");
        name && name.getValue().starts_with("past"))
      return true;
  return false;
}

/// nullopt for a plain causal mask, the window of a sliding one, or
/// failure when the mask is neither (or cannot be evaluated). Without a
/// cache the probes see windows up to 1,098 tokens; a causal mask there
/// takes config.json's longer sliding_window, if it states one. A cache
/// cropped to `kept` tokens is probed with at most that many (what the
/// graph is fed), in the cropped cache's positions. With `causalToo` (an
/// op that also applies causality, is_causal) keys after a query are hidden
/// whatever the mask says, and a mask of one row (padding only) applies to
/// every query.
FailureOr<std::optional<int64_t>> maskWindow(Operation *at, Value mask,
                                             bool booleanMask, bool cached,
                                             std::optional<int64_t> kept,
                                             bool causalToo, std::string &why) {
  auto fn = at->getParentOfType<func::FuncOp>();
  std::optional<int64_t> window;
  bool windowKnown = false;
  SmallVector<std::pair<int64_t, int64_t>> steps(
      cached ? ArrayRef(kMaskSteps) : ArrayRef(kWholeSequenceSteps));
  if (kept)
    steps = {{0, 5}, {std::min<int64_t>(3, *kept), 4}, {*kept, 1}, {*kept, 5}};
  for (auto [past, fresh] : steps) {
    OnnxEvaluator eval;
    std::vector<int64_t> positions(fresh);
    for (int64_t i = 0; i < fresh; ++i)
      positions[i] = past + i;
    if (!bindStep(eval, fn, past, positions)) {
      why = "the past inputs' head count or head_dim is unknown";
      return failure();
    }
    std::optional<EvalTensor> m = eval.evaluate(mask);
    const int64_t total = past + fresh;
    if (!m) {
      why = "cannot evaluate the mask: " + eval.reason();
      return failure();
    }
    if (m->shapeOnly) {
      why = "the mask depends on the values of activations";
      return failure();
    }
    const bool oneRow = causalToo && m->size() == total;
    if (m->size() != fresh * total && !oneRow) {
      why = "the mask has " + std::to_string(m->size()) + " elements for " +
            std::to_string(fresh) + " queries and " + std::to_string(total) +
            " keys";
      return failure();
    }
    why = "the mask of " + std::to_string(fresh) + " queries after " +
          std::to_string(past) + " cached tokens is not causal";
    // The earliest key each query sees fixes the window.
    for (int64_t i = 0; i < fresh; ++i) {
      const int64_t pos = past + i;
      int64_t first = -1;
      for (int64_t j = 0; j < total; ++j) {
        double x = m->data[(oneRow ? 0 : i * total) + j];
        bool visible = booleanMask ? x != 0.0 : x == 0.0;
        bool hidden =
            booleanMask ? x == 0.0 : (x <= kMaskedBelow || std::isnan(x));
        if (causalToo && j > pos)
          visible = false, hidden = true;
        if (!visible && !hidden)
          return failure();
        if (visible && j > pos)
          return failure();
        if (visible && first < 0)
          first = j;
        if (first >= 0 && !visible && j <= pos)
          return failure();
      }
      if (first < 0)
        return failure();
      if (first > 0) {
        int64_t w = pos - first + 1;
        if (windowKnown && window != w)
          return failure();
        window = w;
        windowKnown = true;
      } else if (windowKnown && window && pos + 1 > *window) {
        return failure();
      }
    }
  }
  if (!cached && !window)
    if (auto source =
            at->getParentOfType<ModuleOp>()->getAttrOfType<DictionaryAttr>(
                "sol.onnx_source"))
      if (auto stated =
              dyn_cast_or_null<IntegerAttr>(source.get("sliding_window"));
          stated && stated.getInt() >= kWholeSequenceSteps[2].second)
        window = stated.getInt();
  return window;
}

/// maskWindow's answers in one pass run: exporters compute one mask for
/// every layer, whose probes (1,100 x 1,100 entries without a cache) need
/// not be repeated per layer.
class MaskWindowCache {
public:
  FailureOr<std::optional<int64_t>> get(Operation *at, Value mask,
                                        bool booleanMask, bool cached,
                                        std::optional<int64_t> kept,
                                        bool causalToo, std::string &why) {
    const Key key{mask.getAsOpaquePointer(), kept.value_or(-1), causalToo};
    auto it = answers.find(key);
    if (it == answers.end()) {
      Answer answer;
      FailureOr<std::optional<int64_t>> window = maskWindow(
          at, mask, booleanMask, cached, kept, causalToo, answer.why);
      if (succeeded(window))
        answer.window = *window;
      it = answers.emplace(key, std::move(answer)).first;
    }
    if (!it->second.window) {
      why = it->second.why;
      return failure();
    }
    return *it->second.window;
  }

private:
  using Key = std::tuple<const void *, int64_t, bool>;
  struct Answer {
    std::optional<std::optional<int64_t>> window;
    std::string why;
  };
  std::map<Key, Answer> answers;
};

/// The heads and head_dim of a [batch, heads, seq, dim] value that
/// headsSource() accepted: from the [batch, seq, heads, dim] view it
/// transposes, or from the sol.rope it is a view of.
std::optional<std::pair<int64_t, int64_t>> headGeometry(Value v) {
  OnnxOp transpose = producer(skipFloatCasts(v), "Transpose");
  if (!transpose)
    return std::nullopt;
  if (auto type =
          dyn_cast<RankedTensorType>(transpose.getInputs()[0].getType());
      type && type.getRank() == 4 && !type.isDynamicDim(2) &&
      !type.isDynamicDim(3))
    return std::pair{type.getDimSize(2), type.getDimSize(3)};
  if (auto rope =
          viewedSolValue(transpose.getInputs()[0]).getDefiningOp<RopeOp>())
    return std::pair{rope.getNumHeads(), rope.getHeadDim()};
  return std::nullopt;
}

/// What sol.attention needs, found from either spelling: the Sol values of
/// the queries and of the new tokens' keys and values, the geometry, the
/// layer (nullopt without a cache: numbered after raising), and how many
/// tokens a cropped cache keeps.
struct ResolvedAttention {
  Value q, k, v;
  int64_t kvHeads = 0, dim = 0;
  std::optional<int64_t> layer;
  bool cached = false;
  std::optional<int64_t> kept;
};

/// Resolves [batch, heads, seq, dim] q, k, v (k and v perhaps repeated
/// for GQA, and concatenated to the layer's past inputs in a graph with a
/// cache) into `r`; failure with `why`.
LogicalResult resolveHeadViews(Operation *at, const AttentionParts &parts,
                               ResolvedAttention &r, std::string &why) {
  r.q = headsSource(parts.q);
  if (!r.q) {
    why = "q is not the head view of a raised projection";
    return failure();
  }
  BlockArgument pastK, pastV;
  Value newK, newV;
  r.cached = takesPast(at->getParentOfType<func::FuncOp>());
  if (!r.cached) {
    // Without a cache the keys and values are the new tokens'.
    newK = stripRepeatKv(parts.k);
    newV = stripRepeatKv(parts.v);
  } else if (!matchCacheConcat(stripRepeatKv(parts.k), pastK, newK) ||
             !matchCacheConcat(stripRepeatKv(parts.v), pastV, newV)) {
    why = "k or v is not a past input concatenated with new tokens";
    return failure();
  }
  r.k = headsSource(newK);
  r.v = headsSource(newV);
  if (!r.k || !r.v) {
    why = "new k or v not recognised";
    return failure();
  }
  if (!r.cached) {
    std::optional<std::pair<int64_t, int64_t>> geometry = headGeometry(newK);
    if (!geometry) {
      why = "cannot tell the keys' heads and head_dim";
      return failure();
    }
    std::tie(r.kvHeads, r.dim) = *geometry;
    return success();
  }
  r.kept = croppedCache(stripRepeatKv(parts.k));
  if (r.kept != croppedCache(stripRepeatKv(parts.v))) {
    why = "the key and value caches are cropped differently";
    return failure();
  }
  auto pastType = dyn_cast<RankedTensorType>(pastK.getType());
  if (!pastType || pastType.getRank() != 4 || pastType.isDynamicDim(1) ||
      pastType.isDynamicDim(3)) {
    why = "past keys of unknown shape";
    return failure();
  }
  r.kvHeads = pastType.getDimSize(1);
  r.dim = pastType.getDimSize(3);
  r.layer = layerOf(pastK);
  if (!r.layer || layerOf(pastV) != r.layer) {
    why = "cannot tell the layer";
    return failure();
  }
  return success();
}

/// sol.attention of `r` (the root op `at` decides the insertion point and
/// location) with the window `parts.mask` computes (or, with `causalToo`,
/// the window of the mask and causality together; `window` when the op
/// states it), or failure with `why`.
FailureOr<Value> createAttention(PatternRewriter &rewriter, Operation *at,
                                 const ResolvedAttention &r,
                                 const AttentionParts &parts, bool causalToo,
                                 std::optional<int64_t> statedWindow,
                                 MaskWindowCache &masks, std::string &why) {
  const int64_t qWidth = cast<RankedTensorType>(r.q.getType()).getDimSize(1);
  if (cast<RankedTensorType>(r.k.getType()).getDimSize(1) !=
          r.kvHeads * r.dim ||
      r.k.getType() != r.v.getType() || qWidth % r.dim != 0 ||
      (qWidth / r.dim) % r.kvHeads != 0) {
    why = "head counts do not agree";
    return failure();
  }
  std::optional<int64_t> window = statedWindow;
  if (parts.mask) {
    FailureOr<std::optional<int64_t>> probed = masks.get(
        at, parts.mask, parts.booleanMask, r.cached, r.kept, causalToo, why);
    if (failed(probed))
      return failure();
    if (*probed && window && **probed != *window) {
      why = "the mask's window differs from the op's";
      return failure();
    }
    if (*probed)
      window = *probed;
  } else if (!causalToo) {
    why = "attention without a mask";
    return failure();
  }
  // Sol keeps the whole cache; a cropped one must only drop what the
  // window hides.
  if (r.kept && (!window || *window > *r.kept + 1)) {
    why = "the cache is cropped to " + std::to_string(*r.kept) +
          " tokens but the mask " +
          (window ? "has a window of " + std::to_string(*window)
                  : std::string("has no sliding window"));
    return failure();
  }
  Value positions = solArgument(at, "positions");
  Value tokenSeq = solArgument(at, "token_seq");
  if (!positions || !tokenSeq) {
    why = "no Sol arguments";
    return failure();
  }
  rewriter.setInsertionPoint(at);
  // Without a cache, layers are numbered in program order after raising.
  return rewriter
      .create<AttentionOp>(
          at->getLoc(), r.q.getType(), r.q, r.k, r.v, positions, tokenSeq,
          /*sinks=*/Value(), rewriter.getI64IntegerAttr(r.layer.value_or(0)),
          rewriter.getI64IntegerAttr(qWidth / r.dim),
          rewriter.getI64IntegerAttr(r.kvHeads),
          rewriter.getI64IntegerAttr(r.dim),
          rewriter.getF32FloatAttr(float(parts.scale)),
          rewriter.getBoolAttr(true),
          window ? rewriter.getI64IntegerAttr(*window) : IntegerAttr(),
          /*softcap=*/FloatAttr())
      .getResult();
}

/// The [batch, seq, heads, dim] view of a raised attention's result.
SmallVector<int64_t> headsShape(Value attn, int64_t heads) {
  int64_t width = cast<RankedTensorType>(attn.getType()).getDimSize(1);
  return {ShapedType::kDynamic, ShapedType::kDynamic, heads, width / heads};
}

/// Decomposed (eager, or sdpa's decomposition).
struct RaiseAttention : OpRewritePattern<OnnxOp> {
  RaiseAttention(MLIRContext *ctx, MaskWindowCache &masks)
      : OpRewritePattern(ctx), masks(masks) {}

  LogicalResult matchAndRewrite(OnnxOp out,
                                PatternRewriter &rewriter) const override {
    if (out.getOpType() != "Transpose" || !out.getDomain().empty() ||
        !isPermutation(out, {0, 2, 1, 3}))
      return failure();
    OnnxOp pv = producer(skipFloatCasts(out.getInputs()[0]), "MatMul");
    if (!pv)
      return failure();

    // p = [Where(IsNaN(s), 0, s)] of s = Softmax(scores [+ mask]).
    Value p = skipFloatCasts(pv.getInputs()[0]);
    if (OnnxOp where = producer(p, "Where"))
      if (OnnxOp isnan = producer(where.getInputs()[0], "IsNaN");
          isnan && splatValue(where.getInputs()[1]) == 0.0 &&
          skipFloatCasts(isnan.getInputs()[0]) ==
              skipFloatCasts(where.getInputs()[2]))
        p = skipFloatCasts(where.getInputs()[2]);
    OnnxOp softmax = producer(p, "Softmax");
    if (!softmax || !(intAttr(softmax, "axis", -1) == -1 ||
                      intAttr(softmax, "axis", -1) == 3))
      return failure();
    Value logits = skipFloatCasts(softmax.getInputs()[0]);
    AttentionParts parts;
    Value kt;
    bool found = false;
    if (OnnxOp add = producer(logits, "Add")) {
      for (int i = 0; i < 2 && !found; ++i)
        if ((found = matchScores(add.getInputs()[i], parts.q, kt, parts.scale)))
          parts.mask = add.getInputs()[1 - i];
    } else {
      found = matchScores(logits, parts.q, kt, parts.scale);
    }
    if (!found)
      return nearMiss(rewriter, out, "not softmax(q @ kᵀ ...)");
    std::string why;
    parts.k = keysOf(out, kt, why);
    if (!parts.k)
      return nearMiss(rewriter, out, why);
    parts.v = pv.getInputs()[1];
    int64_t heads = 0;
    ResolvedAttention resolved;
    if (failed(resolveHeadViews(out, parts, resolved, why)))
      return nearMiss(rewriter, out, why);
    FailureOr<Value> attn =
        createAttention(rewriter, out, resolved, parts,
                        /*causalToo=*/false, {}, masks, why);
    if (failed(attn))
      return nearMiss(rewriter, out, why);
    heads = cast<AttentionOp>(attn->getDefiningOp()).getNumHeads();
    replaceWithView(rewriter, out, *attn, headsShape(*attn, heads));
    return success();
  }

  MaskWindowCache &masks;
};

/// The Sol value a [batch, seq, width] input of an op views, with its
/// width; null when it is not a raised activation.
Value raisedInput(Value v) { return viewedSolValue(skipFloatCasts(v)); }

/// The Sol value a [batch, seq, heads·dim] value holds: a raised
/// activation's view, or a head view transposed back and flattened
/// (Reshape(Transpose(x, [0, 2, 1, 3]))).
Value flatSource(Value v) {
  if (Value sol = raisedInput(v))
    return sol;
  if (OnnxOp reshape = producer(skipFloatCasts(v), "Reshape"))
    if (OnnxOp back =
            producer(skipFloatCasts(reshape.getInputs()[0]), "Transpose");
        back && isPermutation(back, {0, 2, 1, 3}))
      return headsSource(back.getInputs()[0]);
  return {};
}

/// The standard Attention op (opset 23; 24's window attributes): Q, K, V as
/// [batch, heads, seq, dim] (K and V with kv heads, or repeated) or as
/// [batch, seq, heads·dim] (q_num_heads, kv_num_heads); the cache
/// concatenated outside the op, or inside it (past_key/past_value inputs,
/// present outputs 1 and 2); a mask, is_causal (from the cached length on,
/// as onnx's reference and onnxruntime compute it), or both.
struct RaiseAttentionOp : OpRewritePattern<OnnxOp> {
  RaiseAttentionOp(MLIRContext *ctx, MaskWindowCache &masks)
      : OpRewritePattern(ctx), masks(masks) {}

  LogicalResult matchAndRewrite(OnnxOp op,
                                PatternRewriter &rewriter) const override {
    // Raised already when Y is unused (the presents remain).
    if (op.getOpType() != "Attention" || !op.getDomain().empty() ||
        op->getResult(0).use_empty())
      return failure();
    auto inputs = op.getInputs();
    auto present = [&](unsigned i) {
      return i < inputs.size() && !isa<NoneType>(inputs[i].getType());
    };
    const bool internalCache = present(4) || present(5);
    if (internalCache && !(present(4) && present(5)))
      return nearMiss(rewriter, op, "past_key without past_value");
    if (present(6))
      return nearMiss(rewriter, op,
                      "a nonpad_kv_seqlen input (a static cache) is not "
                      "supported");
    // softcap > 0: scores capped as softcap · tanh(s / softcap) (Gemma 2).
    double softcap = 0.0;
    if (auto attr = dyn_cast_or_null<FloatAttr>(op.getOnnxAttr("softcap")))
      softcap = attr.getValueAsDouble();
    if (softcap < 0.0)
      return nearMiss(rewriter, op, "a negative softcap");
    // Outputs 1 and 2 (the presents) may only be graph outputs.
    for (unsigned i = 1; i < op->getNumResults(); ++i)
      for (Operation *user : op->getResult(i).getUsers())
        if (i >= 3 || !isa<func::ReturnOp>(user))
          return nearMiss(rewriter, op, "extra outputs are read");
    if (inputs.size() < 3)
      return nearMiss(rewriter, op, "fewer than three inputs");
    const bool causal = intAttr(op, "is_causal", 0) != 0;
    std::optional<int64_t> window;
    const int64_t left = intAttr(op, "left_window_size", -1),
                  right = intAttr(op, "right_window_size", -1);
    if (left >= 0 || right >= 0) {
      if (!causal || left < 0 || right > 0)
        return nearMiss(rewriter, op,
                        "a window other than the keys up to the query");
      window = left + 1;
    }
    // 3-D inputs come with the head counts (and may be of unknown rank).
    auto qType = dyn_cast<RankedTensorType>(inputs[0].getType());
    const bool flat =
        op.getOnnxAttr("q_num_heads") || (qType && qType.getRank() == 3);
    if (qType && qType.getRank() != (flat ? 3 : 4))
      return nearMiss(rewriter, op, "Q is not 3-D or 4-D");

    AttentionParts parts;
    if (present(3)) {
      parts.mask = inputs[3];
      parts.booleanMask =
          getElementTypeOrSelf(inputs[3].getType()).isInteger(1);
    } else if (!causal) {
      return nearMiss(rewriter, op, "neither a mask nor is_causal");
    }
    std::string why;
    ResolvedAttention r;
    if (!flat && !internalCache) {
      parts.q = inputs[0];
      parts.k = inputs[1];
      parts.v = inputs[2];
      if (failed(resolveHeadViews(op, parts, r, why)))
        return nearMiss(rewriter, op, why);
    } else {
      // The new tokens' own keys and values, 3-D or 4-D.
      auto sol = [&](Value x) { return flat ? flatSource(x) : headsSource(x); };
      r.q = sol(inputs[0]);
      r.k = sol(inputs[1]);
      r.v = sol(inputs[2]);
      if (!r.q || !r.k || !r.v)
        return nearMiss(rewriter, op, "Q, K or V is not a raised projection");
      if (flat) {
        const int64_t heads = intAttr(op, "q_num_heads", 0);
        r.kvHeads = intAttr(op, "kv_num_heads", 0);
        const int64_t qWidth =
            cast<RankedTensorType>(r.q.getType()).getDimSize(1);
        if (heads <= 0 || r.kvHeads <= 0 || qWidth % heads != 0)
          return nearMiss(rewriter, op,
                          "3-D inputs without q_num_heads/kv_num_heads");
        r.dim = qWidth / heads;
      } else if (std::optional<std::pair<int64_t, int64_t>> geometry =
                     headGeometry(inputs[1])) {
        std::tie(r.kvHeads, r.dim) = *geometry;
      } else {
        return nearMiss(rewriter, op,
                        "cannot tell the keys' heads and head_dim");
      }
      r.cached = internalCache;
      if (internalCache) {
        auto pastK = dyn_cast<BlockArgument>(skipFloatCasts(inputs[4]));
        auto pastV = dyn_cast<BlockArgument>(skipFloatCasts(inputs[5]));
        r.layer = pastK ? layerOf(pastK) : std::nullopt;
        if (!r.layer || !pastV || layerOf(pastV) != r.layer)
          return nearMiss(rewriter, op,
                          "past_key/past_value are not the layer's inputs");
      } else if (takesPast(op->getParentOfType<func::FuncOp>())) {
        return nearMiss(rewriter, op,
                        "keys without the cache in a graph that has one");
      }
    }
    const int64_t dim = r.dim;
    parts.scale = 1.0 / std::sqrt(double(dim));
    if (auto scale = dyn_cast_or_null<FloatAttr>(op.getOnnxAttr("scale")))
      parts.scale = scale.getValueAsDouble();
    FailureOr<Value> attn =
        createAttention(rewriter, op, r, parts, causal, window, masks, why);
    if (failed(attn))
      return nearMiss(rewriter, op, why);
    const int64_t heads =
        cast<AttentionOp>(attn->getDefiningOp()).getNumHeads();
    Value y = op.getResult(0);
    if (flat) {
      const int64_t width =
          cast<RankedTensorType>(attn->getType()).getDimSize(1);
      replaceWithView(rewriter, op, *attn,
                      SmallVector<int64_t>{ShapedType::kDynamic,
                                           ShapedType::kDynamic, width});
      return success();
    }
    // Y is [batch, heads, seq, dim]; the graph transposes it back to
    // [batch, seq, heads, dim] right after, which is the raised value's view.
    if (y.hasOneUse())
      if (auto t = dyn_cast<OnnxOp>(*y.user_begin());
          t && t.getOpType() == "Transpose" && isPermutation(t, {0, 2, 1, 3})) {
        replaceWithView(rewriter, t, *attn, headsShape(*attn, heads));
        if (op->use_empty())
          rewriter.eraseOp(op);
        return success();
      }
    auto viewType = RankedTensorType::get(headsShape(*attn, heads),
                                          getElementTypeOrSelf(y.getType()));
    Value view = rewriter.create<BatchViewOp>(op.getLoc(), viewType, *attn);
    Value back =
        createOnnx(rewriter, op.getLoc(), "Transpose", y.getType(), {view},
                   {rewriter.getNamedAttr(
                       "perm", rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}))})
            .getResult(0);
    rewriter.replaceAllUsesWith(y, back);
    if (op->use_empty())
      rewriter.eraseOp(op);
    return success();
  }

  MaskWindowCache &masks;
};

/// Whether `value` is read only by `op`, through batch views and float
/// casts.
bool onlyFeeds(Value value, Operation *op) {
  return llvm::all_of(value.getUsers(), [&](Operation *user) {
    if (user == op)
      return true;
    if (isa<BatchViewOp>(user))
      return onlyFeeds(user->getResult(0), op);
    auto cast = dyn_cast<OnnxOp>(user);
    return cast && cast.getOpType() == "Cast" && cast.getDomain().empty() &&
           isa<FloatType>(getElementTypeOrSelf(cast->getResult(0).getType())) &&
           onlyFeeds(cast->getResult(0), op);
  });
}

/// Reorders the rows of `linear`'s weight, bias, scales and zero points in
/// each head of `dim` for a rotation of `rotary` dims, in the row blocks
/// `blocks` (rows, permuted or kept) that make up its output.
void permuteProjectionRows(PatternRewriter &rewriter, LinearOp linear,
                           ArrayRef<std::pair<int64_t, bool>> blocks,
                           int64_t dim, int64_t rotary) {
  Location loc = linear.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(linear);
  auto permute = [&](Value v) -> Value {
    if (!v)
      return v;
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<Value> parts;
    int64_t offset = 0;
    for (auto [rows, rotated] : blocks) {
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = rows;
      auto partType = RankedTensorType::get(shape, type.getElementType());
      Value part = v;
      if (blocks.size() > 1)
        part = rewriter.create<SliceRowsOp>(loc, partType, v,
                                            rewriter.getI64IntegerAttr(offset),
                                            rewriter.getI64IntegerAttr(1));
      if (rotated)
        part = rewriter.create<PermuteHeadDimsOp>(
            loc, partType, part, rewriter.getI64IntegerAttr(dim),
            rewriter.getI64IntegerAttr(rotary));
      parts.push_back(part);
      offset += rows;
    }
    if (parts.size() == 1)
      return parts.front();
    return rewriter.create<ConcatWeightsOp>(loc, type, parts);
  };
  rewriter.modifyOpInPlace(linear, [&] {
    linear.getWeightMutable().assign(permute(linear.getWeight()));
    if (Value bias = linear.getBias())
      linear.getBiasMutable().assign(permute(bias));
    if (Value scales = linear.getWeightScales())
      linear.getWeightScalesMutable().assign(permute(scales));
    if (Value zeros = linear.getWeightZeros())
      linear.getWeightZerosMutable().assign(permute(zeros));
  });
}

/// com.microsoft GroupQueryAttention, as onnxruntime-genai's model builder
/// writes it: Q, K and V as [batch, seq, heads·dim] (or one packed QKV),
/// the layer's past_key/past_value inputs (present outputs are the cache
/// after the step), seqlens_k and total_sequence_length computed from the
/// attention mask, and optionally the per-head q/k norms and the rotation
/// (cos/sin caches) fused in. The cache lives in Sol's paged KV cache, so
/// the op is sol.attention of the layer, with sol.rms_norm and sol.rope
/// before it. local_window_size w is the sliding window (w keys, the query's
/// own included), as onnxruntime 1.30 computes it and as the builder writes
/// it from config.json's sliding_window. A head_sink input is the
/// attention's sinks (gpt-oss).
struct RaiseGroupQueryAttention : OpRewritePattern<OnnxOp> {
  RaiseGroupQueryAttention(MLIRContext *ctx, const WeightStore *store)
      : OpRewritePattern(ctx), store(store) {}

  LogicalResult matchAndRewrite(OnnxOp op,
                                PatternRewriter &rewriter) const override {
    // Raised already when its output is unused (the presents remain).
    if (op.getOpType() != "GroupQueryAttention" ||
        op.getDomain() != "com.microsoft" || op->getResult(0).use_empty())
      return failure();
    auto inputs = op.getInputs();
    auto present = [&](unsigned i) {
      return i < inputs.size() && !isa<NoneType>(inputs[i].getType());
    };
    const int64_t heads = intAttr(op, "num_heads", 0);
    const int64_t kvHeads = intAttr(op, "kv_num_heads", 0);
    if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
      return nearMiss(rewriter, op, "num_heads / kv_num_heads do not agree");
    // softcap > 0: scores capped as softcap · tanh(s / softcap) (Gemma 2).
    double softcap = 0.0;
    if (auto attr = dyn_cast_or_null<FloatAttr>(op.getOnnxAttr("softcap")))
      softcap = attr.getValueAsDouble();
    if (softcap < 0.0)
      return nearMiss(rewriter, op, "a negative softcap");
    if (intAttr(op, "smooth_softmax", 0) != 0)
      return nearMiss(rewriter, op, "smooth softmax is not supported");
    // head_sink: one logit per head in each head's softmax (gpt-oss).
    if (present(11) && weightShape(inputs[11]) != SmallVector<int64_t>{heads})
      return nearMiss(rewriter, op, "head_sink is not a [num_heads] weight");
    if (present(10))
      return nearMiss(rewriter, op, "an attention_bias input");
    if (present(12) || present(13) || intAttr(op, "kv_cache_bit_width", 0))
      return nearMiss(rewriter, op,
                      "a quantized KV cache (k_scale/v_scale) is not "
                      "supported; Sol's --kv-cache-dtype fp8 is");
    // Positions given to the op must be the graph's position_ids (Sol's).
    if (present(9)) {
      auto view = inputs[9].getDefiningOp<BatchViewOp>();
      if (!view || view.getInput() != solArgument(op, "positions"))
        return nearMiss(rewriter, op,
                        "a position_ids input other than the graph's");
    }
    for (unsigned i = 3; i < op->getNumResults(); ++i)
      if (!op->getResult(i).use_empty())
        return nearMiss(rewriter, op, "the output_qk output is read");

    // Q, K, V: separate, or one packed tensor split here.
    Value q = raisedInput(inputs[0]), k, v;
    if (!q)
      return nearMiss(rewriter, op, "the query is not a raised projection");
    const int64_t qWidth = cast<RankedTensorType>(q.getType()).getDimSize(1);
    const bool packed = !present(1) && !present(2);
    const int64_t dim =
        packed ? qWidth / (heads + 2 * kvHeads) : qWidth / heads;
    if (dim <= 0 || (packed ? qWidth % (heads + 2 * kvHeads) : qWidth % heads))
      return nearMiss(rewriter, op, "the query's width is not heads x dim");
    if (!packed) {
      k = raisedInput(inputs[1]);
      v = raisedInput(inputs[2]);
      if (!k || !v)
        return nearMiss(rewriter, op,
                        "key or value is not a raised projection");
      if (cast<RankedTensorType>(k.getType()).getDimSize(1) != kvHeads * dim ||
          k.getType() != v.getType())
        return nearMiss(rewriter, op,
                        "key/value widths are not kv_num_heads "
                        "x head_dim");
    }

    // The layer's cache inputs.
    auto pastK = dyn_cast<BlockArgument>(skipFloatCasts(inputs[3]));
    auto pastV = dyn_cast<BlockArgument>(skipFloatCasts(inputs[4]));
    std::optional<int64_t> layer = pastK ? layerOf(pastK) : std::nullopt;
    if (!layer || !pastV || layerOf(pastV) != layer)
      return nearMiss(rewriter, op,
                      "past_key/past_value are not the layer's inputs");

    // seqlens_k = total - 1 and total_sequence_length = total for a batch
    // of one whose mask is all ones: the op is then causal attention over
    // the cache and the new tokens.
    auto fn = op->getParentOfType<func::FuncOp>();
    for (auto [past, fresh] :
         {std::pair<int64_t, int64_t>{0, 5}, {3, 4}, {12, 1}}) {
      OnnxEvaluator eval;
      std::vector<int64_t> positions(fresh);
      for (int64_t i = 0; i < fresh; ++i)
        positions[i] = past + i;
      if (!bindStep(eval, fn, past, positions))
        return nearMiss(rewriter, op,
                        "the graph's inputs have sizes the "
                        "probe cannot set");
      std::optional<EvalTensor> seqlens = eval.evaluate(inputs[5]);
      std::optional<EvalTensor> total = eval.evaluate(inputs[6]);
      if (!seqlens || !total || seqlens->shapeOnly || total->shapeOnly)
        return nearMiss(rewriter, op,
                        "cannot evaluate seqlens_k / total_sequence_length: " +
                            eval.reason());
      if (seqlens->size() != 1 || total->size() != 1 ||
          seqlens->data[0] != double(past + fresh - 1) ||
          total->data[0] != double(past + fresh))
        return nearMiss(rewriter, op,
                        "seqlens_k / total_sequence_length are not the "
                        "mask's length - 1 and length");
    }

    RopeAttr rope;
    if (intAttr(op, "do_rotary", 0) != 0) {
      if (intAttr(op, "rotary_interleaved", 0) != 0)
        return nearMiss(rewriter, op, "interleaved rotation (not rotate-half)");
      if (!present(7) || !present(8))
        return nearMiss(rewriter, op, "do_rotary without cos/sin caches");
      // Every layer reads the same caches (two pairs for Gemma 3): each
      // pair is read and fitted once.
      auto key = std::make_tuple(inputs[7].getAsOpaquePointer(),
                                 inputs[8].getAsOpaquePointer(), dim);
      auto fitted = fittedCaches.find(key);
      if (fitted == fittedCaches.end()) {
        std::string why;
        std::optional<RopeAttr> fit =
            ropeFromCaches(op, inputs[7], inputs[8], dim, store, why);
        fitted = fittedCaches.emplace(key, std::make_pair(fit, why)).first;
      }
      if (!fitted->second.first)
        return nearMiss(rewriter, op, fitted->second.second);
      rope = *fitted->second.first;
    }
    Value qNorm, kNorm;
    if (present(14) || present(15)) {
      if (!present(14) || !present(15) ||
          weightShape(inputs[14]) != SmallVector<int64_t>{dim} ||
          weightShape(inputs[15]) != SmallVector<int64_t>{dim})
        return nearMiss(rewriter, op, "q/k norm weights are not [head_dim]");
    }
    Value positions = solArgument(op, "positions");
    Value tokenSeq = solArgument(op, "token_seq");
    if (!positions || !tokenSeq)
      return nearMiss(rewriter, op, "no Sol arguments");
    // Partial rotation (caches of fewer than head_dim / 2 columns:
    // Phi-4-mini's partial_rotary_factor): Sol's rope pairs dims half a
    // head apart, so the query and key projections' rows are reordered in
    // each head (sol.permute_head_dims) as the checkpoint importer does;
    // scores are the same for queries and keys permuted alike.
    SmallVector<LinearOp, 2> permuted;
    if (rope && rope.getRotaryDim() != 0 && rope.getRotaryDim() != dim) {
      if (present(14))
        return nearMiss(rewriter, op,
                        "partial rotation with fused q/k norms is not "
                        "supported");
      for (Value v :
           packed ? SmallVector<Value>{q} : SmallVector<Value>{q, k}) {
        auto linear = v.getDefiningOp<LinearOp>();
        if (!linear || !onlyFeeds(linear.getResult(), op))
          return nearMiss(rewriter, op,
                          "partial rotation of a query or key that is not a "
                          "projection read by this op alone");
        permuted.push_back(linear);
      }
    }

    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    for (auto [i, linear] : llvm::enumerate(permuted)) {
      // Row blocks of the projection: query heads, key heads (packed QKV
      // also value heads, which keep their order).
      SmallVector<std::pair<int64_t, bool>> blocks;
      if (packed)
        blocks = {
            {heads * dim, true}, {kvHeads * dim, true}, {kvHeads * dim, false}};
      else
        blocks = {{(i == 0 ? heads : kvHeads) * dim, true}};
      permuteProjectionRows(rewriter, linear, blocks, dim, rope.getRotaryDim());
    }
    if (packed) {
      auto part = [&](int64_t n) {
        return activationType(getContext(), n * dim);
      };
      auto split = rewriter.create<SplitOp>(
          loc, TypeRange{part(heads), part(kvHeads), part(kvHeads)}, q);
      q = split.getResult(0);
      k = split.getResult(1);
      v = split.getResult(2);
    }
    if (present(14)) {
      auto eps = dyn_cast_or_null<FloatAttr>(op.getOnnxAttr("qk_norm_epsilon"));
      FloatAttr epsilon =
          rewriter.getF32FloatAttr(eps ? eps.getValueAsDouble() : 1e-6);
      q = rewriter.create<RmsNormOp>(
          loc, q.getType(), q, normWeightOf(rewriter, inputs[14]), epsilon);
      k = rewriter.create<RmsNormOp>(
          loc, k.getType(), k, normWeightOf(rewriter, inputs[15]), epsilon);
    }
    if (rope) {
      q = rewriter.create<RopeOp>(loc, q.getType(), q, positions, rope,
                                  rewriter.getI64IntegerAttr(heads),
                                  rewriter.getI64IntegerAttr(dim));
      k = rewriter.create<RopeOp>(loc, k.getType(), k, positions, rope,
                                  rewriter.getI64IntegerAttr(kvHeads),
                                  rewriter.getI64IntegerAttr(dim));
    }
    double scale = 1.0 / std::sqrt(double(dim));
    if (auto attr = dyn_cast_or_null<FloatAttr>(op.getOnnxAttr("scale"));
        attr && attr.getValueAsDouble() != 0.0)
      scale = attr.getValueAsDouble();
    const int64_t localWindow = intAttr(op, "local_window_size", -1);
    Value sinks = present(11)
                      ? storedWeight(rewriter, skipFloatCasts(inputs[11]))
                      : Value();
    Value attn = rewriter.create<AttentionOp>(
        loc, q.getType(), q, k, v, positions, tokenSeq, sinks,
        rewriter.getI64IntegerAttr(*layer), rewriter.getI64IntegerAttr(heads),
        rewriter.getI64IntegerAttr(kvHeads), rewriter.getI64IntegerAttr(dim),
        rewriter.getF32FloatAttr(float(scale)), rewriter.getBoolAttr(true),
        localWindow > 0 ? rewriter.getI64IntegerAttr(localWindow)
                        : IntegerAttr(),
        softcap > 0.0 ? rewriter.getF32FloatAttr(float(softcap)) : FloatAttr());
    // The present outputs stay until sol-raise-outputs drops them.
    replaceWithView(rewriter, op, attn);
    return success();
  }

  const WeightStore *store;
  /// ropeFromCaches' answers by (cos, sin, head_dim), for this pass run.
  mutable std::map<std::tuple<const void *, const void *, int64_t>,
                   std::pair<std::optional<RopeAttr>, std::string>>
      fittedCaches;
};

struct SolRaiseAttentionPass
    : sol::impl::SolRaiseAttentionBase<SolRaiseAttentionPass> {
  SolRaiseAttentionPass() = default;
  explicit SolRaiseAttentionPass(const WeightStore *store) : store(store) {}

  void runOnOperation() override {
    MaskWindowCache masks;
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseAttention, RaiseAttentionOp>(&getContext(), masks);
    patterns.add<RaiseGroupQueryAttention>(&getContext(), store);
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-attention")))
      return signalPassFailure();
    // A graph without a cache names no layers: number them in order.
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (takesPast(fn))
        continue;
      int64_t layer = 0;
      fn.walk([&](AttentionOp op) {
        op.setLayerAttr(
            IntegerAttr::get(IntegerType::get(&getContext(), 64), layer++));
      });
    }
  }

  const WeightStore *store = nullptr;
};

} // namespace

std::unique_ptr<Pass> sol::createSolRaiseAttention(const WeightStore *store) {
  return std::make_unique<SolRaiseAttentionPass>(store);
}
