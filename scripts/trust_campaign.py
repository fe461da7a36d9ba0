"""Replay the trust-boundary failures and print, for each, whether the fix holds.

    python scripts/trust_campaign.py            # items 1-8 (about two minutes on 2 cores)
    python scripts/trust_campaign.py --ray      # item 7 also starts a local Ray cluster and reads `ss -ltnp`

Each item runs what a user runs (the ``chunkwise`` command in a child process, or the API where the failure
was in a library call) against hostile input: a password in a base URL, an endpoint that drips its answer, a
writer that keeps the chunk count, a zero-filled cache, a 100,000-deep configuration, 200,000 nested
``<div>``, a local Ray cluster, a search while an index runs, two readers at once, an ``index`` while
``serve`` runs. It prints ``held`` or ``FAILED`` with what was seen, and exits 1 when any item failed. The
fake OpenAI-compatible server and the test embedder come from ``tests/`` (this script belongs to the
repository, not to the installed package).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
for var in ("CHUNKWISE_LLM_BASE_URL", "CHUNKWISE_LLM_MODEL", "CHUNKWISE_LLM_API_KEY", "OPENAI_API_KEY"):
    ENV.pop(var, None)
    os.environ.pop(var, None)


def cli(*args: str, timeout: float = 300, cwd: Path | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", "from chunkwise.cli import run; run()", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV, cwd=cwd)


def docs(folder: Path, n: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        p = folder / f"d{i}.md"
        p.write_text(f"# Part {i}\n\n" + "\n\n".join(f"Paragraph {i}.{k} is about topic {k}." for k in range(6)))
        out.append(str(p))
    return out


# -- the items ---------------------------------------------------------------------------------------------------
def item1_url_secrets(tmp: Path) -> tuple[bool, str]:
    from fake_openai import FakeOpenAI

    from chunkwise.http import Endpoint

    r = cli("ask", "q?", "--db", str(tmp / "x.db"), "--llm-base-url", "http://user:s3cretpw@127.0.0.1:9/v1")
    leaked_cli = "s3cretpw" in r.stderr
    ep = Endpoint("https://h.example/openai/d?api-version=1", "m", route="/chat/completions")
    query_ok = ep.url == "https://h.example/openai/d/chat/completions?api-version=1"
    served = ""
    try:
        from conftest import FakeEmbedder
        from fastapi.testclient import TestClient

        from chunkwise.retrieval import Index
        from chunkwise.viz.app import create_app

        (tmp / "g.md").write_text("# Bread\n\nThe starter doubles in six hours.\n")
        with Index(tmp / "s.db", embedder=FakeEmbedder()) as ix:
            ix.add([str(tmp / "g.md")])
        fake = FakeOpenAI()
        fake.always_status, fake.echo_headers = 400, True
        os.environ["CHUNKWISE_LLM_BASE_URL"] = fake.url + "?api-key=K3YVALUE99"
        os.environ["CHUNKWISE_LLM_MODEL"] = "m"
        try:
            with TestClient(create_app(str(tmp / "s.db"), embedder=FakeEmbedder()), base_url="http://127.0.0.1") as c:
                served = c.post("/ask", json={"question": "starter?", "k": 1, "min_score": -1}).text
        finally:
            del os.environ["CHUNKWISE_LLM_BASE_URL"], os.environ["CHUNKWISE_LLM_MODEL"]
            fake.close()
    except ImportError as exc:
        served = f"(serve not checked: {exc})"
    leaked_serve = "K3YVALUE99" in served
    held = r.returncode == 2 and not leaked_cli and query_ok and not leaked_serve
    return held, f"cli exit {r.returncode}, password shown: {leaked_cli}; route before query: {query_ok}; " + (
        f"serve body shows the key: {leaked_serve}"
    )


def item2_deadlines(tmp: Path) -> tuple[bool, str]:
    from fake_openai import FakeOpenAI

    chat = FakeOpenAI()
    chat.drip = 0.05
    flags = ["--llm-base-url", chat.url, "--llm-model", "m", "--llm-deadline", "2", "--llm-retries", "0"]
    try:
        paths = docs(tmp / "c", 3)
        t = time.monotonic()
        r = cli("--cache-dir", str(tmp / "cache"), "index", *paths, "--db", str(tmp / "i.db"), "--strategy",
                "recursive", "--max-tokens", "16", "--context", "llm", *flags)  # fmt: skip
        index_s, index_requests = time.monotonic() - t, len(chat.requests)
        db = str(tmp / "s.db")
        cli("--cache-dir", str(tmp / "cache"), "index", paths[0], "--db", db, "-q", "--max-tokens", "16")
        before = len(chat.requests)
        t = time.monotonic()
        s = cli("--cache-dir", str(tmp / "cache"), "search", "topic 3", "--db", db, "--rerank", "llm", *flags)
        search_s = time.monotonic() - t
        search_requests = len(chat.requests) - before
    finally:
        chat.close()
    placeholder = "deadline=," in r.stderr + s.stderr
    held = r.returncode == 0 and index_requests <= 4 and s.returncode == 2 and search_requests == 1 and not placeholder
    return held, (
        f"index --context llm: exit {r.returncode}, {index_requests} requests, {index_s:.0f} s; "
        f"search --rerank llm: exit {s.returncode}, {search_requests} request, {search_s:.0f} s; "
        f"empty placeholder: {placeholder}"
    )


def item3_saved_copies(tmp: Path) -> tuple[bool, str]:
    from conftest import FakeEmbedder
    from index_data import docs as kb_docs
    from index_data import lines

    from chunkwise import Document
    from chunkwise.retrieval import Index
    from chunkwise.store.milvus_search import BM25_FOLDER, VECTORS_FOLDER

    db = tmp / "t.db"
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add(kb_docs(), strategy=lines())
        ix.search("conductor tickets", k=3)
    kept = tmp / "kept"
    kept.mkdir()
    for f in (BM25_FOLDER, VECTORS_FOLDER):
        shutil.move(str(db / f), kept / f)
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.delete("kb/bees.txt")
        ix.add([Document("Penguins huddle.\nWalruses rest.\nSeals dive.", source="kb/sea.txt")], strategy=lines())
    for f in (BM25_FOLDER, VECTORS_FOLDER):
        shutil.rmtree(db / f, ignore_errors=True)
        shutil.move(str(kept / f), db / f)
    (db / f"{BM25_FOLDER}.killed").mkdir()
    with Index(db, embedder=FakeEmbedder()) as ix:
        hits = ix.search("penguins huddle", k=5)
    found = bool(hits) and hits[0].text.startswith("Penguins")
    leftover = (db / f"{BM25_FOLDER}.killed").exists()
    return found and not leftover, f"new chunk found after a same-count write: {found}; temp folder left: {leftover}"


def item4_zero_vectors(tmp: Path) -> tuple[bool, str]:
    import sqlite3

    import numpy as np
    from conftest import FakeEmbedder

    from chunkwise.embeddings.cache import CachedEmbedder, EmbeddingCache

    texts = ["alpha beta", "gamma delta"]
    CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp)).embed(texts)
    with sqlite3.connect(tmp / "embeddings.sqlite3") as conn:
        conn.execute("UPDATE embeddings SET vec = ?", (np.zeros(64, np.float32).tobytes(),))
    again = CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp))
    norms = np.linalg.norm(again.embed(texts), axis=1)
    held = again.cache_repaired == 2 and bool(np.all(norms > 0.5))
    return held, f"repaired {again.cache_repaired} of 2 zero-filled rows; norms now {np.round(norms, 3).tolist()}"


def item5_hostile_config(tmp: Path) -> tuple[bool, str]:
    (tmp / "t.txt").write_text("Hello there. A second sentence.\n")
    (tmp / "deep.json").write_text('{"run":' * 100_000 + "1" + "}" * 100_000)
    (tmp / "pw").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (tmp / "b.json").write_text(json.dumps({"run": {"hybrid": "yes"}}))
    (tmp / "n.json").write_text('{"strategy": "semantic", "params": {"threshold": NaN}}')
    t = str(tmp / "t.txt")
    runs = {  # what each must say, in one line
        "deep --config (chunk)": (cli("chunk", t, "--config", str(tmp / "deep.json")), "levels deep"),
        "deep --config (tune)": (
            cli("tune", t, "--config", str(tmp / "deep.json"), "--grid", "max_tokens=32,64"),
            "levels deep",
        ),
        "--tokenizer hf:FILE": (cli("chunk", t, "--tokenizer", f"hf:{tmp / 'pw'}"), "tokenizer"),
        'hybrid: "yes"': (cli("search", "q", "--db", str(tmp / "x.db"), "--config", str(tmp / "b.json")), "hybrid"),
        "NaN parameter": (cli("chunk", t, "--config", str(tmp / "n.json")), "NaN"),
    }
    bad = [
        k
        for k, (r, needle) in runs.items()
        if r.returncode != 2 or r.stderr.count("\n") != 1 or "Traceback" in r.stderr or needle not in r.stderr
    ]
    return not bad, "one line each" if not bad else f"not one line: {', '.join(bad)}"


def item6_html_depth(tmp: Path) -> tuple[bool, str]:
    n = 200_000
    page = tmp / "deep.html"
    page.write_text("<html><body>" + "<div>" * n + "<p>deep text</p>" + "</div>" * n + "</body></html>")
    t = time.monotonic()
    try:
        r = cli("chunk", str(page), "--html-mode", "full", "--format", "jsonl", timeout=120)
    except subprocess.TimeoutExpired:
        return False, f"{n:,} nested <div>: still running after 120 s"
    wall = time.monotonic() - t
    held = r.returncode == 0 and "deep text" in r.stdout
    return held, f"{n:,} nested <div>: exit {r.returncode} ({wall:.1f} s wall, start included), warning: " + (
        "yes" if "nest" in r.stderr else "no"
    )


def _process_tree(root: int) -> set[int]:
    """``root`` and its descendants (read from /proc)."""
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        out.add(pid)
        todo.extend(kids.get(pid, []))
    return out


def item7_ray(tmp: Path, start: bool) -> tuple[bool, str]:
    os.environ.pop("RAY_AUTH_MODE", None)
    from chunkwise.retrieval.ray_cluster import local_cluster_options

    os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    opts = local_cluster_options()
    token = os.environ.get("RAY_AUTH_MODE") == "token" or "ray" in sys.modules
    single = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    detail = f"node {opts.get('_node_ip_address')}, RAY_AUTH_MODE={os.environ.get('RAY_AUTH_MODE')}, " + (
        f"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER={single}"
    )
    if not start:
        held = token and opts.get("_node_ip_address") == "127.0.0.1" and single == "0"
        return held, detail + " (cluster not started: --ray)"
    try:
        import ray
    except ImportError:
        return False, detail + "; ray not installed"
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False, **opts)
    try:
        ray.get(ray.remote(lambda: 1).remote())  # a worker too
        out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
        keys = [f"pid={pid}," for pid in _process_tree(os.getpid())]  # the driver and the cluster it started
    finally:
        ray.shutdown()
    ray_lines = [ln for ln in out.splitlines() if any(k in ln for k in keys)]
    open_ = [ln.split()[3] for ln in ray_lines if not ln.split()[3].startswith(("127.", "[::1]", "[::ffff:127."))]
    return not open_ and token and bool(ray_lines), detail + (
        f"; {len(ray_lines)} listeners, outside loopback: {open_ or 'none'}"
    )


def _locked(db: Path) -> bool:
    import fcntl

    with open(db / "LOCK", "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False


def item8_readers(tmp: Path) -> tuple[bool, str]:
    checks = (_search_while_index_runs, _two_readers_at_once, _index_while_serve_runs)
    results = [check(tmp / check.__name__) for check in checks]
    return all(held for held, _ in results), "; ".join(detail for _, detail in results)


def _last_line(r: subprocess.CompletedProcess) -> str:
    return (r.stderr.strip().splitlines() or ["(no message)"])[-1][:160]


def _search_while_index_runs(tmp: Path) -> tuple[bool, str]:
    paths = docs(tmp / "c", 2)
    db = str(tmp / "r.db")
    first = cli("index", paths[0], "--db", db, "-q")
    if first.returncode:
        return False, f"first index failed: {first.stderr.strip()[:200]}"
    big = docs(tmp / "big", 200)
    cmd = [sys.executable, "-c", "from chunkwise.cli import run; run()", "index", *big, "--db", db, "-q"]
    writer = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while writer.poll() is None and time.monotonic() < deadline:  # until the writer holds the database
            if (Path(db) / "LOCK").exists() and _locked(Path(db)):
                break
            time.sleep(0.2)
        running = writer.poll() is None
        r = cli("search", "topic 3", "--db", db, timeout=120)
    finally:
        writer.kill()
        writer.wait()
    held = r.returncode == 0 and "Paragraph" in r.stdout
    return held, f"search while index runs (writer running: {running}): exit {r.returncode}: {_last_line(r)}"


def _two_readers_at_once(tmp: Path) -> tuple[bool, str]:
    paths = docs(tmp / "c", 1)
    db = str(tmp / "r.db")
    if cli("index", paths[0], "--db", db, "-q").returncode:
        return False, "first index failed"
    code = (
        "import sys, time; from chunkwise.retrieval import Index; ix = Index(sys.argv[1]); "
        "ix.search('topic', k=1); print('ready', flush=True); time.sleep(300)"
    )
    first = subprocess.Popen([sys.executable, "-c", code, db], env=ENV, stdout=subprocess.PIPE, text=True)
    try:  # the first `ask`, held between its search and its answer
        ready = first.stdout.readline().strip() == "ready"
        r = cli("ask", "What is paragraph 0.3 about?", "--db", db, timeout=120)
    finally:
        first.kill()
        first.wait()
    held = ready and r.returncode == 0 and "topic" in r.stdout
    return held, f"ask while another reader has the database open: exit {r.returncode}: {_last_line(r)}"


def _index_while_serve_runs(tmp: Path) -> tuple[bool, str]:
    import socket
    import urllib.request

    paths = docs(tmp / "c", 1)
    db = str(tmp / "r.db")
    if cli("index", paths[0], "--db", db, "-q").returncode:
        return False, "first index failed"
    (tmp / "p.md").write_text("# Penguins\n\nPenguins huddle together on the ice.\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-c", "from chunkwise.cli import run; run()", "serve", "--db", db, "--port", str(port)]
    server = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def search(q: str) -> str:
        body = json.dumps({"query": q, "k": 1}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/search", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            return json.loads(resp.read())["results"][0]["source"]

    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5).close()
                break
            except OSError:
                time.sleep(0.2)
        before = search("penguins huddle")
        r = cli("index", str(tmp / "p.md"), "--db", db, "-q", timeout=120)
        after = search("penguins huddle") if r.returncode == 0 else "(not indexed)"
    finally:
        server.terminate()
        server.wait(timeout=30)
    held = r.returncode == 0 and after.endswith("p.md") and not before.endswith("p.md")
    return held, f"index while serve runs: exit {r.returncode} ({_last_line(r) if r.returncode else 'ok'}), " + (
        f"serve's top hit after it: {Path(after).name}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ray", action="store_true", help="item 7: start a local Ray cluster and read ss -ltnp")
    ap.add_argument("--only", type=int, action="append", help="run only these items (repeatable)")
    args = ap.parse_args()
    items = {
        1: ("secrets in URLs", item1_url_secrets),
        2: ("endpoint flags and deadlines", item2_deadlines),
        3: ("saved search copies", item3_saved_copies),
        4: ("zero vectors in the cache", item4_zero_vectors),
        5: ("hostile configuration", item5_hostile_config),
        6: ("deeply nested HTML", item6_html_depth),
        7: ("local Ray cluster", lambda tmp: item7_ray(tmp, args.ray)),
        8: ("readers not locked out", item8_readers),
    }
    failed = 0
    for n, (name, check) in items.items():
        if args.only and n not in args.only:
            continue
        with tempfile.TemporaryDirectory(prefix=f"trust{n}-") as tmp:
            try:
                held, detail = check(Path(tmp))
            except Exception as exc:  # a check that crashes is a failure to report, not to hide
                held, detail = False, f"{type(exc).__name__}: {exc}"[:300]
        failed += not held
        print(f"{n}. {name:32} {'held' if held else 'FAILED'}  {detail}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
