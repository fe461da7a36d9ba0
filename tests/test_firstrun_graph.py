"""The first run's graph rewrite without onnxruntime's transformers optimizer, and the cheap trust check.

- ``fuse_bias_gelu``: the erf GELU after a biased MatMul becomes onnxruntime's ``BiasGelu`` with the same
  outputs; a GELU whose pieces are read elsewhere is left alone.
- ``onnx_proto``: onnx's message classes loaded without ``import onnx`` are onnx's own classes.
- ``damage``: a graph unchanged since its full hash is not hashed again; any write to it (same size, the
  modification time put back) or a replacement is hashed again and caught.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")


def _gelu_model(extra_output: bool = False):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.normal(size=(8, 16)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.normal(size=(16,)).astype(np.float32), "b"),
        numpy_helper.from_array(np.array(2**0.5, np.float32), "sqrt2"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["xb"]),
        helper.make_node("Div", ["xb", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["half", "e1"], ["h"]),
        helper.make_node("Mul", ["xb", "h"], ["y"]),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])]
    if extra_output:
        outputs.append(helper.make_tensor_value_info("e", TensorProto.FLOAT, [4, 16]))
    graph = helper.make_graph(
        nodes, "gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])], outputs, inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model, x):
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(["y"], {"x": x})[0]


def test_bias_gelu_fusion_keeps_the_outputs():
    from chunkwise.embeddings.onnx_rewrites import fuse_bias_gelu

    model = _gelu_model()
    x = np.random.default_rng(1).normal(size=(4, 8)).astype(np.float32) * 3
    before = _run(model, x)
    assert fuse_bias_gelu(model) == 1
    assert [n.op_type for n in model.graph.node] == ["MatMul", "BiasGelu"]
    assert {t.name for t in model.graph.initializer} == {"w", "b"}  # sqrt(2), 1 and 0.5 are gone
    assert any(o.domain == "com.microsoft" for o in model.opset_import)
    np.testing.assert_allclose(_run(model, x), before, atol=1e-6, rtol=0)


def test_a_gelu_whose_pieces_are_read_elsewhere_stays():
    from chunkwise.embeddings.onnx_rewrites import fuse_bias_gelu

    model = _gelu_model(extra_output=True)
    assert fuse_bias_gelu(model) == 0
    assert [n.op_type for n in model.graph.node].count("Erf") == 1


def test_onnx_message_classes_without_importing_onnx_are_onnx_s(monkeypatch):
    import sys

    from chunkwise.embeddings import onnx_rewrites
    from chunkwise.embeddings.onnx_rewrites import from_array, onnx_proto, to_array

    monkeypatch.setattr(onnx_rewrites, "_proto_module", None)
    monkeypatch.delitem(sys.modules, "onnx.onnx_ml_pb2")  # as in a process that never imported onnx
    proto = onnx_proto()
    assert proto.__name__ == "_chunkwise_onnx_ml_pb2"  # loaded from the file, on its own
    assert proto.ModelProto is onnx.ModelProto and proto.TensorProto is onnx.TensorProto
    value = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    tensor = from_array(value, "v")
    assert tensor.SerializeToString() == onnx.numpy_helper.from_array(value, "v").SerializeToString()
    for array in (value, np.array([-128, 0, 127], np.int8), np.array(0.5, np.float32)):
        np.testing.assert_array_equal(to_array(onnx.numpy_helper.from_array(array, "t")), array)


def _recorded_graph(folder: Path) -> Path:
    """A small graph file with its record and check note, as the rewrite writes them."""
    from chunkwise.embeddings import onnx_trust

    folder.mkdir(mode=0o700)
    graph = folder / "minilm-graph-test.onnx"
    data = _gelu_model().SerializeToString()
    graph.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    onnx_trust.record_path(graph).write_text(json.dumps({"sha256": sha, "size": len(data)}))
    onnx_trust.note_checked(graph, sha)
    return graph


class _CountingHash:
    def __init__(self, monkeypatch):
        from chunkwise.embeddings import onnx_trust

        self.calls = 0
        real = hashlib.sha256

        def counted(*a):
            self.calls += 1
            return real(*a)

        monkeypatch.setattr(onnx_trust.hashlib, "sha256", counted)
        monkeypatch.setattr(onnx_trust, "_verified", {})


def test_an_unchanged_graph_is_not_hashed_again(tmp_path, monkeypatch):
    from chunkwise.embeddings import onnx_trust

    graph = _recorded_graph(tmp_path / "cache")
    hashes = _CountingHash(monkeypatch)
    assert onnx_trust.damage(graph) is None
    assert hashes.calls == 0
    note = onnx_trust.check_path(graph)
    record = json.loads(note.read_text())
    record["at"] -= onnx_trust.CHECK_EVERY_S + 1  # a day old: hashed again, then noted afresh
    note.write_text(json.dumps(record))
    monkeypatch.setattr(onnx_trust, "_verified", {})
    assert onnx_trust.damage(graph) is None and hashes.calls == 1
    monkeypatch.setattr(onnx_trust, "_verified", {})
    assert onnx_trust.damage(graph) is None and hashes.calls == 1


@pytest.mark.parametrize("how", ["in place, same size, time put back", "replaced by a copy"])
def test_a_changed_graph_is_hashed_again_and_caught(tmp_path, monkeypatch, how):
    from chunkwise.embeddings import onnx_trust

    graph = _recorded_graph(tmp_path / "cache")
    hashes = _CountingHash(monkeypatch)
    before = graph.stat()
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0x01
    if how.startswith("in place"):
        with open(graph, "r+b") as f:
            f.seek(len(data) // 2)
            f.write(bytes(data[len(data) // 2 : len(data) // 2 + 1]))
        os.utime(graph, ns=(before.st_atime_ns, before.st_mtime_ns))  # only the change time tells
        assert graph.stat().st_mtime_ns == before.st_mtime_ns and graph.stat().st_size == before.st_size
    else:
        copy = tmp_path / "copy.onnx"
        copy.write_bytes(bytes(data))
        os.utime(copy, ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(copy, graph)
    assert onnx_trust.damage(graph) == "does not match its recorded SHA-256"
    assert hashes.calls == 1


def test_discard_removes_the_check_note(tmp_path):
    from chunkwise.embeddings import onnx_trust

    graph = _recorded_graph(tmp_path / "cache")
    assert onnx_trust.check_path(graph).is_file()
    onnx_trust.discard(graph)
    assert sorted(p.name for p in graph.parent.iterdir()) == []


def test_only_the_biases_are_folded_when_a_rank_is_given():
    """``max_rank=1`` folds the dequantised bias and leaves the int8 matrix to onnxruntime's constant folding:
    the GELU fusion gets its plain bias, the outputs stay the same."""
    from onnx import TensorProto, helper, numpy_helper

    from chunkwise.embeddings.onnx_rewrites import fold_dequantized_weights

    rng = np.random.default_rng(2)
    inits = [
        numpy_helper.from_array(rng.integers(-127, 127, (8, 16)).astype(np.int8), "w_q"),
        numpy_helper.from_array(rng.integers(-127, 127, (16,)).astype(np.int8), "b_q"),
        numpy_helper.from_array(np.float32(0.011), "s"),
    ]
    nodes = [
        helper.make_node("Cast", ["w_q"], ["w_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["w_f", "s"], ["w"]),
        helper.make_node("Cast", ["b_q"], ["b_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["b_f", "s"], ["b"]),
        helper.make_node("MatMul", ["x", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "biased",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(3).normal(size=(4, 8)).astype(np.float32)
    before = _run(model, x)
    assert fold_dequantized_weights(model.graph, max_rank=1) == 1
    weights = {t.name: tuple(t.dims) for t in model.graph.initializer}
    assert weights == {"w_q": (8, 16), "s": (), "b": (16,)}  # the matrix still int8, the bias a float
    np.testing.assert_array_equal(_run(model, x), before)


def test_the_first_embedder_runs_the_session_the_rewrite_loaded(tmp_path, monkeypatch):
    """On a fresh cache the rewrite loads the graph once, saves what onnxruntime optimised, and the embedder
    of that process runs that session (no second load of the 90 MB file); the next process loads the saved
    file, which passes its record and gives the same vectors."""
    import tempfile

    from chunkwise.embeddings import minilm, onnx_graph

    monkeypatch.setenv("CHUNKWISE_CACHE_DIR", str(tmp_path / "default"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # no graph made by another test there
    loads: list[str] = []
    real = minilm._load_session.__wrapped__
    monkeypatch.setattr(minilm, "_load_session", lambda threads, path: loads.append(path) or real(threads, path))
    minilm._checked_session.cache_clear()
    first = minilm.MiniLMEmbedder(cache_dir=tmp_path / "cache")
    (graph,) = (tmp_path / "cache").glob("minilm-graph-*.onnx")
    assert loads == [] and onnx_graph.take_made_session(str(graph), first.threads) is None  # handed over once
    assert onnx_graph.damage(graph) is None
    ops = [n.op_type for n in onnx.load(graph).graph.node]
    assert "IsNaN" not in ops and ops.count("BiasGelu") == 6 and "DequantizeLinear" not in ops
    minilm._checked_session.cache_clear()
    second = minilm.MiniLMEmbedder(cache_dir=tmp_path / "cache")
    assert loads == [str(graph)]
    texts = ["The pump is inspected every week.", "Lunch is served at noon in the cafeteria. " * 20]
    np.testing.assert_allclose(first.embed(texts), second.embed(texts), atol=1e-6)
    minilm._checked_session.cache_clear()


def test_a_rewritten_graph_loads_at_the_basic_level_into_the_same_graph(tmp_path):
    """The rewritten graph was saved as onnxruntime optimised it; loading it at ORT_ENABLE_BASIC (what the
    embedder does, cheaper) gives the nodes and the vectors loading it at ORT_ENABLE_ALL gives, bit for bit.
    The shipped file still loads at ORT_ENABLE_ALL (it needs the fusions)."""
    import onnxruntime as ort

    from chunkwise.embeddings import minilm, onnx_graph
    from chunkwise.embeddings.cache import default_cache_dir

    graph = onnx_graph.fast_graph_path(minilm.onnx_model_path(), default_cache_dir())
    assert onnx_graph.load_level(graph) == "ORT_ENABLE_BASIC"
    assert onnx_graph.load_level(minilm.onnx_model_path()) == "ORT_ENABLE_ALL"
    ids = np.asarray([[101, 1996, 9529, 12665, 1996, 15536, 1012, 102], [101, 2122, 2024, 102, 0, 0, 0, 0]])
    feeds = {"input_ids": ids, "attention_mask": (ids > 0).astype(np.int64)}
    nodes, outputs = {}, {}
    for level in ("ORT_ENABLE_ALL", "ORT_ENABLE_BASIC"):
        opts = onnx_graph.session_options(1, level)
        opts.optimized_model_filepath = str(tmp_path / f"{level}.onnx")
        opts.add_session_config_entry("session.optimized_model_external_initializers_file_name", f"{level}.w")
        session = ort.InferenceSession(graph, sess_options=opts, providers=["CPUExecutionProvider"])
        if "token_type_ids" in {i.name for i in session.get_inputs()}:
            feeds["token_type_ids"] = np.zeros_like(ids)
        outputs[level] = session.run(None, feeds)[0]
        model = onnx.load(str(tmp_path / f"{level}.onnx"), load_external_data=False)
        nodes[level] = [(n.op_type, list(n.input), list(n.output)) for n in model.graph.node]
    assert nodes["ORT_ENABLE_ALL"] == nodes["ORT_ENABLE_BASIC"] and len(nodes["ORT_ENABLE_ALL"]) > 100
    np.testing.assert_array_equal(outputs["ORT_ENABLE_ALL"], outputs["ORT_ENABLE_BASIC"])
