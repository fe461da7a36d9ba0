"""Cleaning steps: position mapping through edits, headers/footers, hyphenation, reflow, switches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.formats.cleaning import (
    CleaningOptions,
    apply_edits,
    clean,
    dehyphenate_edits,
    header_footer_edits,
    reflow_edits,
    whitespace_edits,
)


@st.composite
def texts_with_edits(draw):
    text = draw(st.text(alphabet="ab \n-xy", max_size=60))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=8))))
    edits = []
    for a, b in zip(cuts[::2], cuts[1::2]):
        edits.append((a, b, draw(st.text(alphabet="Z\n ", max_size=3))))
    return text, edits


@settings(max_examples=300, deadline=None)
@given(texts_with_edits())
def test_apply_edits_text_and_positions(case):
    text, edits = case
    positions = list(range(len(text) + 1))
    new, mapped = apply_edits(text, edits, positions)
    expected, prev = "", 0
    for a, b, r in edits:
        expected += text[prev:a] + r
        prev = b
    expected += text[prev:]
    assert new == expected
    assert mapped == sorted(mapped) and all(0 <= m <= len(new) for m in mapped)
    for p, m in zip(positions, mapped):
        if p < len(text) and not any(a <= p < b for a, b, _ in edits):
            assert new[m] == text[p]  # untouched characters keep their identity


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab c-\n\t\u00a0\u200b.", max_size=120), st.booleans())
def test_each_step_keeps_pages_monotone(text, collapse):
    starts = sorted({0, len(text) // 3, len(text) // 2})
    result = clean(text, starts, page_starts=starts, paragraph_breaks=True, collapse_spaces=collapse)
    assert result.positions == sorted(result.positions)
    assert all(0 <= p <= len(result.text) for p in result.positions)


def _pages(bodies: list[str]) -> tuple[str, list[int]]:
    text, starts = "", []
    for i, body in enumerate(bodies):
        if i:
            text += "\n"
        starts.append(len(text))
        text += body
    return text, starts


def test_running_headers_footers_and_page_numbers_removed():
    bodies = [
        f"ACME Annual Report 2025\nChapter text number {i} goes here.\nMore of page {i}.\n- {i} -" for i in range(1, 6)
    ]
    text, starts = _pages(bodies)
    edits = header_footer_edits(text, starts)
    new, mapped = apply_edits(text, edits, starts)
    assert "ACME" not in new and "- 3 -" not in new
    assert "Chapter text number 3 goes here." in new
    for i, pos in enumerate(mapped, 1):
        assert new[pos:].startswith(f"Chapter text number {i}")


def test_lines_that_only_look_alike_are_kept():
    bodies = ["Introduction\nfirst page text", "Methods\nsecond page text", "Results\nthird page text"]
    text, starts = _pages(bodies)
    assert header_footer_edits(text, starts) == []


def test_dehyphenation_rejoins_and_keeps_real_compounds():
    text = "the harbor main-\ntenance office\nand a well-\nknown fact; well-known indeed\n"
    new, _ = apply_edits(text, dehyphenate_edits(text), [])
    assert new == "the harbor maintenance\noffice\nand a well-known\nfact; well-known indeed\n"
    # a hyphen before a capital or a digit is not a line-break hyphenation
    assert dehyphenate_edits("see Anglo-\nSaxon and 2-\n3 things") == []


def test_reflow_joins_wrapped_lines_and_splits_paragraphs():
    lines = [
        "This paragraph was wrapped by a PDF generator at a fixed width of",
        "about sixty five characters per line, and goes on for a while",
        "until it ends here.",
        "A new paragraph starts with a capital letter after a short line",
        "and continues.",
        "- a list item stays on its own line",
        "- and so does this one",
    ]
    text = "\n".join(lines)
    new, _ = apply_edits(text, reflow_edits(text, paragraph_breaks=True), [])
    assert new.split("\n\n")[0] == " ".join(lines[:3])
    assert new.split("\n\n")[1] == " ".join(lines[3:5])
    assert "\n- a list item stays on its own line\n- and so does this one" in new
    plain, _ = apply_edits(text, reflow_edits(text, paragraph_breaks=False), [])
    assert "\n\n" not in plain and plain.startswith(" ".join(lines[:3]) + "\n")


def test_whitespace_normalisation():
    text = "\n\n  a\u00a0b\u200bc  \n\n\n\nd\t\te   \n\n"
    new, _ = apply_edits(text, whitespace_edits(text, collapse_spaces=True), [])
    assert new == "a bc\n\nd e"


def test_switches():
    text = "Header Line\nsome hyphen-\nated words that wrap at a width of about\nforty chars or so.\n"
    all_off = clean(text, [], CleaningOptions.from_options({"clean": False}))
    assert all_off.text == text and all_off.steps == {}
    no_dehyph = clean(text, [], CleaningOptions.from_options({"dehyphenate": False}))
    assert "hyphen-" in no_dehyph.text and "dehyphenate" not in no_dehyph.steps
    on = clean(text, [], CleaningOptions())
    assert "hyphenated" in on.text


def test_code_and_data_are_not_reflowed():
    code = "import os\nimport sys\n\nvalue = compute(a, b)\nprint(value)\nresult = [x for x in range(10)]\n"
    assert reflow_edits(code, paragraph_breaks=False) == []
    csv_like = "name,city,year\nalice,paris,2020\nbob,berlin,2021\ncarol,rome,2022\n"
    assert reflow_edits(csv_like, paragraph_breaks=False) == []


def test_log_files_keep_their_lines(tmp_path):
    from chunkwise.formats import load

    lines = [f"server started listening on port {8000 + i} and waiting for the next request" for i in range(6)]
    p = tmp_path / "app.log"
    p.write_text("\n".join(lines) + "\n")
    assert load(p).text.splitlines() == lines


def test_dehyphenation_is_linear_on_a_long_word():
    """A long run of letters with no hyphen once made the re-join pattern rescan from every position
    (quadratic: a 5 MB line never finished). Run in a subprocess so a regression fails instead of hanging."""
    import subprocess
    import sys

    code = (
        "from chunkwise.formats.cleaning import dehyphenate_edits\n"
        "assert dehyphenate_edits('a' * 2_000_000) == []\n"
        "assert dehyphenate_edits('x' * 500_000 + ' main-\\ntenance office') != []\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
