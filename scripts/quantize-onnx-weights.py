#!/usr/bin/python3
"""Quantizes the MatMul weights of an ONNX graph the way onnxruntime's tools
do, for Sol's tests of quantized ONNX graphs (CI has no onnxruntime):

  --format dynamic   onnxruntime.quantization.quantize_dynamic with
                     MatMulConstBOnly, int8 per-channel weights (transformers.js's
                     model_int8.onnx / model_quantized.onnx):
                       xq, xs, xz = DynamicQuantizeLinear(x)
                       y = Mul(Cast(MatMulInteger(xq, Wq, xz, Wz), FLOAT), Mul(xs, Ws))
                     with the ..._quant, ..._output_quantized, ..._cast_output,
                     ..._scales_mul names quantize_dynamic gives.
  --format qdq       QDQ weights: MatMul(x, DequantizeLinear(Wq, Ws, Wz, axis=1)).
  --format qdq4      opset 21's blocked QDQ weights, as onnxruntime's
                     MatMulNBitsQuantizer writes them with quant_format QDQ:
                     MatMul(x, DequantizeLinear(Wq, Ws, Wz, axis=0,
                     block_size=32)), uint4 codes and zero points
                     asymmetric in blocks of 32 along K (scale =
                     (max - min) / 15 over the block, zero = round(-min /
                     scale)); the graph's opset is raised to 21.
  --format nbits4    com.microsoft MatMulNBits, as transformers.js's
                     model_q4.onnx (onnxruntime's MatMul4BitsQuantizer,
                     symmetric, block 32): MatMulNBits(x, B, scales) with B
                     [N, K / 32, 16] uint8 (code k of a row in the low nibble
                     first), codes q + 8 in 0..15 (no zero points: 8),
                     scale = max|w| / 7 over the block.
  --format nbits4-act-order
                     the same with act-order groups (GPTQ's desc_act, as
                     MatMulNBits' g_idx input states them): each weight's
                     K inputs shuffled (seeded by its name), block b the
                     inputs at shuffled positions [32 b, 32 b + 32), codes
                     still stored in input order, g_idx int32 [K] the block
                     of each input.

Every MatMul whose second input is a 2-D float initializer [K, N] is rewritten;
int8 weights are symmetric per output column (scale = max|w| / 127, zero
point 0), as onnxruntime quantizes int8 weights. Needs onnx and numpy
(/usr/bin/python3 has them):

  /usr/bin/python3 scripts/quantize-onnx-weights.py --format dynamic \\
      IN/model.onnx OUT/model_int8.onnx
"""
import argparse
import sys

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # pragma: no cover - environment problem
    sys.exit("quantize-onnx-weights: needs the onnx package (use /usr/bin/python3)")


def quantize_columns(w):
    """Symmetric int8 per column of w [K, N]: codes, scales [N]."""
    scale = np.abs(w).max(axis=0) / 127.0
    scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
    codes = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return codes, scale


BLOCK = 32


def quantize_blocks_uint4(w):
    """Asymmetric uint4 in blocks of BLOCK rows of w [K, N]: codes [K, N],
    scales and zero points [K / BLOCK, N]."""
    k, n = w.shape
    blocks = w.reshape(k // BLOCK, BLOCK, n)
    lo, hi = np.minimum(blocks.min(axis=1), 0), np.maximum(blocks.max(axis=1), 0)
    scale = ((hi - lo) / 15.0).astype(np.float32)
    scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
    zero = np.clip(np.rint(-lo / scale), 0, 15).astype(np.uint8)
    codes = np.clip(np.rint(blocks / scale[:, None, :]) + zero[:, None, :], 0, 15).astype(np.uint8)
    return codes.reshape(k, n), scale, zero


def quantize_nbits4(w):
    """MatMulNBits' symmetric 4-bit blocks of w [K, N]: packed [N, K / BLOCK,
    BLOCK / 2] uint8 and scales [N * K / BLOCK]."""
    k, n = w.shape
    blocks = w.T.reshape(n, k // BLOCK, BLOCK)
    scale = (np.abs(blocks).max(axis=2) / 7.0).astype(np.float32)
    scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
    codes = (np.clip(np.rint(blocks / scale[:, :, None]), -8, 7) + 8).astype(np.uint8)
    packed = (codes[:, :, 0::2] | (codes[:, :, 1::2] << 4)).astype(np.uint8)
    return packed, scale.reshape(-1)


def quantize_nbits4_act_order(w, seed):
    """quantize_nbits4 with the inputs grouped in a shuffled order: packed
    [N, K / BLOCK, BLOCK / 2] in input order, scales [N * K / BLOCK] per
    group, g_idx [K] int32."""
    k, n = w.shape
    order = np.random.default_rng(seed).permutation(k)
    g_idx = np.empty(k, np.int32)
    g_idx[order] = np.arange(k) // BLOCK
    grouped = w[order].T.reshape(n, k // BLOCK, BLOCK)
    scale = (np.abs(grouped).max(axis=2) / 7.0).astype(np.float32)
    scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
    codes = np.clip(np.rint(w.T / scale[:, g_idx]), -8, 7) + 8  # [N, K], input order
    codes = codes.astype(np.uint8).reshape(n, k // BLOCK, BLOCK)
    packed = (codes[:, :, 0::2] | (codes[:, :, 1::2] << 4)).astype(np.uint8)
    return packed, scale.reshape(-1), g_idx


def uint4_tensor(name, values):
    """A UINT4 (21) initializer: two codes a byte, the first in the low nibble
    (onnx 1.12's helpers predate 4-bit types)."""
    flat = values.reshape(-1)
    if flat.size % 2:
        flat = np.append(flat, 0)
    packed = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)
    t = TensorProto()
    t.name = name
    t.data_type = 21
    t.dims.extend(values.shape)
    t.raw_data = packed.tobytes()
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--format", choices=["dynamic", "qdq", "qdq4", "nbits4", "nbits4-act-order"],
                    required=True)
    ap.add_argument("input")
    ap.add_argument("output")
    args = ap.parse_args()

    model = onnx.load(args.input)
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    nodes, quantized = [], 0
    used = set()
    for node in graph.node:
        w = inits.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if w is None or len(w.dims) != 2 or w.data_type != TensorProto.FLOAT:
            nodes.append(node)
            continue
        base = w.name
        q, s, z = base + "_quantized", base + "_scale", base + "_zero_point"
        x, y, name = node.input[0], node.output[0], node.name
        if args.format.startswith("nbits4"):
            wf = numpy_helper.to_array(w)
            inputs = [x, q, s]
            if args.format == "nbits4-act-order":
                g = base + "_g_idx"
                inputs += ["", g]
            if q not in used:
                used.add(q)
                if args.format == "nbits4":
                    packed, scale = quantize_nbits4(wf)
                else:
                    packed, scale, g_idx = quantize_nbits4_act_order(wf, sum(map(ord, base)))
                    graph.initializer.append(numpy_helper.from_array(g_idx, g))
                graph.initializer.extend([numpy_helper.from_array(packed, q), numpy_helper.from_array(scale, s)])
            nodes.append(helper.make_node("MatMulNBits", inputs, [y], name=name + "_Q4", domain="com.microsoft",
                                          K=wf.shape[0], N=wf.shape[1], bits=4, block_size=BLOCK,
                                          accuracy_level=4))
            quantized += 1
            continue
        if args.format == "qdq4":
            if q not in used:
                used.add(q)
                codes, scale, zero = quantize_blocks_uint4(numpy_helper.to_array(w))
                graph.initializer.extend([uint4_tensor(q, codes), numpy_helper.from_array(scale, s),
                                          uint4_tensor(z, zero)])
            deq = base + "_DequantizeLinear_Output"
            nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [deq], name=base + "_DequantizeLinear",
                                          axis=0, block_size=BLOCK))
            nodes.append(helper.make_node("MatMul", [x, deq], [y], name=name))
            quantized += 1
            continue
        codes, scale = quantize_columns(numpy_helper.to_array(w))
        if q not in used:
            used.add(q)
            graph.initializer.extend([numpy_helper.from_array(codes, q), numpy_helper.from_array(scale, s),
                                      numpy_helper.from_array(np.zeros_like(codes[0]), z)])
        if args.format == "qdq":
            deq = base + "_DequantizeLinear_Output"
            nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [deq], name=base + "_DequantizeLinear",
                                          axis=1))
            nodes.append(helper.make_node("MatMul", [x, deq], [y], name=name))
        else:
            xq, xs, xz = x + "_quantized", x + "_scale", x + "_zero_point"
            if xq not in used:
                used.add(xq)
                nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [xq, xs, xz],
                                              name=x + "_QuantizeLinear"))
            mm = y + "_output_quantized"
            nodes.append(helper.make_node("MatMulInteger", [xq, q, xz, z], [mm], name=name + "_quant"))
            cast = mm + "_cast_output"
            nodes.append(helper.make_node("Cast", [mm], [cast], name=mm + "_cast", to=TensorProto.FLOAT))
            scales = name + "_quant_scales_mul:0"
            nodes.append(helper.make_node("Mul", [xs, s], [scales], name=name + "_quant_scales_mul"))
            nodes.append(helper.make_node("Mul", [cast, scales], [y], name=name + "_quant_output_scale_mul"))
        quantized += 1
    for name in {n.input[1] for n in graph.node if n.op_type == "MatMul"} & set(inits):
        if inits[name].data_type == TensorProto.FLOAT and len(inits[name].dims) == 2:
            graph.initializer.remove(inits[name])
    del graph.node[:]
    graph.node.extend(nodes)
    if args.format == "dynamic" and not any(o.domain in ("", "ai.onnx") and o.version >= 11
                                            for o in model.opset_import):
        sys.exit("quantize-onnx-weights: DynamicQuantizeLinear needs opset 11 or later")
    if args.format.startswith("nbits4"):
        if not any(o.domain == "com.microsoft" for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    elif args.format == "qdq4":
        # block_size and 4-bit types are opset 21's (onnx 1.12's checker
        # knows neither).
        for o in model.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = max(o.version, 21)
        model.ir_version = max(model.ir_version, 10)
    else:
        onnx.checker.check_model(model, full_check=True)
    onnx.save(model, args.output)
    bits = {"qdq4": "uint4", "nbits4": "4-bit MatMulNBits",
            "nbits4-act-order": "4-bit MatMulNBits with g_idx"}.get(args.format, "int8")
    print(f"quantize-onnx-weights: {quantized} MatMul weights to {bits} ({args.format}): {args.output}")


if __name__ == "__main__":
    main()
