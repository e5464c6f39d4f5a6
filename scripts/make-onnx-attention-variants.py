#!/usr/bin/python3
"""Rewrites a torch.onnx dynamo export at opset 23 (sdpa attention: the
standard Attention op, its KV cache concatenated outside it) into the other
spellings opset 23's Attention allows, for Sol's tests:

  cache4d   Attention(Q, K_new, V_new, mask, past_key, past_value) with
            4-D [batch, heads, seq, dim] inputs: the op concatenates the
            cache itself (its outputs 1 and 2 are the presents) and repeats
            the kv heads for GQA itself (K/V keep kv_num_heads heads).
  cache3d   the same with 3-D [batch, seq, heads*dim] inputs (q_num_heads,
            kv_num_heads attributes), is_causal = 1 and no mask (causal
            from the cached length on, as onnx's reference computes it);
            Y [batch, seq, heads*dim] read through a Reshape to heads.

Both graphs share one external-data file of the weights (weights.onnx_data)
beside them:

  /usr/bin/python3 scripts/make-onnx-attention-variants.py \\
      test/models/onnx/dynamo23/qwen3/model.onnx test/models/onnx/dynamo23-attention/qwen3

Needs onnx and numpy (/usr/bin/python3 has them).
"""
import argparse
import copy
import os
import shutil
import sys

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # pragma: no cover - environment problem
    sys.exit("make-onnx-attention-variants: needs the onnx package (use /usr/bin/python3)")


def producers(graph):
    return {o: n for n in graph.node for o in n.output}


def strip_repeat_kv(prod, name):
    """K of Reshape(Expand(Unsqueeze(K))) -> K."""
    r = prod[name]
    if r.op_type == "Reshape":
        e = prod[r.input[0]]
        if e.op_type == "Expand":
            u = prod[e.input[0]]
            if u.op_type == "Unsqueeze":
                return u.input[0]
    return name


def dead_code(graph):
    """Drops the nodes no graph output depends on."""
    prod = producers(graph)
    live, todo = set(), [o.name for o in graph.output]
    while todo:
        name = todo.pop()
        n = prod.get(name)
        if n is None or id(n) in live:
            continue
        live.add(id(n))
        todo.extend(i for i in n.input if i)
    keep = [n for n in graph.node if id(n) in live]
    del graph.node[:]
    graph.node.extend(keep)


def const(graph, name, values):
    graph.initializer.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
    return name


def variant(model, kind):
    m = copy.deepcopy(model)
    g = m.graph
    prod = producers(g)
    attns = [n for n in g.node if n.op_type == "Attention"]
    if not attns:
        sys.exit("no Attention op in the graph")
    for layer, a in enumerate(attns):
        k_cat = prod[strip_repeat_kv(prod, a.input[1])]
        v_cat = prod[strip_repeat_kv(prod, a.input[2])]
        if k_cat.op_type != "Concat" or v_cat.op_type != "Concat":
            sys.exit(f"layer {layer}: K/V are not the cache's Concat")
        past_k, new_k = k_cat.input
        past_v, new_v = v_cat.input
        present_k, present_v = k_cat.output[0], v_cat.output[0]
        g.node.remove(k_cat)
        g.node.remove(v_cat)
        attrs = {x.name: helper.get_attribute_value(x) for x in a.attribute}
        y = a.output[0]
        if kind == "cache4d":
            inputs = [a.input[0], new_k, new_v, a.input[3], past_k, past_v]
            outputs = [y, present_k, present_v]
            node = helper.make_node("Attention", inputs, outputs, name=a.name, **attrs)
            g.node.insert(list(g.node).index(a), node)
            g.node.remove(a)
            continue
        # 3-D: [B, H, S, D] -> [B, S, H*D] for Q, K, V.
        to3d = const(g, f"attn3d_{layer}_shape", [0, 0, -1])
        added = []

        def flat(x, what):
            t = f"{x}_bshd"
            added.append(helper.make_node("Transpose", [x], [t], perm=[0, 2, 1, 3], name=f"{t}_t"))
            out = f"{x}_3d"
            added.append(helper.make_node("Reshape", [t, to3d], [out], name=f"{out}_r"))
            return out

        q3, k3, v3 = flat(a.input[0], "q"), flat(new_k, "k"), flat(new_v, "v")
        y3 = f"{y}_3d"
        attrs.update(is_causal=1, q_num_heads=Q_HEADS, kv_num_heads=KV_HEADS)
        added.append(helper.make_node("Attention", [q3, k3, v3, "", past_k, past_v], [y3, present_k, present_v],
                                      name=a.name, **attrs))
        # Y's reader transposed it to [B, S, H, D]: that is Y3 reshaped.
        back = [n for n in g.node if y in n.input]
        if len(back) != 1 or back[0].op_type != "Transpose":
            sys.exit(f"layer {layer}: Y is not read by one Transpose")
        shape4 = const(g, f"attn3d_{layer}_heads", [0, 0, Q_HEADS, -1])
        added.append(helper.make_node("Reshape", [y3, shape4], [back[0].output[0]], name=back[0].name))
        g.node.remove(back[0])
        at = list(g.node).index(a)
        g.node.remove(a)
        for j, n in enumerate(added):
            g.node.insert(at + j, n)
    dead_code(g)
    m.doc_string = f"{model.doc_string} (rewritten by scripts/make-onnx-attention-variants.py: {kind})"
    return m


def main():
    global Q_HEADS, KV_HEADS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="a dynamo opset-23 export with sdpa attention (model.onnx)")
    ap.add_argument("out", help="folder for model_cache4d.onnx, model_cache3d.onnx and weights.onnx_data")
    args = ap.parse_args()
    src = os.path.dirname(args.model)
    import json
    cfg = json.load(open(os.path.join(src, "config.json")))
    Q_HEADS, KV_HEADS = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    model = onnx.load(args.model)
    os.makedirs(args.out, exist_ok=True)
    shared = None
    for kind in ("cache4d", "cache3d"):
        m = variant(model, kind)
        path = os.path.join(args.out, f"model_{kind}.onnx")
        if shared is None:
            onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location="weights.onnx_data", size_threshold=1024)
            shared = {t.name: t for t in onnx.load(path, load_external_data=False).graph.initializer}
        else:
            # The same weights: point at the first graph's copies.
            inits = [shared.get(t.name, t) for t in m.graph.initializer]
            del m.graph.initializer[:]
            m.graph.initializer.extend(inits)
            onnx.save_model(m, path)
        print(f"{path}: {sum(1 for _ in m.graph.node)} nodes")
    for f in ("config.json", "generation_config.json"):
        shutil.copy(os.path.join(src, f), args.out)


if __name__ == "__main__":
    main()
