#!/usr/bin/env python3
"""Writes the ONNX graph onnxruntime-genai's model builder makes of a gpt-oss
checkpoint for its CPU provider, from a tiny checkpoint of
make-moe-reference-model.py (standard library only: CI has neither onnx nor
torch, so the protobuf is written here).

  make-genai-moe-onnx.py CHECKPOINT OUT [--experts float|int4|int8]
      [--block-size N] [--fusion 1|2] [--provider cpu|cuda]

OUT gets model.onnx (weights inline, float32) and genai_config.json. The
graph follows the builder's GPTOSSModel (builders/gptoss.py, make_moe_fused)
and base Model: SimplifiedLayerNormalization, then SkipSimplified ones whose
output 3 is the residual; one packed QKV MatMul + bias Add into
GroupQueryAttention (rotation fused from cos/sin caches that hold yarn's
attention factor, head_sink the sinks, local_window_size the window on even
layers); o_proj MatMul + Add; the router MatMul + Add + Reshape to
[tokens, experts]; com.microsoft MoE (float experts) or QMoE (symmetric
codes: 4-bit blocks, scale max|w| / 8 and codes q + 8, or 8-bit with
zero point 128, per row unless --block-size) with gpt-oss's clamped SwiGLU
(activation_alpha 1.702, activation_beta 1, swiglu_limit) and its experts'
biases; fc1 holds gate and up interleaved (swiglu_fusion 1, the builder's),
or --fusion 2 one after the other; the LM head MatMul. seqlens_k and
total_sequence_length come from attention_mask as the builder computes them.

onnxruntime 1.31 (onnxruntime-node, CPU) runs these graphs to the
checkpoint's float64 goldens; test/models/onnx/README.md says how.
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


def attribute(name, value):
    msg = f_bytes(1, name)
    if isinstance(value, float):
        return msg + f_float(2, value) + f_int(20, 1)
    if isinstance(value, int):
        return msg + f_int(3, value) + f_int(20, 2)
    if isinstance(value, str):
        return msg + f_bytes(4, value) + f_int(20, 3)
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

    def model(self):
        graph = b"".join(f_bytes(1, n) for n in self.nodes) + f_bytes(2, "main_graph")
        graph += b"".join(f_bytes(5, t) for t in self.initializers)
        graph += b"".join(f_bytes(11, v) for v in self.inputs)
        graph += b"".join(f_bytes(12, v) for v in self.outputs)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--experts", choices=("float", "int4", "int8"), default="float")
    ap.add_argument("--block-size", type=int, default=0,
                    help="QMoE block size (0: one scale a row)")
    ap.add_argument("--fusion", type=int, choices=(1, 2), default=1)
    ap.add_argument("--provider", choices=("cpu", "cuda"), default="cpu")
    args = ap.parse_args()

    config = json.loads((args.checkpoint / "config.json").read_text())
    if config["architectures"] != ["GptOssForCausalLM"]:
        raise SystemExit("a GptOssForCausalLM checkpoint is needed")
    w = read_checkpoint(args.checkpoint)
    H, NH, KV, HD = (config[k] for k in ("hidden_size", "num_attention_heads",
                                         "num_key_value_heads", "head_dim"))
    E, I, V = config["num_local_experts"], config["intermediate_size"], config["vocab_size"]
    layers, topk = config["num_hidden_layers"], config["num_experts_per_tok"]
    context = config["max_position_embeddings"]
    eps = config["rms_norm_eps"]
    rope = config["rope_parameters"]

    g = Graph()
    g.inputs.append(value_info("input_ids", INT64, ["batch_size", "sequence_length"]))
    g.inputs.append(value_info("attention_mask", INT64, ["batch_size", "total_sequence_length"]))
    for kind in ("key", "value"):
        for i in range(layers):
            g.inputs.append(value_info(f"past_key_values.{i}.{kind}", FLOAT,
                                       ["batch_size", KV, "past_sequence_length", HD]))
    g.outputs.append(value_info("logits", FLOAT, ["batch_size", "sequence_length", V]))
    for kind in ("key", "value"):
        for i in range(layers):
            g.outputs.append(value_info(f"present.{i}.{kind}", FLOAT,
                                        ["batch_size", KV, "total_sequence_length", HD]))

    def weight(name, dims, values):
        g.initializer(float_tensor(name, dims, values))
        return name

    # seqlens_k = sum(mask) - 1 and total_sequence_length = mask's length.
    sub = "/model/attn_mask_reformat/attn_mask_subgraph"
    one = g.constant([1])
    total = g.node("ReduceSum", f"{sub}/ReduceSum", ["attention_mask", one], keepdims=0)
    seqlens = g.node("Sub", f"{sub}/Sub", [total, one])
    seqlens = g.node("Cast", f"{sub}/Sub/Cast", [seqlens], to=INT32)
    shape = g.node("Shape", f"{sub}/Shape", ["attention_mask"])
    length = g.node("Gather", f"{sub}/Gather", [shape, g.constant([1], scalar=True)], axis=0)
    length = g.node("Cast", f"{sub}/Gather/Cast", [length], to=INT32)

    # Yarn's cos/sin caches, times its attention factor (make_rotary_embedding_caches_from_scratch).
    theta, factor = rope["rope_theta"], rope["factor"]
    original = rope["original_max_position_embeddings"]
    half = HD // 2
    correction = lambda rot: half * math.log(original / (rot * 2 * math.pi)) / math.log(theta)
    low, high = correction(rope["beta_fast"]), correction(rope["beta_slow"])
    low, high = max(low, 0.0), min(high, HD - 1)
    if low == high:
        high += 0.001
    inv = []
    for i in range(half):
        base = 1.0 / theta ** (2 * i / HD)
        mask = 1 - min(max((i - low) / (high - low), 0.0), 1.0)
        inv.append(struct.unpack("<f", struct.pack("<f", (base / factor) * (1 - mask) + base * mask))[0])
    mscale = 0.1 * math.log(factor) + 1.0
    angles = [struct.unpack("<f", struct.pack("<f", p * f))[0] for p in range(context) for f in inv]
    weight("cos_cache", [context, half], [math.cos(a) * mscale for a in angles])
    weight("sin_cache", [context, half], [math.sin(a) * mscale for a in angles])

    embedding = weight("model.embed_tokens.weight", [V, H], w["model.embed_tokens.weight"][1])
    x = g.node("Gather", "/model/embed_tokens/Gather", [embedding, "input_ids"])
    residual, skip = x, None

    def norm(location, weight_name, inputs_residual, inputs_skip, last=False):
        if inputs_skip is None:
            out = g.node("SimplifiedLayerNormalization", f"{location}/LayerNorm",
                         [inputs_residual, weight_name], [f"{location}/output_0"],
                         epsilon=eps, axis=-1, stash_type=1)
            return out, inputs_residual
        outputs = [f"{location}/output_0"] if last else [
            f"{location}/output_0", "", "", f"{location}/output_3"]
        outs = g.node("SkipSimplifiedLayerNormalization", f"{location}/SkipLayerNorm",
                      [inputs_residual, inputs_skip, weight_name], outputs,
                      domain="com.microsoft", epsilon=eps)
        return (outs, None) if last else (outs[0], outs[3])

    for layer in range(layers):
        p = f"model.layers.{layer}."
        base = f"/model/layers.{layer}"
        nw = weight(f"{p}input_layernorm.weight", [H], w[p + "input_layernorm.weight"][1])
        h, residual = norm(f"{base}/input_layernorm", nw, residual, skip)

        a = p + "self_attn."
        qkv = []
        for proj, rows in (("q_proj", NH * HD), ("k_proj", KV * HD), ("v_proj", KV * HD)):
            qkv.append(transposed(w[a + proj + ".weight"][1], rows, H))
        packed = []
        for row in range(H):
            for part, rows in zip(qkv, (NH * HD, KV * HD, KV * HD)):
                packed += part[row * rows:(row + 1) * rows]
        width = (NH + 2 * KV) * HD
        qw = weight(f"model.layers.{layer}.attn.qkv_proj.MatMul.weight", [H, width], packed)
        qb = weight(f"model.layers.{layer}.attn.qkv_proj.Add.bias", [width],
                    w[a + "q_proj.bias"][1] + w[a + "k_proj.bias"][1] + w[a + "v_proj.bias"][1])
        y = g.node("MatMul", f"{base}/attn/qkv_proj/MatMul", [h, qw])
        y = g.node("Add", f"{base}/attn/qkv_proj/Add", [y, qb])
        sinks = weight(f"model.layers.{layer}.attn.sinks", [NH], w[a + "sinks"][1])
        window = config["sliding_window"] if layer % 2 == 0 else -1
        attn = g.node("GroupQueryAttention", f"{base}/attn/GroupQueryAttention",
                      [y, "", "", f"past_key_values.{layer}.key", f"past_key_values.{layer}.value",
                       seqlens, length, "cos_cache", "sin_cache", "", "", sinks],
                      [f"{base}/attn/GroupQueryAttention/output_0", f"present.{layer}.key",
                       f"present.{layer}.value"], domain="com.microsoft",
                      num_heads=NH, kv_num_heads=KV, scale=1.0 / math.sqrt(HD), softcap=0.0,
                      do_rotary=1, rotary_interleaved=0, local_window_size=window)[0]
        ow = weight(f"model.layers.{layer}.attn.o_proj.MatMul.weight", [NH * HD, H],
                    transposed(w[a + "o_proj.weight"][1], H, NH * HD))
        ob = weight(f"model.layers.{layer}.attn.o_proj.Add.bias", [H], w[a + "o_proj.bias"][1])
        o = g.node("MatMul", f"{base}/attn/o_proj/MatMul", [attn, ow])
        o = g.node("Add", f"{base}/attn/o_proj/Add", [o, ob])

        pw = weight(f"{p}post_attention_layernorm.weight", [H],
                    w[p + "post_attention_layernorm.weight"][1])
        h, residual = norm(f"{base}/post_attention_layernorm", pw, residual, o)

        # Router and experts (make_moe_fused).
        m = p + "mlp."
        moe = f"{base}/moe"
        rw = weight(f"model.layers.{layer}.moe.router.MatMul.weight", [H, E],
                    transposed(w[m + "router.weight"][1], E, H))
        rb = weight(f"model.layers.{layer}.moe.router.Add.bias", [E], w[m + "router.bias"][1])
        r = g.node("MatMul", f"{moe}/router/MatMul", [h, rw])
        r = g.node("Add", f"{moe}/router/Add", [r, rb])
        r = g.node("Reshape", f"{moe}/router/Reshape", [r, g.constant([-1, E])])
        # HF stores the experts inputs first; the op takes [E, N, K].
        gate_up = w[m + "experts.gate_up_proj"][1]
        down = w[m + "experts.down_proj"][1]
        fc1 = sum((transposed(gate_up[e * H * 2 * I:(e + 1) * H * 2 * I], H, 2 * I)
                   for e in range(E)), [])
        fc2 = sum((transposed(down[e * I * H:(e + 1) * I * H], I, H) for e in range(E)), [])
        b1 = w[m + "experts.gate_up_proj_bias"][1]
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
        names = {k: f"model.layers.{layer}.moe.experts.{k}" for k in
                 ("gate_up_proj", "down_proj")}
        b1 = weight(names["gate_up_proj"] + ".bias", [E, 2 * I], b1)
        b2 = weight(names["down_proj"] + ".bias", [E, H], w[m + "experts.down_proj_bias"][1])
        attrs = dict(activation_alpha=1.702, activation_beta=1.0, activation_type="swiglu",
                     k=topk, normalize_routing_weights=1, swiglu_fusion=args.fusion,
                     use_sparse_mixer=0, swiglu_limit=float(config["swiglu_limit"]))
        if args.experts == "float":
            w1 = weight(names["gate_up_proj"] + ".weight", [E, 2 * I, H], fc1)
            w2 = weight(names["down_proj"] + ".weight", [E, H, I], fc2)
            out = g.node("MoE", f"{moe}/MoE", [h, r, w1, b1, w2, b2], domain="com.microsoft",
                         **attrs)
        else:
            bits = 4 if args.experts == "int4" else 8
            quantized = []
            for proj, values, rows, cols in (("gate_up_proj", fc1, 2 * I, H),
                                             ("down_proj", fc2, H, I)):
                block = args.block_size or cols
                codes, scales = quantize_rows(values, cols, bits, block)
                name = names[proj]
                g.initializer(tensor(name + ".qweight", [E, rows, cols * bits // 8], UINT8, codes))
                scale_dims = [E, rows] + ([cols // block] if args.block_size else [])
                weight(name + ".scales", scale_dims, scales)
                quantized.append(name)
            if args.block_size:
                attrs["block_size"] = args.block_size
            out = g.node("QMoE", f"{moe}/QMoE",
                         [h, r, quantized[0] + ".qweight", quantized[0] + ".scales", b1,
                          quantized[1] + ".qweight", quantized[1] + ".scales", b2,
                          "", "", "", "", "", ""],
                         domain="com.microsoft", expert_weight_bits=bits, **attrs)
        skip = out

    fw = weight("model.layers.{}.final_norm_layernorm.weight".format(layers), [H],
                w["model.norm.weight"][1])
    h, _ = norm(f"/model/layers.{layers}/final_norm_layernorm", fw, residual, skip, last=True)
    lm = weight("lm_head.MatMul.weight", [H, V], transposed(w["lm_head.weight"][1], V, H))
    g.node("MatMul", "/lm_head/MatMul", [h, lm], ["logits"])

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "model.onnx").write_bytes(g.model())
    providers = [] if args.provider == "cpu" else [{"cuda": {"enable_cuda_graph": "0"}}]
    genai = {
        "model": {
            "bos_token_id": config.get("bos_token_id", 0), "context_length": context,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": providers},
                "filename": "model.onnx", "head_size": HD, "hidden_size": H,
                "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                           "past_key_names": "past_key_values.%d.key",
                           "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
                "num_attention_heads": NH, "num_hidden_layers": layers,
                "num_key_value_heads": KV},
            "eos_token_id": config["eos_token_id"], "pad_token_id": config["eos_token_id"],
            "type": "gpt_oss", "vocab_size": V},
        "search": {"do_sample": False, "max_length": context, "num_beams": 1,
                   "past_present_share_buffer": False, "temperature": 1.0, "top_k": 1,
                   "top_p": 1.0}}
    (args.out / "genai_config.json").write_text(json.dumps(genai, indent=4))
    print(f"{args.out}: {len(g.nodes)} nodes, {len(g.initializers)} initializers, "
          f"experts {args.experts}" + (f" (block {args.block_size})" if args.block_size else ""))


if __name__ == "__main__":
    main()
