"""The HTML report and the web app in a real headless browser (Debian's chromium driven by Playwright).

``make browser`` installs chromium with apt where it can; without it these tests skip and say why.
Screenshots go to ``$CHUNKWISE_ARTEFACTS`` (default: ``<tmp>/chunkwise-artefacts``).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, FakeEmbedder

from chunkwise.document import Document
from chunkwise.strategies import get_strategy
from chunkwise.viz import build_views, render_report

CHROMIUM = os.environ.get("CHUNKWISE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTEFACTS = Path(os.environ.get("CHUNKWISE_ARTEFACTS", Path(tempfile.gettempdir()) / "chunkwise-artefacts"))
GUIDE = ROOT / "examples" / "sourdough-guide.md"
SUBTITLES = ROOT / "examples" / "podcast-episode.srt"

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
    pytest.skip(
        f"no chromium at {CHROMIUM} (apt-get install chromium; `make browser` tries it)", allow_module_level=True
    )


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser):
    """A page that records console errors and page errors; the test fails if any were logged."""
    pg = browser.new_page(viewport={"width": 1400, "height": 950})
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.errors = errors
    yield pg
    pg.close()
    assert not errors, f"console errors: {errors}"


def shot(pg, name: str) -> None:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(ARTEFACTS / f"{name}.png"))


def test_report_from_disk(page, tmp_path):
    """Chunks render with the right count and exact text, hover shows provenance, one marker per breakpoint."""
    from chunkwise.formats import load

    doc = load(GUIDE)
    views = build_views(
        doc,
        [get_strategy("semantic", max_tokens=96, embedder=FakeEmbedder()), get_strategy("recursive", max_tokens=96)],
    )
    path = tmp_path / "report.html"
    path.write_text(render_report(doc, views), encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector("#plot-sizes-1 .main-svg")
    for s, view in enumerate(views):
        col = page.locator(f".column[data-index='{s}']")
        assert col.locator("[data-first]").count() == len(view.chunks)
        assert col.locator(".doc").evaluate("e => e.textContent") == doc.text
        assert int(col.locator(".n-chunks").inner_text()) == len(view.chunks)
    # the distance plot: one marker per breakpoint (the breakpoints trace is the only one with markers)
    markers = page.locator("#plot-distance-0 .scatterlayer path.point").count()
    assert markers == len(views[0].breakpoints) > 0
    assert page.locator("#plot-distance-1").count() == 0  # recursive has no distances
    # ...but keeps the curve's place, so both columns' text starts at the same height (side by side)
    tops = [
        page.locator(f".column[data-index='{s}'] .doc").evaluate("e => e.getBoundingClientRect().top") for s in (0, 1)
    ]
    assert abs(tops[0] - tops[1]) < 2, tops
    # hover a chunk: its card shows tokens, offsets, section and the cause of the cut
    k = 2
    c = views[0].chunks[k]
    target = page.locator(f".column[data-index='0'] [data-first='{k}']")
    target.scroll_into_view_if_needed()
    target.hover()
    card = page.locator("#card")
    assert card.is_visible()
    text = card.inner_text()
    assert f"chunk {k}" in text and f"{c['token_count']} / 96" in text and f"{c['start']}–{c['end']}" in text
    assert c["section"][-1] in text and c["cause"] in text
    shot(page, "report-hover")


TOP_OFFSET_JS = """d => {  // the character offset of the text at the top of a column's .doc
    const r = d.getBoundingClientRect(), pos = document.caretPositionFromPoint
        ? document.caretPositionFromPoint(r.left + 8, r.top + 4) : null;
    let node = pos ? pos.offsetNode : document.caretRangeFromPoint(r.left + 8, r.top + 4).startContainer;
    let off = pos ? pos.offset : document.caretRangeFromPoint(r.left + 8, r.top + 4).startOffset;
    const walk = document.createTreeWalker(d, NodeFilter.SHOW_TEXT);
    let at = 0;
    while (walk.nextNode()) { if (walk.currentNode === node) return at + off; at += walk.currentNode.length; }
    return -1;
}"""


def test_report_columns_scroll_together(page, tmp_path):
    """Scrolling one strategy's text scrolls the others to the same place in the document; the checkbox
    turns it off."""
    from chunkwise.formats import load

    doc = load(GUIDE)
    views = build_views(doc, [get_strategy(name, max_tokens=48) for name in ("recursive", "sentence", "fixed")])
    path = tmp_path / "report.html"
    path.write_text(render_report(doc, views), encoding="utf-8")
    page.set_viewport_size({"width": 1280, "height": 700})
    page.goto(path.as_uri())
    page.wait_for_selector("#plot-sizes-2 .main-svg")
    docs = page.locator(".column .doc")
    assert docs.count() == 3
    assert docs.nth(1).evaluate("d => d.scrollHeight > d.clientHeight + 400")  # there is somewhere to scroll
    docs.nth(1).evaluate("d => { d.scrollTop = 400; }")
    page.wait_for_function("() => [...document.querySelectorAll('.column .doc')].every(d => d.scrollTop > 200)")
    page.wait_for_timeout(200)
    tops = [docs.nth(i).evaluate(TOP_OFFSET_JS) for i in range(3)]
    assert tops[1] > 100 and all(abs(t - tops[1]) < 80 for t in tops), tops  # the same text at every top
    shot(page, "report-sync-scroll")
    page.uncheck("input.sync-scroll")
    before = [docs.nth(i).evaluate("d => d.scrollTop") for i in (0, 2)]
    docs.nth(1).evaluate("d => { d.scrollTop = 900; }")
    page.wait_for_timeout(300)
    assert [docs.nth(i).evaluate("d => d.scrollTop") for i in (0, 2)] == before  # off: each column on its own


def test_report_shows_time_ranges(page, tmp_path):
    from chunkwise.formats import load

    doc = load(SUBTITLES)
    views = build_views(doc, [get_strategy("sentence", max_tokens=64)])
    path = tmp_path / "subs.html"
    path.write_text(render_report(doc, views), encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector("#plot-sizes-0 .main-svg")
    c = views[0].chunks[1]
    page.locator(".column [data-first='1']").hover()
    from chunkwise.timefmt import format_time

    assert f"{format_time(c['start_time'])}–{format_time(c['end_time'])}" in page.locator("#card").inner_text()
    shot(page, "report-subtitles")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The web app on 127.0.0.1 in a thread (uvicorn) with an index of the guide, stopped at the end."""
    uvicorn = pytest.importorskip("uvicorn")
    from chunkwise.retrieval.index import Index
    from chunkwise.viz.app import create_app

    fake = FakeEmbedder()
    db = tmp_path_factory.mktemp("app") / "app.db"
    with Index(db, embedder=fake) as ix:
        ix.add([GUIDE], strategy="recursive", params={"max_tokens": 64})
    port = _free_port()
    srv = uvicorn.Server(
        uvicorn.Config(create_app(str(db), embedder=fake), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.started, "the app did not start"
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


def _chunks_shown(page) -> int:
    return page.locator("#view .column[data-index='0'] [data-first]").count()


def test_app_parameters_change_the_cuts(page, server):
    text = GUIDE.read_text(encoding="utf-8")
    page.goto(server + "/")
    page.select_option("#strategy", "recursive")
    page.fill("#max_tokens", "128")
    page.fill("#text", text)
    page.click("#run")
    page.wait_for_selector("#view .column [data-first]")
    page.wait_for_function("document.querySelector('#status').textContent.includes('chunks')")
    coarse = _chunks_shown(page)
    expected = len(get_strategy("recursive", max_tokens=128).chunk(Document(text)))
    assert coarse == expected
    assert page.locator("#view .column .doc").first.evaluate("e => e.textContent") == text
    page.fill("#max_tokens", "32")
    page.dispatch_event("#max_tokens", "change")
    page.wait_for_function(
        f"document.querySelectorAll(\"#view .column[data-index='0'] [data-first]\").length != {coarse}"
    )
    fine = _chunks_shown(page)
    assert fine == len(get_strategy("recursive", max_tokens=32).chunk(Document(text))) > coarse
    page.locator("#view .column [data-first='1']").hover()
    assert "/ 32" in page.locator("#card").inner_text()
    shot(page, "app-cuts")


def test_app_shows_the_chunk_view_before_plotly_is_requested(page, server):
    """The page and its first chunk view need no plotly.js (1.5 MB compressed): it is requested only after the
    view is on screen. The request is held here until the view has rendered, then let through for the charts."""
    held = []
    page.route("**/static/plotly.min.js", lambda route: held.append(route))
    page.goto(server + "/")
    page.wait_for_selector("#run")
    assert held == []  # loading the page asked for no plotly
    page.select_option("#strategy", "semantic")
    page.fill("#text", GUIDE.read_text(encoding="utf-8"))
    page.click("#run")
    page.wait_for_selector("#view .column [data-first]")  # rendered while plotly is held (or not yet asked for)
    assert _chunks_shown(page) > 1
    page.wait_for_function("() => !window.Plotly")
    deadline = time.monotonic() + 30
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert len(held) == 1  # asked for once, after the view
    for route in held:
        route.continue_()
    page.wait_for_selector("#view #plot-distance-0 .main-svg")  # and the charts follow


def test_app_paste_then_click_sends_one_request(page, server):
    """A paste arms the 300 ms re-chunk timer; clicking "Chunk" at once sends the form and disarms it, so the
    first view is not thrown away for a second, identical request (which doubled the first render)."""
    views = []
    page.on("request", lambda r: views.append(r.url) if r.url.endswith("/view") else None)
    page.goto(server + "/")
    page.fill("#text", GUIDE.read_text(encoding="utf-8"))
    page.click("#run")
    page.wait_for_selector("#view .column [data-first]")
    page.wait_for_timeout(800)  # past the timer the paste armed
    page.click("#run")  # the same form again: its view is already shown
    page.wait_for_timeout(100)
    assert len(views) == 1
    page.fill("#max_tokens", "48")  # a change still re-chunks
    page.dispatch_event("#max_tokens", "change")
    page.wait_for_function("document.querySelector('#status').textContent.includes('chunks')")
    page.wait_for_timeout(800)
    assert len(views) == 2


def test_app_semantic_plot_and_bad_parameter(page, server):
    page.goto(server + "/")
    page.select_option("#strategy", "semantic")
    page.fill("#max_tokens", "64")
    page.fill("#text", GUIDE.read_text(encoding="utf-8"))
    page.click("#run")
    page.wait_for_selector("#view #plot-distance-0 .main-svg")
    n = int(page.locator("#view #plot-distance-0").get_attribute("data-breakpoints"))
    assert page.locator("#view #plot-distance-0 .scatterlayer path.point").count() == n > 0
    shot(page, "app-semantic")
    page.fill("#max_tokens", "-4")
    page.click("#run")
    # leaving the field also schedules a run (its change event): wait for a settled error, not the first one
    page.wait_for_function(
        "() => { const s = document.getElementById('status');"
        " return s.className === 'error' && s.textContent.includes('max_tokens'); }"
    )
    page.wait_for_timeout(600)  # the scheduled run (300 ms after the change) has come back
    page.wait_for_selector("#status.error")
    assert "max_tokens" in page.locator("#status").inner_text()
    page.errors[:] = [e for e in page.errors if "400" not in e]  # the browser logs the refused request


def test_app_search_highlights_hits(page, server):
    page.goto(server + "/")
    assert page.locator("#search").is_visible()
    page.fill("#query", "feeding the starter")
    page.fill("#k", "3")
    page.click("#search-run")
    page.wait_for_selector("#hits .hit")
    assert page.locator("#hits .hit").count() == 3
    marks = page.locator("#hits mark").all_inner_texts()
    assert marks and all(m.lower().startswith(("feeding", "starter")) for m in marks)
    shot(page, "app-search")


def test_app_ask_shows_the_answer_and_its_cited_source(page, server):
    page.goto(server + "/")
    assert page.locator("#hybrid").is_checked()  # hybrid is search's default, so the box starts checked
    assert "BM25" in page.locator("label:has(#hybrid)").inner_text()
    page.fill("#question", "How often do I feed the starter?")
    page.press("#question", "Enter")
    page.wait_for_selector("#answer details.source")
    sources = page.locator("#answer details.source summary").all_inner_texts()
    assert sources and all(s.startswith("[") for s in sources)
    assert any("sourdough-guide.md" in s for s in sources)
    text = page.locator("#answer .answer-text").inner_text()
    assert "[1]" in text or "[2]" in text
    assert page.locator("#answer .cite").count() >= 1
    page.locator("#answer details.source").first.locator("summary").click()
    assert page.locator("#answer details.source .doc").first.is_visible()
    shot(page, "app-ask")


def test_eval_report_tables_fit_the_page(page, tmp_path, capsys):
    """``eval --report`` with four runs named by their specs: at 1280 px every table fits the page, and each
    sits in its own scroll container (a wider one scrolls there instead of running past the edge)."""
    from eval_data import write_topics

    from chunkwise.cli import main
    from chunkwise.evaluation import load_dataset

    data = load_dataset(write_topics(tmp_path))
    report = tmp_path / "report.html"
    runs = [
        "fixed:max_tokens=4,overlap=2,tokenizer=words,min_tokens=1",
        "fixed:max_tokens=12,overlap=4,tokenizer=words",
        "recursive:max_tokens=10,tokenizer=words,min_tokens=2",
        "sentence:max_tokens=10,tokenizer=words,overlap=1",
    ]
    assert (
        main(
            [
                "-q",
                "eval",
                data.path,
                *[a for r in runs for a in ("--run", r)],
                "--report",
                str(report),
                "--bootstrap",
                "50",
            ]
        )
        == 0
    )
    capsys.readouterr()
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(report.as_uri())
    layout = page.evaluate("""() => ({page: document.documentElement.scrollWidth, width: innerWidth,
        tables: [...document.querySelectorAll('table')].map(t => ({scroll: t.parentElement.classList.contains('scroll'),
            right: t.getBoundingClientRect().right, edge: t.parentElement.getBoundingClientRect().right,
            overflow: t.parentElement.scrollWidth - t.parentElement.clientWidth}))})""")
    assert len(layout["tables"]) >= 5 and layout["page"] <= layout["width"]
    for t in layout["tables"]:
        assert t["scroll"] and t["right"] <= t["edge"] + 1 and t["overflow"] <= 0, t
    shot(page, "eval-report")
