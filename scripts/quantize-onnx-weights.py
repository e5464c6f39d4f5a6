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

Every MatMul whose second input is a 2-D float initializer [K, N] is rewritten;
weights are symmetric int8 per output column (scale = max|w| / 127, zero
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--format", choices=["dynamic", "qdq"], required=True)
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
        codes, scale = quantize_columns(numpy_helper.to_array(w))
        base = w.name
        q, s, z = base + "_quantized", base + "_scale", base + "_zero_point"
        if q not in used:
            used.add(q)
            graph.initializer.extend([numpy_helper.from_array(codes, q), numpy_helper.from_array(scale, s),
                                      numpy_helper.from_array(np.zeros_like(codes[0]), z)])
        x, y, name = node.input[0], node.output[0], node.name
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
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, args.output)
    print(f"quantize-onnx-weights: {quantized} MatMul weights to int8 ({args.format}): {args.output}")


if __name__ == "__main__":
    main()
