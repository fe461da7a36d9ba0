"""Loaders: text decoding policy, binary/empty/size checks, Markdown, HTML, subtitles, folders and stdin."""

from __future__ import annotations

import io
import re
import sys
import warnings
from pathlib import Path

import pytest

from chunkwise.document import Document
from chunkwise.errors import ConfigError, InputError
from chunkwise.formats import detect_format, iter_documents, load, load_bytes, matches
from chunkwise.formats.markdown_blocks import markdown_sections
from chunkwise.formats.text import DecodingWarning

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def check_structure(doc: Document) -> None:
    """Every span a loader records lies inside the text, in order."""
    n = len(doc.text)
    for spans in (doc.pages, doc.sections, doc.cues):
        starts = [s.start for s in spans]
        assert starts == sorted(starts)
        for s in spans:
            assert 0 <= s.start <= s.end <= n
    for p, q in zip(doc.pages, doc.pages[1:]):
        assert p.end == q.start
    for s in doc.sections:
        if s.heading_start >= 0:
            assert s.start <= s.heading_start <= s.heading_end <= s.end


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    p = tmp_path / name
    p.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return p


# -- plain text and the decoding policy ----------------------------------------------------------------


def test_utf8_bom_stripped_and_crlf_normalised(tmp_path):
    p = write(tmp_path, "a.txt", b"\xef\xbb\xbfFirst line.\r\nSecond line.\r\n")
    doc = load(p, clean=False)
    assert doc.text == "First line.\nSecond line.\n"
    assert doc.metadata["warnings"] == []


def test_invalid_utf8_replaced_with_warning_naming_file(tmp_path):
    p = write(tmp_path, "latin.txt", "Caf\xe9 cr\xe8me and more text.".encode("latin-1"))
    with pytest.warns(DecodingWarning, match=r"latin\.txt: not valid UTF-8: 2 bytes replaced"):
        doc = load(p)
    assert doc.text.count("\ufffd") == 2
    assert "2 bytes replaced" in doc.metadata["warnings"][0]


def test_forced_encoding_reads_latin1(tmp_path):
    p = write(tmp_path, "latin.txt", "Caf\xe9 cr\xe8me.".encode("latin-1"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        doc = load(p, encoding="latin-1")
    assert doc.text == "Caf\xe9 cr\xe8me."
    with pytest.raises(ConfigError, match="unknown encoding"):
        load(p, encoding="no-such-codec")


def test_utf16_with_bom_is_text_not_binary(tmp_path):
    p = write(tmp_path, "u16.txt", "Hello wide world.".encode("utf-16"))
    assert load(p).text == "Hello wide world."


@pytest.mark.parametrize(
    "data, kind",
    [
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "PNG image"),
        (b"PK\x03\x04" + b"\x00" * 40, "ZIP archive"),
        (b"\x7fELF\x02\x01\x01" + b"\x00" * 40, "ELF executable"),
        (b"some text\x00with a NUL byte", "NUL bytes"),
        (bytes(range(1, 32)) * 20, "control characters"),
    ],
)
def test_binary_files_are_refused(tmp_path, data, kind):
    p = write(tmp_path, "file.txt", data)
    with pytest.raises(InputError, match="binary file") as info:
        load(p)
    assert kind in str(info.value) and "file.txt" in str(info.value)


def test_empty_whitespace_missing_and_too_large(tmp_path):
    with pytest.raises(InputError, match=r"empty\.txt: empty file \(0 bytes\)"):
        load(write(tmp_path, "empty.txt", b""))
    with pytest.raises(InputError, match="no text"):
        load(write(tmp_path, "blank.txt", b"  \n\t\n"))
    with pytest.raises(InputError, match="no such file"):
        load(tmp_path / "missing.txt")
    big = write(tmp_path, "big.txt", b"word " * 100)
    with pytest.raises(InputError, match=r"big\.txt: file too large \(500 bytes; the limit is 100 bytes"):
        load(big, max_bytes=100)
    assert load(big, max_bytes=500).text.startswith("word")
    with pytest.raises(ConfigError):
        load(big, max_bytes=0)
    with pytest.raises(ConfigError, match="unknown loader option"):
        load(big, colour="blue")


def test_plain_text_reflow_and_dehyphenation_keep_paragraphs():
    doc = load(EXAMPLES / "night-trains.txt")
    assert doc.title == "The Return of the Night Train"
    assert "experimenting" in doc.text and "experi-" not in doc.text
    paragraphs = [p for p in doc.text.split("\n\n") if p.strip()]
    assert len(paragraphs) == 6  # title + five paragraphs
    assert all("\n" not in p for p in paragraphs)  # wrapped lines re-flowed
    raw = load(EXAMPLES / "night-trains.txt", clean=False)
    assert raw.text == (EXAMPLES / "night-trains.txt").read_text(encoding="utf-8")


def test_unwrapped_text_is_left_alone():
    text = "Shopping list\napples\npears\nbread\n\n" + "A long paragraph that is never wrapped. " * 20 + "\n"
    doc = load_bytes(text.encode(), "list.txt", name="list.txt")
    assert doc.text.startswith("Shopping list\napples\npears\nbread\n\n")


# -- format detection ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, name, fmt",
    [
        (b"%PDF-1.7\n...", "x.txt", "pdf"),
        (b"WEBVTT\n\n00:00.000 --> 00:01.000\nhi\n", None, "vtt"),
        (b"1\n00:00:01,000 --> 00:00:02,000\nhi\n", None, "srt"),
        (b"<!DOCTYPE html><html><body><p>x</p></body></html>", None, "html"),
        (b"# Title\n\ntext\n\n## Sub\n\n```\ncode\n```\n", None, "markdown"),
        (b"just some words", None, "text"),
        (b"just some words", "notes.md", "markdown"),
        (b"<p>fragment</p>", "page.htm", "html"),
    ],
)
def test_detect_format(data, name, fmt):
    assert detect_format(data, name) == fmt


# -- Markdown ---------------------------------------------------------------------------------------------


def test_markdown_sections_nested_and_fence_aware():
    text = (
        "---\ntitle: Front\n---\n\n# Top\n\nintro\n\n## A\n\n```\n# not a heading\n```\n\n"
        "Setext\n------\n\n### Deep *em*\n\ntext\n\n# Second\n\nend\n"
    )
    secs = markdown_sections(text)
    assert [s.path for s in secs] == [
        ("Top",),
        ("Top", "A"),
        ("Top", "Setext"),
        ("Top", "Setext", "Deep em"),
        ("Second",),
    ]
    assert [s.level for s in secs] == [1, 2, 2, 3, 1]
    top, a, setext, deep, second = secs
    assert text[top.start : top.heading_end] == "# Top"
    assert top.end == second.start and second.end == len(text)
    assert a.end == setext.start and setext.end == deep.end == second.start
    assert text[setext.heading_start : setext.heading_end] == "Setext\n------"


def test_markdown_example_document():
    doc = load(EXAMPLES / "sourdough-guide.md")
    check_structure(doc)
    assert doc.title == "A Practical Guide to Sourdough Baking"
    paths = [s.path[-1] for s in doc.sections]
    assert "Average rise time" not in paths  # a comment in a code fence
    assert paths == [
        "A Practical Guide to Sourdough Baking",
        "Keeping a Starter",
        "Feeding Schedule",
        "Tracking Activity",
        "Mixing the Dough",
        "Stretch and Fold",
        "Shaping and Baking",
        "Baking in a Dutch Oven",
    ]
    at = doc.text.index("| 1:2:2")
    assert doc.section_at(at) == ["A Practical Guide to Sourdough Baking", "Keeping a Starter", "Feeding Schedule"]


# -- HTML -------------------------------------------------------------------------------------------------


def test_html_main_content_without_boilerplate():
    doc = load(EXAMPLES / "city-garden.html")
    check_structure(doc)
    for junk in (
        "cookie",
        "Accept all",
        "About us",
        "Copyright",
        "Privacy policy",
        "Share on social",
        "Balcony composting",
        "analytics",
        "font-family",
    ):
        assert junk not in doc.text, junk
    assert doc.title == "Rooftop Gardens in the City - Green Streets Journal"
    assert [s.path for s in doc.sections][:4] == [
        ("Rooftop Gardens in the City",),
        ("Rooftop Gardens in the City", "Why Roofs?"),
        ("Rooftop Gardens in the City", "Planning a Rooftop Garden"),
        ("Rooftop Gardens in the City", "Planning a Rooftop Garden", "Load and Structure"),
    ]
    assert "- wind breaks made of trellis or hardy shrubs," in doc.text
    assert "Lettuce | Partial | Bolts in midsummer; sow in spring and autumn" in doc.text
    pos = doc.text.index("Wet soil is heavy")
    assert doc.section_at(pos)[-1] == "Load and Structure"
    for s in doc.sections:  # headings are exact slices
        assert doc.text[s.heading_start : s.heading_end] == s.path[-1]


def test_html_only_scripts_is_an_error(tmp_path):
    p = write(
        tmp_path,
        "app.html",
        "<html><head><script>var a = 1;</script></head>"
        "<body><script>render()</script><noscript></noscript></body></html>",
    )
    with pytest.raises(InputError, match=r"app\.html: no text"):
        load(p)


def test_html_meta_charset_and_pre(tmp_path):
    html = (
        '<html><head><meta charset="iso-8859-1"></head><body><h1>Caf\xe9</h1>'
        "<pre>  x = 1\n  y = 2</pre><p>Some   <b>bold</b>\n text</p></body></html>"
    ).encode("latin-1")
    doc = load(write(tmp_path, "p.html", html))
    assert doc.text == "Caf\xe9\n\n  x = 1\n  y = 2\n\nSome bold text\n"
    assert doc.metadata["warnings"] == []


def test_html_br_and_nested_lists_and_article_header():
    html = (
        "<body><nav>Home</nav><article><header><h1>Title</h1></header><p>12 Harbor Road<br>North Point</p>"
        "<ol><li>one<ul><li>inner</li></ul></li><li>two</li></ol></article><footer>bye</footer></body>"
    )
    doc = load_bytes(html.encode(), "x.html", name="x.html")
    assert doc.text == "Title\n\n12 Harbor Road\nNorth Point\n\n1. one\n  - inner\n2. two\n"
    assert doc.sections[0].path == ("Title",)


# -- subtitles --------------------------------------------------------------------------------------------


def test_vtt_cues_speakers_and_units():
    doc = load(EXAMPLES / "team-meeting.vtt")
    check_structure(doc)
    assert doc.title == "Weekly planning meeting of the app team"
    assert doc.metadata["speakers"] == ["Maria", "Tom", "Aisha"]
    assert len(doc.cues) == 16 and doc.metadata["cue_count"] == 16
    first = doc.cues[0]
    assert (first.start_time, first.end_time, first.speaker) == (1.0, 4.0, "Maria")
    # the first two cues end mid-sentence: merged into one unit, one line of the text
    units = doc.metadata["units"]
    u0 = doc.text[units[0][0] : units[0][1]]
    assert u0 == "Maria: Good morning everyone, let's start with the release date for version two of the app."
    assert all("\n" not in doc.text[a:b] for a, b in units)
    assert len(units) == 13
    # cues tile their unit: every character of a unit line belongs to a cue (separating spaces aside)
    for a, b in units:
        inside = [c for c in doc.cues if a <= c.start < b]
        assert inside[0].start == a and inside[-1].end == b


def test_srt_prefix_speakers(tmp_path):
    doc = load(EXAMPLES / "podcast-episode.srt")
    check_structure(doc)
    assert doc.metadata["speakers"] == ["HOST", "GUEST"]
    assert [c.speaker for c in doc.cues] == ["HOST", "HOST", "GUEST", "GUEST", "HOST", "GUEST"]
    assert (
        doc.text.splitlines()[0] == "HOST: Welcome back to the show. Today we talk about how bees survive the winter."
    )
    assert doc.cues[1].start_time == 4.1 and doc.cues[1].end_time == 7.8


def test_srt_variants_crlf_bom_and_no_numbers():
    crlf = b"\xef\xbb\xbf1\r\n00:00:01,000 --> 00:00:02,000\r\nHello there.\r\n\r\n2\r\n00:00:03,000 --> 00:00:04,500\r\nBye.\r\n"
    doc = load_bytes(crlf, "a.srt", name="a.srt")
    assert doc.text == "Hello there.\nBye.\n"
    assert [(c.start_time, c.end_time) for c in doc.cues] == [(1.0, 2.0), (3.0, 4.5)]
    bare = b"00:00:01,000 --> 00:00:02,000\nHello there.\n\n00:00:03,000 --> 00:00:04,500\nBye.\n"
    assert load_bytes(bare, "b.srt", name="b.srt").text == "Hello there.\nBye.\n"


def test_note_prefix_is_not_a_speaker(tmp_path):
    srt = (
        "1\n00:00:01,000 --> 00:00:02,000\nNote: the shop opens at nine.\n\n2\n00:00:02,500 --> 00:00:03,000\nThanks.\n"
    )
    doc = load(write(tmp_path, "n.srt", srt))
    assert [c.speaker for c in doc.cues] == [None, None]
    assert doc.text.startswith("Note: the shop")


@pytest.mark.parametrize(
    "name, content, message",
    [
        (
            "bad.vtt",
            "WEBVTT\n\n00:00:xx.000 --> 00:00:03.000\nbroken\n",
            r"bad\.vtt: no readable subtitle cues \(skipped 1 cue\(s\) with a broken timestamp \(line 3\)\)",
        ),
        (
            "bad.srt",
            "1\n00:00:0x,000 --> 00:00:04,000\nbroken\n",
            r"bad\.srt: no readable .*broken timestamp \(line 2\)",
        ),
        ("back.srt", "1\n00:00:05,000 --> 00:00:02,000\nbackwards\n", "end before they start"),
        ("notime.srt", "1\njust text\n", "without a timing line"),
        ("nocue.vtt", "WEBVTT\n\nNOTE nothing here\n", "no readable subtitle cues"),
        ("empty.srt", "1\n00:00:01,000 --> 00:00:02,000\n\n", r"no readable .*without text"),
        ("header.vtt", "00:00:01.000 --> 00:00:02.000\nno header\n", "must start with 'WEBVTT'"),
    ],
)
def test_broken_subtitles(tmp_path, name, content, message):
    p = write(tmp_path, name, content)
    with pytest.raises(InputError, match=message):
        load(p, format="vtt" if name.endswith(".vtt") else None)


@pytest.mark.parametrize(
    "name, content, kept, warning",
    [
        (
            "bad.vtt",
            "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nok\n\n00:00:xx.000 --> 00:00:03.000\nbroken\n",
            "ok\n",
            "skipped 1 cue(s) with a broken timestamp (line 6)",
        ),
        (
            "back.srt",
            "1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\n00:00:05,000 --> 00:00:02,000\nbackwards\n",
            "ok\n",
            "skipped 1 cue(s) that end before they start (line 6)",
        ),
        (
            "notime.srt",
            "1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\njust text\n",
            "ok\n",
            "skipped 1 text block(s) without a timing line (line 5)",
        ),
    ],
)
def test_partly_broken_subtitles_keep_the_rest_and_say_what_was_skipped(tmp_path, name, content, kept, warning):
    with pytest.warns(UserWarning, match=re.escape(warning)):
        doc = load(write(tmp_path, name, content))
    assert doc.text == kept
    assert doc.metadata["warnings"] == [warning]


# -- folders, globs, stdin --------------------------------------------------------------------------------


def test_glob_matching():
    assert matches("a/b/c.md", ["*.md"])
    assert matches("docs/x/y.pdf", ["docs/**/*.pdf"]) and matches("docs/y.pdf", ["docs/**/*.pdf"])
    assert not matches("other/y.pdf", ["docs/**/*.pdf"])
    assert matches("notes.txt", ["notes.[tm]xt"]) and not matches("notes.txt", ["*.md", "*.html"])


def test_iter_documents_folder_globs_hidden_and_errors(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / ".git").mkdir()
    write(tmp_path, "a.md", "# A\n\ntext a\n")
    write(tmp_path / "sub", "b.txt", "text b\n")
    write(tmp_path / "sub", "c.bin", b"\x00\x01\x02binary")
    write(tmp_path / ".git", "config", "hidden\n")
    write(tmp_path, ".hidden.txt", "hidden\n")
    from chunkwise.formats import SkippedFilesWarning

    with pytest.warns(SkippedFilesWarning, match=r"skipped 1 file of unsupported types: \.bin 1"):
        results = dict(iter_documents([tmp_path]))
    assert sorted(Path(s).name for s in results) == ["a.md", "b.txt"]  # a type no loader reads is skipped
    results = dict(iter_documents([tmp_path], all_files=True))
    assert sorted(Path(s).name for s in results) == ["a.md", "b.txt", "c.bin"]
    assert isinstance(results[str(tmp_path / "sub" / "c.bin")], InputError)
    only = dict(iter_documents([tmp_path], include=["*.md", "sub/*.txt"]))
    assert sorted(Path(s).name for s in only) == ["a.md", "b.txt"]
    excl = dict(iter_documents([tmp_path], exclude=["*.bin"]))
    assert sorted(Path(s).name for s in excl) == ["a.md", "b.txt"]
    none = list(iter_documents([tmp_path], include=["*.pdf"]))
    assert len(none) == 1 and isinstance(none[0][1], InputError)
    assert "no readable files matching" in str(none[0][1])
    # the same file named twice is read once
    assert len(list(iter_documents([tmp_path / "a.md", str(tmp_path / "a.md")]))) == 1


def test_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"# Piped\n\n## Part\n\nbody\n")))
    [(source, doc)] = list(iter_documents(["-"]))
    assert source == "<stdin>" and isinstance(doc, Document)
    assert doc.sections[1].path == ("Piped", "Part")


def test_api_chunk_reads_files():
    import chunkwise

    chunks = chunkwise.chunk(str(EXAMPLES / "sourdough-guide.md"), strategy="recursive", max_tokens=64)
    assert chunks and all(c.source.endswith("sourdough-guide.md") for c in chunks)
    assert any(c.section[-1:] == ["Stretch and Fold"] for c in chunks)


# -- hostile input: a clear InputError or a well-formed document, never anything else --------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = [
    "# ",
    "## ",
    "```",
    "\n",
    "\n\n",
    "<h2>",
    "</h2>",
    "<p>",
    "<script>",
    "</script>",
    "<nav>",
    "-->",
    "00:00:01.000",
    "00:00:02,000",
    "WEBVTT",
    "1\n",
    "<v Bob>",
    "word",
    "Wort ",
    "\u00e9",
    "\u4e2d\u6587",
    "\u200b",
    "\r\n",
    "\x00",
    "-\n",
    "Page 3 of 9\n",
    "%PDF-",
    "|a|b|\n",
    "   ",
    "\ufeff",
]


@pytest.mark.filterwarnings("ignore::chunkwise.formats.text.DecodingWarning")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(_PIECES), max_size=40),
    st.sampled_from([None, *("text", "markdown", "html", "vtt", "srt")]),
    st.sampled_from(["x.txt", "x.md", "x.html", "x.vtt", "x.srt", "x"]),
)
def test_hostile_input_never_crashes(pieces, fmt, name):
    data = "".join(pieces).encode("utf-8")
    try:
        doc = load_bytes(data, "hostile", name=name, **({"format": fmt} if fmt else {}))
    except InputError as exc:
        assert str(exc).startswith("hostile: ")
        return
    check_structure(doc)
    assert doc.text.strip()
    for a, b in doc.metadata.get("units", []):
        assert 0 <= a < b <= len(doc.text)


@pytest.mark.filterwarnings("ignore::chunkwise.formats.text.DecodingWarning")
@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_crash(data):
    for name in ("r.txt", "r.pdf", "r.html"):
        try:
            doc = load_bytes(data, "random", name=name)
        except InputError:
            continue
        check_structure(doc)


def test_markdown_front_matter_is_metadata_not_text(tmp_path):
    path = tmp_path / "fm.md"
    path.write_text("---\ntitle: Pumps\nauthor: 'Ann'\n---\n\n# Pumps\n\nThe XR-12 pump.\n", encoding="utf-8")
    doc = load(path)
    assert doc.text.startswith("# Pumps")
    assert "author" not in doc.text
    assert doc.title == "Pumps"
    assert doc.metadata["front_matter"] == {"title": "Pumps", "author": "Ann"}
    assert doc.sections[0].path == ("Pumps",) and doc.text[doc.sections[0].start :].startswith("# Pumps")


def test_empty_front_matter_is_removed_like_the_section_parser_skips_it(tmp_path):
    """One definition of front matter for the loader and the section parser: an empty block (``---`` right
    over ``---``) is metadata too, so the loaded text never starts with two rules the parser ignored."""
    path = tmp_path / "empty.md"
    path.write_text("---\n---\n\n# Pumps\n\nThe XR-12 pump.\n", encoding="utf-8")
    doc = load(path)
    assert doc.text.startswith("# Pumps")
    assert doc.metadata["front_matter"] == {}
    assert doc.sections[0].path == ("Pumps",)


@pytest.mark.parametrize("paragraphs", [1, 6])
def test_html_headings_of_a_bare_body_page_are_kept(paragraphs):
    """trafilatura drops every heading of a page without an article container, short or long; they come
    back before the paragraphs they head, and the sections follow them."""
    from chunkwise.formats.html import html_to_document

    body = "".join(
        f"<h2>Part {i}</h2><p>" + f"Paragraph {i} is about pumps, valves and seals in detail. " * 4 + "</p>"
        for i in range(paragraphs)
    )
    doc = html_to_document(f"<html><body><h1>Pump care</h1>{body}</body></html>", "bare.html")
    assert doc.text.startswith("Pump care\n\nPart 0\n\nParagraph 0 is about pumps")
    assert [s.path for s in doc.sections] == [("Pump care",)] + [("Pump care", f"Part {i}") for i in range(paragraphs)]
    assert "Paragraph 0 is about pumps" in doc.text[doc.sections[1].start :]


SBV = (
    "0:00:00.599,0:00:04.160\n>> ALICE: Hi, my name is Alice Miller and this is John Brown\n\n"
    "0:00:04.160,0:00:06.770\n>> JOHN: and we're the owners of Miller Bakery.\n\n"
    "0:00:06.770,0:00:10.880\nToday we'll be teaching you how to make\nour famous chocolate chip cookies!\n\n"
    "0:00:11.000,0:0x:12.000\nA cue with a broken timestamp.\n"
)


def test_sbv_is_read_as_subtitles_with_cues_and_time_ranges(tmp_path):
    from chunkwise.strategies import get_strategy

    path = tmp_path / "captions.sbv"
    path.write_text(SBV, encoding="utf-8")
    with pytest.warns(UserWarning, match="broken timestamp"):
        doc = load(path)
    assert doc.metadata["format"] == "sbv"
    assert "0:00" not in doc.text and "-->" not in doc.text  # no timing line is text
    assert doc.text.startswith("ALICE: Hi, my name is Alice Miller")
    assert [(c.start_time, c.end_time, c.speaker) for c in doc.cues] == [
        (0.599, 4.16, "ALICE"),
        (4.16, 6.77, "JOHN"),
        (6.77, 10.88, "JOHN"),
    ]
    assert doc.text[doc.cues[2].start : doc.cues[2].end] == (
        "Today we'll be teaching you how to make our famous chocolate chip cookies!"
    )
    assert doc.metadata["warnings"] == ["skipped 1 cue(s) with a broken timestamp (line 11)"]
    chunks = get_strategy("recursive", max_tokens=20, tokenizer="words").chunk(doc)
    assert chunks[0].start_time == 0.599 and chunks[-1].end_time == 10.88
    # without the extension the content is recognised
    with pytest.warns(UserWarning, match="broken timestamp"):
        assert load_bytes(SBV.encode(), source="captions").metadata["format"] == "sbv"
