"""Real-world inputs: HTML main content through trafilatura (structure, math, furniture, never silently short),
lenient subtitles (youtube_dl VTT, empty cues), one loader for every command, and the explicit Python API."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import chunkwise
from chunkwise.cli import build_parser, main
from chunkwise.cli.options import input_options
from chunkwise.errors import InputError
from chunkwise.formats import load, load_bytes

DATA = Path(__file__).resolve().parent / "data"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def exact(doc, chunks) -> None:
    assert chunks
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
    for s in doc.sections:
        assert doc.text[s.heading_start : s.heading_end] == s.path[-1]
        assert 0 <= s.start <= s.heading_start < s.heading_end <= s.end <= len(doc.text)


# -- HTML ----------------------------------------------------------------------------------------------


def test_article_body_in_a_sidebar_classed_wrapper_is_kept():
    """The Verge's layout: the body sits in `div.l-sidebar-fixed.l-article-body-segment`; the old class rule
    dropped all of it and kept only the byline."""
    doc = load(DATA / "html" / "sidebar-article.html")
    body = [
        "The harbour office has started printing a small orange lamp",
        "Until this spring the table listed",
        "The lamp is computed from the latest survey",
        "We would rather print one symbol too many",
        "Printed copies in the chandlery",
        "Update July 3rd, 8:05AM",
    ]
    for sentence in body:
        assert sentence in doc.text, sentence
    for junk in ("Copyright", "Privacy notice", "Ferry timetable", "More from the harbour", "dataLayer", "Weather"):
        assert junk not in doc.text, junk
    assert "dawn.\nThe crews" in doc.text  # <br> is a line break
    assert doc.title == "Tide tables now come with a warning light - The Harbour Ledger"
    assert doc.metadata["warnings"] == [] and doc.metadata["html_mode"] == "main"
    exact(doc, chunkwise.chunk(doc, max_tokens=48))


def test_wikipedia_page_without_furniture_math_as_tex_and_table_rows():
    doc = load(DATA / "html" / "wiki-article.html")
    for junk in (
        "Jump to",
        "[edit]",
        "edit]",
        "Ancient Greek geometry",
        "Archimedes",
        "Navigation menu",
        "Random article",
        "Categories",
        "last edited",
        "From the Encyclopedia",
    ):
        assert junk not in doc.text, junk
    assert [s.path for s in doc.sections] == [
        ("Heron's formula",),
        ("Heron's formula", "Example"),
        ("Heron's formula", "Proofs"),
        ("Heron's formula", "Proofs", "Algebraic proof"),
        ("Heron's formula", "Proofs", "Geometric proof"),
    ]
    assert "For a triangle with sides a,b,c and semiperimeter s=(a+b+c)/2, the area" in doc.text
    assert "Sides | Semiperimeter | Area\n4, 13, 15\n(scalene) | 16 | 24\n3, 4, 5\n(right) | 6 | 6" in doc.text
    pos = doc.text.index("incircle")
    assert doc.section_at(pos) == ["Heron's formula", "Proofs", "Geometric proof"]
    exact(doc, chunkwise.chunk(doc, strategy="markdown", max_tokens=64))


def test_full_mode_keeps_the_whole_visible_page():
    doc = load(DATA / "html" / "wiki-article.html", html_mode="full")
    for text in (
        "Jump to navigation",
        "Ancient Greek geometry",
        "Archimedes",
        "Navigation menu",
        "last edited on 12 March 2024",
        "s=(a+b+c)/2",
    ):
        assert text in doc.text, text
    assert "document.documentElement" not in doc.text  # scripts are never text
    assert doc.metadata["html_mode"] == "full"
    exact(doc, chunkwise.chunk(doc, max_tokens=40))
    with pytest.raises(chunkwise.ConfigError, match="html_mode"):
        load(DATA / "html" / "wiki-article.html", html_mode="everything")


def _comment_page() -> bytes:
    comments = "".join(
        f"<li class='comment'><div class='comment-author'>Reader {i}</div><div class='comment-content'><p>I have "
        f"grown tomatoes on my balcony for {i} years and the watering trick works for me, thanks for sharing "
        "it with all of us here.</p></div></li>"
        for i in range(120)
    )
    return (
        f"<html><head><title>Tomatoes</title></head><body><article><h1>Balcony tomatoes</h1><p>Water tomatoes "
        "in the morning, never at noon, and give them a deep pot. That is all there is to it for a good "
        "harvest this summer on a small balcony.</p></article><section id='comments' class='comments-area'>"
        f"<h2>120 comments</h2><ol class='comment-list'>{comments}</ol></section></body></html>"
    ).encode()


def test_main_content_far_below_the_page_text_is_said_naming_the_file():
    with pytest.warns(UserWarning, match=r"tomatoes\.html: main-content extraction .* kept only 1% .*--html-mode full"):
        doc = load_bytes(_comment_page(), "tomatoes.html", name="tomatoes.html")
    assert "Water tomatoes in the morning" in doc.text and "Reader 7" not in doc.text
    full = load_bytes(_comment_page(), "tomatoes.html", name="tomatoes.html", html_mode="full")
    assert "Reader 7" in full.text and full.metadata["warnings"] == []


def test_cli_prints_the_warning_and_honours_html_mode(tmp_path, capsys):
    page = tmp_path / "tomatoes.html"
    page.write_bytes(_comment_page())
    assert main(["chunk", str(page), "--max-tokens", "64"]) == 0
    out, err = capsys.readouterr()
    assert f"chunkwise: warning: {page}: main-content extraction" in err
    assert "Reader 7" not in out
    assert main(["chunk", str(page), "--max-tokens", "64", "--html-mode", "full"]) == 0
    out, err = capsys.readouterr()
    assert "Reader 7" in out and "warning" not in err


def test_no_text_html_is_still_one_clear_error(tmp_path, capsys):
    bad = tmp_path / "app.html"
    bad.write_text("<html><body><script>render()</script></body></html>")
    good = DATA / "html" / "sidebar-article.html"
    assert main(["chunk", str(bad), str(good)]) == 1
    out, err = capsys.readouterr()
    assert f"chunkwise: error: {bad}: no text" in err and "Traceback" not in err
    assert "orange lamp" in out


# -- subtitles -----------------------------------------------------------------------------------------


def test_youtube_dl_vtt_with_timing_lines_after_text_is_read():
    doc = load(DATA / "subtitles" / "youtube_dl.vtt")
    starts = [c.start_time for c in doc.cues]
    assert starts == [286.07, 286.47, 304.08, 305.069]  # every timing line is a cue
    assert doc.text == "yeah\nyeah what\nthis will happen is I'm telling\nthis will happen is I'm telling\n"
    assert "<c" not in doc.text and "00:05" not in doc.text  # inline timestamps and class tags removed
    assert doc.metadata["warnings"] == []
    for c in doc.cues:
        assert doc.text[c.start : c.end].strip()


def test_srt_with_an_empty_cue_is_read_and_the_skip_is_said():
    with pytest.warns(UserWarning, match=r"missing_caption_text\.srt: skipped 1 cue\(s\) without text \(line 6\)"):
        doc = load(DATA / "subtitles" / "missing_caption_text.srt")
    assert [c.start_time for c in doc.cues] == [0.5, 11.89, 16.32, 21.58]
    assert "Caption text #1" in doc.text and "Caption text #5" in doc.text
    exact(doc, chunkwise.chunk(doc, max_tokens=8, tokenizer="words"))


def test_subtitle_numbers_without_blank_lines_and_vtt_entities():
    srt = b"1\n00:00:01,000 --> 00:00:02,000\nHello there.\n2\n00:00:03,000 --> 00:00:04,000\nBye.\n"
    doc = load_bytes(srt, "x.srt", name="x.srt")
    assert doc.text == "Hello there.\nBye.\n"
    vtt = b"WEBVTT\n\nNOTE a comment\nover two lines\n\nid-1\n00:01.000 --> 00:02.000\n<v Ann>Fish &amp; chips.\n"
    doc = load_bytes(vtt, "x.vtt", name="x.vtt")
    assert doc.text == "Ann: Fish & chips.\n" and doc.cues[0].speaker == "Ann"


# -- one loader for every command ----------------------------------------------------------------------


@pytest.mark.parametrize("command", ["chunk", "inspect", "index", "eval", "tune"])
def test_every_command_takes_the_same_loader_options(command):
    argv = [
        command,
        "x",
        "--pdf-password",
        "pw",
        "--encoding",
        "latin-1",
        "--input-format",
        "html",
        "--html-mode",
        "full",
        "--no-clean-headers",
        "--no-reflow",
        "--max-file-size",
        "2MB",
    ]
    args = build_parser().parse_args(argv)
    assert input_options(args) == {
        "max_bytes": 2 * 1024 * 1024,
        "format": "html",
        "encoding": "latin-1",
        "password": "pw",
        "html_mode": "full",
        "clean_headers": False,
        "reflow": False,
    }


def test_eval_reads_html_and_subtitles_in_docs_with_offsets_into_the_loaded_text(tmp_path):
    from chunkwise.evaluation.datasets import load_dataset

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "harbour.html").write_bytes((DATA / "html" / "sidebar-article.html").read_bytes())
    (docs / "talk.srt").write_bytes((DATA / "subtitles" / "missing_caption_text.srt").read_bytes())
    (docs / "notes.md").write_text("# Notes\n\nThe  lamp   is orange.\n", encoding="utf-8")
    html_text = load(docs / "harbour.html").text
    a = html_text.index("echo sounder")
    queries = [
        {
            "query": "how is the channel surveyed?",
            "references": [{"doc": "harbour.html", "start": a, "end": a + 12, "content": "echo sounder"}],
        },
        {"query": "what is the third caption?", "references": [{"doc": "talk.srt"}]},
        {
            "query": "lamp colour",
            "references": [{"doc": "notes.md", "start": 9, "end": 30, "content": "The  lamp   is orange"}],
        },
    ]
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_dataset(tmp_path)
    assert ds.problems == [] and len(ds.queries) == 3
    assert ds.documents["harbour.html"].text == html_text and ds.documents["harbour.html"].source == "harbour.html"
    assert ds.documents["notes.md"].text == "# Notes\n\nThe  lamp   is orange.\n"  # text files verbatim
    full = load_dataset(tmp_path, html_mode="full")
    assert "Privacy notice" in full.documents["harbour.html"].text


# -- Python API: no guessing -----------------------------------------------------------------------------


def test_chunk_file_chunk_text_and_the_explicit_rule(tmp_path):
    path = DATA / "html" / "wiki-article.html"
    by_path = chunkwise.chunk(path, max_tokens=64)
    assert by_path == chunkwise.chunk(str(path), max_tokens=64) == chunkwise.chunk_file(path, max_tokens=64)
    full = chunkwise.chunk_file(path, html_mode="full", max_tokens=64)
    assert any("Archimedes" in c.text for c in full) and not any("Archimedes" in c.text for c in by_path)
    text = chunkwise.chunk_text("notes.md", tokenizer="words")
    assert [c.text for c in text] == ["notes.md"]
    assert [c.text for c in chunkwise.chunk(text="Some words here.")] == ["Some words here."]
    with pytest.raises(InputError, match=r"^typo\.md: no such file; use chunkwise\.chunk_text"):
        chunkwise.chunk("typo.md")
    with pytest.raises(InputError, match="chunk_text"):
        chunkwise.chunk("A sentence that is not a file.")
    with pytest.raises(chunkwise.ConfigError):
        chunkwise.chunk(path, text="both")


# -- property: any mix of cue-like lines gives exact cues or one clear error ------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_LINES = [
    "",
    "",
    "00:00:01.000 --> 00:00:02.000",
    "00:00:03,500 --> 00:00:04,000 align:start",
    "1",
    "cue-7",
    "00:00:0x.000 --> 00:00:02.000",
    "00:00:05.000 --> 00:00:01.000",
    "Hello there.",
    "<v Ann>Hi &amp; bye",
    "NOTE remark",
    "<c.colorE5E5E5>word</c><00:00:01.500>",
    "   ",
    "NAME: text",
    "\u4e2d\u6587",
]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_LINES), max_size=30), st.sampled_from(["vtt", "srt"]))
def test_subtitle_parser_is_exact_or_one_clear_error(lines, kind):
    body = ("WEBVTT\n\n" if kind == "vtt" else "") + "\n".join(lines) + "\n"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            doc = load_bytes(body.encode(), "sub", name=f"x.{kind}")
        except InputError as exc:
            assert str(exc).startswith("sub: ") and "\n" not in str(exc)
            return
    assert doc.cues and doc.text.endswith("\n")
    for c in doc.cues:
        assert doc.text[c.start : c.end].strip() and c.start_time <= c.end_time
    assert [c.start for c in doc.cues] == sorted(c.start for c in doc.cues)
    for a, b in doc.metadata["units"]:
        assert 0 <= a < b <= len(doc.text)


# -- the real-documents benchmark runs offline on a local cache ------------------------------------------


def test_bench_real_documents_on_a_small_local_cache(tmp_path):
    import importlib.util
    import shutil

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_real_documents.py"
    spec = importlib.util.spec_from_file_location("bench_real_documents", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    subs = tmp_path / "glut23+webvtt-py" / "tests" / "subtitles"
    subs.mkdir(parents=True)
    for f in [*(DATA / "subtitles").glob("*.vtt"), *(DATA / "subtitles").glob("*.srt")]:
        shutil.copy(f, subs / f.name)
    (subs / "no_cues.vtt").write_text("WEBVTT\n\nNOTE nothing\n")
    result = bench.check_subtitles(tmp_path)
    assert result["files"] == 3 and result["accepted_by_chunkwise"] == 2
    assert result["accepted_by_webvtt_py_or_pysrt"] == result["of_those_accepted_by_chunkwise"] == 2
    item = {"with": ["orange  lamp", "absent text"], "without": ["Copyright"]}
    assert bench._count(item, "an orange lamp. Copyright") == (1, 1, 1, 0)
    assert bench._scores([1, 1, 1, 0]) == {"precision": 0.5, "recall": 0.5, "f1": 0.5}
    assert bench.check_pdf(tmp_path)["skipped"] and bench.check_markdown(tmp_path)["skipped"]
