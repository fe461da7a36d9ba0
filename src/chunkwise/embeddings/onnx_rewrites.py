"""The exact rewrites of the MiniLM graph (see :mod:`.onnx_graph` for why and when they run).

Each works on an ``onnx.ModelProto`` (or its graph) in place, and each leaves a graph that computes the
same values for chunkwise's inputs: folded weights are the products onnxruntime's constant folding would
compute, a dropped NaN guard never fires on a row with an unmasked ``[CLS]``, and ``BiasGelu`` is the exact
(erf) GELU of the bias-added product in one kernel.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("chunkwise.embeddings.onnx_graph")

#: numpy types of the tensor element types the rewrites read (onnx's ``TensorProto.DataType`` numbers), and
#: the repeated field that holds them when they are not in ``raw_data``
_DTYPES = {
    1: (np.float32, "float_data"),
    2: (np.uint8, "int32_data"),
    3: (np.int8, "int32_data"),
    6: (np.int32, "int32_data"),
    7: (np.int64, "int64_data"),
    11: (np.float64, "double_data"),
}
_proto_module: Any = None


def onnx_proto():
    """onnx's protobuf classes (``ModelProto``, ``TensorProto``...) without importing ``onnx``.

    ``import onnx`` costs ~0.7 s of CPU (its helpers import ``ml_dtypes``), more than the rewrites
    themselves, and the rewrites need only the generated message classes: ``onnx/onnx_ml_pb2.py`` is loaded
    on its own (it imports nothing but protobuf). Its file descriptor goes into protobuf's default pool as
    ``import onnx`` puts it there, so messages from either are the same classes (checked by the tests that
    build graphs with ``onnx.helper``)."""
    global _proto_module
    if _proto_module is None:
        loaded = sys.modules.get("onnx.onnx_ml_pb2")
        if loaded is None:
            spec = importlib.util.find_spec("onnx")
            if spec is None or not spec.submodule_search_locations:
                raise ImportError("onnx is not installed")
            path = Path(next(iter(spec.submodule_search_locations))) / "onnx_ml_pb2.py"
            pb2 = importlib.util.spec_from_file_location("_chunkwise_onnx_ml_pb2", path)
            if pb2 is None or pb2.loader is None:
                raise ImportError(f"cannot load {path}")
            loaded = importlib.util.module_from_spec(pb2)
            pb2.loader.exec_module(loaded)
        _proto_module = loaded
    return _proto_module


def load_model(path: str):
    """The ``ModelProto`` in the file ``path`` (``onnx.load`` without onnx; weights in external files are
    not read: such a graph is not the export the rewrites are for)."""
    model = onnx_proto().ModelProto.FromString(Path(path).read_bytes())
    if any(t.data_location == 1 for t in model.graph.initializer):  # TensorProto.EXTERNAL
        raise GraphMismatch("weights in external data files (not the expected export)")
    return model


def to_array(tensor) -> np.ndarray | None:
    """The values of an initializer (``onnx.numpy_helper.to_array`` for the element types in
    :data:`_DTYPES`; ``None`` for others)."""
    kind = _DTYPES.get(tensor.data_type)
    if kind is None or tensor.data_location == 1:
        return None
    dtype, field = kind
    shape = tuple(tensor.dims)
    if tensor.raw_data:
        return np.frombuffer(tensor.raw_data, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(shape)
    return np.asarray(getattr(tensor, field), dtype=dtype).reshape(shape)


def from_array(array: np.ndarray, name: str, tensor=None):
    """A float32 initializer named ``name`` holding ``array`` (as ``onnx.numpy_helper.from_array`` writes
    it: little-endian ``raw_data``), filled into ``tensor`` when given (a new element of a graph's
    initializers: appending a finished tensor would copy it)."""
    tensor = onnx_proto().TensorProto() if tensor is None else tensor
    tensor.name = name
    tensor.dims.extend(array.shape)
    tensor.data_type = 1
    tensor.raw_data = np.ascontiguousarray(array, dtype="<f4").tobytes()
    return tensor


class GraphMismatch(Exception):
    """The graph does not have the shape the rewrites expect (another export): use it as it is."""


def rewrite(model):
    """Rewrites 1-3 of the module docstring on an ``onnx.ModelProto`` (returns the rewritten model)."""
    folded = fold_dequantized_weights(model.graph, max_rank=1)  # the biases; the matrices: onnxruntime
    stripped = strip_nan_guards(model.graph)
    if not stripped:
        raise GraphMismatch("no softmax NaN guard found (not the expected torch export)")
    fused = fuse_bias_gelu(model)
    log.debug("MiniLM graph: %d weights folded, %d NaN guards removed, %d GELUs fused", folded, stripped, fused)
    return model


def fold_dequantized_weights(graph, max_rank: int | None = None) -> int:
    """Replace ``Mul(Cast(int8 weight), float scale)`` by the float weight (both operands initializers),
    only for weights of at most ``max_rank`` dimensions when given: the GELU fusion needs its biases as
    plain initializers, while the weight matrices are folded faster by onnxruntime's own constant folding
    when it loads the graph (the same float products)."""
    proto = onnx_proto()
    inits = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    users = _users(graph)
    dead: set[int] = set()
    folded = 0
    for node in graph.node:
        if node.op_type != "Mul" or len(node.input) != 2:
            continue
        for cast_out, scale_name in (node.input, node.input[::-1]):
            cast = producer.get(cast_out)
            if cast is None or cast.op_type != "Cast" or scale_name not in inits or users.get(cast_out) != 1:
                continue
            to = next((a.i for a in cast.attribute if a.name == "to"), None)
            weight = inits.get(cast.input[0])
            if to != proto.TensorProto.FLOAT or weight is None:
                continue
            if max_rank is not None and len(weight.dims) > max_rank:
                continue
            scale, int_weight = to_array(inits[scale_name]), to_array(weight)
            if scale is None or scale.dtype != np.float32 or int_weight is None:
                continue
            value = (int_weight.astype(np.float32) * scale).astype(np.float32)
            from_array(value, node.output[0], graph.initializer.add())  # built in place: no 90 MB copy
            dead.update((id(node), id(cast)))
            folded += 1
            break
    _keep(graph, lambda n: id(n) not in dead)
    _drop_unused_initializers(graph)
    return folded


def strip_nan_guards(graph) -> int:
    """Remove ``Where(IsNaN(p), c, p)`` after a ``Softmax`` (consumers read ``p``): see the module docstring."""
    producer = {out: node for node in graph.node for out in node.output}
    users = _users(graph)
    rename: dict[str, str] = {}
    dead: set[int] = set()
    for node in graph.node:
        if node.op_type != "Where" or len(node.input) != 3:
            continue
        isnan = producer.get(node.input[0])
        p = node.input[2]
        softmax = producer.get(p)
        if (
            isnan is None
            or isnan.op_type != "IsNaN"
            or isnan.input[0] != p
            or softmax is None
            or softmax.op_type != "Softmax"
            or users.get(node.input[0]) != 1
        ):
            continue
        rename[node.output[0]] = p
        dead.update((id(node), id(isnan)))
    if not rename:
        return 0
    graph_outputs = {o.name for o in graph.output}
    if graph_outputs & rename.keys():
        raise GraphMismatch("a NaN guard is a graph output")
    _keep(graph, lambda n: id(n) not in dead)
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name in rename:
                node.input[k] = rename[name]
    _drop_unused_initializers(graph)  # the guards' fill value
    return len(rename)


def fuse_bias_gelu(model) -> int:
    """Replace each exact GELU of a biased product, ``x * (0.5 * (1 + erf(x / sqrt(2))))`` with
    ``x = Add(MatMul(...), bias)``, by onnxruntime's ``BiasGelu(MatMul(...), bias)`` (``com.microsoft``): the
    node onnxruntime.transformers' BERT optimizer makes of it, and the one fusion of that optimizer
    onnxruntime does not make itself when it loads the graph (its skip + layer norm fusion it does: one
    ``SkipLayerNormalization`` per residual either way)."""
    proto = onnx_proto()
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    readers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    scalars = _scalar_initializers(graph)
    biases = {t.name for t in graph.initializer if len(t.dims) == 1}
    outputs = {o.name for o in graph.output}
    fused: dict[int, Any] = {}  # id(final Mul) -> the BiasGelu node
    dead: set[int] = set()
    for erf in [n for n in graph.node if n.op_type == "Erf"]:
        chain = _gelu_chain(erf, producer, readers, scalars, biases, outputs)
        if chain is None:
            continue
        matmul_out, bias, nodes = chain
        final = nodes[-1]
        fused[id(final)] = proto.NodeProto(
            op_type="BiasGelu",
            input=[matmul_out, bias],
            output=[final.output[0]],
            name=f"BiasGelu_{len(fused)}",
            domain="com.microsoft",
        )
        dead.update(id(n) for n in nodes[:-1])
    if not fused:
        return 0
    kept = [fused.get(id(n), n) for n in graph.node if id(n) not in dead]
    del graph.node[:]
    graph.node.extend(kept)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(proto.OperatorSetIdProto(domain="com.microsoft", version=1))
    _drop_unused_initializers(graph)  # the constants sqrt(2), 1 and 0.5
    return len(fused)


def _scalar_initializers(graph) -> dict[str, float]:
    """The float value of every one-element float initializer."""
    values = {t.name: to_array(t) for t in graph.initializer if int(np.prod(t.dims)) == 1}
    return {name: float(v.reshape(-1)[0]) for name, v in values.items() if v is not None and v.dtype == np.float32}


def _gelu_chain(erf, producer, readers, scalars, biases, outputs):
    """``(MatMul output, bias name, [Add, Div, Erf, Add, Mul, Mul])`` for the GELU around ``erf``, else
    ``None``: each intermediate read only by the next node, the biased value only by the GELU."""

    def only_reader(name):
        users = readers.get(name, [])
        return users[0] if len(users) == 1 and name not in outputs else None

    def other(node, name):  # the input of a two-input node that is not ``name``
        return node.input[1] if node.input[0] == name else node.input[0] if node.input[1] == name else None

    def is_const(name, value):
        return name in scalars and abs(scalars[name] - value) <= 1e-6 * abs(value)

    div = producer.get(erf.input[0])
    if (
        div is None
        or div.op_type != "Div"
        or not is_const(div.input[1], 2**0.5)
        or only_reader(div.output[0]) is not erf
    ):
        return None
    x = div.input[0]
    add_bias = producer.get(x)
    plus_one = only_reader(erf.output[0])
    if plus_one is None or plus_one.op_type != "Add" or not is_const(other(plus_one, erf.output[0]), 1.0):
        return None
    half = only_reader(plus_one.output[0])
    if half is None or half.op_type != "Mul" or not is_const(other(half, plus_one.output[0]), 0.5):
        return None
    final = only_reader(half.output[0])
    if final is None or final.op_type != "Mul" or other(final, half.output[0]) != x:
        return None
    if add_bias is None or add_bias.op_type != "Add" or x in outputs or len(readers.get(x, [])) != 2:
        return None
    for matmul_out, bias in (add_bias.input, add_bias.input[::-1]):
        mm = producer.get(matmul_out)
        if mm is not None and mm.op_type == "MatMul" and bias in biases:
            return matmul_out, bias, [add_bias, div, erf, plus_one, half, final]
    return None


def _users(graph) -> dict[str, int]:
    """How many node inputs and graph outputs read each value (a node is only removed when nothing else
    reads its output)."""
    users: dict[str, int] = {}
    for name in [name for node in graph.node for name in node.input] + [o.name for o in graph.output]:
        users[name] = users.get(name, 0) + 1
    return users


def _keep(graph, pred) -> None:
    kept = [n for n in graph.node if pred(n)]
    del graph.node[:]
    graph.node.extend(kept)


def _drop_unused_initializers(graph) -> None:
    """Delete the initializers nothing reads, in place (re-adding the kept ones would copy ~90 MB)."""
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    for i in reversed(range(len(graph.initializer))):
        if graph.initializer[i].name not in used:
            del graph.initializer[i]
