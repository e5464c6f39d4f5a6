#!/usr/bin/python3
"""Writes ONNX decoder graphs of the tiny test checkpoints, shaped like Optimum's exports.

Sol's ONNX frontend has to read the files transformers.js runs: the decoders that
`optimum-cli export onnx --task text-generation-with-past` writes (torch.onnx's
TorchScript exporter tracing transformers' eager Llama/Qwen2/Qwen3/Mistral code) and
their float16 variant `model_fp16.onnx`. Neither torch nor Optimum is needed here:
this script builds the same node patterns with onnx's helper API, from the weights of
test/models/<model>/model.safetensors (bf16, parsed by hand), so that the frontend can
be tested against the goldens made by scripts/make-test-models.py.

  /usr/bin/python3 scripts/make-onnx-test-models.py
      writes the committed set under test/models/onnx/ (model_fp16.onnx for llama,
      qwen2 and mistral, model.onnx for qwen3, config.json and generation_config.json
      copies, README.md) and checks the size budget.
  /usr/bin/python3 scripts/make-onnx-test-models.py --dtype float32 --models llama --out /tmp/onnx
      writes one variant elsewhere (any model, either dtype; no README).

Needs onnx (1.12 was used) and numpy; /usr/bin/python3 is the Debian Python that has
them. The output is deterministic: the same bytes on every run.

Graph interface (Optimum's names): inputs input_ids, attention_mask, position_ids
(int64) and past_key_values.{i}.key/.value; outputs logits and present.{i}.key/.value.
float16 files keep float32 inputs and outputs (transformers.js' float16 conversion with
keep_io_types) and Cast at the boundary; RMSNorm and Softmax are computed in float32
with Casts around them, as transformers' eager code upcasts them.
scripts/check-onnx-test-models.js runs the files with onnxruntime-node against the
goldens.
"""

import argparse
import json
import math
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # pragma: no cover - environment problem
    sys.exit("make-onnx-test-models: needs the onnx package (use /usr/bin/python3, which has onnx 1.12)")

OPSET = 17
IR_VERSION = 8
INT64_MAX = 2**63 - 1
SIZE_BUDGET_BYTES = 4_700_000  # everything under test/models/onnx/optimum*/ together
MODELS = ("llama", "qwen2", "qwen3", "mistral")
# The committed set: transformers.js' model_fp16.onnx for every model, plus model.onnx
# (float32) for the smallest one.
# Then Optimum's merged decoders (an If on use_cache_branch) for qwen2, and a graph
# without a cache (--task text-generation) for mistral.
COMMITTED = (("llama", "float16", "past"), ("qwen2", "float16", "past"), ("qwen3", "float16", "past"),
             ("mistral", "float16", "past"), ("qwen3", "float32", "past"), ("qwen2", "float16", "merged"),
             ("mistral", "float16", "none"))

# Per-model export style. All four follow what the TorchScript exporter writes for
# transformers' eager code; where transformers versions differ, the models differ, so
# that the frontend sees each variant at least once.
STYLES = {
    # transformers >= 4.48 code: view(*input_shape, -1, head_dim), reshape(*input_shape, -1),
    # attn * scaling, cos/sin * attention_scaling. NaN guard after Softmax.
    "llama": dict(explicit_heads=False, scale_op="Mul", nan_guard=True, rope_scaling_mul=True),
    # older transformers (4.3x-4.4x) code: view(bsz, q_len, num_heads, head_dim),
    # reshape(bsz, q_len, hidden), matmul(q, k^T) / sqrt(head_dim), no attention_scaling.
    "qwen2": dict(explicit_heads=True, scale_op="Div", nan_guard=False, rope_scaling_mul=False),
    "qwen3": dict(explicit_heads=False, scale_op="Mul", nan_guard=False, rope_scaling_mul=True),
    "mistral": dict(explicit_heads=False, scale_op="Mul", nan_guard=True, rope_scaling_mul=False),
}


def log(msg):
    print(f"[make-onnx-test-models] {msg}", flush=True)


def fail(msg):
    print(f"[make-onnx-test-models] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


# ---------------------------------------------------------------------------
# Checkpoint reading
# ---------------------------------------------------------------------------

def read_safetensors(path):
    """Returns {name: float32 array}. safetensors: u64 LE header size, JSON header, data."""
    data = Path(path).read_bytes()
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen])
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        raw = data[base + start:base + end]
        shape = info["shape"]
        if info["dtype"] == "BF16":
            u16 = np.frombuffer(raw, dtype="<u2").astype(np.uint32)
            arr = (u16 << 16).view(np.float32)
        elif info["dtype"] == "F32":
            arr = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        else:
            fail(f"{path}: {name} has dtype {info['dtype']}, expected BF16 or F32")
        out[name] = arr.reshape(shape)
    return out


# ---------------------------------------------------------------------------
# RoPE inverse frequencies, float32 step by step as transformers computes them
# (modeling_rope_utils: _compute_default_rope_parameters, _compute_linear_scaling_rope_parameters,
# _compute_llama3_parameters)
# ---------------------------------------------------------------------------

def rope_inv_freq(cfg, head_dim):
    rp = cfg["rope_parameters"]
    f32 = np.float32
    base = rp["rope_theta"]
    exponent = np.arange(0, head_dim, 2, dtype=np.int64).astype(f32) / f32(head_dim)
    # torch's float32 pow is correctly rounded here; numpy's float32 pow can be 1 ulp off
    inv = (f32(1.0) / (np.float64(base) ** exponent.astype(np.float64)).astype(f32)).astype(f32)
    rtype = rp.get("rope_type", "default")
    if rtype == "default":
        return inv
    if rtype == "linear":
        return (inv / f32(rp["factor"])).astype(f32)
    if rtype == "llama3":
        factor = f32(rp["factor"])
        low, high = f32(rp["low_freq_factor"]), f32(rp["high_freq_factor"])
        old = f32(rp["original_max_position_embeddings"])
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = f32(2 * math.pi) / inv
        inv_l = np.where(wavelen > low_wavelen, inv / factor, inv).astype(f32)
        smooth = ((old / wavelen - low) / (high - low)).astype(f32)
        smoothed = ((f32(1) - smooth) * inv_l / factor + smooth * inv_l).astype(f32)
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        return np.where(medium, smoothed, inv_l).astype(f32)
    fail(f"rope_type {rtype} is not handled")


# ---------------------------------------------------------------------------
# Graph builder: names nodes and values the way the TorchScript exporter does
# (/model/layers.0/self_attn/q_proj/MatMul, ..._output_0; Constant nodes for scalars
# and shape pieces; transposed linear weights as onnx::MatMul_<n> initializers).
# ---------------------------------------------------------------------------

class Graph:
    def __init__(self, dtype):
        self.fp16 = dtype == "float16"
        self.np_c = np.float16 if self.fp16 else np.float32   # compute dtype
        self.tp_c = TensorProto.FLOAT16 if self.fp16 else TensorProto.FLOAT
        self.nodes = []
        self.inits = []
        self.init_names = set()
        self.counts = {}
        self.next_value_id = 1000

    def op(self, scope, op_type, inputs, n_out=1, **attrs):
        key = (scope, op_type)
        k = self.counts.get(key, 0)
        self.counts[key] = k + 1
        name = f"{scope}/{op_type}" + (f"_{k}" if k else "")
        outs = [f"{name}_output_{j}" for j in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, scope, value, dtype):
        t = numpy_helper.from_array(np.array(value, dtype=dtype))
        return self.op(scope, "Constant", [], value=t)

    def i64(self, scope, value):
        return self.const(scope, value, np.int64)

    def f32(self, scope, value):
        return self.const(scope, value, np.float32)

    def fc(self, scope, value):  # scalar in the compute dtype
        return self.const(scope, value, self.np_c)

    def init(self, name, arr):
        if name in self.init_names:
            fail(f"initializer {name} defined twice")
        self.init_names.add(name)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def exporter_name(self, what):
        self.next_value_id += 1
        return f"onnx::{what}_{self.next_value_id}"

    # -- shape helpers, as traced from x.shape[i] / torch.Size lists --------------
    def dim(self, scope, x, i):
        shape = self.op(scope, "Shape", [x])
        return self.op(scope, "Gather", [shape, self.i64(scope, i)], axis=0)

    def unsqueeze(self, scope, x, axes):
        return self.op(scope, "Unsqueeze", [x, self.i64(scope, axes)])

    def shape_list(self, scope, parts):
        """prim::ListConstruct of traced ints (scalars) and python ints (lists) -> Concat."""
        pieces = [self.i64(scope, [p]) if isinstance(p, int) else self.unsqueeze(scope, p, [0]) for p in parts]
        return self.op(scope, "Concat", pieces, axis=0)

    def expand(self, scope, x, parts):
        """aten::expand with a traced size list: -1 entries are turned into 1 at run time."""
        size = self.shape_list(scope, parts)
        ones = self.op(scope, "ConstantOfShape", [self.op(scope, "Shape", [size])],
                       value=numpy_helper.from_array(np.array([1], dtype=np.int64)))
        neg = self.op(scope, "Mul", [ones, self.i64(scope, -1)])
        eq = self.op(scope, "Equal", [size, neg])
        size = self.op(scope, "Where", [eq, ones, size])
        return self.op(scope, "Expand", [x, size])

    def cast(self, scope, x, to):
        return self.op(scope, "Cast", [x], to=to)


class Builder:
    """cache: "past" (text-generation-with-past: past inputs, present outputs), "first"
    (Optimum's decoder_model.onnx: no past inputs, the new keys and values as presents)
    or "none" (--task text-generation: logits only)."""

    def __init__(self, name, cfg, weights, dtype, cache="past"):
        self.name = name
        self.cache = cache
        self.cfg = cfg
        self.w = weights
        self.dtype = dtype
        self.style = STYLES[name]
        self.g = Graph(dtype)
        self.hidden = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg["num_key_value_heads"]
        self.head_dim = cfg.get("head_dim") or self.hidden // self.heads
        self.layers = cfg["num_hidden_layers"]
        self.vocab = cfg["vocab_size"]
        self.eps = cfg["rms_norm_eps"]
        self.window = cfg.get("sliding_window") if cfg.get("model_type") == "mistral" else None
        self.used = set()

    # -- weights ------------------------------------------------------------------
    def weight(self, name):
        if name not in self.w:
            fail(f"{self.name}: checkpoint has no {name}")
        self.used.add(name)
        return self.w[name]

    def param(self, name):
        """A parameter used as is (norm weights, biases, embedding): HF name, compute dtype."""
        if name not in self.g.init_names:
            self.g.init(name, self.weight(name).astype(self.g.np_c))
        return name

    def linear(self, scope, x, prefix, tied_to=None):
        g = self.g
        if tied_to:
            # The exporter folds t(embed_tokens.weight) into a transposed copy; Optimum's
            # post-processing (remove_duplicate_weights_from_tied_info ->
            # _deduplicate_gather_matmul) then drops the copy and feeds the MatMul from a
            # Transpose node (no perm) of the Gather's initializer; see finish().
            wt = f"{self.param(tied_to)}_transposed"
            self.tied_matmul = len(g.nodes)
        else:
            w = self.weight(prefix + ".weight")
            wt = g.init(g.exporter_name("MatMul"), np.ascontiguousarray(w.T).astype(g.np_c))
        y = g.op(scope, "MatMul", [x, wt])
        if prefix + ".bias" in self.w:
            y = g.op(scope, "Add", [self.param(prefix + ".bias"), y])
        return y

    # -- blocks ---------------------------------------------------------------------
    def rms_norm(self, scope, x, weight_name):
        g = self.g
        h = g.cast(scope, x, TensorProto.FLOAT)                     # hidden_states.to(torch.float32)
        var = g.op(scope, "Pow", [h, g.f32(scope, 2.0)])
        var = g.op(scope, "ReduceMean", [var], axes=[-1], keepdims=1)
        var = g.op(scope, "Add", [var, g.f32(scope, self.eps)])
        rs = g.op(scope, "Div", [g.f32(scope, 1.0), g.op(scope, "Sqrt", [var])])  # torch.rsqrt
        h = g.op(scope, "Mul", [h, rs])
        h = g.cast(scope, h, g.tp_c)                                 # .to(input_dtype)
        return g.op(scope, "Mul", [self.param(weight_name), h])

    def rotary(self, position_ids):
        g, s = self.g, "/model/rotary_emb"
        inv = rope_inv_freq(self.cfg, self.head_dim)
        inv_c = g.f32(s, inv.reshape(1, -1, 1))                     # inv_freq[None, :, None].float()
        batch = g.dim(s, position_ids, 0)
        inv_x = g.expand(s, inv_c, [batch, -1, 1])
        pos = g.unsqueeze(s, position_ids, [1])                     # position_ids[:, None, :].float()
        pos = g.cast(s, pos, TensorProto.FLOAT)
        freqs = g.op(s, "Transpose", [g.op(s, "MatMul", [inv_x, pos])], perm=[0, 2, 1])
        emb = g.op(s, "Concat", [freqs, freqs], axis=-1)
        cos, sin = g.op(s, "Cos", [emb]), g.op(s, "Sin", [emb])
        if self.style["rope_scaling_mul"]:
            cos = g.op(s, "Mul", [cos, g.f32(s, 1.0)])              # * self.attention_scaling
            sin = g.op(s, "Mul", [sin, g.f32(s, 1.0)])
        return g.cast(s, cos, g.tp_c), g.cast(s, sin, g.tp_c), inv

    def causal_mask(self, attention_mask, embeds, past_key):
        """create_causal_mask / create_sliding_window_causal_mask with Optimum's vmap-free
        sdpa_mask + eager_mask: bool mask from index comparisons and the 2D padding mask,
        then where(mask, 0, finfo(dtype).min)."""
        g, s = self.g, "/model"
        if past_key is None:                                         # an empty cache: traced as 0
            past_len = g.i64(s, 0)
        else:
            past_len = g.dim(s, past_key, 2)                         # past_key_values.get_seq_length()
        q_len = g.dim(s, embeds, 1)
        batch = g.dim(s, embeds, 0)
        end = g.op(s, "Add", [past_len, q_len])
        cache_position = g.op(s, "Range", [past_len, end, g.i64(s, 1)])
        kv_len = g.op(s, "Add", [q_len, past_len])
        am = g.cast(s, attention_mask, TensorProto.BOOL)
        q_idx = g.unsqueeze(s, cache_position, [0, 1, 3])           # [1, 1, q, 1]
        b_idx = g.unsqueeze(s, g.op(s, "Range", [g.i64(s, 0), batch, g.i64(s, 1)]), [1, 2, 3])
        kv_idx = g.unsqueeze(s, g.op(s, "Range", [g.i64(s, 0), kv_len, g.i64(s, 1)]), [0, 1, 2])
        kv_idx = g.op(s, "Add", [kv_idx, g.i64(s, 0)])                # + kv_offset
        if self.window:
            # sliding_window_overlay: kv_idx > q_idx - sliding_window, and causal
            inside = g.op(s, "Greater", [kv_idx, g.op(s, "Sub", [q_idx, g.i64(s, self.window)])])
            mask = g.op(s, "And", [inside, g.op(s, "LessOrEqual", [kv_idx, q_idx])])
        else:
            mask = g.op(s, "LessOrEqual", [kv_idx, q_idx])           # causal_mask_function
        # padding_mask[batch_idx, kv_idx]: aten::index with two advanced indices, exported
        # by flattening the mask and gathering at batch_idx * kv_len + kv_idx
        am_len = g.op(s, "Gather", [g.op(s, "Shape", [am]), g.i64(s, [1])], axis=0)
        flat = g.op(s, "Reshape", [am, g.i64(s, [-1])])
        index = g.op(s, "Add", [kv_idx, g.op(s, "Mul", [b_idx, am_len])])
        pad = g.op(s, "Gather", [flat, index], axis=0)
        pad = g.op(s, "Reshape", [pad, g.op(s, "Shape", [index])])
        mask = g.op(s, "And", [mask, pad])
        mask = g.expand(s, mask, [batch, -1, q_len, kv_len])
        lowest = float(np.finfo(g.np_c).min)
        return g.op(s, "Where", [mask, g.fc(s, 0.0), g.fc(s, lowest)])

    def rotate_half(self, s, x):
        g, half = self.g, self.head_dim // 2
        x1 = g.op(s, "Slice", [x, g.i64(s, [0]), g.i64(s, [half]), g.i64(s, [-1]), g.i64(s, [1])])
        x2 = g.op(s, "Slice", [x, g.i64(s, [half]), g.i64(s, [INT64_MAX]), g.i64(s, [-1]), g.i64(s, [1])])
        return g.op(s, "Concat", [g.op(s, "Neg", [x2]), x1], axis=-1)

    def repeat_kv(self, s, x):
        g, n_rep = self.g, self.heads // self.kv_heads
        if n_rep == 1:
            return x
        batch, slen = g.dim(s, x, 0), g.dim(s, x, 2)
        x = g.unsqueeze(s, x, [2])                                  # hidden_states[:, :, None, :, :]
        x = g.expand(s, x, [batch, self.kv_heads, n_rep, slen, self.head_dim])
        return g.op(s, "Reshape", [x, g.shape_list(s, [batch, self.heads, slen, self.head_dim])])

    def attention(self, i, x, cos, sin, mask, past_k, past_v):
        g, s = self.g, f"/model/layers.{i}/self_attn"
        pre = f"model.layers.{i}.self_attn"
        q = self.linear(f"{s}/q_proj", x, f"{pre}.q_proj")
        k = self.linear(f"{s}/k_proj", x, f"{pre}.k_proj")
        v = self.linear(f"{s}/v_proj", x, f"{pre}.v_proj")
        batch, q_len = g.dim(s, x, 0), g.dim(s, x, 1)
        if self.style["explicit_heads"]:
            q_shape = g.shape_list(s, [batch, q_len, self.heads, self.head_dim])
            k_shape = g.shape_list(s, [batch, q_len, self.kv_heads, self.head_dim])
            v_shape = g.shape_list(s, [batch, q_len, self.kv_heads, self.head_dim])
        else:
            q_shape = k_shape = v_shape = g.shape_list(s, [batch, q_len, -1, self.head_dim])
        q = g.op(s, "Reshape", [q, q_shape])
        k = g.op(s, "Reshape", [k, k_shape])
        v = g.op(s, "Reshape", [v, v_shape])
        if f"{pre}.q_norm.weight" in self.w:                       # Qwen3: per-head RMSNorm before transpose
            q = self.rms_norm(f"{s}/q_norm", q, f"{pre}.q_norm.weight")
            k = self.rms_norm(f"{s}/k_norm", k, f"{pre}.k_norm.weight")
        q = g.op(s, "Transpose", [q], perm=[0, 2, 1, 3])
        k = g.op(s, "Transpose", [k], perm=[0, 2, 1, 3])
        v = g.op(s, "Transpose", [v], perm=[0, 2, 1, 3])
        c = g.unsqueeze(s, cos, [1])
        sn = g.unsqueeze(s, sin, [1])
        q = g.op(s, "Add", [g.op(s, "Mul", [q, c]), g.op(s, "Mul", [self.rotate_half(s, q), sn])])
        k = g.op(s, "Add", [g.op(s, "Mul", [k, c]), g.op(s, "Mul", [self.rotate_half(s, k), sn])])
        if past_k is None:                                          # an empty layer keeps the new ones
            present_k, present_v = k, v
        else:
            present_k = g.op(s, "Concat", [past_k, k], axis=-2)      # DynamicLayer.update: cat(dim=-2)
            present_v = g.op(s, "Concat", [past_v, v], axis=-2)
        kr = self.repeat_kv(s, present_k)
        vr = self.repeat_kv(s, present_v)
        scores = g.op(s, "MatMul", [q, g.op(s, "Transpose", [kr], perm=[0, 1, 3, 2])])
        if self.style["scale_op"] == "Mul":
            scores = g.op(s, "Mul", [scores, g.fc(s, self.head_dim ** -0.5)])
        else:
            scores = g.op(s, "Div", [scores, g.fc(s, math.sqrt(self.head_dim))])
        kv_len = g.unsqueeze(s, g.dim(s, kr, 2), [0])               # attention_mask[:, :, :, : key.shape[-2]]
        m = g.op(s, "Slice", [mask, g.i64(s, [0]), kv_len, g.i64(s, [3]), g.i64(s, [1])])
        scores = g.op(s, "Add", [scores, m])
        p = g.cast(s, scores, TensorProto.FLOAT)                   # softmax(..., dtype=torch.float32)
        p = g.op(s, "Softmax", [p], axis=-1)
        if self.style["nan_guard"]:
            p = g.op(s, "Where", [g.op(s, "IsNaN", [p]), g.f32(s, 0.0), p])
        p = g.cast(s, p, g.tp_c)                                    # .to(query.dtype)
        o = g.op(s, "MatMul", [p, vr])
        o = g.op(s, "Transpose", [o], perm=[0, 2, 1, 3])
        if self.style["explicit_heads"]:
            o_shape = g.shape_list(s, [batch, q_len, self.heads * self.head_dim])
        else:
            o_shape = g.shape_list(s, [batch, q_len, -1])
        o = g.op(s, "Reshape", [o, o_shape])
        return self.linear(f"{s}/o_proj", o, f"{pre}.o_proj"), present_k, present_v

    def mlp(self, i, x):
        g, s = self.g, f"/model/layers.{i}/mlp"
        pre = f"model.layers.{i}.mlp"
        gate = self.linear(f"{s}/gate_proj", x, f"{pre}.gate_proj")
        act = g.op(f"{s}/act_fn", "Mul", [gate, g.op(f"{s}/act_fn", "Sigmoid", [gate])])  # SiLU
        up = self.linear(f"{s}/up_proj", x, f"{pre}.up_proj")
        return self.linear(f"{s}/down_proj", g.op(s, "Mul", [act, up]), f"{pre}.down_proj")

    # -- the model ----------------------------------------------------------------
    def build(self):
        g = self.g
        F = TensorProto.FLOAT
        past = self.cache == "past"
        total = "past_sequence_length + sequence_length" if past else "sequence_length"
        kv_dims = ["batch_size", self.kv_heads, "past_sequence_length", self.head_dim]
        present_dims = ["batch_size", self.kv_heads, total, self.head_dim]
        inputs = [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch_size", total]),
            helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
        ]
        outputs = [helper.make_tensor_value_info("logits", F, ["batch_size", "sequence_length", self.vocab])]
        for i in range(self.layers):
            for kv in ("key", "value"):
                if past:
                    inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kv}", F, kv_dims))
                if self.cache != "none":
                    outputs.append(helper.make_tensor_value_info(f"present.{i}.{kv}", F, present_dims))

        def io_in(name):  # keep_io_types: float32 graph input, Cast to float16 on entry
            if not g.fp16:
                return name
            out = f"{name}_fp16"
            g.nodes.append(helper.make_node("Cast", [name], [out], name=out, to=TensorProto.FLOAT16))
            return out

        renames = {}

        def io_out(value, name):  # keep_io_types: Cast back to float32 on exit
            if not g.fp16:
                renames[value] = name
                return
            g.nodes.append(helper.make_node("Cast", [value], [name], name=f"{name}_cast_to_fp32",
                                            to=TensorProto.FLOAT))

        h = g.op("/model/embed_tokens", "Gather", [self.param("model.embed_tokens.weight"), "input_ids"])
        cos, sin, inv = self.rotary("position_ids")
        self.inv_freq = inv
        past0 = io_in("past_key_values.0.key") if past else None
        mask = self.causal_mask("attention_mask", h, past0)
        presents = []
        for i in range(self.layers):
            pk = pv = None
            if past:
                pk = past0 if i == 0 else io_in(f"past_key_values.{i}.key")
                pv = io_in(f"past_key_values.{i}.value")
            s = f"/model/layers.{i}"
            x = self.rms_norm(f"{s}/input_layernorm", h, f"model.layers.{i}.input_layernorm.weight")
            a, present_k, present_v = self.attention(i, x, cos, sin, mask, pk, pv)
            h = g.op(s, "Add", [h, a])
            x = self.rms_norm(f"{s}/post_attention_layernorm", h, f"model.layers.{i}.post_attention_layernorm.weight")
            h = g.op(s, "Add", [h, self.mlp(i, x)])
            presents += [(present_k, f"present.{i}.key"), (present_v, f"present.{i}.value")]
        h = self.rms_norm("/model/norm", h, "model.norm.weight")
        tied = self.cfg.get("tie_word_embeddings", False)
        if tied and "lm_head.weight" in self.w:
            fail(f"{self.name}: tied embeddings but the checkpoint has lm_head.weight")
        self.tied_matmul = None
        logits = self.linear("/lm_head", h, "lm_head", tied_to="model.embed_tokens.weight" if tied else None)
        io_out(logits, "logits")
        if self.cache != "none":
            for value, name in presents:
                io_out(value, name)

        unused = sorted(set(self.w) - self.used)
        if unused:
            fail(f"{self.name}: checkpoint tensors not used: {unused}")
        nodes = g.nodes
        if self.tied_matmul is not None:
            src = "model.embed_tokens.weight"
            nodes.insert(self.tied_matmul, helper.make_node("Transpose", [src], [f"{src}_transposed"],
                                                            name=f"Transpose_{len(nodes) + 1}"))
        if renames:  # float32: the producers write the graph outputs directly
            for n in nodes:
                for j, o in enumerate(n.output):
                    if o in renames:
                        n.output[j] = renames[o]
                for j, x in enumerate(n.input):
                    if x in renames:
                        n.input[j] = renames[x]
        graph = helper.make_graph(nodes, "main_graph", inputs, outputs, initializer=g.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="sol scripts/make-onnx-test-models.py",
                                  producer_version="1")
        model.ir_version = IR_VERSION
        model.doc_string = (f"{self.name} {self.dtype}: node patterns of an Optimum (torch.onnx TorchScript) export "
                            f"of transformers' eager code, weights from test/models/{self.name}/model.safetensors")
        return model


def merge_decoders(first, with_past):
    """Optimum's decoder_model_merged.onnx (optimum/onnx/graph_transformations.py
    merge_decoders): one If on the bool input use_cache_branch, then_branch the decoder
    with past, else_branch the one without; initializers shared by content at the top
    (renamed in the branch that had another name), scalars and 1-D int64 ones kept in
    their branch; inputs the union (the first decoder's entries first)."""
    top, by_content, renames = [], {}, {}
    branches = {}
    for key, model in (("with_past", with_past), ("no_past", first)):
        kept, rename = [], {}
        for t in model.graph.initializer:
            if len(t.dims) == 0 or (len(t.dims) == 1 and t.data_type in (6, 7)):
                kept.append(t)
                continue
            content = (t.data_type, tuple(t.dims), t.raw_data)
            if content in by_content:
                rename[t.name] = by_content[content]
                continue
            name = t.name
            if any(x.name == name for x in top):
                name = f"{name}_merged_{len(top)}"
            by_content[content] = name
            rename[t.name] = name
            u = onnx.TensorProto()
            u.CopyFrom(t)
            u.name = name
            top.append(u)
        nodes = []
        for n in model.graph.node:
            m = onnx.NodeProto()
            m.CopyFrom(n)
            for j, x in enumerate(m.input):
                m.input[j] = rename.get(x, x)
            nodes.append(m)
        branches[key] = helper.make_graph(nodes, key, [], list(model.graph.output), initializer=kept)
        renames[key] = rename
    inputs, seen = [], set()
    for model in (first, with_past):
        for v in model.graph.input:
            if v.name not in seen:
                seen.add(v.name)
                inputs.append(v)
    inputs.append(helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1]))
    outputs = list(with_past.graph.output)
    node = helper.make_node("If", ["use_cache_branch"], [o.name for o in outputs], name="optimum::if",
                            then_branch=branches["with_past"], else_branch=branches["no_past"])
    graph = helper.make_graph([node], "merged", inputs, outputs, initializer=top)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="sol scripts/make-onnx-test-models.py", producer_version="1")
    model.ir_version = IR_VERSION
    model.doc_string = with_past.doc_string.replace("an Optimum", "Optimum's merged decoders of an")
    return model


def build_model(src_dir, name, dtype, cache="past"):
    cfg = json.loads((src_dir / "config.json").read_text())
    weights = read_safetensors(src_dir / "model.safetensors")
    if cache == "merged":
        first = build_model(src_dir, name, dtype, cache="first")
        model = merge_decoders(first, build_model(src_dir, name, dtype))
        onnx.checker.check_model(model, full_check=True)
        return model
    b = Builder(name, cfg, weights, dtype, cache=cache)
    model = b.build()
    golden = json.loads((src_dir / "golden.json").read_text())
    want = np.array(golden["rope_inv_freq"], dtype=np.float32)
    if not np.array_equal(b.inv_freq, want):
        fail(f"{name}: RoPE inv_freq {b.inv_freq.tolist()} differs from golden.json's {want.tolist()}")
    onnx.checker.check_model(model, full_check=True)
    return model


def count_nodes(graph):
    """Nodes of the graph and of its subgraphs (an If's branches)."""
    return sum(1 + sum(count_nodes(a.g) for a in n.attribute if a.type == onnx.AttributeProto.GRAPH)
               for n in graph.node)


def node_stats(model):
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return ops


# Where each kind of graph goes (under the output root) and its file name.
FOLDERS = {"past": "optimum", "merged": "optimum-merged", "none": "optimum-nocache", "first": "optimum-first"}
STEMS = {"past": "model", "merged": "decoder_model_merged", "none": "model", "first": "decoder_model"}


def write_model(models_dir, out_root, name, dtype, cache="past"):
    model = build_model(models_dir / name, name, dtype, cache)
    dst = out_root / FOLDERS[cache] / name
    dst.mkdir(parents=True, exist_ok=True)
    fname = STEMS[cache] + ("_fp16.onnx" if dtype == "float16" else ".onnx")
    data = model.SerializeToString()
    (dst / fname).write_bytes(data)
    for f in ("config.json", "generation_config.json"):
        shutil.copyfile(models_dir / name / f, dst / f)
    ops = node_stats(model)
    log(f"{name} {dtype} ({cache}): {dst / fname} {len(data)} bytes, {count_nodes(model.graph)} nodes, "
        f"{len(model.graph.initializer)} initializers")
    return dst / fname, model, ops


# ---------------------------------------------------------------------------
# README
# ---------------------------------------------------------------------------

VALIDATION_BEGIN = "<!-- validation:begin (written by scripts/check-onnx-test-models.js --update-readme) -->"
VALIDATION_END = "<!-- validation:end -->"
# The dynamo exports' section (scripts/export-dynamo-onnx.py writes those
# graphs on a machine with torch); kept as it is when this script rewrites
# the README.
DYNAMO_BEGIN = "<!-- dynamo:begin -->"
DYNAMO_END = "<!-- dynamo:end -->"
# Likewise the sections of onnxruntime-genai's graphs
# (scripts/export-genai-onnx.py) and of the quantized graphs
# (scripts/quantize-onnx-weights.py).
KEPT_SECTIONS = ("genai", "quantized")

PATTERNS = {
    "llama": "GQA 8q/2kv (repeat_kv n_rep 4), llama3 RoPE (inv_freq constant already scaled), q/k/v/o and "
             "gate/up/down biases as `Add(bias, MatMul)`, tied embeddings (LM head `MatMul` fed by "
             "`Transpose(model.embed_tokens.weight)`, no perm), transformers >= 4.48 shapes (`Reshape` to [B,S,-1,head_dim], "
             "[B,S,-1]), `Mul` by scaling 0.25, `Mul` by attention_scaling 1.0 after `Cos`/`Sin`, "
             "`IsNaN` -> `Where` guard after `Softmax`",
    "qwen2": "biases on q/k/v only, linear RoPE (factor 2 folded into inv_freq), untied LM head, vocab 1000, "
             "older transformers shapes (`Reshape` with explicit heads [B,S,4,16] / [B,S,2,16] and [B,S,64]), "
             "scores `Div` by sqrt(head_dim) = 4, no attention_scaling `Mul`, no NaN guard",
    "qwen3": "per-head q_norm/k_norm (RMSNorm over the last axis of [B,S,heads,32] before the transpose), "
             "head_dim 32 with 4x32 = 128 != hidden 64 (q_proj [64->128], o_proj [128->64]), tied embeddings "
             "(`Transpose` of the embedding), `Mul` by scaling 32^-0.5, `Mul` by attention_scaling 1.0, "
             "no NaN guard",
    "mistral": "sliding window 8: mask `Greater(kv_idx, q_idx - 8)` `And` causal (the KV cache is not cropped: "
               "present grows, the mask does the windowing), untied LM head, no biases, no attention_scaling "
               "`Mul`, `IsNaN` guard",
}

MERGED_NOTE = ("Optimum's `decoder_model_merged` layout: one `If` (`optimum::if`) on the bool input "
               "`use_cache_branch`, `then_branch` the decoder with past (the graph above), `else_branch` the "
               "decoder without (no past inputs; the mask's past length a constant 0; presents the new keys "
               "and values); weights at the top level, shared by both branches, scalar and 1-D int64 "
               "initializers inside each")
NOCACHE_NOTE = ("`--task text-generation` (no cache): inputs `input_ids`, `attention_mask` [batch, sequence], "
                "`position_ids`; `logits` the only output; keys and values are the new tokens' own, the mask's "
                "past length a constant 0 (the sliding window still in the mask)")

DTYPE_NOTES = {
    "float16": "float16 weights and compute, float32 I/O through `Cast`s, mask fill -65504",
    "float32": "float32 throughout: the RMSNorm, RoPE and Softmax `Cast(to=FLOAT)` nodes are no-ops, mask fill "
               "finfo(float32).min = -3.4028235e38",
}


def write_readme(out_dir, rows, onnx_version):
    readme = out_dir / "README.md"
    validation = dynamo = ""
    kept = []
    if readme.exists():
        old = readme.read_text()
        if VALIDATION_BEGIN in old and VALIDATION_END in old:
            validation = old[old.index(VALIDATION_BEGIN):old.index(VALIDATION_END) + len(VALIDATION_END)]
        if DYNAMO_BEGIN in old and DYNAMO_END in old:
            dynamo = old[old.index(DYNAMO_BEGIN):old.index(DYNAMO_END) + len(DYNAMO_END)]
        for section in KEPT_SECTIONS:
            begin, end = f"<!-- {section}:begin -->", f"<!-- {section}:end -->"
            if begin in old and end in old:
                kept.append(old[old.index(begin):old.index(end) + len(end)])
    if not validation:
        validation = f"{VALIDATION_BEGIN}\n(not run yet)\n{VALIDATION_END}"
    total = sum(r["bytes"] for r in rows)
    lines = []
    lines.append("# ONNX exports of the tiny test models (Optimum / transformers.js layout)\n")
    lines.append("Made by `scripts/make-onnx-test-models.py` (do not edit by hand; run it again instead):\n")
    lines.append("    /usr/bin/python3 scripts/make-onnx-test-models.py\n")
    lines.append(f"with onnx {onnx_version} and numpy {np.__version__} (no torch, no Optimum). The weights are "
                 "those of `test/models/<model>/model.safetensors` (bf16, exact in float32; rounded to float16 "
                 "for the `_fp16` files), so the goldens of `test/models/<model>/` apply: "
                 "`golden_logits.safetensors` (24 rows) and `golden.json` (`input_ids`, `greedy_ids`).\n")
    lines.append("The graphs imitate what `optimum-cli export onnx --task text-generation-with-past` writes "
                 "(torch.onnx's TorchScript exporter tracing transformers' eager Llama/Qwen2/Qwen3/Mistral code "
                 "with Optimum's patches: vmap-free `sdpa_mask`/`eager_mask`, `DynamicLayer.update` as "
                 "`cat(dim=-2)`), and for float16 transformers.js' `model_fp16.onnx` with float32 inputs and "
                 "outputs (keep_io_types): the same operators, attributes, scope-style names "
                 "(`/model/layers.0/self_attn/q_proj/MatMul`, `..._output_0`, `onnx::MatMul_<n>`) and run-time "
                 "shape arithmetic, reconstructed from the sources listed below. No real export was run to diff "
                 "against (no torch here), so node counts and the exact order of `Constant`s will differ from a "
                 "real file; the semantics are checked against the goldens. Opset 17 (default domain only), "
                 "IR version 8, weights inline, symbolic dims `batch_size`, `sequence_length`, "
                 "`past_sequence_length`, `past_sequence_length + sequence_length`; value_info only for graph "
                 "inputs and outputs. Tied embeddings follow Optimum's post-processing "
                 "(`remove_duplicate_weights_from_tied_info`): the exporter's transposed copy of the embedding is "
                 "replaced by a `Transpose` node (no perm attribute) named `Transpose_<n>` whose output "
                 "`model.embed_tokens.weight_transposed` feeds the LM head `MatMul`.\n")
    lines.append("Each folder holds the graph plus copies of the checkpoint's `config.json` and "
                 "`generation_config.json` (as in an onnx-community repository; there the graph would be in "
                 "`onnx/`).\n")
    lines.append("| file | dtype | bytes | nodes | initializers | what it exercises |")
    lines.append("|---|---|---|---|---|---|")
    for r in rows:
        extra = DTYPE_NOTES[r["dtype"]]
        what = {"past": PATTERNS[r["name"]], "merged": MERGED_NOTE, "none": NOCACHE_NOTE}[r["cache"]]
        lines.append(f"| `{r['file']}` | {r['dtype']} | {r['bytes']} | {r['nodes']} | "
                     f"{r['inits']} | {what}; {extra} |")
    lines.append("")
    lines.append(f"Graph files total {total} bytes; the script fails when everything under `test/models/onnx/optimum*/` "
                 f"exceeds {SIZE_BUDGET_BYTES} bytes. The other float32 graphs (about 0.9 to 2.2 MB each) and the "
                 "other models' merged and cache-less graphs are left out for size; "
                 "`--dtype float32 --models llama [--cache merged|none] --out DIR` writes one elsewhere.\n")
    lines.append("## Interface\n")
    lines.append("- inputs: `input_ids` int64 [batch_size, sequence_length]; `attention_mask` int64 "
                 "[batch_size, past_sequence_length + sequence_length]; `position_ids` int64 [batch_size, "
                 "sequence_length]; `past_key_values.{i}.key` / `.value` float32 [batch_size, kv_heads, "
                 "past_sequence_length, head_dim]")
    lines.append("- outputs: `logits` float32 [batch_size, sequence_length, vocab]; `present.{i}.key` / "
                 "`.value` float32 [batch_size, kv_heads, past_sequence_length + sequence_length, head_dim] "
                 "(keys after RoPE)")
    lines.append("- a first pass uses past_sequence_length 0 (empty past tensors).\n")
    lines.append("## Node patterns (all models)\n")
    lines.append("- embedding: `Gather(model.embed_tokens.weight, input_ids)`.")
    lines.append("- linear: `MatMul(x, onnx::MatMul_<n>)`, the initializer holding the transposed weight [in, out]; "
                 "bias `Add(<hf bias name>, MatMul)`.")
    lines.append("- RMSNorm: `Cast(to=FLOAT)` -> `Pow(x, 2.0)` -> `ReduceMean(axes=[-1], keepdims=1)` -> "
                 "`Add(eps)` -> `Sqrt` -> `Div(1.0, .)` -> `Mul(x, .)` -> `Cast(to=compute)` -> "
                 "`Mul(<hf weight name>, .)`; in float32 files both Casts are no-ops (to=FLOAT).")
    lines.append("- shapes computed at run time: `Shape` -> `Gather(Constant scalar)` -> `Unsqueeze(Constant [0])` "
                 "-> `Concat` with `Constant` pieces -> `Reshape`; `expand` sizes go through "
                 "`ConstantOfShape`/`Mul(-1)`/`Equal`/`Where` (the exporter's -1 handling) before `Expand`.")
    lines.append("- RoPE (scope /model/rotary_emb): `Constant` inv_freq [1, head_dim/2, 1] float32 -> `Expand` to "
                 "[B, head_dim/2, 1]; `position_ids` -> `Unsqueeze([1])` -> `Cast(to=FLOAT)`; `MatMul` -> "
                 "`Transpose([0,2,1])` -> `Concat(freqs, freqs, axis=-1)` -> `Cos` / `Sin` [-> `Mul(1.0)`] -> "
                 "`Cast(to=compute)`; per layer `Unsqueeze([1])`, `q*cos + rotate_half(q)*sin` with rotate_half = "
                 "`Slice([0]:[half], axes [-1])`, `Slice([half]:[INT64_MAX], axes [-1])`, `Neg`, "
                 "`Concat(-x2, x1, axis=-1)`.")
    lines.append("- heads: `Reshape` [B,S,heads,head_dim] -> `Transpose([0,2,1,3])`; KV cache: "
                 "`present = Concat(past, new, axis=-2)`; repeat_kv: `Unsqueeze([2])` -> `Expand` "
                 "[B,kv,n_rep,T,hd] -> `Reshape` [B,heads,T,hd].")
    lines.append("- attention (eager): `MatMul(q, Transpose(k, [0,1,3,2]))` -> `Mul(scale)` or `Div(sqrt(hd))` -> "
                 "`Add(Slice(mask, [0]:[T], axes [3]))` -> `Cast(to=FLOAT)` -> `Softmax(axis=-1)` "
                 "[-> `Where(IsNaN(p), 0, p)`] -> `Cast(to=compute)` -> `MatMul(., v)` -> `Transpose([0,2,1,3])` "
                 "-> `Reshape` [B,S,heads*hd] -> o_proj.")
    lines.append("- mask (scope /model, once): past length `Gather(Shape(past_key_values.0.key), 2)`, "
                 "`Range(past, past+S)` (cache_position) and `Range(0, B)`, `Range(0, T)` unsqueezed to "
                 "[1,1,S,1], [B,1,1,1], [1,1,1,T]; causal `LessOrEqual(kv_idx, q_idx)`; padding: "
                 "`Cast(attention_mask, to=BOOL)` flattened and `Gather`ed at `b_idx*T + kv_idx` (aten::index "
                 "with two index tensors); `And`; `Expand` [B,1,S,T]; `Where(mask, 0, finfo(dtype).min)` "
                 "(float16 files: -65504 in float16; float32: -3.4028235e38).")
    lines.append("- SwiGLU: `Sigmoid(gate)` -> `Mul(gate, .)` -> `Mul(., up)` -> down_proj; residual `Add`s.")
    lines.append("- final: RMSNorm `model.norm.weight`, `MatMul` LM head -> `logits`.")
    lines.append("- float16 files: every initializer and the compute are float16 except RoPE (float32 up to its "
                 "Cast), RMSNorm and Softmax (float32 between Casts); `past_key_values.*` enter through "
                 "`Cast(to=FLOAT16)` nodes named `<input>_fp16`, `logits` and `present.*` leave through "
                 "`Cast(to=FLOAT)`.\n")
    lines.append("## Sources\n")
    lines.append("- transformers `models/llama/modeling_llama.py` (LlamaRMSNorm, LlamaRotaryEmbedding, "
                 "rotate_half/apply_rotary_pos_emb, repeat_kv, eager_attention_forward), `modeling_qwen3.py` "
                 "(q_norm/k_norm on the [B,S,heads,head_dim] view), `modeling_mistral.py` (sliding-window mask), "
                 "`modeling_rope_utils.py` (default, linear and llama3 inv_freq), `masking_utils.py`.")
    lines.append("- optimum-onnx `optimum/exporters/onnx/model_patcher.py` (`sdpa_mask_without_vmap`, "
                 "`eager_mask_without_vmap`: `torch.where(mask, 0, finfo(dtype).min)`; "
                 "`patched_dynamic_layer_update`; the boolean-mask SDPA symbolic that adds "
                 "`Where(IsNaN(p), 0, p)`), `optimum/onnx/transformations_utils.py` "
                 "(`_deduplicate_gather_matmul`: the `Transpose` for tied embeddings), "
                 "`optimum/exporters/onnx/base.py` (input/output names and dim names).")
    lines.append("- transformers.js `scripts/convert.py` (Optimum `main_export`), `scripts/float16.py` "
                 "(`convert_float_to_float16`, keep_io_types: `<input>_fp16` Casts).")
    lines.append("- torch.onnx TorchScript symbolics (opset 9-17): `rsqrt` as `Div(1, Sqrt)`, `silu` as "
                 "`Mul(x, Sigmoid(x))`, `linear` as `MatMul` + `Add`, `expand` with the `Equal(-1)`/`Where` size "
                 "fix, multi-index `aten::index` by flattening, `softmax(dtype=)` with a `Cast` before it.\n")
    if dynamo:
        lines.append(dynamo + "\n")
    for section in kept:
        lines.append(section + "\n")
    lines.append("## Validation\n")
    lines.append("    node scripts/check-onnx-test-models.js            # needs onnxruntime-node, see the script\n")
    lines.append(validation + "\n")
    readme.write_text("\n".join(lines))
    return readme


def dir_size(path):
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", default=None, help="checkpoints (default: test/models)")
    ap.add_argument("--out", default=None, help="output root (default: test/models/onnx); graphs go to <out>/optimum/<model>/")
    ap.add_argument("--dtype", choices=["float32", "float16"], help="write this dtype only (with --models)")
    ap.add_argument("--models", nargs="+", choices=MODELS, help="models to write with --dtype")
    ap.add_argument("--cache", choices=sorted(FOLDERS), default="past",
                    help="with --dtype: past (with past), merged (decoder_model_merged), first "
                         "(decoder_model: presents, no past) or none (no cache)")
    args = ap.parse_args()

    root = Path(__file__).resolve().parent.parent
    models_dir = Path(args.models_dir) if args.models_dir else root / "test" / "models"
    out_root = Path(args.out) if args.out else models_dir / "onnx"
    if args.dtype or args.models:
        if not (args.dtype and args.models):
            fail("--dtype and --models go together")
        for name in args.models:
            write_model(models_dir, out_root, name, args.dtype, args.cache)
        return

    rows = []
    for name, dtype, cache in COMMITTED:
        path, model, ops = write_model(models_dir, out_root, name, dtype, cache)
        rows.append(dict(name=name, dtype=dtype, cache=cache, file=f"{FOLDERS[cache]}/{name}/{path.name}",
                         bytes=path.stat().st_size, nodes=count_nodes(model.graph),
                         inits=len(model.graph.initializer)))
    readme = write_readme(out_root, rows, onnx.__version__)
    total = sum(dir_size(out_root / folder) for folder in FOLDERS.values())
    log(f"wrote {readme}; the Optimum-style folders hold {total} bytes (budget {SIZE_BUDGET_BYTES})")
    if total > SIZE_BUDGET_BYTES:
        fail(f"the Optimum-style folders hold {total} bytes, over the budget of {SIZE_BUDGET_BYTES}")


if __name__ == "__main__":
    main()
