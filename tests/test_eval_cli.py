"""``chunkwise eval`` and ``chunkwise tune`` end to end (fake embedder), and the HTML report."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from conftest import FakeEmbedder

import chunkwise.embeddings
from chunkwise.cli import main


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch):
    fake = FakeEmbedder()
    monkeypatch.setattr(chunkwise.embeddings, "embedder_from_args", lambda args, **kw: fake)
    return fake


class TagBalance(HTMLParser):
    VOID = {"meta", "br", "img", "hr", "input", "link", "circle", "line", "rect", "polyline"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
        else:
            self.stack.pop()


def check_html(text):
    p = TagBalance()
    p.feed(text)
    p.close()
    assert not p.errors and not p.stack, (p.errors, p.stack)
    # self-contained: nothing fetched from anywhere
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "<script" not in text
    svgs = re.findall(r"<svg.*?</svg>", text, flags=re.S)
    for svg in svgs:
        ET.fromstring(svg)  # each chart is well-formed SVG/XML
    return p.tags, svgs


def test_eval_two_runs_json_and_report(dataset, tmp_path, capsys):  # noqa: F811
    report = tmp_path / "r.html"
    out = tmp_path / "r.json"
    rc = main(
        [
            "-q",
            "eval",
            dataset.path,
            "--run",
            "small=fixed:max_tokens=4,tokenizer=words",
            "--run",
            "big=fixed:max_tokens=12,overlap=4,tokenizer=words",
            "--format",
            "json",
            "--report",
            str(report),
            "-o",
            str(out),
            "--bootstrap",
            "200",
        ]
    )
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in data["runs"]] == ["small", "big"]
    assert data["runs"][1]["config"] == {
        "strategy": "fixed",
        "params": {"max_tokens": 12, "overlap": 4, "tokenizer": "words"},
        "run": {"hybrid": True, "fusion": "zscore", "dense_weight": 0.8},
    }
    for key in ("recall@5", "iou@5", "precision_omega", "recall@min", "iou_set@10", "ndcg@10", "mrr", "pk"):
        assert key in data["runs"][0]["scores"]
    assert any(c["metric"] == "recall@5" for c in data["comparisons"])
    assert json.loads(out.read_text())["queries"] == 4
    tags, svgs = check_html(report.read_text())
    assert "table" in tags and len(svgs) == 3  # the curve + one histogram per run
    assert "small" in report.read_text() and "polyline" in svgs[0]


def test_eval_single_strategy_from_shared_flags_and_table(dataset, capsys):  # noqa: F811
    rc = main(["-q", "eval", dataset.path, "--strategy", "fixed", "--max-tokens", "6", "--tokenizer", "words"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "fixed max_tokens=6 tokenizer=words" in out and "Recall@5" in out and "IoU·set@5" in out


def test_tune_writes_config_that_eval_and_chunk_accept(dataset, tmp_path, capsys):  # noqa: F811
    best = tmp_path / "best.json"
    rc = main(
        [
            "-q",
            "tune",
            dataset.path,
            "--strategy",
            "fixed",
            "--tokenizer",
            "words",
            "--grid",
            "max_tokens=4,8,16",
            "--grid",
            "overlap=0,2",
            "--metric",
            "iou@5",
            "-o",
            str(best),
            "--report",
            str(tmp_path / "t.html"),
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "iou@5" in out and "7 configurations" in out  # the 6 points and the default they must beat
    cfg = json.loads(best.read_text())
    assert cfg["strategy"] in ("fixed", "auto") and cfg["params"]["tokenizer"] == "words"
    assert cfg["tuned"]["metric"] == "iou@5"
    check_html((tmp_path / "t.html").read_text())
    rc = main(["-q", "eval", dataset.path, "--config", str(best), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["runs"][0]["config"]["params"] == cfg["params"]
    assert data["runs"][0]["scores"]["iou@5"] == pytest.approx(cfg["tuned"]["score"])


def test_bad_input_is_one_line(dataset, tmp_path, capsys):  # noqa: F811
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["eval", str(empty)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an evaluation dataset" in err
    assert main(["tune", dataset.path, "--strategy", "fixed", "--grid", "size=1,2"]) == 2
    err = capsys.readouterr().err
    assert "no parameter size; valid: max_tokens, min_tokens, overlap, tokenizer" in err
    assert main(["tune", dataset.path, "--strategy", "fixed", "--grid", "max_tokens=5", "--metric", "f1"]) == 2
    assert "unknown metric" in capsys.readouterr().err
    assert main(["eval", dataset.path, "--run", "fixed:bogus=1"]) == 2
    assert "has no parameter bogus" in capsys.readouterr().err
    assert main(["eval", dataset.path, "--strategy", "fixed", "--dense", "--rrf-k", "9"]) == 2
    err = capsys.readouterr().err  # the flags, named as flags
    assert err.count("\n") == 1 and "--rrf-k applies only with hybrid on, and hybrid is off (--dense)" in err


def test_eval_default_is_hybrid_and_dense_opts_out(dataset, capsys):  # noqa: F811
    rc = main(
        [
            "-q",
            "eval",
            dataset.path,
            "--strategy",
            "fixed",
            "--tokenizer",
            "words",
            "--max-tokens",
            "5",
            "--format",
            "json",
        ]
    )
    assert rc == 0 and json.loads(capsys.readouterr().out)["runs"][0]["config"]["run"]["hybrid"] is True
    rc = main(
        [
            "-q",
            "eval",
            dataset.path,
            "--run",
            "a=fixed:max_tokens=5,tokenizer=words",
            "--run",
            "b=fixed:max_tokens=5,tokenizer=words,hybrid=true",
            "--dense",
            "--format",
            "json",
        ]
    )
    assert rc == 0 and [r["config"]["run"] for r in json.loads(capsys.readouterr().out)["runs"]] == [
        {"hybrid": False},
        {"hybrid": False},
    ]
    assert main(["eval", dataset.path, "--strategy", "fixed", "--dense", "--hybrid"]) == 2
    assert "contradict" in capsys.readouterr().err


def test_tune_with_zscore_fusion_round_trips(dataset, tmp_path, capsys):  # noqa: F811
    best = tmp_path / "best.json"
    rc = main(
        [
            "-q",
            "tune",
            dataset.path,
            "--strategy",
            "fixed",
            "--tokenizer",
            "words",
            "--hybrid",
            "--fusion",
            "zscore",
            "--grid",
            "max_tokens=4,8",
            "--grid",
            "dense_weight=0.5,0.9",
            "--metric",
            "recall@5",
            "-o",
            str(best),
        ]
    )
    assert rc == 0 and "5 configurations" in capsys.readouterr().out  # the 4 points and the default
    cfg = json.loads(best.read_text())
    assert cfg["run"]["hybrid"] is True and cfg["run"]["fusion"] == "zscore"
    assert cfg["run"]["dense_weight"] in (0.5, 0.9) or cfg["strategy"] == "auto"  # a point, or the default kept
    rc = main(["-q", "eval", dataset.path, "--config", str(best), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["runs"][0]["config"]["run"] == cfg["run"]
    assert data["runs"][0]["scores"]["recall@5"] == pytest.approx(cfg["tuned"]["score"])
    # flags apply to every run; a bad value is one line
    rc = main(
        [
            "-q",
            "eval",
            dataset.path,
            "--strategy",
            "fixed",
            "--tokenizer",
            "words",
            "--max-tokens",
            "5",
            "--fusion",
            "rrf",
            "--rrf-k",
            "10",
            "--format",
            "json",
        ]
    )
    assert rc == 0 and json.loads(capsys.readouterr().out)["runs"][0]["config"]["run"] == {
        "hybrid": True,
        "fusion": "rrf",
        "rrf_k": 10,
    }
    rc = main(
        ["-q", "eval", dataset.path, "--strategy", "fixed", "--hybrid", "--fusion", "zscore", "--dense-weight", "1.5"]
    )
    assert rc != 0 and "dense_weight must be" in capsys.readouterr().err


def test_tune_flags_override_its_config_file(tmp_path):
    """``tune --config FILE`` starts from the file; a flag given changes that setting, as for ``search``
    (a ``--run`` of ``eval`` keeps its own values instead)."""
    from chunkwise.cli import build_parser
    from chunkwise.cli.eval_common import _shared_spec
    from chunkwise.cli.evaluate import _tune_fixed

    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"strategy": "fixed", "params": {"max_tokens": 8}, "run": {"fusion": "rrf", "rrf_k": 7}}))
    args = build_parser().parse_args(
        ["tune", str(tmp_path), "--config", str(cfg), "--fusion", "zscore", "--dense-weight", "0.6"]
    )
    fixed = _tune_fixed(args, _shared_spec(args), {"overlap": [0, 2]})
    assert "fusion" not in fixed and fixed["dense_weight"] == 0.6  # zscore, the default, is not listed
    args = build_parser().parse_args(["tune", str(tmp_path), "--config", str(cfg)])
    fixed = _tune_fixed(args, _shared_spec(args), {"overlap": [0, 2]})
    assert fixed["fusion"] == "rrf" and fixed["rrf_k"] == 7


def test_eval_flags_override_its_config_file(dataset, tmp_path, capsys):  # noqa: F811
    cfg = tmp_path / "c.json"
    run = {"fusion": "rrf", "rrf_k": 7}
    cfg.write_text(json.dumps({"strategy": "fixed", "params": {"max_tokens": 8, "tokenizer": "words"}, "run": run}))
    assert main(["-q", "eval", dataset.path, "--config", str(cfg), "--rrf-k", "9", "--format", "json"]) == 0
    (only,) = json.loads(capsys.readouterr().out)["runs"]
    assert only["config"]["run"]["rrf_k"] == 9 and only["config"]["run"]["fusion"] == "rrf"


def test_the_eval_report_names_its_dataset_without_this_machines_paths(dataset, tmp_path, capsys):  # noqa: F811
    """The HTML report is shared: the dataset is named by its folder's name, the absolute path nowhere."""
    report = tmp_path / "r.html"
    argv = ["-q", "eval", dataset.path, "-s", "fixed", "--tokenizer", "words", "--report", str(report)]
    assert main(argv) == 0
    page = report.read_text(encoding="utf-8")
    folder = str(dataset.path).rstrip("/")
    assert folder.startswith("/") and folder not in page
    assert f"{folder.rsplit('/', 1)[-1]}: " in page
