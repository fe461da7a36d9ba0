"""Darknet ``.cfg`` + ``.weights`` to an ONNX graph with ``onnx.helper`` (no torch, no OpenCV), and a numpy
forward pass of the same network that checks the conversion.

Only the layers of the YOLOv3-tiny family are read: ``convolutional`` (batch norm folded into the weights,
leaky or linear activation), ``maxpool``, ``upsample``, ``route`` and ``yolo``. The graph outputs each
``yolo`` layer's raw map (``N x anchors*(5+classes) x H x W``); :mod:`.detector` decodes them. The weights
are read exactly: a file with more or fewer numbers than the cfg needs is refused (a cfg that does not
belong to the weights).

The arithmetic follows Darknet (``src/convolutional_layer.c``, ``maxpool_layer.c``): batch norm is
``(x - mean) / (sqrt(var) + 1e-6) * scale + bias``; a max pool of stride 1 pads one pixel right and below
(so a 13 x 13 map stays 13 x 13); ``pad=1`` on a convolution means ``size // 2``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError

#: leaky ReLU slope of Darknet's ``activation=leaky``
LEAKY = 0.1
#: Darknet's batch-norm epsilon (added to the standard deviation, not the variance)
BN_EPS = 1e-6


@dataclass
class Layer:
    kind: str
    options: dict[str, str]
    #: the folded convolution weights (O x I x k x k) and bias, once read
    weight: np.ndarray | None = None
    bias: np.ndarray | None = None
    #: yolo: the anchors (w, h in input pixels) of this layer's mask
    anchors: list[tuple[float, float]] = field(default_factory=list)

    def int(self, key: str, default: int) -> int:
        return int(self.options.get(key, default))


def parse_cfg(path: str | Path) -> tuple[dict[str, str], list[Layer]]:
    """The ``[net]`` options and the layers of a Darknet cfg file."""
    sections: list[tuple[str, dict[str, str]]] = []
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            sections.append((line[1:-1].strip(), {}))
        elif "=" in line and sections:
            key, value = line.split("=", 1)
            sections[-1][1][key.strip()] = value.strip()
    if not sections or sections[0][0] not in ("net", "network"):
        raise InputError("not a Darknet cfg (no [net] section first)", source=str(path))
    return sections[0][1], [Layer(kind, opts) for kind, opts in sections[1:]]


def _shapes(net: dict[str, str], layers: list[Layer]) -> list[tuple[int, int, int]]:
    """Each layer's output (channels, height, width) for the cfg's input size."""
    c, h, w = int(net.get("channels", 3)), int(net["height"]), int(net["width"])
    out: list[tuple[int, int, int]] = []
    for i, layer in enumerate(layers):
        if layer.kind == "convolutional":
            size, stride = layer.int("size", 1), layer.int("stride", 1)
            pad = size // 2 if layer.int("pad", 0) else layer.int("padding", 0)
            c = layer.int("filters", 1)
            h, w = (h + 2 * pad - size) // stride + 1, (w + 2 * pad - size) // stride + 1
        elif layer.kind == "maxpool":
            size, stride = layer.int("size", 2), layer.int("stride", 2)
            pad = layer.int("padding", size - 1)
            h, w = (h + pad - size) // stride + 1, (w + pad - size) // stride + 1
        elif layer.kind == "upsample":
            s = layer.int("stride", 2)
            h, w = h * s, w * s
        elif layer.kind == "route":
            idx = [_index(i, int(v)) for v in layer.options["layers"].split(",")]
            c = sum(out[j][0] for j in idx)
            h, w = out[idx[0]][1], out[idx[0]][2]
        elif layer.kind == "yolo":
            pass
        else:
            raise InputError(f"Darknet layer [{layer.kind}] is not supported (YOLOv3-tiny layers only)")
        out.append((c, h, w))
    return out


def _index(i: int, ref: int) -> int:
    return i + ref if ref < 0 else ref


def load_weights(cfg: str | Path, weights: str | Path) -> tuple[dict[str, str], list[Layer]]:
    """The cfg's layers with their convolution weights read from ``weights`` (batch norm folded in) and the
    yolo layers' anchors. Refuses a weights file whose length does not match the cfg exactly."""
    net, layers = parse_cfg(cfg)
    shapes = _shapes(net, layers)
    data = Path(weights).read_bytes()
    major, minor, _revision = np.frombuffer(data, np.int32, 3)
    offset = 12 + (8 if major * 10 + minor >= 2 else 4)  # images seen: size_t from version 0.2 on
    floats = np.frombuffer(data, np.float32, offset=offset, count=(len(data) - offset) // 4)
    pos = 0

    def take(n: int) -> np.ndarray:
        nonlocal pos
        if pos + n > len(floats):
            raise InputError("the weights file is shorter than its cfg needs", source=str(weights))
        chunk = floats[pos : pos + n].astype(np.float64)
        pos += n
        return chunk

    channels = int(net.get("channels", 3))
    for i, layer in enumerate(layers):
        if layer.kind == "convolutional":
            n, size = layer.int("filters", 1), layer.int("size", 1)
            cin = shapes[i - 1][0] if i else channels
            bias = take(n)
            if layer.int("batch_normalize", 0):
                scale, mean, var = take(n), take(n), take(n)
                k = scale / (np.sqrt(var) + BN_EPS)
                w = take(n * cin * size * size).reshape(n, cin, size, size)
                layer.weight = (w * k[:, None, None, None]).astype(np.float32)
                layer.bias = (bias - mean * k).astype(np.float32)
            else:
                layer.weight = take(n * cin * size * size).reshape(n, cin, size, size).astype(np.float32)
                layer.bias = bias.astype(np.float32)
        elif layer.kind == "yolo":
            values = [float(v) for v in layer.options["anchors"].split(",")]
            pairs = list(zip(values[0::2], values[1::2]))
            layer.anchors = [pairs[int(m)] for m in layer.options["mask"].split(",")]
    if pos != len(floats):
        raise InputError(
            f"the weights file has {len(floats) - pos} numbers more than its cfg needs (another network?)",
            source=str(weights),
        )
    return net, layers


def _convolution(layer: Layer, name: str, previous: str, nodes: list[Any], inits: list[Any]) -> None:
    """A convolutional layer as a ``Conv`` node (weights and bias as initialisers), then its activation."""
    from onnx import helper, numpy_helper

    assert layer.weight is not None and layer.bias is not None
    size, stride = layer.int("size", 1), layer.int("stride", 1)
    pad = size // 2 if layer.int("pad", 0) else layer.int("padding", 0)
    inits += [
        numpy_helper.from_array(layer.weight, f"{name}.w"),
        numpy_helper.from_array(layer.bias, f"{name}.b"),
    ]
    act = layer.options.get("activation", "linear")
    conv_out = name if act == "linear" else f"{name}.conv"
    nodes.append(
        helper.make_node(
            "Conv",
            [previous, f"{name}.w", f"{name}.b"],
            [conv_out],
            kernel_shape=[size, size],
            strides=[stride, stride],
            pads=[pad] * 4,
        )
    )
    if act == "leaky":
        nodes.append(helper.make_node("LeakyRelu", [conv_out], [name], alpha=LEAKY))
    elif act != "linear":
        raise InputError(f"Darknet activation {act!r} is not supported")


def to_onnx(net: dict[str, str], layers: list[Layer]) -> Any:
    """The network as an ``onnx.ModelProto``: input ``images`` (N x 3 x H x W, RGB in 0..1), one output per
    yolo layer (``yolo0``, ``yolo1``...)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    h, w = int(net["height"]), int(net["width"])
    nodes: list[Any] = []
    inits: list[Any] = []
    outputs: list[Any] = []
    names: list[str] = []
    shapes = _shapes(net, layers)
    previous = "images"
    for i, layer in enumerate(layers):
        name = f"l{i}"
        if layer.kind == "convolutional":
            _convolution(layer, name, previous, nodes, inits)
        elif layer.kind == "maxpool":
            size, stride = layer.int("size", 2), layer.int("stride", 2)
            pad = layer.int("padding", size - 1)
            ih, iw = shapes[i - 1][1], shapes[i - 1][2]
            oh, ow = shapes[i][1], shapes[i][2]
            # Darknet pads pad // 2 before and the rest after; ONNX needs the after-padding that yields its size
            before = pad // 2
            after_h = max(0, (oh - 1) * stride + size - ih - before)
            after_w = max(0, (ow - 1) * stride + size - iw - before)
            nodes.append(
                helper.make_node(
                    "MaxPool",
                    [previous],
                    [name],
                    kernel_shape=[size, size],
                    strides=[stride, stride],
                    pads=[before, before, after_h, after_w],
                )
            )
        elif layer.kind == "upsample":
            s = float(layer.int("stride", 2))
            inits.append(numpy_helper.from_array(np.array([1.0, 1.0, s, s], np.float32), f"{name}.scales"))
            nodes.append(
                helper.make_node(
                    "Resize",
                    [previous, "", f"{name}.scales"],
                    [name],
                    mode="nearest",
                    nearest_mode="floor",
                    coordinate_transformation_mode="asymmetric",
                )
            )
        elif layer.kind == "route":
            idx = [_index(i, int(v)) for v in layer.options["layers"].split(",")]
            if len(idx) == 1:
                nodes.append(helper.make_node("Identity", [names[idx[0]]], [name]))
            else:
                nodes.append(helper.make_node("Concat", [names[j] for j in idx], [name], axis=1))
        elif layer.kind == "yolo":
            out = f"yolo{len(outputs)}"
            nodes.append(helper.make_node("Identity", [previous], [out]))
            c, oh, ow = shapes[i]
            outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N", c, oh, ow]))
            name = previous  # a yolo layer passes its input on
        names.append(name)
        previous = name
    graph = helper.make_graph(
        nodes,
        "darknet",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, h, w])],
        outputs,
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="chunkwise")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def reference_forward(layers: list[Layer], images: np.ndarray) -> list[np.ndarray]:
    """The network in plain numpy (float64, im2col convolutions): the yolo layers' raw maps. Slow (~seconds);
    used once to check a converted graph."""
    outs: list[np.ndarray] = []
    yolo: list[np.ndarray] = []
    x = images.astype(np.float64)
    for i, layer in enumerate(layers):
        if layer.kind == "convolutional":
            assert layer.weight is not None and layer.bias is not None
            size, stride = layer.int("size", 1), layer.int("stride", 1)
            pad = size // 2 if layer.int("pad", 0) else layer.int("padding", 0)
            x = _conv(x, layer.weight.astype(np.float64), layer.bias.astype(np.float64), stride, pad)
            if layer.options.get("activation") == "leaky":
                x = np.where(x > 0, x, LEAKY * x)
        elif layer.kind == "maxpool":
            size, stride = layer.int("size", 2), layer.int("stride", 2)
            pad = layer.int("padding", size - 1)
            n, c, h, w = x.shape
            oh, ow = (h + pad - size) // stride + 1, (w + pad - size) // stride + 1
            before = pad // 2
            padded = np.full((n, c, h + pad + size, w + pad + size), -np.inf)
            padded[:, :, before : before + h, before : before + w] = x
            x = np.max(
                [
                    padded[:, :, dy : dy + stride * oh : stride, dx : dx + stride * ow : stride]
                    for dy in range(size)
                    for dx in range(size)
                ],
                axis=0,
            )
        elif layer.kind == "upsample":
            s = layer.int("stride", 2)
            x = x.repeat(s, axis=2).repeat(s, axis=3)
        elif layer.kind == "route":
            idx = [_index(i, int(v)) for v in layer.options["layers"].split(",")]
            x = np.concatenate([outs[j] for j in idx], axis=1)
        elif layer.kind == "yolo":
            yolo.append(x)
        outs.append(x)
    return yolo


def _conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, pad: int) -> np.ndarray:
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    cols = np.empty((n, c, k, k, oh, ow))
    for dy in range(k):
        for dx in range(k):
            cols[:, :, dy, dx] = x[:, :, dy : dy + stride * oh : stride, dx : dx + stride * ow : stride]
    y = w.reshape(o, -1) @ cols.reshape(n, c * k * k, oh * ow)
    return y.reshape(n, o, oh, ow) + b[None, :, None, None]


__all__ = ["Layer", "parse_cfg", "load_weights", "to_onnx", "reference_forward"]
