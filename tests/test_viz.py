"""The viz report without a browser: exact text in the columns, causes, the CLI, time formatting, the
JSON API (schema-driven requests plus bad requests). The browser checks are in test_viz_browser.py."""

from __future__ import annotations

import html
import re

import pytest
from conftest import ROOT, FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.cli import main
from chunkwise.document import Document
from chunkwise.strategies import get_strategy
from chunkwise.timefmt import format_time
from chunkwise.viz import build_views, report
from chunkwise.viz.html import render_text

GUIDE = ROOT / "examples" / "sourdough-guide.md"


def visible_text(fragment: str) -> str:
    """What a browser shows as the text content of rendered spans."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab <>&\"'\n.é"), max_size=300), st.integers(1, 40), st.integers(0, 10))
def test_rendered_text_is_the_document_text(text, max_tokens, overlap):
    """Hostile text (markup characters, overlap): the spans show every character exactly once."""
    strategy = get_strategy("fixed", max_tokens=max_tokens, overlap=min(overlap, max_tokens - 1), tokenizer="chars")
    doc = Document(text)
    view = build_views(doc, [strategy])[0]
    out = render_text(doc.text, view.chunks)
    assert visible_text(out) == text
    assert out.count("data-first=") == len(view.chunks)


def test_semantic_view_has_causes_and_breakpoints():
    doc = Document(GUIDE.read_text(encoding="utf-8"), source=str(GUIDE))
    view = build_views(doc, [get_strategy("semantic", max_tokens=64, embedder=FakeEmbedder())])[0]
    assert view.rows and view.breakpoints
    assert len(view.breakpoints) == len(view.chunks) - 1  # no overlap: one cut between each pair
    assert {c["cause"] for c in view.chunks} <= {"threshold", "max_tokens", "section", "end", "rule"}
    assert view.chunks[-1]["cause"] == "end"
    assert any(c["cause"] == "max_tokens" for c in view.chunks)


def test_report_api_writes_one_self_contained_file(tmp_path):
    out = tmp_path / "r.html"
    page = report(GUIDE, ["semantic", "recursive"], path=out, embedder=FakeEmbedder(), max_tokens=128)
    assert out.read_text(encoding="utf-8") == page
    assert page.count("<script") == 3  # data, plotly.js (once), viz.js
    assert "http://" not in re.sub(r"http://www\.w3\.org[^\"']*", "", page.split("<script>")[0])
    assert 'src="http' not in page and "<link" not in page
    assert page.count('class="column"') == 2


def test_cli_viz(tmp_path, capsys):
    out = tmp_path / "report.html"
    code = main(
        [
            "viz",
            str(GUIDE),
            "-s",
            "recursive",
            "--max-tokens",
            "64",
            "--compare",
            "fixed",
            "--compare",
            "sentence:min_tokens=8",
            "-o",
            str(out),
        ]
    )
    assert code == 0
    page = out.read_text(encoding="utf-8")
    assert page.count('class="column"') == 3
    assert "MB" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["viz", "missing.md"], "missing.md: no such file"),
        (["viz", str(GUIDE), "--compare", "nope"], "unknown strategy 'nope'"),
        (["viz", str(GUIDE), "--max-tokens", "-5"], "max_tokens"),
        (["viz", str(GUIDE), "-s", "recursive"] + ["--compare", "fixed"] * 4, "up to 3"),
    ],
)
def test_cli_viz_errors_are_one_line(argv, message, capsys, tmp_path):
    assert main(argv + ["-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and err[0].startswith("chunkwise: error:")


@pytest.mark.parametrize(
    "seconds, text", [(5810.4, "1:36:50.4"), (247.25, "4:07.2"), (0, "0:00.0"), (3599.96, "1:00:00.0"), (None, "?")]
)
def test_format_time(seconds, text):
    assert format_time(seconds) == text


# -- the JSON API ---------------------------------------------------------------------------------------
fastapi = pytest.importorskip("fastapi")


@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    from chunkwise.viz.app import create_app

    app = create_app(embedder=FakeEmbedder(), max_upload_bytes=4096)
    return TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)


def _from_schema(schema: dict, spec: dict, depth: int = 0):
    """A hypothesis strategy for a JSON-schema node of the app's OpenAPI document (the subset it uses)."""
    if "$ref" in spec:
        return _from_schema(schema, schema["components"]["schemas"][spec["$ref"].split("/")[-1]], depth)
    if "anyOf" in spec:
        return st.one_of([_from_schema(schema, s, depth) for s in spec["anyOf"]])
    kind = spec.get("type")
    if kind == "string":
        return st.text(max_size=min(spec.get("maxLength", 200), 200), min_size=spec.get("minLength", 0))
    if kind == "integer":
        return st.integers(min_value=-5, max_value=300)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(_from_schema(schema, spec.get("items", {}), depth + 1), max_size=2)
    if kind == "object" and "properties" in spec:
        props = {k: _from_schema(schema, v, depth + 1) for k, v in spec["properties"].items()}
        required = set(spec.get("required", []))
        return st.fixed_dictionaries(
            {k: v for k, v in props.items() if k in required},
            optional={k: v for k, v in props.items() if k not in required},
        )
    # free-form objects (strategy params): the shared parameters with hostile values
    return st.dictionaries(
        st.sampled_from(["max_tokens", "min_tokens", "overlap", "unknown"]),
        st.one_of(st.integers(-3, 300), st.text(max_size=5), st.none()),
        max_size=3,
    )


def _body_schema(schema: dict, path: str) -> dict:
    return schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]


def test_openapi_schema_lists_the_api(client):
    schema = client.get("/openapi.json").json()
    assert {"/chunk", "/search", "/health", "/view"} <= set(schema["paths"])


@pytest.mark.parametrize("path", ["/chunk", "/search"])
def test_schema_driven_requests_get_json_answers(client, path):
    """Requests generated from the OpenAPI schema: 200 with exact chunks, or a 4xx with a message."""
    schema = client.get("/openapi.json").json()
    body = _from_schema(schema, _body_schema(schema, path))

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(body)
    def check(payload):
        r = client.post(path, json=payload)
        assert r.status_code < 500, r.text
        data = r.json()
        if r.status_code != 200:
            assert 400 <= r.status_code < 500 and data["error"] and "Traceback" not in data["error"]
            return
        for s in data["strategies"]:
            for c in s["chunks"]:
                assert payload["text"][c["start"] : c["end"]] == c["text"]
                assert c["token_count"] <= s["max_tokens"]

    check()


def test_health(client):
    data = client.get("/health").json()
    assert data["status"] == "ok" and "semantic" in data["strategies"]


@pytest.mark.parametrize(
    "kind", ["oversize", "binary", "type", "strategy", "negative", "embedder", "hf", "empty", "badjson"]
)
def test_bad_requests_are_4xx_with_a_message(client, kind):
    specs = '[{"strategy": "recursive"}]'
    if kind == "oversize":
        r = client.post("/view", files={"file": ("big.txt", b"word " * 2000)}, data={"strategies": specs})
        expect = (413, "too large")
    elif kind == "binary":
        r = client.post("/view", files={"file": ("x.txt", bytes(range(256)))}, data={"strategies": specs})
        expect = (415, "binary")
    elif kind == "type":
        r = client.post("/view", files={"file": ("x.exe", b"MZ")}, data={"strategies": specs})
        expect = (415, "unsupported file type")
    elif kind == "strategy":
        r = client.post("/chunk", json={"text": "Some text.", "strategy": "nope"})
        expect = (400, "unknown strategy")
    elif kind == "negative":
        r = client.post("/chunk", json={"text": "Some text.", "params": {"max_tokens": -1}})
        expect = (400, "max_tokens")
    elif kind == "embedder":
        r = client.post(
            "/chunk", json={"text": "Some text.", "strategy": "semantic", "params": {"embedder": "st:/etc"}}
        )
        expect = (400, "cannot be set over HTTP")
    elif kind == "hf":
        r = client.post("/chunk", json={"text": "Some text.", "params": {"tokenizer": "hf:/etc/passwd"}})
        expect = (400, "names a file")
    elif kind == "empty":
        r = client.post("/view", data={"text": "  ", "strategies": specs})
        expect = (400, "paste some text")
    else:
        r = client.post("/view", data={"text": "Hi.", "strategies": "[oops"})
        expect = (400, "JSON list")
    assert r.status_code == expect[0], r.text
    assert expect[1] in r.json()["error"]


def test_search_without_an_index_says_how(client):
    r = client.post("/search", json={"query": "flour"})
    assert r.status_code == 404 and "--db" in r.json()["error"]


def test_highlights():
    from chunkwise.viz.app import highlights

    text = "Feed the starter daily; starters like flour."
    spans = highlights(text, "feeding the Starter?")
    assert [text[a:b] for a, b in spans] == ["starter", "starters"]


# -- terminal views ---------------------------------------------------------------------------------------
SRT = ROOT / "examples" / "podcast-episode.srt"


def test_chunk_table_piped_prints_whole_text(capsys):
    from chunkwise.formats import load

    assert main(["chunk", str(GUIDE), "-f", "table", "--max-tokens", "200", "-q"]) == 0
    out = capsys.readouterr().out
    chunks = get_strategy("auto", max_tokens=200).chunk(load(GUIDE))  # the chunk default
    for c in chunks:  # not cut: every word of every chunk is in the table
        assert " ".join(c.text.split()) in out


def test_chunk_table_wraps_on_a_terminal():
    import io

    from chunkwise.cli.chunk import _TableWriter
    from chunkwise.formats import load

    buf = io.StringIO()
    chunks = get_strategy("recursive", max_tokens=200).chunk(load(GUIDE))
    _TableWriter(buf, 160, wrap=True).write(chunks)
    lines = buf.getvalue().splitlines()[1:]
    assert max(map(len, lines)) <= 160 and len(lines) > len(chunks)
    fixed = 160 - 62  # the text column is what is left of 160 after the fixed columns
    shown = "".join("".join(line[fixed:] for line in lines).split())
    assert shown == "".join("".join(c.text for c in chunks).split())  # every character, long words broken


def test_chunk_text_format_is_exact(capsys):
    from chunkwise.formats import load

    assert main(["chunk", str(SRT), "-f", "text", "--max-tokens", "40", "-q"]) == 0
    out = capsys.readouterr().out
    chunks = get_strategy("recursive", max_tokens=40).chunk(load(SRT))
    for c in chunks:
        head = next(ln for ln in out.splitlines() if ln.startswith(f"\u2500\u2500 {SRT} #{c.index} "))
        assert f"{c.token_count} tokens" in head and format_time(c.start_time) in head
        assert f"{head}\n{c.text}\n\n" in out


def test_inspect_table_marks_cuts(capsys):
    assert main(["inspect", str(SRT), "-f", "table", "--max-tokens", "40"]) == 0
    out = capsys.readouterr().out
    assert "cut: " in out and "distance" in out and "0:00.5" in out


def test_semantic_view_embeds_each_sentence_once():
    fake = FakeEmbedder()
    doc = Document(GUIDE.read_text(encoding="utf-8"))
    view = build_views(doc, [get_strategy("semantic", max_tokens=64, embedder=fake)])[0]
    assert len(fake.calls) == 1 and view.rows
    assert view.params["embedder"] is fake  # the report shows the strategy's own parameters


def test_search_over_an_index_with_highlights(tmp_path):
    from fastapi.testclient import TestClient

    from chunkwise.retrieval.index import Index
    from chunkwise.viz.app import create_app

    fake = FakeEmbedder()
    db = tmp_path / "s.db"
    with Index(db, embedder=fake) as ix:
        ix.add([GUIDE], strategy="recursive", params={"max_tokens": 64})
    with TestClient(create_app(str(db), embedder=fake), base_url="http://127.0.0.1") as client:
        r = client.post("/search", json={"query": "feeding the starter", "k": 3})
        assert r.status_code == 200, r.text
        hits = r.json()["results"]
        assert len(hits) == 3
        for h in hits:
            assert all(h["text"][a:b].lower().startswith(("feeding", "starter")) for a, b in h["highlights"])
        assert any(h["highlights"] for h in hits)


def test_classic_causes_name_headings_and_the_end():
    from chunkwise.formats import load

    doc = load(GUIDE)
    view = build_views(doc, [get_strategy("markdown", max_tokens=512)])[0]
    causes = [c["cause"] for c in view.chunks]
    assert causes[-1] == "end" and "section" in causes
    assert all(c in ("section", "rule", "end") for c in causes)


def test_huge_body_is_refused_before_reading(client):
    r = client.post(
        "/view",
        content=b"x",
        headers={"content-length": str(10**10), "content-type": "multipart/form-data; boundary=b"},
    )
    assert r.status_code == 413 and "too large" in r.json()["error"]


@pytest.mark.parametrize("inside_cwd", [True, False])
def test_a_report_names_its_document_without_this_machines_paths(tmp_path, monkeypatch, capsys, inside_cwd):
    """A report is shared: its title and heading name the file relative to the working directory, or by its
    file name, never by an absolute path of this machine; the page holds that path nowhere."""
    folder = tmp_path / "private-home" / "notes"
    folder.mkdir(parents=True)
    doc = folder / "guide.md"
    doc.write_text(GUIDE.read_text(encoding="utf-8"), encoding="utf-8")
    cwd = tmp_path if inside_cwd else tmp_path / "elsewhere"
    cwd.mkdir(exist_ok=True)
    monkeypatch.chdir(cwd)
    out = cwd / "r.html"
    assert main(["viz", str(doc.resolve()), "-s", "recursive", "--max-tokens", "64", "-o", str(out), "-q"]) == 0
    page = out.read_text(encoding="utf-8")
    shown = "private-home/notes/guide.md" if inside_cwd else "guide.md"
    assert f"<title>chunkwise: {shown}</title>" in page and f"<h1>{shown}</h1>" in page
    assert str(tmp_path) not in page
