#!/usr/bin/env python3
"""Writes tiny.onnx and tiny.onnx_data, the model OnnxFixtureTest reads.

The model is made by onnx's own Python writer (onnx.helper and
onnx.external_data_helper), so the test checks Sol's hand-written protobuf
reader against real serialized output: every attribute kind, initializers in
raw_data and in typed fields, symbolic dims, metadata and external data.
Run it by hand (Debian: apt-get install python3-onnx) when the model needs
to change; the tests themselves never need Python or onnx.

    python3 test/unit/onnx/data/make-tiny-model.py test/unit/onnx/data
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def value_info(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main(out_dir):
    body = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"], name="inner")],
        "body",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [2], [0.5, 2.0])
    kinds = helper.make_node(
        "SolTestOp",
        ["input", "weight", ""],
        ["hidden"],
        name="every_kind",
        domain="com.sol.test",
        alpha=0.25,
        axis=-1,
        mode="constant",
        value=scale,
        body=body,
        scales=[1.5, 2.5],
        pads=[0, 1, -2],
        names=["a", "b"],
        consts=[scale, helper.make_tensor("one", TensorProto.INT64, [], [1])],
        branches=[body, body],
    )
    add = helper.make_node("Add", ["hidden", "bias"], ["output"], name="add")

    rng = np.random.default_rng(7)
    weight = rng.standard_normal((16, 8)).astype(np.float32)  # external
    big_bias = rng.standard_normal((64,)).astype(np.float32)  # external
    initializers = [
        numpy_helper.from_array(weight, "weight"),
        numpy_helper.from_array(big_bias, "big_bias"),
        numpy_helper.from_array(np.arange(8, dtype=np.float32), "bias"),
        helper.make_tensor("f32_typed", TensorProto.FLOAT, [3], [1, 2, 3]),
        helper.make_tensor("i64_typed", TensorProto.INT64, [2], [-5, 1 << 40]),
        helper.make_tensor(
            "f16_typed",
            TensorProto.FLOAT16,
            [2],
            np.array([1.0, -2.0], dtype=np.float16),
        ),
        helper.make_tensor("i8_typed", TensorProto.INT8, [3], [-1, 127, -128]),
        helper.make_tensor("bool_typed", TensorProto.BOOL, [2], [True, False]),
    ]
    graph = helper.make_graph(
        [kinds, add],
        "tiny",
        [value_info("input", ["batch", 8])],
        [value_info("output", ["batch", 8])],
        initializers,
        value_info=[value_info("hidden", ["batch", None])],
    )
    model = helper.make_model(
        graph,
        producer_name="sol-fixture",
        producer_version="1",
        opset_imports=[
            helper.make_opsetid("", 17),
            helper.make_opsetid("com.sol.test", 1),
        ],
    )
    helper.set_model_props(model, {"purpose": "sol reader test"})
    # onnx appends to an existing external-data file; start from nothing.
    for name in ("tiny.onnx", "tiny.onnx_data"):
        if os.path.exists(os.path.join(out_dir, name)):
            os.remove(os.path.join(out_dir, name))
    onnx.save_model(
        model,
        os.path.join(out_dir, "tiny.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="tiny.onnx_data",
        size_threshold=256,
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
