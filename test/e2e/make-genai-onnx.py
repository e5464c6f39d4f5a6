#!/usr/bin/env python3
"""Writes the ONNX graph onnxruntime-genai's model builder makes of a tiny
checkpoint for its CPU provider (standard library only: CI has neither onnx
nor torch, so the protobuf is written here). Two architectures:

  GptOssForCausalLM (a checkpoint of make-moe-reference-model.py), after the
  builder's GPTOSSModel (builders/gptoss.py, make_moe_fused): one packed QKV
  MatMul + bias Add into GroupQueryAttention (rotation fused from cos/sin
  caches that hold yarn's attention factor, head_sink the sinks,
  local_window_size the window on even layers); o_proj MatMul + Add; the
  router MatMul + Add + Reshape to [tokens, experts]; com.microsoft MoE
  (float experts) or QMoE (--experts int4|int8: symmetric codes, 4-bit
  blocks with scale max|w| / 8 and codes q + 8, or 8-bit with zero point
  128, one scale a row unless --block-size) with gpt-oss's clamped SwiGLU
  (activation_alpha 1.702, activation_beta 1, swiglu_limit) and the
  experts' biases; fc1 holds gate and up interleaved (swiglu_fusion 1, the
  builder's), or --fusion 2 one after the other.

  Phi3ForCausalLM (test/models/phi3), after Phi3MiniLongRoPEModel
  (builders/phi.py, MistralModel): the packed qkv_proj MatMul into
  GroupQueryAttention (local_window_size the sliding window), the rotation
  fused from caches of the rotated dims only (partial_rotary_factor) chosen
  by an If on the total length: short factors' caches of
  original_max_position_embeddings rows, long factors' of
  max_position_embeddings rows, each times longrope's attention factor
  (make_rotary_embedding_multi_cache); gate_up_proj split into gate and up
  MatMuls (make_mlp_unpacked), Sigmoid + Mul, down MatMul.

  make-genai-onnx.py CHECKPOINT OUT [--experts float|int4|int8]
      [--block-size N] [--fusion 1|2] [--provider cpu|cuda]

Both start from SimplifiedLayerNormalization, then SkipSimplified ones whose
output 3 is the residual, and end in the LM head MatMul; seqlens_k and
total_sequence_length come from attention_mask as the builder computes
them. OUT gets model.onnx (weights inline, float32) and genai_config.json.
onnxruntime 1.31 (onnxruntime-node, CPU) runs these graphs to the
checkpoints' goldens; test/models/onnx/README.md says how.
"""
import argparse
import json
import math
import struct
from pathlib import Path

FLOAT, UINT8, INT32, INT64 = 1, 2, 6, 7


# --- protobuf, the few ONNX messages the graph needs ----------------------

def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, wire, payload):
    return varint(number << 3 | wire) + payload


def f_int(number, value):
    return field(number, 0, varint(value))


def f_bytes(number, data):
    if isinstance(data, str):
        data = data.encode()
    return field(number, 2, varint(len(data)) + data)


def f_float(number, value):
    return field(number, 5, struct.pack("<f", value))


def tensor(name, dims, data_type, raw):
    msg = b"".join(f_int(1, d) for d in dims)
    return msg + f_int(2, data_type) + f_bytes(8, name) + f_bytes(9, raw)


def float_tensor(name, dims, values):
    return tensor(name, dims, FLOAT, struct.pack(f"<{len(values)}f", *values))


def int64_tensor(name, dims, values):
    return tensor(name, dims, INT64, struct.pack(f"<{len(values)}q", *values))


class Subgraph(bytes):
    """A serialized GraphProto, as an attribute value (If's branches)."""


def attribute(name, value):
    msg = f_bytes(1, name)
    if isinstance(value, Subgraph):
        return msg + f_bytes(6, value) + f_int(20, 5)
    if isinstance(value, float):
        return msg + f_float(2, value) + f_int(20, 1)
    if isinstance(value, int):
        return msg + f_int(3, value) + f_int(20, 2)
    if isinstance(value, str):
        return msg + f_bytes(4, value) + f_int(20, 3)
    if isinstance(value, list):
        return msg + b"".join(f_int(8, v) for v in value) + f_int(20, 7)
    return msg + f_bytes(5, value) + f_int(20, 4)  # a tensor


def value_info(name, elem_type, dims):
    shape = b""
    for d in dims:
        dim = f_bytes(2, d) if isinstance(d, str) else f_int(1, d)
        shape += f_bytes(1, dim)
    tensor_type = f_int(1, elem_type) + f_bytes(2, shape)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor_type))


class Graph:
    def __init__(self):
        self.nodes, self.initializers, self.inputs, self.outputs = [], [], [], []
        self.constants = set()

    def node(self, op, name, inputs, outputs=None, domain="", **attrs):
        outputs = outputs or [f"{name}/output_0"]
        msg = b"".join(f_bytes(1, i) for i in inputs)
        msg += b"".join(f_bytes(2, o) for o in outputs)
        msg += f_bytes(3, name) + f_bytes(4, op)
        msg += b"".join(f_bytes(5, attribute(k, v)) for k, v in attrs.items())
        if domain:
            msg += f_bytes(7, domain)
        self.nodes.append(msg)
        return outputs[0] if len(outputs) == 1 else outputs

    def constant(self, values, scalar=False):
        """An int64 Constant node named as the builder names them."""
        key = str(values[0]) if scalar else str(list(values))
        out = f"/model/constants/INT64/{key}"
        if out not in self.constants:
            self.constants.add(out)
            self.node("Constant", f"/model/constant_nodes/INT64/{key}", [], [out],
                      value=int64_tensor("", [] if scalar else [len(values)], values))
        return out

    def initializer(self, raw_tensor):
        self.initializers.append(raw_tensor)

    def graph(self, name="main_graph"):
        graph = b"".join(f_bytes(1, n) for n in self.nodes) + f_bytes(2, name)
        graph += b"".join(f_bytes(5, t) for t in self.initializers)
        graph += b"".join(f_bytes(11, v) for v in self.inputs)
        graph += b"".join(f_bytes(12, v) for v in self.outputs)
        return Subgraph(graph)

    def model(self):
        graph = self.graph()
        opsets = f_bytes(8, f_bytes(1, "") + f_int(2, 21))
        opsets += f_bytes(8, f_bytes(1, "com.microsoft") + f_int(2, 1))
        return (f_int(1, 10) + opsets + f_bytes(2, "onnxruntime-genai") +
                f_bytes(7, graph))


# --- the checkpoint --------------------------------------------------------

def read_checkpoint(path):
    data = (path / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "BF16":
            raise SystemExit(f"{name}: {info['dtype']}; the builder's path needs a bf16 checkpoint")
        s, e = info["data_offsets"]
        words = struct.unpack(f"<{(e - s) // 2}H", body[s:e])
        values = list(struct.unpack(f"<{len(words)}f", struct.pack(f"<{len(words)}I",
                                                                   *[w << 16 for w in words])))
        out[name] = (info["shape"], values)
    return out


def transposed(values, rows, cols):
    """A [rows, cols] row-major matrix as [cols, rows]."""
    return [values[r * cols + c] for c in range(cols) for r in range(rows)]


def quantize_rows(matrix, cols, bits, block):
    """Symmetric codes as the builder's CPU QMoE quantizer makes them:
    per row (block = cols) or per block of inputs, scale max|w| / 2^(bits-1)
    (as float16), q = clamp(round(w / s)); stored q + 8 two a byte (low
    nibble first) for 4 bits, q + 128 for 8."""
    half = 1 << (bits - 1)
    codes, scales = [], []
    for start in range(0, len(matrix), cols):
        row = matrix[start:start + cols]
        qs = []
        for b in range(0, cols, block):
            part = row[b:b + block]
            s = max(max(abs(v) for v in part) / half, 1e-8)
            s = struct.unpack("<e", struct.pack("<e", s))[0]
            scales.append(s)
            qs += [max(-half, min(half - 1, round(v / s))) + half for v in part]
        if bits == 4:
            codes += [qs[i] | qs[i + 1] << 4 for i in range(0, cols, 2)]
        else:
            codes += qs
    return bytes(codes), scales


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def rope_caches(inv_freq, rows, scaling):
    """cos and sin of p * inv_freq (in float32, as torch computes them) for
    positions p < rows, times the attention scaling: [rows, len(inv_freq)]."""
    angles = [f32(p * f) for p in range(rows) for f in inv_freq]
    return [math.cos(a) * scaling for a in angles], [math.sin(a) * scaling for a in angles]


def yarn_inv_freq(rope, head_dim):
    """The builder's make_inv_freq_rescaled_with_ntk (yarn, no truncation)."""
    theta, factor = rope["rope_theta"], rope["factor"]
    original = rope["original_max_position_embeddings"]
    half = head_dim // 2
    correction = lambda rot: half * math.log(original / (rot * 2 * math.pi)) / math.log(theta)
    low, high = correction(rope["beta_fast"]), correction(rope["beta_slow"])
    low, high = max(low, 0.0), min(high, head_dim - 1)
    if low == high:
        high += 0.001
    inv = []
    for i in range(half):
        base = 1.0 / theta ** (2 * i / head_dim)
        mask = 1 - min(max((i - low) / (high - low), 0.0), 1.0)
        inv.append(f32((base / factor) * (1 - mask) + base * mask))
    return inv, 0.1 * math.log(factor) + 1.0


class Writer:
    """The builder's graph of one checkpoint: its inputs and outputs, the
    mask subgraph, the norms and the residual stream."""

    def __init__(self, config, weights):
        self.config, self.w = config, weights
        self.g = Graph()
        c = config
        self.H, self.NH, self.KV = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.HD = c.get("head_dim") or self.H // self.NH
        self.V, self.layers, self.eps = c["vocab_size"], c["num_hidden_layers"], c["rms_norm_eps"]
        self.context = c["max_position_embeddings"]
        g = self.g
        g.inputs.append(value_info("input_ids", INT64, ["batch_size", "sequence_length"]))
        g.inputs.append(value_info("attention_mask", INT64, ["batch_size", "total_sequence_length"]))
        for kind in ("key", "value"):
            for i in range(self.layers):
                g.inputs.append(value_info(f"past_key_values.{i}.{kind}", FLOAT,
                                           ["batch_size", self.KV, "past_sequence_length", self.HD]))
        g.outputs.append(value_info("logits", FLOAT, ["batch_size", "sequence_length", self.V]))
        for kind in ("key", "value"):
            for i in range(self.layers):
                g.outputs.append(value_info(f"present.{i}.{kind}", FLOAT,
                                            ["batch_size", self.KV, "total_sequence_length", self.HD]))
        # seqlens_k = sum(mask) - 1 and total_sequence_length = mask's length.
        sub = "/model/attn_mask_reformat/attn_mask_subgraph"
        one = g.constant([1])
        total = g.node("ReduceSum", f"{sub}/ReduceSum", ["attention_mask", one], keepdims=0)
        seqlens = g.node("Sub", f"{sub}/Sub", [total, one])
        self.seqlens = g.node("Cast", f"{sub}/Sub/Cast", [seqlens], to=INT32)
        shape = g.node("Shape", f"{sub}/Shape", ["attention_mask"])
        self.length64 = g.node("Gather", f"{sub}/Gather", [shape, g.constant([1], scalar=True)], axis=0)
        self.length = g.node("Cast", f"{sub}/Gather/Cast", [self.length64], to=INT32)
        self.residual, self.skip = None, None
        self.tied = set()
        self.int4 = False
        # Gemma's norms multiply by 1 + w; the builder stores the sum.
        self.norm_offset = 0.0

    def weight(self, name, dims, values):
        self.g.initializer(float_tensor(name, dims, values))
        return name

    def tensor(self, name):
        return self.w[name][1]

    def matmul(self, name, x, hf_weight, rows, cols, weight_name, quantize=True):
        """MatMul by the transposed [rows, cols] HF weight, [cols, rows]
        stored; with --linears int4 (and `quantize`), MatMulNBits of its
        symmetric 4-bit blocks of 32 along the inputs (scale max|w| / 7,
        codes q + 8), as the builder's int4 CPU export writes them."""
        if not (self.int4 and quantize):
            w = self.weight(weight_name, [cols, rows], transposed(hf_weight, rows, cols))
            return self.g.node("MatMul", f"{name}/MatMul", [x, w])
        base = weight_name[:-len(".weight")] if weight_name.endswith(".weight") else weight_name
        codes, scales = [], []
        for r in range(rows):
            row = hf_weight[r * cols:(r + 1) * cols]
            q = []
            for b in range(0, cols, 32):
                part = row[b:b + 32]
                scale = f32(max(abs(v) for v in part) / 7.0) or 1.0
                scales.append(scale)
                q += [max(-8, min(7, round(v / scale))) + 8 for v in part]
            codes += [q[i] | q[i + 1] << 4 for i in range(0, cols, 2)]
        self.g.initializer(tensor(base + ".weight_Q4", [rows, cols // 32, 16], UINT8, bytes(codes)))
        self.weight(base + ".weight_scales", [rows * cols // 32], scales)
        return self.g.node("MatMulNBits", f"{name}/MatMul_Q4",
                           [x, base + ".weight_Q4", base + ".weight_scales"],
                           [f"{name}/MatMul/output_0"], domain="com.microsoft",
                           K=cols, N=rows, bits=4, block_size=32, accuracy_level=4)

    def norm(self, location, hf_name, last=False):
        """The norm before a block: Simplified for the first, else Skip with
        the residual sum as output 3."""
        nw = self.weight(hf_name.replace("model.norm", f"model.layers.{self.layers}.final_norm_layernorm"),
                         [self.H], [v + self.norm_offset for v in self.tensor(hf_name)])
        if self.skip is None:
            return self.g.node("SimplifiedLayerNormalization", f"{location}/LayerNorm",
                               [self.residual, nw], [f"{location}/output_0"],
                               epsilon=self.eps, axis=-1, stash_type=1)
        outputs = [f"{location}/output_0"] if last else [
            f"{location}/output_0", "", "", f"{location}/output_3"]
        outs = self.g.node("SkipSimplifiedLayerNormalization", f"{location}/SkipLayerNorm",
                           [self.residual, self.skip, nw], outputs, domain="com.microsoft",
                           epsilon=self.eps)
        if last:
            return outs
        self.residual = outs[3]
        return outs[0]

    def attention(self, layer, h, qkv, bias, cos, sin, window, sinks=None, scale=None,
                  softcap=0.0, qk_norms=None):
        """The packed QKV MatMul [+ bias Add] into GroupQueryAttention; with
        qk_norms (q's and k's norm weights), split into Q, K and V whose
        heads are normed first (Reshape, SimplifiedLayerNormalization,
        Reshape back)."""
        g, base = self.g, f"/model/layers.{layer}"
        width = (self.NH + 2 * self.KV) * self.HD
        y = self.matmul(f"{base}/attn/qkv_proj", h, qkv, width, self.H,
                        f"model.layers.{layer}.attn.qkv_proj.MatMul.weight")
        if bias is not None:
            b = self.weight(f"model.layers.{layer}.attn.qkv_proj.Add.bias", [width], bias)
            y = g.node("Add", f"{base}/attn/qkv_proj/Add", [y, b])
        qkv_inputs = [y, "", ""]
        if qk_norms:
            sizes = g.constant([self.NH * self.HD, self.KV * self.HD, self.KV * self.HD])
            q, k, v = g.node("Split", f"{base}/attn/qkv_proj/Split", [y, sizes],
                             [f"{base}/attn/qkv_proj/Split/output_{i}" for i in range(3)], axis=-1)
            normed = []
            for which, x, heads, values in (("q", q, self.NH, qk_norms[0]),
                                            ("k", k, self.KV, qk_norms[1])):
                loc = f"{base}/attn/{which}_norm"
                x = g.node("Reshape", f"{loc}/Reshape_1", [x, g.constant([0, -1, self.HD])])
                nw = self.weight(f"model.layers.{layer}.attn.{which}_norm.layernorm.weight",
                                 [self.HD], [v + self.norm_offset for v in values])
                x = g.node("SimplifiedLayerNormalization", f"{loc}/SimplifiedLayerNormalization",
                           [x, nw], epsilon=self.eps, axis=-1, stash_type=1)
                normed.append(g.node("Reshape", f"{loc}/Reshape_2",
                                     [x, g.constant([0, -1, heads * self.HD])]))
            qkv_inputs = [normed[0], normed[1], v]
        return g.node(
            "GroupQueryAttention", f"{base}/attn/GroupQueryAttention",
            qkv_inputs + [f"past_key_values.{layer}.key", f"past_key_values.{layer}.value",
                          self.seqlens, self.length, cos, sin, "", "", sinks or ""],
            [f"{base}/attn/GroupQueryAttention/output_0", f"present.{layer}.key",
             f"present.{layer}.value"], domain="com.microsoft",
            num_heads=self.NH, kv_num_heads=self.KV,
            scale=scale if scale is not None else 1.0 / math.sqrt(self.HD), softcap=softcap,
            do_rotary=1, rotary_interleaved=0, local_window_size=window)[0]

    def lm_head(self, softcap=0.0):
        h = self.norm(f"/model/layers.{self.layers}/final_norm_layernorm", "model.norm.weight",
                      last=True)
        if "lm_head.MatMul.weight" not in self.tied:
            self.weight("lm_head.MatMul.weight", [self.H, self.V],
                        transposed(self.tensor("lm_head.weight"), self.V, self.H))
        out = ["logits"] if not softcap else None
        y = self.g.node("MatMul", "/lm_head/MatMul", [h, "lm_head.MatMul.weight"], out)
        if softcap:
            # Final logit softcapping: Div, Tanh, Mul.
            cap = self.scalar(softcap)
            y = self.g.node("Div", "/lm_head/softcap/Div", [y, cap])
            y = self.g.node("Tanh", "/lm_head/softcap/Tanh", [y])
            self.g.node("Mul", "/lm_head/softcap/Mul", [y, cap], ["logits"])

    def scalar(self, value):
        """A float32 scalar constant, named as the builder names them."""
        name = f"/model/constants/FLOAT/{value}"
        if name not in self.g.constants:
            self.g.constants.add(name)
            self.g.node("Constant", f"/model/constant_nodes/FLOAT/{value}", [], [name],
                        value=float_tensor("", [], [value]))
        return name

    def embedding(self, scale=1.0):
        if "lm_head.weight" in self.w:
            table = self.weight("model.embed_tokens.weight", [self.V, self.H],
                                self.tensor("model.embed_tokens.weight"))
        else:
            # Tied: the LM head's [H, V] weight, transposed back.
            self.weight("lm_head.MatMul.weight", [self.H, self.V],
                        transposed(self.tensor("model.embed_tokens.weight"), self.V, self.H))
            self.tied.add("lm_head.MatMul.weight")
            table = self.g.node("Transpose", "/model/embed_tokens/Transpose",
                                ["lm_head.MatMul.weight"], perm=[1, 0])
        x = self.g.node("Gather", "/model/embed_tokens/Gather", [table, "input_ids"])
        if scale != 1.0:
            x = self.g.node("Mul", "/model/embed_tokens/Mul", [x, self.scalar(scale)])
        self.residual = x


def write_gpt_oss(wr, args):
    c, g = wr.config, wr.g
    H, I, E = wr.H, c["intermediate_size"], c["num_local_experts"]
    inv, scaling = yarn_inv_freq(c["rope_parameters"], wr.HD)
    cos, sin = rope_caches(inv, wr.context, scaling)
    wr.weight("cos_cache", [wr.context, wr.HD // 2], cos)
    wr.weight("sin_cache", [wr.context, wr.HD // 2], sin)
    wr.embedding()
    for layer in range(wr.layers):
        p, base = f"model.layers.{layer}.", f"/model/layers.{layer}"
        a = p + "self_attn."
        h = wr.norm(f"{base}/input_layernorm", p + "input_layernorm.weight")
        qkv = sum((wr.tensor(a + f + ".weight") for f in ("q_proj", "k_proj", "v_proj")), [])
        bias = sum((wr.tensor(a + f + ".bias") for f in ("q_proj", "k_proj", "v_proj")), [])
        sinks = wr.weight(f"model.layers.{layer}.attn.sinks", [wr.NH], wr.tensor(a + "sinks"))
        window = c["sliding_window"] if layer % 2 == 0 else -1
        attn = wr.attention(layer, h, qkv, bias, "cos_cache", "sin_cache", window, sinks)
        o = wr.matmul(f"{base}/attn/o_proj", attn, wr.tensor(a + "o_proj.weight"), H,
                      wr.NH * wr.HD, f"model.layers.{layer}.attn.o_proj.MatMul.weight")
        ob = wr.weight(f"model.layers.{layer}.attn.o_proj.Add.bias", [H], wr.tensor(a + "o_proj.bias"))
        wr.skip = g.node("Add", f"{base}/attn/o_proj/Add", [o, ob])
        h = wr.norm(f"{base}/post_attention_layernorm", p + "post_attention_layernorm.weight")

        # Router and experts (make_moe_fused).
        m, moe = p + "mlp.", f"{base}/moe"
        r = wr.matmul(f"{moe}/router", h, wr.tensor(m + "router.weight"), E, H,
                      f"model.layers.{layer}.moe.router.MatMul.weight")
        rb = wr.weight(f"model.layers.{layer}.moe.router.Add.bias", [E], wr.tensor(m + "router.bias"))
        r = g.node("Add", f"{moe}/router/Add", [r, rb])
        r = g.node("Reshape", f"{moe}/router/Reshape", [r, g.constant([-1, E])])
        # HF stores the experts inputs first; the op takes [E, N, K].
        gate_up, down = wr.tensor(m + "experts.gate_up_proj"), wr.tensor(m + "experts.down_proj")
        fc1 = sum((transposed(gate_up[e * H * 2 * I:(e + 1) * H * 2 * I], H, 2 * I)
                   for e in range(E)), [])
        fc2 = sum((transposed(down[e * I * H:(e + 1) * I * H], I, H) for e in range(E)), [])
        b1 = wr.tensor(m + "experts.gate_up_proj_bias")
        if args.fusion == 2:
            # Each expert's gate rows, then its up rows.
            def split(values, cols):
                out = []
                for e in range(E):
                    rows = [values[(e * 2 * I + r) * cols:(e * 2 * I + r + 1) * cols]
                            for r in range(2 * I)]
                    out += sum(rows[0::2], []) + sum(rows[1::2], [])
                return out
            fc1, b1 = split(fc1, H), split(b1, 1)
        names = {k: f"model.layers.{layer}.moe.experts.{k}" for k in ("gate_up_proj", "down_proj")}
        b1 = wr.weight(names["gate_up_proj"] + ".bias", [E, 2 * I], b1)
        b2 = wr.weight(names["down_proj"] + ".bias", [E, H], wr.tensor(m + "experts.down_proj_bias"))
        attrs = dict(activation_alpha=1.702, activation_beta=1.0, activation_type="swiglu",
                     k=c["num_experts_per_tok"], normalize_routing_weights=1,
                     swiglu_fusion=args.fusion, use_sparse_mixer=0,
                     swiglu_limit=float(c["swiglu_limit"]))
        if args.experts == "float":
            w1 = wr.weight(names["gate_up_proj"] + ".weight", [E, 2 * I, H], fc1)
            w2 = wr.weight(names["down_proj"] + ".weight", [E, H, I], fc2)
            wr.skip = g.node("MoE", f"{moe}/MoE", [h, r, w1, b1, w2, b2],
                             domain="com.microsoft", **attrs)
            continue
        bits = 4 if args.experts == "int4" else 8
        quantized = []
        for proj, values, rows, cols in (("gate_up_proj", fc1, 2 * I, H), ("down_proj", fc2, H, I)):
            block = args.block_size or cols
            codes, scales = quantize_rows(values, cols, bits, block)
            name = names[proj]
            g.initializer(tensor(name + ".qweight", [E, rows, cols * bits // 8], UINT8, codes))
            wr.weight(name + ".scales", [E, rows] + ([cols // block] if args.block_size else []),
                      scales)
            quantized.append(name)
        if args.block_size:
            attrs["block_size"] = args.block_size
        wr.skip = g.node("QMoE", f"{moe}/QMoE",
                         [h, r, quantized[0] + ".qweight", quantized[0] + ".scales", b1,
                          quantized[1] + ".qweight", quantized[1] + ".scales", b2,
                          "", "", "", "", "", ""],
                         domain="com.microsoft", expert_weight_bits=bits, **attrs)
    wr.lm_head()


def write_phi3(wr, args):
    c, g = wr.config, wr.g
    H, I = wr.H, c["intermediate_size"]
    rope = c["rope_parameters"]
    rotary = int(c.get("partial_rotary_factor", 1.0) * wr.HD)

    def inv_freq(divisors):
        return [f32(1.0 / (d * rope["rope_theta"] ** (2 * i / rotary)))
                for i, d in enumerate(divisors)]

    if rope.get("rope_type", "default") != "longrope":
        # Phi3MiniModel (Phi-3-mini-4k): one pair of caches.
        cos, sin = rope_caches(inv_freq([1.0] * (rotary // 2)), wr.context, 1.0)
        wr.weight("cos_cache", [wr.context, rotary // 2], cos)
        wr.weight("sin_cache", [wr.context, rotary // 2], sin)
        return write_phi3_layers(wr)
    original = c["original_max_position_embeddings"]
    # longrope's attention factor, the same for both caches (make_mscale_su).
    factor = wr.context / original
    scaling = math.sqrt(1 + math.log(factor) / math.log(original)) if factor > 1 else 1.0

    # The If on total length > original_max_position_embeddings choosing the
    # long factors' caches (then) or the short ones' (else).
    caches = {}
    for which, divisors, rows in (("large", rope["long_factor"], wr.context),
                                  ("small", rope["short_factor"], original)):
        cos, sin = rope_caches(inv_freq(divisors), rows, scaling)
        branch = Graph()
        for kind, values in (("cos", cos), ("sin", sin)):
            out = f"{kind}_cache_{which}"
            branch.node("Constant", f"/{which}/{kind}_cache/Constant", [], [out],
                        value=float_tensor("", [rows, rotary // 2], values))
            branch.outputs.append(value_info(out, FLOAT, [rows, rotary // 2]))
        caches[which] = branch.graph(f"{which}_rope_caches_graph")
    longer = g.node("Greater", "/model/rope_caches_subgraph/Greater",
                    [wr.length64, g.constant([original], scalar=True)])
    g.node("If", "/model/rope_caches_subgraph/If", [longer], ["cos_cache", "sin_cache"],
           then_branch=caches["large"], else_branch=caches["small"])
    write_phi3_layers(wr)


def write_phi3_layers(wr):
    c, g = wr.config, wr.g
    H, I = wr.H, c["intermediate_size"]
    wr.embedding()
    window = c.get("sliding_window") or -1
    for layer in range(wr.layers):
        p, base = f"model.layers.{layer}.", f"/model/layers.{layer}"
        a, m = p + "self_attn.", p + "mlp."
        h = wr.norm(f"{base}/input_layernorm", p + "input_layernorm.weight")
        attn = wr.attention(layer, h, wr.tensor(a + "qkv_proj.weight"), None,
                            "cos_cache", "sin_cache", window)
        wr.skip = wr.matmul(f"{base}/attn/o_proj", attn, wr.tensor(a + "o_proj.weight"), H,
                            wr.NH * wr.HD, f"model.layers.{layer}.attn.o_proj.MatMul.weight")
        h = wr.norm(f"{base}/post_attention_layernorm", p + "post_attention_layernorm.weight")
        gate_up = wr.tensor(m + "gate_up_proj.weight")
        gate = wr.matmul(f"{base}/mlp/gate_proj", h, gate_up[:I * H], I, H,
                         f"model.layers.{layer}.mlp.gate_proj.MatMul.weight")
        up = wr.matmul(f"{base}/mlp/up_proj", h, gate_up[I * H:], I, H,
                       f"model.layers.{layer}.mlp.up_proj.MatMul.weight")
        sig = g.node("Sigmoid", f"{base}/mlp/act_fn/Sigmoid", [gate])
        act = g.node("Mul", f"{base}/mlp/act_fn/Mul", [gate, sig])
        prod = g.node("Mul", f"{base}/mlp/Mul", [act, up])
        wr.skip = wr.matmul(f"{base}/mlp/down_proj", prod, wr.tensor(m + "down_proj.weight"), H, I,
                            f"model.layers.{layer}.mlp.down_proj.MatMul.weight")
    wr.lm_head()


def write_gemma(wr, args):
    """Gemma2Model / Gemma3Model (builders/gemma.py): embeddings times
    round(sqrt(hidden), 2), norms of 1 + w, a norm after attention and
    after the MLP as well as before them, the attention scale
    query_pre_attn_scalar^-0.5, attention and final-logit soft-capping
    (Gemma 2), q/k norms and local/global rope caches (Gemma 3), the
    gelu_pytorch_tanh MLP as Gelu(approximate = tanh). Each layer's window
    follows config.json's layer_types (the builder hard-codes its own
    alternation)."""
    c, g = wr.config, wr.g
    H, I = wr.H, c["intermediate_size"]
    wr.norm_offset = 1.0
    gemma3 = c["architectures"][0] == "Gemma3ForCausalLM"
    rope = c["rope_parameters"]
    caches = {}
    kinds = ("full_attention", "sliding_attention") if gemma3 else ("full_attention",)
    for kind in kinds:
        params = rope[kind] if gemma3 else rope
        factor = params.get("factor", 1.0) if params.get("rope_type") == "linear" else 1.0
        inv = [f32(1.0 / (factor * params["rope_theta"] ** (2 * i / wr.HD)))
               for i in range(wr.HD // 2)]
        cos, sin = rope_caches(inv, wr.context, 1.0)
        suffix = ("_global" if kind == "full_attention" else "_local") if gemma3 else ""
        wr.weight(f"cos_cache{suffix}", [wr.context, wr.HD // 2], cos)
        wr.weight(f"sin_cache{suffix}", [wr.context, wr.HD // 2], sin)
        caches[kind] = (f"cos_cache{suffix}", f"sin_cache{suffix}")
    wr.embedding(scale=round(math.sqrt(H), 2))
    scale = c["query_pre_attn_scalar"] ** -0.5
    for layer in range(wr.layers):
        p, base = f"model.layers.{layer}.", f"/model/layers.{layer}"
        a, m = p + "self_attn.", p + "mlp."
        kind = c["layer_types"][layer]
        cos, sin = caches[kind if gemma3 else "full_attention"]
        window = c["sliding_window"] if kind == "sliding_attention" else -1
        h = wr.norm(f"{base}/input_layernorm", p + "input_layernorm.weight")
        qkv = sum((wr.tensor(a + f + ".weight") for f in ("q_proj", "k_proj", "v_proj")), [])
        norms = (wr.tensor(a + "q_norm.weight"), wr.tensor(a + "k_norm.weight")) if gemma3 else None
        attn = wr.attention(layer, h, qkv, None, cos, sin, window, scale=scale,
                            softcap=float(c.get("attn_logit_softcapping") or 0.0),
                            qk_norms=norms)
        o = wr.matmul(f"{base}/attn/o_proj", attn, wr.tensor(a + "o_proj.weight"), H,
                      wr.NH * wr.HD, f"model.layers.{layer}.attn.o_proj.MatMul.weight")
        # The norm of the attention's output, then the skip norm before the MLP.
        post = wr.weight(f"model.layers.{layer}.post_attention_layernorm.weight", [H],
                         [v + 1.0 for v in wr.tensor(p + "post_attention_layernorm.weight")])
        wr.skip = g.node("SimplifiedLayerNormalization", f"{base}/post_attention_layernorm/LayerNorm",
                         [o, post], epsilon=wr.eps, axis=-1, stash_type=1)
        h = wr.norm(f"{base}/pre_feedforward_layernorm", p + "pre_feedforward_layernorm.weight")
        gate = wr.matmul(f"{base}/mlp/gate_proj", h, wr.tensor(m + "gate_proj.weight"), I, H,
                         f"model.layers.{layer}.mlp.gate_proj.MatMul.weight")
        up = wr.matmul(f"{base}/mlp/up_proj", h, wr.tensor(m + "up_proj.weight"), I, H,
                       f"model.layers.{layer}.mlp.up_proj.MatMul.weight")
        act = g.node("Gelu", f"{base}/mlp/act_fn/FastGelu", [gate], approximate="tanh")
        prod = g.node("Mul", f"{base}/mlp/Mul", [act, up])
        down = wr.matmul(f"{base}/mlp/down_proj", prod, wr.tensor(m + "down_proj.weight"), H, I,
                         f"model.layers.{layer}.mlp.down_proj.MatMul.weight")
        post = wr.weight(f"model.layers.{layer}.post_feedforward_layernorm.weight", [H],
                         [v + 1.0 for v in wr.tensor(p + "post_feedforward_layernorm.weight")])
        wr.skip = g.node("SimplifiedLayerNormalization",
                         f"{base}/post_feedforward_layernorm/LayerNorm", [down, post],
                         epsilon=wr.eps, axis=-1, stash_type=1)
    wr.lm_head(softcap=float(c.get("final_logit_softcapping") or 0.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--experts", choices=("float", "int4", "int8"), default="float",
                    help="gpt-oss: the experts' format")
    ap.add_argument("--block-size", type=int, default=0,
                    help="gpt-oss: QMoE block size (0: one scale a row)")
    ap.add_argument("--fusion", type=int, choices=(1, 2), default=1,
                    help="gpt-oss: swiglu_fusion")
    ap.add_argument("--provider", choices=("cpu", "cuda"), default="cpu",
                    help="the provider genai_config.json names")
    ap.add_argument("--linears", choices=("float", "int4"), default="float",
                    help="Phi-3, Gemma: the layers' MatMuls as MatMulNBits (int4)")
    args = ap.parse_args()

    config = json.loads((args.checkpoint / "config.json").read_text())
    writers = {"GptOssForCausalLM": write_gpt_oss, "Phi3ForCausalLM": write_phi3,
               "Gemma2ForCausalLM": write_gemma, "Gemma3ForCausalLM": write_gemma}
    arch = config["architectures"][0]
    if arch not in writers:
        raise SystemExit(f"{arch}: only {', '.join(writers)} checkpoints are written")
    wr = Writer(config, read_checkpoint(args.checkpoint))
    wr.int4 = args.linears == "int4" and arch != "GptOssForCausalLM"
    writers[arch](wr, args)
    g = wr.g

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "model.onnx").write_bytes(g.model())
    providers = [] if args.provider == "cpu" else [{"cuda": {"enable_cuda_graph": "0"}}]
    eos = config["eos_token_id"]
    genai = {
        "model": {
            "bos_token_id": config.get("bos_token_id", 0), "context_length": wr.context,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": providers},
                "filename": "model.onnx", "head_size": wr.HD, "hidden_size": wr.H,
                "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                           "past_key_names": "past_key_values.%d.key",
                           "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
                "num_attention_heads": wr.NH, "num_hidden_layers": wr.layers,
                "num_key_value_heads": wr.KV},
            "eos_token_id": eos, "pad_token_id": eos if isinstance(eos, int) else eos[0],
            "type": config["model_type"], "vocab_size": wr.V},
        "search": {"do_sample": False, "max_length": wr.context, "num_beams": 1,
                   "past_present_share_buffer": False, "temperature": 1.0, "top_k": 1,
                   "top_p": 1.0}}
    (args.out / "genai_config.json").write_text(json.dumps(genai, indent=4))
    print(f"{args.out}: {arch}, {len(g.nodes)} nodes, {len(g.initializers)} initializers" +
          (f", experts {args.experts}" if arch == "GptOssForCausalLM" else "") +
          (f" (block {args.block_size})" if args.block_size else ""))


if __name__ == "__main__":
    main()
