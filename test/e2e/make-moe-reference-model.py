#!/usr/bin/env python3
"""Writes a tiny random gpt-oss or Qwen2-MoE checkpoint with goldens from an
independent float64 forward pass (standard library only; CI has no torch).

  make-moe-reference-model.py {gpt-oss,gpt-oss-mxfp4,gpt-oss-grid,qwen2-moe} OUT

OUT gets what scripts/make-test-models.py writes for the other families
(config.json, model.safetensors in bf16, golden.json with input_ids and
greedy_ids, golden_logits.safetensors), so test/e2e/check-goldens.py and
check-tensor-parallel.py read it alike. The forward pass follows
Transformers 5's modeling_gpt_oss.py and modeling_qwen2_moe.py line by
line, in float64 on the bf16 weights: the sinks' extra softmax column, the
alternating sliding window, yarn RoPE (truncate false), the router's bias
and top-k softmax, gate/up interleaved in gate_up_proj ([E, H, 2I], inputs
first) or its MXFP4 blocks (rows = outputs, low nibble first), the clamped
SwiGLU, the experts' biases; Qwen2-MoE's softmax-then-top-k routing without
renormalisation, its shared expert scaled by sigmoid(shared_expert_gate),
mlp_only_layers, q/k/v biases, a sliding first layer. It stands in for the
Transformers goldens until those are generated with the other families'.

gpt-oss-grid is gpt-oss in the bf16 layout with every expert weight on a
grid that symmetric integer quantization keeps exactly: each output row
(of an expert's [2I, H] or [H, I] matrix, inputs along the row) is k·2^e
for integers k in [-8, 7], one exponent e a row, and every block of 32
inputs holds a -8. Its 4-bit blockwise (block 32) and 8-bit per-row codes,
as onnxruntime's QMoE quantizers compute them (scale max|w| / 8, or / 128),
are the weights themselves, so a quantized graph of it has these goldens.
"""
import json
import math
import random
import struct
import sys
from pathlib import Path

FAMILIES = ("gpt-oss", "gpt-oss-mxfp4", "gpt-oss-grid", "qwen2-moe")
FP4 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
       -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
H, NH, KV, HD, E, TOPK, VOCAB = 64, 4, 2, 16, 4, 2, 256
PROMPT, GREEDY = 24, 32


def bf16_bits(x):
    (u,) = struct.unpack("<I", struct.pack("<f", x))
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def bf16(x):
    return struct.unpack("<f", struct.pack("<I", bf16_bits(x) << 16))[0]


class Weights:
    """Tensors by name: bf16 values (row-major floats) or raw u8 bytes."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.tensors = {}

    def normal(self, name, shape, std, mean=0.0):
        n = math.prod(shape)
        self.tensors[name] = ("BF16", shape, [bf16(mean + std * self.rng.gauss(0, 1)) for _ in range(n)])
        return self.tensors[name][2]

    def matrix(self, name, rows, cols, gain=1.0):
        return self.normal(name, [rows, cols], math.sqrt(gain / cols))

    def u8(self, name, shape, values):
        self.tensors[name] = ("U8", shape, values)

    def write(self, path):
        header, blobs, offset = {}, [], 0
        for name in sorted(self.tensors):
            dtype, shape, values = self.tensors[name]
            if dtype == "BF16":
                blob = struct.pack(f"<{len(values)}H", *(bf16_bits(v) for v in values))
            else:
                blob = bytes(values)
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
            blobs.append(blob)
            offset += len(blob)
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def rows_of(flat, cols):
    return [flat[i:i + cols] for i in range(0, len(flat), cols)]


def dot(a, b):
    return math.fsum(x * y for x, y in zip(a, b))


def linear(x, w, bias=None):
    """x . w^T (+ bias) for w as a list of output rows."""
    return [dot(x, row) + (bias[i] if bias else 0.0) for i, row in enumerate(w)]


def rms_norm(x, w, eps):
    scale = 1.0 / math.sqrt(math.fsum(v * v for v in x) / len(x) + eps)
    return [v * scale * g for v, g in zip(x, w)]


def softmax(values):
    top = max(values)
    e = [math.exp(v - top) for v in values]
    total = math.fsum(e)
    return [v / total for v in e]


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def silu(x):
    return x * sigmoid(x)


def yarn_inv_freq(theta, dim, factor, original, beta_fast, beta_slow, truncate):
    """transformers' _compute_yarn_parameters (inv_freq, attention_factor)."""
    def correction_dim(rotations):
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))
    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    pos = [theta ** (i / dim) for i in range(0, dim, 2)]
    out = []
    for i, p in enumerate(pos):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        extrapolation = 1.0 - ramp
        out.append((1.0 / (factor * p)) * (1 - extrapolation) + (1.0 / p) * extrapolation)
    return out, 0.1 * math.log(factor) + 1.0


def rotate(x, pos, inv_freq, scaling):
    half = len(x) // 2
    out = list(x)
    for i, f in enumerate(inv_freq):
        c, s = math.cos(pos * f) * scaling, math.sin(pos * f) * scaling
        out[i] = x[i] * c - x[i + half] * s
        out[i + half] = x[i + half] * c + x[i] * s
    return out


class Model:
    def __init__(self, family):
        self.family = family
        self.gpt_oss = family.startswith("gpt-oss")
        self.layers = 2 if self.gpt_oss else 3
        # MXFP4: 64 wide, so that two tensor-parallel ranks keep whole groups
        # of 32 (four do not, and take the bf16 fallback).
        self.inter = 64 if family in ("gpt-oss-mxfp4", "gpt-oss-grid") else 32
        self.w = Weights({"gpt-oss": 7, "gpt-oss-mxfp4": 11, "gpt-oss-grid": 17,
                          "qwen2-moe": 13}[family])
        self.window = 4
        self.eps = 1e-5 if self.gpt_oss else 1e-6
        self.make_weights()
        self.config = self.make_config()
        if self.gpt_oss:
            self.inv_freq, self.rope_scaling = yarn_inv_freq(150000.0, HD, 4.0, 64, 32.0, 1.0, False)
            self.sliding = [layer % 2 == 0 for layer in range(self.layers)]
        else:
            self.inv_freq = [1.0 / (10000.0 ** (i / HD)) for i in range(0, HD, 2)]
            self.rope_scaling = 1.0
            self.sliding = [layer == 0 for layer in range(self.layers)]

    def make_weights(self):
        w = self.w
        w.normal("model.embed_tokens.weight", [VOCAB, H], 1.0)
        w.matrix("lm_head.weight", VOCAB, H)
        w.normal("model.norm.weight", [H], 0.1, 1.0)
        I = self.inter
        for layer in range(self.layers):
            p = f"model.layers.{layer}."
            w.normal(p + "input_layernorm.weight", [H], 0.1, 1.0)
            w.normal(p + "post_attention_layernorm.weight", [H], 0.1, 1.0)
            a = p + "self_attn."
            w.matrix(a + "q_proj.weight", NH * HD, H, 2.25)
            w.matrix(a + "k_proj.weight", KV * HD, H, 2.25)
            w.matrix(a + "v_proj.weight", KV * HD, H)
            w.matrix(a + "o_proj.weight", H, NH * HD)
            for proj, n in (("q_proj", NH * HD), ("k_proj", KV * HD), ("v_proj", KV * HD)):
                w.normal(a + proj + ".bias", [n], 0.1)
            m = p + "mlp."
            if self.gpt_oss:
                w.normal(a + "o_proj.bias", [H], 0.1)
                w.normal(a + "sinks", [NH], 1.0)
                w.matrix(m + "router.weight", E, H, 4.0)
                w.normal(m + "router.bias", [E], 0.5)
                w.normal(m + "experts.gate_up_proj_bias", [E, 2 * I], 0.1)
                w.normal(m + "experts.down_proj_bias", [E, H], 0.1)
                if self.family == "gpt-oss-mxfp4":
                    for name, rows, cols in (("gate_up_proj", 2 * I, H), ("down_proj", H, I)):
                        n = E * rows * cols
                        w.u8(m + f"experts.{name}_blocks", [E, rows, cols // 32, 16],
                             [w.rng.randrange(256) for _ in range(n // 2)])
                        # 2^(s - 127): values up to 6 * 2^-3 (gate/up), 6 * 2^-4.
                        w.u8(m + f"experts.{name}_scales", [E, rows, cols // 32],
                             [w.rng.choice((121, 122, 123, 124)) for _ in range(n // 32)])
                elif self.family == "gpt-oss-grid":
                    # Rows of [2I, H] and [H, I] on the grid, stored inputs first.
                    for name, rows, cols, exps in (("gate_up_proj", 2 * I, H, (-3, -4)),
                                                   ("down_proj", H, I, (-4, -5))):
                        mat = [[0.0] * cols for _ in range(E * rows)]
                        for r in range(E * rows):
                            scale = 2.0 ** w.rng.choice(exps)
                            for b in range(0, cols, 32):
                                low = b + w.rng.randrange(32)
                                for c in range(b, b + 32):
                                    k = -8 if c == low else w.rng.randrange(-8, 8)
                                    mat[r][c] = k * scale
                        w.tensors[m + "experts." + name] = (
                            "BF16", [E, cols, rows],
                            [mat[e * rows + r][c] for e in range(E) for c in range(cols)
                             for r in range(rows)])
                else:
                    # Inputs first: [E, H, 2I] and [E, I, H], gate/up interleaved.
                    w.normal(m + "experts.gate_up_proj", [E, H, 2 * I], math.sqrt(16.0 / H))
                    w.normal(m + "experts.down_proj", [E, I, H], math.sqrt(1.0 / I))
            elif layer == 1:  # mlp_only_layers: a dense MLP
                w.matrix(m + "gate_proj.weight", 2 * I, H)
                w.matrix(m + "up_proj.weight", 2 * I, H)
                w.matrix(m + "down_proj.weight", H, 2 * I)
            else:
                w.matrix(m + "gate.weight", E, H, 4.0)
                for e in range(E):
                    x = m + f"experts.{e}."
                    w.matrix(x + "gate_proj.weight", I, H)
                    w.matrix(x + "up_proj.weight", I, H)
                    w.matrix(x + "down_proj.weight", H, I)
                w.matrix(m + "shared_expert.gate_proj.weight", 48, H)
                w.matrix(m + "shared_expert.up_proj.weight", 48, H)
                w.matrix(m + "shared_expert.down_proj.weight", H, 48)
                w.matrix(m + "shared_expert_gate.weight", 1, H, 4.0)

    def make_config(self):
        common = {"hidden_size": H, "num_hidden_layers": self.layers, "num_attention_heads": NH,
                  "num_key_value_heads": KV, "head_dim": HD, "vocab_size": VOCAB,
                  "num_experts_per_tok": TOPK, "tie_word_embeddings": False, "hidden_act": "silu",
                  "rms_norm_eps": self.eps, "bos_token_id": 0, "eos_token_id": VOCAB - 1,
                  "dtype": "bfloat16"}
        if self.gpt_oss:
            config = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
                      "intermediate_size": self.inter, "num_local_experts": E,
                      "max_position_embeddings": 256, "sliding_window": self.window,
                      "layer_types": ["sliding_attention", "full_attention"],
                      "attention_bias": True, "swiglu_limit": 7.0,
                      "rope_parameters": {"rope_type": "yarn", "rope_theta": 150000.0,
                                          "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                          "truncate": False,
                                          "original_max_position_embeddings": 64}}
            if self.family == "gpt-oss-mxfp4":
                config["quantization_config"] = {
                    "quant_method": "mxfp4",
                    "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                               "model.embed_tokens", "lm_head"]}
        else:
            config = {"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe",
                      "intermediate_size": 2 * self.inter, "moe_intermediate_size": self.inter,
                      "shared_expert_intermediate_size": 48, "num_experts": E,
                      "norm_topk_prob": False, "decoder_sparse_step": 1, "mlp_only_layers": [1],
                      "max_position_embeddings": 256, "use_sliding_window": True,
                      "sliding_window": self.window, "max_window_layers": 1,
                      "layer_types": ["sliding_attention", "full_attention", "full_attention"],
                      "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}
        config.update(common)
        return config

    def t(self, name, cols=None):
        _, shape, values = self.w.tensors[name]
        return rows_of(values, cols or shape[-1]) if len(shape) > 1 else values

    def experts_gpt_oss(self, p):
        """Per expert: gate_up rows ([2I] of [H]), its bias, down rows ([H] of [I]), bias."""
        I = self.inter
        m = p + "mlp.experts."
        gate_up_bias = self.t(m + "gate_up_proj_bias")
        down_bias = self.t(m + "down_proj_bias")
        out = []
        for e in range(E):
            if self.family == "gpt-oss-mxfp4":
                mats = []
                for name, rows, cols in (("gate_up_proj", 2 * I, H), ("down_proj", H, I)):
                    blocks = self.w.tensors[m + name + "_blocks"][2]
                    scales = self.w.tensors[m + name + "_scales"][2]
                    groups = cols // 32
                    mat = []
                    for r in range(rows):
                        row = []
                        for g in range(groups):
                            at = (e * rows + r) * groups + g
                            factor = 2.0 ** (scales[at] - 127)
                            for byte in blocks[at * 16:(at + 1) * 16]:
                                row += [FP4[byte & 15] * factor, FP4[byte >> 4] * factor]
                        mat.append(row)
                    mats.append(mat)
                gate_up, down = mats
            else:
                # x @ W[e] with W[e] [H, 2I]: output column j is W[e][:, j].
                w = self.w.tensors[m + "gate_up_proj"][2]
                gate_up = [[w[(e * H + h) * 2 * I + j] for h in range(H)] for j in range(2 * I)]
                d = self.w.tensors[m + "down_proj"][2]
                down = [[d[(e * I + i) * H + j] for i in range(I)] for j in range(H)]
            out.append((gate_up, gate_up_bias[e], down, down_bias[e]))
        return out

    def mlp(self, layer, x):
        p = f"model.layers.{layer}."
        m = p + "mlp."
        if self.gpt_oss:
            if layer not in self._experts:
                self._experts[layer] = self.experts_gpt_oss(p)
            logits = linear(x, self.t(m + "router.weight"), self.t(m + "router.bias"))
            top = sorted(range(E), key=lambda e: (-logits[e], e))[:TOPK]
            weights = softmax([logits[e] for e in top])
            out = [0.0] * H
            for e, weight in zip(top, weights):
                gate_up_w, gate_up_b, down_w, down_b = self._experts[layer][e]
                gate_up = linear(x, gate_up_w, gate_up_b)
                h = []
                for i in range(self.inter):
                    g = min(gate_up[2 * i], 7.0)
                    u = min(max(gate_up[2 * i + 1], -7.0), 7.0)
                    h.append((u + 1) * g * sigmoid(g * 1.702))
                y = linear(h, down_w, down_b)
                out = [o + weight * v for o, v in zip(out, y)]
            return out
        if layer == 1:
            return self.dense(x, m)
        probs = softmax(linear(x, self.t(m + "gate.weight")))
        top = sorted(range(E), key=lambda e: (-probs[e], e))[:TOPK]
        out = [0.0] * H
        for e in top:
            y = self.dense(x, m + f"experts.{e}.")
            out = [o + probs[e] * v for o, v in zip(out, y)]
        shared = self.dense(x, m + "shared_expert.")
        gate = sigmoid(dot(x, self.t(m + "shared_expert_gate.weight")[0]))
        return [o + gate * s for o, s in zip(out, shared)]

    def dense(self, x, prefix):
        g = linear(x, self.t(prefix + "gate_proj.weight"))
        u = linear(x, self.t(prefix + "up_proj.weight"))
        return linear([silu(a) * b for a, b in zip(g, u)], self.t(prefix + "down_proj.weight"))

    def step(self, token, pos, cache):
        """The logits after `token` at `pos`; cache holds each layer's k, v."""
        x = list(self.t("model.embed_tokens.weight")[token])
        for layer in range(self.layers):
            p = f"model.layers.{layer}."
            a = p + "self_attn."
            h = rms_norm(x, self.t(p + "input_layernorm.weight"), self.eps)
            q = linear(h, self.t(a + "q_proj.weight"), self.t(a + "q_proj.bias"))
            k = linear(h, self.t(a + "k_proj.weight"), self.t(a + "k_proj.bias"))
            v = linear(h, self.t(a + "v_proj.weight"), self.t(a + "v_proj.bias"))
            q = [rotate(q[i * HD:(i + 1) * HD], pos, self.inv_freq, self.rope_scaling) for i in range(NH)]
            k = [rotate(k[i * HD:(i + 1) * HD], pos, self.inv_freq, self.rope_scaling) for i in range(KV)]
            v = [v[i * HD:(i + 1) * HD] for i in range(KV)]
            cache[layer].append((pos, k, v))
            attn = []
            for head in range(NH):
                g = head // (NH // KV)
                keys = [(kk[g], vv[g]) for j, kk, vv in cache[layer]
                        if not self.sliding[layer] or pos - j < self.window]
                scores = [dot(q[head], kk) / math.sqrt(HD) for kk, _ in keys]
                if self.gpt_oss:
                    scores.append(self.t(a + "sinks")[head])
                probs = softmax(scores)[:len(keys)]
                attn += [math.fsum(pr * vv[d] for pr, (_, vv) in zip(probs, keys)) for d in range(HD)]
            o = linear(attn, self.t(a + "o_proj.weight"),
                       self.t(a + "o_proj.bias") if self.gpt_oss else None)
            x = [r + y for r, y in zip(x, o)]
            h = rms_norm(x, self.t(p + "post_attention_layernorm.weight"), self.eps)
            x = [r + y for r, y in zip(x, self.mlp(layer, h))]
        h = rms_norm(x, self.t("model.norm.weight"), self.eps)
        return linear(h, self.t("lm_head.weight"))

    def goldens(self, ids):
        self._experts = {}
        cache = [[] for _ in range(self.layers)]
        logits = [self.step(t, pos, cache) for pos, t in enumerate(ids)]
        greedy, last = [], logits[-1]
        for _ in range(GREEDY):
            token = max(range(VOCAB), key=lambda i: (last[i], -i))
            greedy.append(token)
            last = self.step(token, len(ids) + len(greedy) - 1, cache)
        return logits, greedy


def top2_margin(row):
    a, b = sorted(row, reverse=True)[:2]
    return a - b


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in FAMILIES:
        sys.exit(__doc__)
    family, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    model = Model(family)
    rng = random.Random(5)
    ids = [rng.randrange(1, VOCAB - 1) for _ in range(PROMPT)]
    logits, greedy = model.goldens(ids)
    model.w.write(out / "model.safetensors")
    (out / "config.json").write_text(json.dumps(model.config, indent=1))
    flat = [v for row in logits for v in row]
    data = struct.pack(f"<{len(flat)}f", *flat)
    header = json.dumps({"logits": {"dtype": "F32", "shape": [PROMPT, VOCAB],
                                    "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    (out / "golden_logits.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + data)
    golden = {"architecture": model.config["architectures"][0], "input_ids": ids,
              "greedy_ids": greedy, "eos_token_id": VOCAB - 1,
              "distinct_greedy_ids": len(set(greedy)),
              "min_top2_margin_logits": min(top2_margin(r) for r in logits),
              "compute": "float64, standard-library Python (make-moe-reference-model.py), "
                         "on the bf16 weights"}
    (out / "golden.json").write_text(json.dumps(golden, indent=1))
    print(f"{family}: {len(set(greedy))} distinct greedy ids of {GREEDY}, "
          f"min top-2 margin {golden['min_top2_margin_logits']:.3g}")


if __name__ == "__main__":
    main()
