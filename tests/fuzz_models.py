"""Model material for the fuzz cases: small valid ONNX / TFLite models built in code, the
real models beside the checkout, and seeded mutations of both (bytes and structure).

Every function takes a ``random.Random`` and returns bytes, so a case is reproducible from
its seed alone. Structure-aware ONNX mutations edit an ``onnx.ModelProto`` (attributes,
initializer dims / data / types, element types, names, external data entries, graph
inputs / outputs, opsets, folding bombs, quantization parameters); TFLite ones rebuild a
model with :mod:`tflite_builders` from mutated tensors and options.
"""
from __future__ import annotations

import random

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from conftest import MODELS, REPO
from onnx_builders import make_model
from tflite_builders import Op, Tensor, build_model

EXAMPLE = REPO / "examples" / "kws_cnn.onnx"
REAL_MODELS = [EXAMPLE, MODELS / "tflite_micro/hello_world_int8.tflite",
               MODELS / "tflite_micro/hello_world_float.tflite",
               MODELS / "tflite_micro/micro_speech_int8.tflite"]
INTERESTING_INTS = [0, -1, 1, 2, -2, 127, 128, 255, 256, 1000, -129, 2**31 - 1, 2**31, -2**31,
                    2**32, 2**40, 2**62, -2**62, 2**63 - 1]
INTERESTING_FLOATS = [0.0, -0.0, -1.0, float("nan"), float("inf"), -float("inf"), 1e38, 1e-45,
                      3.4e38, -1e30, 1e-30]
HOSTILE_NAMES = ["[bold]x[/]", "[/]", "[red", "\x1b[31mred\x1b[0m", "\x1b]0;title\x07",
                 "a\u202eb", "\u2066x\u2069", "*/ int evil; /*", "??=", "a\nb", "\x00nul",
                 "x" * 5000, "../../etc", ":smile:", "name with spaces", "\\", "%s%n",
                 "SRAM } /DISCARD/ : { *(*) } > X", "é中文", "\r\n"]
BAD_UTF8 = b"bad\xff\xfe\xc3("


def real_model(rng: random.Random) -> tuple[str, bytes]:
    path = rng.choice([p for p in REAL_MODELS if p.exists()] or [EXAMPLE])
    return path.suffix, path.read_bytes()


# -- byte mutations ---------------------------------------------------------------------
def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    buffer = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(7)
        position = rng.randrange(max(len(buffer), 1))
        if kind == 0 and buffer:
            buffer[position] ^= 1 << rng.randrange(8)
        elif kind == 1 and buffer:
            buffer[position] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        elif kind == 2:
            del buffer[position:]
        elif kind == 3:
            buffer[position:position] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif kind == 4:
            size = rng.randint(1, 64)
            buffer[position:position] = buffer[position:position + size]
        elif kind == 5:
            word = rng.choice(INTERESTING_INTS) & 0xFFFFFFFF
            buffer[position:position + 4] = word.to_bytes(4, "little")
        else:
            buffer[position:position + rng.randint(1, 256)] = b""
    return bytes(buffer)


# -- small ONNX models ------------------------------------------------------------------
def _weights(rng: random.Random, *shape: int) -> np.ndarray:
    return np.asarray(np.random.default_rng(rng.randrange(2**32)).normal(size=shape), np.float32)


def onnx_conv_net(rng: random.Random) -> onnx.ModelProto:
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1],
                              strides=[1, 1], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["m"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["m"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1),
             helper.make_node("Softmax", ["y"], ["p"], name="softmax")]
    return make_model(nodes, {"x": [1, 3, 8, 8]}, ["p"],
                      {"w": _weights(rng, 4, 3, 3, 3), "b": _weights(rng, 4),
                       "fw": _weights(rng, 5, 4), "fb": _weights(rng, 5)}, opset=13)


def onnx_misc_net(rng: random.Random) -> onnx.ModelProto:
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "o", "mu", "var"], ["n"], name="bn"),
             helper.make_node("Resize", ["n", "", "scales"], ["u"], name="up", mode="nearest"),
             helper.make_node("AveragePool", ["u"], ["a"], name="avg", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Reshape", ["a", "shape"], ["f"], name="reshape"),
             helper.make_node("MatMul", ["f", "mw"], ["y"], name="matmul"),
             helper.make_node("Add", ["y", "ab"], ["z"], name="add")]
    inits = {"s": np.ones(2, np.float32), "o": np.zeros(2, np.float32), "mu": np.zeros(2, np.float32),
             "var": np.ones(2, np.float32), "scales": np.array([1, 1, 2, 2], np.float32),
             "shape": np.array([1, 32], np.int64), "mw": _weights(rng, 32, 3), "ab": _weights(rng, 3)}
    return make_model(nodes, {"x": [1, 2, 4, 4]}, ["z"], inits, opset=13)


def onnx_qdq_net(rng: random.Random, scale: float = 0.05, zero_point: int = 0) -> onnx.ModelProto:
    """Quantize -> Dequantize around a Relu (a QDQ model with chosen parameters)."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dequant"),
             helper.make_node("Relu", ["d"], ["y"], name="relu")]
    inits = {"s": np.array(scale, np.float32), "z": np.array(zero_point, np.int32 if not -128 <= zero_point < 128 else np.int8)}
    return make_model(nodes, {"x": [1, 4]}, ["y"], inits, opset=13)


def onnx_chain(length: int, op: str = "Relu") -> onnx.ModelProto:
    names = ["x"] + [f"t{i}" for i in range(length)]
    nodes = [helper.make_node(op, [names[i]], [names[i + 1]], name=f"n{i}") for i in range(length)]
    return make_model(nodes, {"x": [1, 8]}, [names[-1]], opset=13)


TEMPLATES = [onnx_conv_net, onnx_misc_net, onnx_qdq_net]


def _interesting_attribute(rng: random.Random, attribute: onnx.AttributeProto) -> onnx.AttributeProto:
    if attribute.type == onnx.AttributeProto.INT:
        return helper.make_attribute(attribute.name, rng.choice(INTERESTING_INTS))
    if attribute.type == onnx.AttributeProto.INTS:
        count = rng.choice([0, 1, len(attribute.ints), 4, 8])
        return helper.make_attribute(attribute.name, [rng.choice(INTERESTING_INTS) for _ in range(count)])
    if attribute.type == onnx.AttributeProto.FLOAT:
        return helper.make_attribute(attribute.name, rng.choice(INTERESTING_FLOATS))
    return helper.make_attribute(attribute.name, rng.choice([1, "x", [0, 0], 1.5]))


def _mutate_attribute(model: onnx.ModelProto, rng: random.Random) -> None:
    node = rng.choice(model.graph.node)
    if node.attribute and rng.random() < 0.6:
        index = rng.randrange(len(node.attribute))
        node.attribute[index].CopyFrom(_interesting_attribute(rng, node.attribute[index]))
    else:
        name = rng.choice(["strides", "dilations", "kernel_shape", "pads", "group", "axis",
                           "blocksize", "output_padding", "batch_dims", "epsilon", "alpha", "perm"])
        value = rng.choice([[0, 0], [-1, -1], [2**62, 2**62], 0, -1, 2**40, float("nan"), []])
        node.attribute.append(helper.make_attribute(name, value, attr_type=(
            onnx.AttributeProto.INTS if value == [] else None)))


def _mutate_initializer(model: onnx.ModelProto, rng: random.Random, folder_files: dict) -> None:
    if not model.graph.initializer:
        return
    tensor = rng.choice(model.graph.initializer)
    kind = rng.randrange(6)
    if kind == 0:
        tensor.dims[:] = [rng.choice([0, 1, 3, 10**9, 2**40, -4]) for _ in range(rng.randint(0, 4))]
    elif kind == 1:
        tensor.raw_data = tensor.raw_data[: rng.randrange(len(tensor.raw_data) + 1)] if rng.random() < 0.5 \
            else tensor.raw_data + bytes(rng.randint(1, 9))
    elif kind == 2:
        tensor.data_type = rng.choice([0, 999, 8, 16, 21, 22, 11, 9, 23, 24])
    elif kind == 3:
        data = tensor.raw_data
        tensor.ClearField("raw_data")
        tensor.float_data.extend([1.0] * rng.choice([0, 1, len(data) // 4, len(data)]))
    elif kind == 4:
        _make_external(tensor, rng, folder_files)
    else:
        array = numpy_helper.to_array(tensor).copy()
        if array.dtype.kind == "f" and array.size:
            array.reshape(-1)[rng.randrange(array.size)] = rng.choice([np.nan, np.inf, -np.inf, 1e38])
            tensor.CopyFrom(numpy_helper.from_array(array, tensor.name))


def _make_external(tensor: onnx.TensorProto, rng: random.Random, folder_files: dict) -> None:
    data = tensor.raw_data or numpy_helper.to_array(tensor).tobytes()
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    location = rng.choice(["weights.bin", "../weights.bin", "/etc/passwd", "we\x00ights.bin",
                           "missing.bin", "sub", "weights.bin", "link.bin"])
    entries = {"location": location}
    choice = rng.randrange(6)
    if choice == 0:
        entries["offset"] = str(rng.choice([-1, 2**70, 2**63, 10**5000 if False else 99999999]))
    elif choice == 1:
        entries["length"] = str(rng.choice([-1, 2**40, len(data) + 1, 0, 2**70]))
    elif choice == 2:
        entries["offset"], entries["length"] = "x", "1e3"
    for key, value in entries.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    folder_files["weights.bin"] = data[: rng.choice([len(data), len(data) // 2])] if data else b""
    folder_files["sub/keep.txt"] = b"keep"


def _mutate_graph(model: onnx.ModelProto, rng: random.Random) -> None:
    graph = model.graph
    kind = rng.randrange(10)
    if kind == 0:
        del graph.output[:]
    elif kind == 1 and graph.initializer:
        graph.output[0].name = graph.initializer[0].name
    elif kind == 2:
        graph.node[rng.randrange(len(graph.node))].input.append("no_such_tensor")
    elif kind == 3:
        graph.node[0].op_type = rng.choice(["Frobnicate", "", "Scan", "Loop", "If", "NonZero", "relu"])
    elif kind == 4:
        graph.node[0].domain = rng.choice(["com.microsoft", "ai.onnx.ml", "x"])
    elif kind == 5:
        del model.opset_import[:]
        model.opset_import.append(helper.make_opsetid("", rng.choice([0, 1, 7, 9, 10, 22, 30, 10**6])))
    elif kind == 6:
        graph.input[0].type.tensor_type.elem_type = rng.choice([0, 999, 8, 9, 10, 7, 2, 16, 21])
    elif kind == 7:
        dims = graph.input[0].type.tensor_type.shape.dim
        if dims:
            dims[rng.randrange(len(dims))].dim_value = rng.choice([0, -5, 2**40, 2**62, 10**6])
    elif kind == 8:
        del graph.input[:]
    else:
        graph.node[-1].output[0] = graph.node[0].input[0]   # a cycle / a duplicate producer


def folding_bomb(rng: random.Random) -> onnx.ModelProto:
    """A constant sub-graph whose folding would need terabytes (or NaN / zero scales)."""
    huge = rng.choice([10**6, 10**7, 2**31])
    kind = rng.randrange(6)
    inits: dict[str, np.ndarray] = {}
    if kind == 0:
        inits["shape"] = np.array([huge, huge], np.int64)
        fold = helper.make_node("ConstantOfShape", ["shape"], ["big"], name="bomb")
    elif kind == 1:
        inits.update(one=np.ones(1, np.float32), shape=np.array([huge, huge], np.int64))
        fold = helper.make_node("Expand", ["one", "shape"], ["big"], name="bomb")
    elif kind == 2:
        inits.update(one=np.ones((1, 1), np.float32), reps=np.array([huge, huge], np.int64))
        fold = helper.make_node("Tile", ["one", "reps"], ["big"], name="bomb")
    elif kind == 3:
        inits.update(start=np.array(0, np.int64), limit=np.array(huge * huge, np.int64),
                     delta=np.array(1, np.int64))
        fold = helper.make_node("Range", ["start", "limit", "delta"], ["big"], name="bomb")
    elif kind == 4:
        inits.update(one=np.ones((1, 1, 2, 2), np.float32),
                     scales=np.array([1, 1, rng.choice([np.nan, 0.0, 1e9, -2.0]), 1], np.float32))
        fold = helper.make_node("Resize", ["one", "", "scales"], ["big"], name="bomb")
    else:
        inits.update(one=np.ones((2, 2), np.float32), pads=np.array([0, huge, 0, huge], np.int64))
        fold = helper.make_node("Pad", ["one", "pads"], ["big"], name="bomb")
    reduce = helper.make_node("ReduceMean", ["big"], ["m"], name="mean", keepdims=0)
    add = helper.make_node("Add", ["x", "m"], ["y"], name="add")
    return make_model([fold, reduce, add], {"x": [1, 4]}, ["y"], inits, opset=13)


def known_crasher(rng: random.Random) -> onnx.ModelProto:
    """A model of the kinds that crashed onnx's C++ shape inference or numpy (the issue's
    findings): zero strides, negative batch_dims, overflowing blocksize, a Scan without a
    body, group 0, an initializer whose data does not match its dims."""
    x = {"x": [1, 2, 8, 8]}
    weights = {"w": np.ones((2, 2, 3, 3), np.float32)}
    kind = rng.randrange(8)
    if kind == 0:
        node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", strides=[0, 0])
        return make_model([node], x, ["y"], weights)
    if kind == 1:
        node = helper.make_node(rng.choice(["MaxPool", "AveragePool", "LpPool"]), ["x"], ["y"],
                                name="pool", kernel_shape=[2, 2], strides=[0, 0])
        return make_model([node], x, ["y"])
    if kind == 2:
        inits = {"d": np.ones((2, 2), np.float32), "i": np.zeros((1, 1), np.int64)}
        node = helper.make_node("GatherND", ["d", "i"], ["g"], name="gather", batch_dims=-7)
        return make_model([node, helper.make_node("Add", ["x", "g"], ["y"], name="add")],
                          {"x": [1]}, ["y"], inits)
    if kind == 3:
        node = helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=2**62)
        return make_model([node], x, ["y"])
    if kind == 4:
        node = helper.make_node("Scan", ["x"], ["y"], name="scan", num_scan_inputs=1)
        return make_model([node], x, ["y"])
    if kind == 5:
        node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", group=0)
        return make_model([node], x, ["y"], weights)
    model = make_model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], x, ["y"], weights)
    tensor = model.graph.initializer[0]
    if kind == 6:
        tensor.dims[:] = [1000, 1000, 1000]
        tensor.raw_data = b"\0\0\0\0"
    else:
        tensor.dims[:] = [2, 2, 3, 3]
        tensor.raw_data = tensor.raw_data[: rng.choice([0, 4, 100])] + (b"\1" * rng.choice([0, 8]))
    return model


def set_names(model: onnx.ModelProto, rng: random.Random, name: str | None = None) -> bytes:
    """The model with hostile node / tensor / graph names (serialized; ``BAD_UTF8``
    splices invalid UTF-8 bytes into the protobuf)."""
    name = name if name is not None else rng.choice(HOSTILE_NAMES + ["BADUTF8"])
    graph = model.graph
    renamed = {}
    for index, node in enumerate(graph.node):
        node.name = f"{name}{index}" if rng.random() < 0.7 else node.name
    tensors = {n for node in graph.node for n in node.output} - {o.name for o in graph.output}
    for tensor in sorted(tensors)[: rng.randint(1, 3)]:
        renamed[tensor] = f"{name}_{tensor}"
    for node in graph.node:
        node.input[:] = [renamed.get(n, n) for n in node.input]
        node.output[:] = [renamed.get(n, n) for n in node.output]
    graph.name = name[:100]
    try:
        data = model.SerializeToString()
    except (ValueError, UnicodeEncodeError):
        return model.SerializeToString().replace(b"\xed\xb3\xbf", b"\xff")
    return data.replace(b"BADUTF8", BAD_UTF8)


def mutated_onnx(rng: random.Random, folder_files: dict) -> bytes:
    """A small ONNX model with one or two structure-aware mutations."""
    if rng.random() < 0.15:
        return folding_bomb(rng).SerializeToString()
    if rng.random() < 0.15:
        return known_crasher(rng).SerializeToString()
    if rng.random() < 0.15:
        scale = rng.choice([0.0, -0.1, float("nan"), float("inf"), 1e38, 1e-40, 0.05])
        return onnx_qdq_net(rng, scale, rng.choice([0, 1000, -1000, 127, 300])).SerializeToString()
    model = rng.choice(TEMPLATES)(rng)
    for _ in range(rng.randint(1, 2)):
        mutation = rng.randrange(4)
        if mutation == 3:
            return set_names(model, rng)
        try:
            (_mutate_attribute, lambda m, r: _mutate_initializer(m, r, folder_files),
             _mutate_graph)[mutation](model, rng)
        except (IndexError, ValueError, TypeError, KeyError):   # the mutation does not apply here
            pass
    return model.SerializeToString()


# -- TFLite -----------------------------------------------------------------------------
def _quant(rng: random.Random, scale: float = 0.05, zero_point: int = 0):
    if rng.random() < 0.3:
        scale = rng.choice(INTERESTING_FLOATS)
    if rng.random() < 0.2:
        zero_point = rng.choice([1000, -1000, 128, -129, 2**31 - 1])
    return ([scale], [zero_point], 0)


def tflite_model(rng: random.Random, *, mutate: bool = True) -> bytes:
    """A one-op int8 TFLite model (conv, fully connected, softmax, pool, add), mutated."""
    kind = rng.randrange(5)
    q = (lambda s=0.05, z=0: _quant(rng, s, z)) if mutate else (lambda s=0.05, z=0: ([s], [z], 0))
    shape = [1, 4, 4, 2]
    if kind == 0:
        tensors = [Tensor("x", shape, "int8", quant=q()),
                   Tensor("w", (3, 1, 1, 2), "int8", data=np.ones((3, 1, 1, 2), np.int8), quant=q(0.02)),
                   Tensor("b", (3,), "int32", data=np.zeros(3, np.int32), quant=q(0.001)),
                   Tensor("y", (1, 4, 4, 3), "int8", quant=q(0.1))]
        ops = [Op("CONV_2D", [0, 1, 2], [3], {"padding": 0, "stride_w": 1, "stride_h": 1})]
    elif kind == 1:
        tensors = [Tensor("x", (1, 8), "int8", quant=q()),
                   Tensor("w", (4, 8), "int8", data=np.ones((4, 8), np.int8), quant=q(0.02)),
                   Tensor("b", (4,), "int32", data=np.zeros(4, np.int32), quant=q(0.001)),
                   Tensor("y", (1, 4), "int8", quant=q(0.1))]
        ops = [Op("FULLY_CONNECTED", [0, 1, 2], [3], {})]
    elif kind == 2:
        tensors = [Tensor("x", (1, 10), "int8", quant=q()), Tensor("y", (1, 10), "int8", quant=q(1 / 256, -128))]
        ops = [Op("SOFTMAX", [0], [1], {"beta": 1.0})]
    elif kind == 3:
        tensors = [Tensor("x", shape, "int8", quant=q()), Tensor("y", (1, 2, 2, 2), "int8", quant=q())]
        ops = [Op("AVERAGE_POOL_2D", [0], [1], {"padding": 1, "stride_w": 2, "stride_h": 2,
                                                "filter_width": 2, "filter_height": 2})]
    else:
        tensors = [Tensor("x", shape, "int8", quant=q()), Tensor("z", shape, "int8", quant=q()),
                   Tensor("y", shape, "int8", quant=q())]
        ops = [Op("ADD", [0, 1], [2], {})]
    inputs, outputs = [0] + ([1] if kind == 4 else []), [len(tensors) - 1]
    if mutate:
        _mutate_tflite(rng, tensors, ops)
    try:
        return build_model(tensors, ops, inputs, outputs)
    except Exception:   # noqa: BLE001 - the builder refused the mutation; build it plain
        return tflite_model(rng, mutate=False)


def _mutate_tflite(rng: random.Random, tensors: list[Tensor], ops: list[Op]) -> None:
    kind = rng.randrange(5)
    op = ops[0]
    if kind == 0:
        key = rng.choice(["stride_w", "stride_h", "padding", "fused_activation_function", "beta",
                          "filter_width", "dilation_w_factor"])
        op.options[key] = rng.choice([0, -1, 2**31 - 1, 7, 99]) if key != "beta" else \
            rng.choice([0.0, float("nan"), -1.0, float("inf"), 1e30])
    elif kind == 1:
        tensor = rng.choice(tensors)
        tensor.shape = [rng.choice([0, -2, 1, 2**31 - 1, 3]) for _ in range(rng.choice([0, 1, 4, 9]))]
    elif kind == 2:
        tensor = rng.choice(tensors)
        tensor.dtype = rng.choice(["float32", "float16", "int32", "uint8", "int64", "bool", "int16"])
    elif kind == 3:
        tensors[0].name = rng.choice(HOSTILE_NAMES)
    else:
        tensor = rng.choice(tensors)
        tensor.quant = ([0.1, 0.2], [0], 5) if rng.random() < 0.5 else ([], [1], 0)
