"""Time the web app's first render with a chunk view, in Debian's chromium driven by Playwright.

Starts ``chunkwise serve`` (the real command, the default embedder, no index) on a free loopback port, waits
for ``GET /health``, then for each run opens a fresh browser context (empty cache: a first visit), navigates
to the page, pastes ``examples/sourdough-guide.md``, clicks "Chunk" and waits for the first chunk view. Prints
per run: page usable (``#run`` present), the view after the click, and navigation-to-view in total (the paste
itself, a Playwright ``fill``, is inside the total), with the load average. The first run after the server
starts includes the server opening the tokenizer/model on first use.

    python benchmarks/bench_webapp_first_render.py --runs 7 --fresh-server
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "examples" / "sourdough-guide.md"
CHROMIUM = os.environ.get("CHUNKWISE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


#: the browser's own timings: first byte of the page, DOMContentLoaded, the /view request (from sending to
#: its last byte) and the bytes fetched before the chunk view (plotly.js is fetched after it)
PARTS_JS = """() => {
  const n = performance.getEntriesByType('navigation')[0];
  const v = performance.getEntriesByType('resource').filter(r => r.name.endsWith('/view'));
  const kb = performance.getEntriesByType('resource').filter(r => !r.name.endsWith('plotly.min.js'))
    .reduce((a, r) => a + r.transferSize, n.transferSize) / 1024;
  return `page first byte ${(n.responseStart / 1000).toFixed(2)} s, DOMContentLoaded `
    + `${(n.domContentLoadedEventEnd / 1000).toFixed(2)} s, /view x${v.length} `
    + v.map(r => (r.duration / 1000).toFixed(2) + ' s').join(' ') + `, ${kb.toFixed(0)} KB before plotly`;
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--strategy", help="pick this strategy in the form (default: the page's own default)")
    ap.add_argument("--fresh-server", action="store_true", help="start a new server for each run (its first visit)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    text = GUIDE.read_text(encoding="utf-8")
    totals = []
    srv = None
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for run in range(args.runs):
                if srv is None or args.fresh_server:
                    if srv is not None:
                        srv.terminate()
                        srv.wait(10)
                    srv, url = _start_server()
                ctx = browser.new_context(viewport={"width": 1400, "height": 950})
                page = ctx.new_page()
                load = os.getloadavg()[0]
                t = time.monotonic()
                page.goto(url + "/", wait_until="commit")
                page.wait_for_selector("#run")
                usable = time.monotonic() - t
                if args.strategy:
                    page.select_option("#strategy", args.strategy)
                page.fill("#text", text)
                c = time.monotonic()
                page.click("#run")
                page.wait_for_selector("#view .column [data-first]")
                view = time.monotonic() - c
                total = time.monotonic() - t
                totals.append(total)
                parts = page.evaluate(PARTS_JS)
                print(
                    f"run {run + 1}: page usable {usable:.2f} s, view after click {view:.2f} s, "
                    f"navigation to chunk view {total:.2f} s (load {load:.2f}); {parts}"
                )
                ctx.close()
            browser.close()
        print(
            f"{'fresh server per run' if args.fresh_server else 'one server'}, strategy {args.strategy or 'the page default'}"
        )
        print(
            f"median navigation to chunk view: {statistics.median(totals):.2f} s over {len(totals)} runs; "
            f"first {totals[0]:.2f} s, max {max(totals):.2f} s"
        )
    finally:
        if srv is not None:
            srv.terminate()
            srv.wait(10)
    return 0


def _start_server():
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    t0 = time.monotonic()
    cmd = [sys.executable, "-c", "import sys; from chunkwise.cli import run; sys.exit(run())"]
    srv = subprocess.Popen(
        cmd + ["serve", "--port", str(port), "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    while True:
        try:
            urllib.request.urlopen(url + "/health", timeout=1).read()
            break
        except OSError:
            if time.monotonic() - t0 > 60 or srv.poll() is not None:
                srv.kill()
                raise SystemExit("server did not start") from None
            time.sleep(0.05)
    print(f"server answering /health after {time.monotonic() - t0:.2f} s")
    return srv, url


if __name__ == "__main__":
    raise SystemExit(main())
