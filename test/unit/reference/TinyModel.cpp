//===- TinyModel.cpp - A small Llama/Qwen-style plan and its dense twin ---===//

#include "TinyModel.h"

#include <cmath>
#include <random>

namespace sol::test {

std::vector<float> TinyModel::randomWeight(const std::string &name,
                                           std::vector<int64_t> shape, float lo,
                                           float hi, int *index) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::mt19937 rng(rngState_++);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(static_cast<size_t>(n));
  // Stored as bf16 in the plan; the dense twin uses the same rounded values.
  for (float &v : values)
    v = bf16ToFloat(floatToBf16(dist(rng)));
  *index = plan.weight(name, std::move(shape), values, DType::BF16);
  return values;
}

TinyModel::TinyModel(TinyModelConfig config)
    : config_(std::move(config)), rngState_(config_.seed * 1000) {
  const TinyModelConfig &c = config_;
  const int64_t H = c.hidden, hd = c.headDim, I = c.intermediate;
  const int64_t qkvWidth = (c.heads + 2 * c.kvHeads) * hd;
  plan.vocabSize = c.vocab;
  plan.kvCache(static_cast<int32_t>(c.layers), static_cast<int32_t>(c.kvHeads),
               static_cast<int32_t>(hd), c.blockSize, c.fp8Kv);
  for (int64_t i = 0; i < hd / 2; ++i)
    invFreq_.push_back(static_cast<float>(
        1.0 / std::pow(c.ropeTheta, static_cast<double>(2 * i) / hd)));
  const int rope = plan.rope(invFreq_);

  auto matrix = [&](const std::string &name, int64_t rows, int64_t cols,
                    int *index) {
    const float bound = static_cast<float>(std::sqrt(3.0 / cols));
    return randomWeight(name, {rows, cols}, -bound, bound, index);
  };
  auto norm = [&](const std::string &name, int64_t width, int *index) {
    return randomWeight(name, {width}, 0.8f, 1.2f, index);
  };

  int embed = 0;
  embed_ =
      randomWeight("model.embed_tokens.weight", {c.vocab, H}, -1, 1, &embed);
  const int h = plan.buffer("hidden", H);
  const int x = plan.buffer("normed", H);
  const int qkv = plan.buffer("qkv", qkvWidth);
  const int att = plan.buffer("attn", c.heads * hd);
  const int o = plan.buffer("o_proj", H);
  const int gu = plan.buffer("gate_up", 2 * I);
  const int act = plan.buffer("act", I);
  const int down = plan.buffer("down", H);
  plan.op(OpKind::Embedding, "model.embed_tokens", {h, 0}, {embed});

  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Layer L;
    int in = 0, wqkv = 0, bqkv = 0, qn = 0, kn = 0, wo = 0, post = 0, wgu = 0,
        wdown = 0;
    L.inputNorm = norm(p + "input_layernorm.weight", H, &in);
    L.wqkv = matrix(p + "self_attn.qkv_proj.weight", qkvWidth, H, &wqkv);
    L.bqkv = randomWeight(p + "self_attn.qkv_proj.bias", {qkvWidth}, -0.5f,
                          0.5f, &bqkv);
    L.qNorm = norm(p + "self_attn.q_norm.weight", hd, &qn);
    L.kNorm = norm(p + "self_attn.k_norm.weight", hd, &kn);
    L.wo = matrix(p + "self_attn.o_proj.weight", H, c.heads * hd, &wo);
    L.postNorm = norm(p + "post_attention_layernorm.weight", H, &post);
    L.wgu = matrix(p + "mlp.gate_up_proj.weight", 2 * I, H, &wgu);
    L.wdown = matrix(p + "mlp.down_proj.weight", H, I, &wdown);
    layers_.push_back(std::move(L));

    if (l == 0)
      plan.op(OpKind::RmsNorm, p + "input_layernorm", {x, h}, {in}, {},
              {c.eps});
    else
      plan.op(OpKind::RmsNorm, p + "input_layernorm", {x, down, h}, {in}, {},
              {c.eps});
    plan.op(OpKind::Linear, p + "self_attn.qkv_proj", {qkv, x}, {wqkv, bqkv});
    plan.op(OpKind::HeadRmsNorm, p + "self_attn.q_norm", {qkv}, {qn},
            {0, c.heads, hd}, {c.eps});
    plan.op(OpKind::HeadRmsNorm, p + "self_attn.k_norm", {qkv}, {kn},
            {c.heads * hd, c.kvHeads, hd}, {c.eps});
    plan.op(OpKind::RopeKvWrite, p + "self_attn.rope", {qkv}, {},
            {l, c.heads, c.kvHeads, hd, rope});
    plan.op(
        OpKind::Attention, p + "self_attn", {att, qkv}, {},
        {l, c.heads, c.kvHeads, hd, c.slidingWindow[static_cast<size_t>(l)]},
        {static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)))});
    plan.op(OpKind::Linear, p + "self_attn.o_proj", {o, att}, {wo});
    plan.op(OpKind::RmsNorm, p + "post_attention_layernorm", {x, o, h}, {post},
            {}, {c.eps});
    plan.op(OpKind::Linear, p + "mlp.gate_up_proj", {gu, x}, {wgu});
    plan.op(OpKind::Swiglu, p + "mlp.act", {act, gu});
    plan.op(OpKind::Linear, p + "mlp.down_proj", {down, act}, {wdown});
  }
  int fin = 0;
  finalNorm_ = norm("model.norm.weight", H, &fin);
  const int last = plan.buffer("last_hidden", H);
  const int sel = plan.buffer("selected", H, RowSpace::Outputs);
  const int normed = plan.buffer("final_normed", H, RowSpace::Outputs);
  const int logits =
      plan.buffer("logits", c.vocab, RowSpace::Outputs, DType::F32);
  plan.op(OpKind::Add, "model.layers.last.residual", {last, h, down});
  plan.op(OpKind::GatherRows, "logits_rows", {sel, last, 3});
  plan.op(OpKind::RmsNorm, "model.norm", {normed, sel}, {fin}, {}, {c.eps});
  // Tied LM head: the embedding table serves as the [vocab, hidden] weight.
  plan.op(OpKind::Linear, "lm_head", {logits, normed}, {embed});
}

namespace {

using Matrix = std::vector<double>; // row-major

Matrix matmulT(const Matrix &in, int64_t rows, int64_t k,
               const std::vector<float> &w, int64_t n) {
  Matrix out(static_cast<size_t>(rows * n), 0.0);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i)
        s += in[static_cast<size_t>(t * k + i)] *
             w[static_cast<size_t>(j * k + i)];
      out[static_cast<size_t>(t * n + j)] = s;
    }
  return out;
}

void rmsNormInPlace(double *x, int64_t n, const std::vector<float> &w,
                    double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i)
    ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i)
    x[i] = x[i] * inv * w[static_cast<size_t>(i)];
}

} // namespace

std::vector<double>
TinyModel::naiveLogits(const std::vector<int32_t> &tokens) const {
  const TinyModelConfig &c = config_;
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t H = c.hidden, hd = c.headDim, I = c.intermediate;
  const int64_t qkvWidth = (c.heads + 2 * c.kvHeads) * hd;
  const int64_t group = c.heads / c.kvHeads;

  Matrix h(static_cast<size_t>(T * H));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < H; ++i)
      h[static_cast<size_t>(t * H + i)] =
          embed_[static_cast<size_t>(tokens[static_cast<size_t>(t)] * H + i)];

  for (int64_t l = 0; l < c.layers; ++l) {
    const Layer &L = layers_[static_cast<size_t>(l)];
    Matrix x = h;
    for (int64_t t = 0; t < T; ++t)
      rmsNormInPlace(&x[static_cast<size_t>(t * H)], H, L.inputNorm, c.eps);
    Matrix qkv = matmulT(x, T, H, L.wqkv, qkvWidth);
    for (int64_t t = 0; t < T; ++t) {
      double *row = &qkv[static_cast<size_t>(t * qkvWidth)];
      for (int64_t j = 0; j < qkvWidth; ++j)
        row[j] += L.bqkv[static_cast<size_t>(j)];
      for (int64_t head = 0; head < c.heads + c.kvHeads; ++head) {
        double *v = row + head * hd;
        rmsNormInPlace(v, hd, head < c.heads ? L.qNorm : L.kNorm, c.eps);
        for (int64_t i = 0; i < hd / 2; ++i) {
          const double a =
              static_cast<double>(t) * invFreq_[static_cast<size_t>(i)];
          const double x1 = v[i], x2 = v[i + hd / 2];
          v[i] = x1 * std::cos(a) - x2 * std::sin(a);
          v[i + hd / 2] = x2 * std::cos(a) + x1 * std::sin(a);
        }
      }
    }
    // Dense causal attention with an explicit mask.
    const int64_t window = c.slidingWindow[static_cast<size_t>(l)];
    Matrix att(static_cast<size_t>(T * c.heads * hd), 0.0);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t head = 0; head < c.heads; ++head) {
        const int64_t g = head / group;
        const double *q = &qkv[static_cast<size_t>(t * qkvWidth + head * hd)];
        std::vector<double> p(static_cast<size_t>(T), 0.0);
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          const bool visible = j <= t && (window == 0 || t - j < window);
          if (!visible)
            continue;
          const double *k =
              &qkv[static_cast<size_t>(j * qkvWidth + (c.heads + g) * hd)];
          double s = 0;
          for (int64_t d = 0; d < hd; ++d)
            s += q[d] * k[d];
          p[static_cast<size_t>(j)] = s / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, p[static_cast<size_t>(j)]);
        }
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          const bool visible = j <= t && (window == 0 || t - j < window);
          p[static_cast<size_t>(j)] =
              visible ? std::exp(p[static_cast<size_t>(j)] - mx) : 0.0;
          sum += p[static_cast<size_t>(j)];
        }
        for (int64_t j = 0; j < T; ++j) {
          const double *v = &qkv[static_cast<size_t>(
              j * qkvWidth + (c.heads + c.kvHeads + g) * hd)];
          for (int64_t d = 0; d < hd; ++d)
            att[static_cast<size_t>((t * c.heads + head) * hd + d)] +=
                p[static_cast<size_t>(j)] / sum * v[d];
        }
      }
    const Matrix o = matmulT(att, T, c.heads * hd, L.wo, H);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += o[i];
    x = h;
    for (int64_t t = 0; t < T; ++t)
      rmsNormInPlace(&x[static_cast<size_t>(t * H)], H, L.postNorm, c.eps);
    const Matrix gu = matmulT(x, T, H, L.wgu, 2 * I);
    Matrix act(static_cast<size_t>(T * I));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < I; ++i) {
        const double g = gu[static_cast<size_t>(t * 2 * I + i)];
        const double u = gu[static_cast<size_t>(t * 2 * I + I + i)];
        act[static_cast<size_t>(t * I + i)] = g / (1 + std::exp(-g)) * u;
      }
    const Matrix down = matmulT(act, T, I, L.wdown, H);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += down[i];
  }
  for (int64_t t = 0; t < T; ++t)
    rmsNormInPlace(&h[static_cast<size_t>(t * H)], H, finalNorm_, c.eps);
  return matmulT(h, T, H, embed_, c.vocab);
}

} // namespace sol::test
