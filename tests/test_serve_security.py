"""`chunkwise serve` as a trust boundary: Host check, streaming body limits, read deadlines, token, strict
request bodies, model preload, compressed assets.

The app object is tested in process (TestClient); body streaming and connection deadlines need a real
server, so a `chunkwise serve` child on 127.0.0.1 takes raw sockets, its memory read from
/proc/PID/status. Every wait is bounded by a socket timeout or pytest-timeout, never timed.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FakeEmbedder

from chunkwise.cli import main

fastapi = pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from fastapi.testclient import TestClient  # noqa: E402

from chunkwise.viz.app import create_app, host_names  # noqa: E402

TEXT = (
    "# Sourdough\n\nFeeding the starter twice a day keeps it lively. The starter doubles in six hours.\n\n"
    "## Baking\n\nPreheat the oven with the pot inside. Bake the loaf covered, then uncovered until brown.\n"
)
MB = 1024 * 1024


def _client(app, host: str = "127.0.0.1", **kw) -> TestClient:
    return TestClient(app, base_url=f"http://{host}", raise_server_exceptions=False, **kw)


@pytest.fixture(scope="module")
def index_db(tmp_path_factory):
    from chunkwise.retrieval.index import Index

    db = tmp_path_factory.mktemp("serve") / "s.db"
    doc = tmp_path_factory.getbasetemp() / "guide.md"
    doc.write_text(TEXT, encoding="utf-8")
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add([doc], strategy="recursive", params={"max_tokens": 32})
    return db


# -- Host check (DNS rebinding) -------------------------------------------------------------------------


def test_foreign_host_cannot_read_the_index(index_db):
    """A page on evil.example that rebinds its name to 127.0.0.1 sends `Host: evil.example`: refused."""
    app = create_app(str(index_db), embedder=FakeEmbedder(), preload=False)
    with _client(app) as client:
        r = client.post("/search", json={"query": "starter"}, headers={"host": "evil.example"})
        assert r.status_code in (400, 421)
        assert "starter" not in r.text.lower()
        assert client.get("/", headers={"host": "evil.example:8000"}).status_code in (400, 421)
        ok = client.post("/search", json={"query": "starter"}, headers={"host": "127.0.0.1:8000"})
        assert ok.status_code == 200 and ok.json()["results"]
        for name in ("localhost:8000", "[::1]:8000", "LOCALHOST"):
            assert client.get("/health", headers={"host": name}).status_code == 200, name


def test_allowed_hosts_are_the_loopback_names_host_and_extras():
    assert host_names("127.0.0.1") == ["127.0.0.1", "localhost", "[::1]"]
    assert host_names("::1") == ["127.0.0.1", "localhost", "[::1]"]
    assert host_names("192.0.2.7", ["Box.lan", "2001:db8::1"]) == [
        "127.0.0.1",
        "localhost",
        "[::1]",
        "192.0.2.7",
        "box.lan",
        "[2001:db8::1]",
    ]
    app = create_app(allowed_hosts=host_names("127.0.0.1", ["box.lan"]), preload=False)
    client = _client(app)
    assert client.get("/health", headers={"host": "box.lan:8000"}).status_code == 200
    assert client.get("/health", headers={"host": "other.lan"}).status_code in (400, 421)


# -- strict request bodies ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    return _client(create_app(embedder=FakeEmbedder(), max_upload_bytes=4096, preload=False))


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/chunk", {"text": "Some text here.", "max_tokens": -3}, "max_tokens"),
        ("/chunk", {"text": "Some text.", "compare": [{"strategy": "fixed", "overlap": 2}]}, "overlap"),
        ("/search", {"query": "flour", "top_k": 3}, "top_k"),
    ],
)
def test_unknown_fields_are_refused_by_name(client, path, body, field):
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    assert field in r.json()["error"] and "unknown field" in r.json()["error"]


def test_misplaced_cap_points_to_params(client):
    r = client.post("/chunk", json={"text": "Some text here.", "max_tokens": 8})
    assert '"params"' in r.json()["error"]
    ok = client.post("/chunk", json={"text": "Some text here.", "params": {"max_tokens": 8}})
    assert ok.status_code == 200 and ok.json()["strategies"][0]["max_tokens"] == 8


def test_view_strategies_refuse_unknown_fields(client):
    r = client.post("/view", data={"text": "Hi there.", "strategies": '[{"strategy": "fixed", "max_tokens": 9}]'})
    assert r.status_code == 422 and "max_tokens" in r.json()["error"], r.text


# -- the documented paste limit -----------------------------------------------------------------------


def test_paste_limit_is_chunkwise_s_own(client):
    """2,000,000 characters may be pasted (Starlette's 1 MB part limit cut it at about half, with its own
    message); one more is refused with chunkwise's."""
    specs = '[{"strategy": "fixed", "params": {"tokenizer": "chars", "max_tokens": 400000}}]'
    fits = ("abcd " * 400_000)[:1_499_999] + "."
    r = client.post("/view", data={"text": fits, "strategies": specs})
    assert r.status_code == 200, r.text[:300]
    assert r.json()["data"]["strategies"][0]["chunks"][-1]["end"] == len(fits)
    over = "a" * 2_000_001
    r = client.post("/view", data={"text": over, "strategies": specs})
    assert r.status_code == 413 and "2,000,000" in r.json()["error"], r.text[:300]
    r = client.post("/chunk", json={"text": over})
    assert r.status_code == 413 and "text too long" in r.json()["error"] and "2,000,000" in r.json()["error"]


# -- token ----------------------------------------------------------------------------------------------


def test_token_guards_every_route_that_reads(index_db):
    app = create_app(str(index_db), embedder=FakeEmbedder(), token="s3cret-token", preload=False)
    with _client(app) as client:
        for method, path, kw in [
            ("post", "/search", {"json": {"query": "starter"}}),
            ("post", "/chunk", {"json": {"text": TEXT}}),
            ("post", "/view", {"data": {"text": TEXT}}),
            ("get", "/", {}),
            ("get", "/openapi.json", {}),
        ]:
            r = getattr(client, method)(path, **kw)
            assert r.status_code == 401 and "token" in r.json()["error"], path
            bad = getattr(client, method)(path, headers={"authorization": "Bearer wrong"}, **kw)
            assert bad.status_code == 401, path
        assert client.get("/health").status_code == 200
        assert client.get("/static/app.js").status_code == 200
        good = client.post("/search", json={"query": "starter"}, headers={"authorization": "Bearer s3cret-token"})
        assert good.status_code == 200 and good.json()["results"]
        # the page's first load with ?token= sets the cookie the page's own requests then carry
        first = client.get("/?token=s3cret-token", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/"
        assert "HttpOnly" in first.headers["set-cookie"] and "SameSite=Strict" in first.headers["set-cookie"]
        assert client.get("/").status_code == 200
        assert client.post("/search", json={"query": "starter"}).status_code == 200


def test_loopback_without_token_stays_open(index_db):
    with _client(create_app(str(index_db), embedder=FakeEmbedder(), preload=False)) as client:
        assert client.post("/search", json={"query": "starter"}).status_code == 200


@pytest.fixture
def captured_serve(monkeypatch):
    """`chunkwise serve` up to uvicorn: the app it would run, without binding anything."""
    import uvicorn

    seen: dict = {}

    def fake_run(app, **kw):
        seen["app"], seen["kw"] = app, kw

    monkeypatch.setattr(uvicorn, "run", fake_run)
    monkeypatch.delenv("CHUNKWISE_SERVE_TOKEN", raising=False)
    return seen


def test_non_loopback_binding_requires_a_printed_token(captured_serve, capsys):
    assert main(["serve", "--host", "192.0.2.10", "--port", "8123"]) == 0
    err = capsys.readouterr().err
    assert "?token=" in err
    token = err.split("?token=")[1].split()[0]
    client = _client(captured_serve["app"], host="192.0.2.10:8123")
    assert client.post("/chunk", json={"text": TEXT}).status_code == 401
    ok = client.post("/chunk", json={"text": TEXT}, headers={"authorization": f"Bearer {token}"})
    assert ok.status_code == 200
    # a token given on the command line is the one required
    assert main(["serve", "--host", "192.0.2.10", "--port", "8123", "--token", "mine"]) == 0
    client = _client(captured_serve["app"], host="192.0.2.10")
    assert client.post("/chunk", json={"text": TEXT}, headers={"authorization": "Bearer mine"}).status_code == 200
    assert client.post("/chunk", json={"text": TEXT}, headers={"authorization": f"Bearer {token}"}).status_code == 401


def test_loopback_binding_prints_no_token_and_runs_with_deadlines(captured_serve, capsys):
    assert main(["serve", "--port", "8123"]) == 0
    assert "token" not in capsys.readouterr().err
    assert _client(captured_serve["app"]).post("/chunk", json={"text": TEXT}).status_code == 200
    kw = captured_serve["kw"]
    assert kw["host"] == "127.0.0.1" and kw["timeout_keep_alive"] > 0 and not isinstance(kw["http"], str)


# -- model preload, compressed assets -------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_index_and_model_load_at_start_not_on_first_search(index_db):
    fake = FakeEmbedder()
    with _client(create_app(str(index_db), embedder=fake)) as client:
        while not fake.calls:  # the preload thread embeds a query before anyone searches (bounded: timeout)
            time.sleep(0.05)
        assert client.get("/health").status_code == 200
        r = client.post("/search", json={"query": "starter"})
        assert r.status_code == 200 and r.json()["results"]


@pytest.mark.timeout(120)
def test_the_pages_first_view_is_built_at_start(monkeypatch):
    """The start-up thread chunks a short text with the page's default strategy, so the first ``/view``
    finds the strategies imported and the tokenizer loaded."""
    import chunkwise.viz as viz

    built = []
    real = viz.build_views
    monkeypatch.setattr(viz, "build_views", lambda doc, strategies: built.append(doc.text) or real(doc, strategies))
    with _client(create_app(embedder=FakeEmbedder())) as client:
        deadline = time.monotonic() + 60
        while not built and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(built) == 1  # before any request
        r = client.post("/view", data={"text": "A pasted text.\n\nTwo paragraphs."})
        assert r.status_code == 200 and len(built) == 2


def test_plotly_is_sent_compressed(client):
    from chunkwise.viz.plots import plotly_js_path

    with client.stream("GET", "/static/plotly.min.js", headers={"accept-encoding": "gzip"}) as r:
        body = r.read()
        assert r.headers["content-encoding"] == "gzip"
        assert r.num_bytes_downloaded < len(body) / 2
    assert body == plotly_js_path().read_bytes()
    r = client.get("/static/app.js", headers={"accept-encoding": "gzip"})
    assert r.headers.get("content-encoding") == "gzip"
    r = client.get("/static/plotly.min.js", headers={"accept-encoding": "identity"})
    assert "content-encoding" not in r.headers and r.content == plotly_js_path().read_bytes()


# -- a real server on 127.0.0.1: streamed bodies, half-open connections ---------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`chunkwise serve` in a child process on 127.0.0.1 (its own TMPDIR, to see what it spools)."""

    def __init__(self, tmp: Path, *args: str):
        self.port = _free_port()
        self.tmp = tmp
        env = dict(os.environ, TMPDIR=str(tmp), CHUNKWISE_CACHE_DIR=str(tmp / "cache"))
        env.pop("CHUNKWISE_SERVE_TOKEN", None)
        code = "import sys; from chunkwise.cli import main; sys.exit(main(sys.argv[1:]))"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", "--port", str(self.port), *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(600):  # up to a minute for the imports on a loaded machine
            if self.proc.poll() is not None:
                raise RuntimeError(self.proc.stderr.read().decode(errors="replace"))
            try:
                if self.request(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)

    def request(self, raw: bytes) -> tuple[int, bytes]:
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            s.sendall(raw)
            return _read_response(s)

    def status(self, key: str) -> int:
        """A /proc/PID/status figure of the server, in kB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        raise KeyError(key)

    def largest_open_file(self) -> int:
        """Bytes of the largest regular file the server has open now (a spooled upload is one, unlinked)."""
        biggest = 0
        for fd in Path(f"/proc/{self.proc.pid}/fd").iterdir():
            try:  # the server may close the file between the listing and these calls
                st = os.stat(fd)
                target = os.readlink(fd)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and not target.startswith(sys.prefix):
                biggest = max(biggest, st.st_size)
        return biggest

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)


def _read_response(s: socket.socket) -> tuple[int, bytes]:
    """Status and body of one HTTP/1.1 answer (read until its Content-Length or the close)."""
    data = b""
    while b"\r\n\r\n" not in data:
        part = s.recv(65536)
        if not part:
            break
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    if not head:
        return 0, b""
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), None
    )
    while length is None or len(body) < length:
        try:
            part = s.recv(65536)
        except ConnectionResetError:
            break
        if not part:
            break
        body += part
    return int(head.split()[1]), body


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("server"), "--max-upload-size", "1MB")
    yield srv
    srv.stop()


def _stream(srv: Server, head: bytes, pieces, total: int) -> tuple[int, bytes, int, int]:
    """Send ``head``, then ``pieces`` chunked until an answer comes or the server stops reading; returns
    status, body, bytes of body sent, and the largest file the server held open meanwhile."""
    sent = spooled = 0
    with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
        s.sendall(head)
        for piece in pieces:
            if _readable(s):  # an answer (or the close) before the body is done
                break
            try:
                s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if sent < total else b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                break
            if sent >= total:
                break
            sent += len(piece)
            if sent % (8 * MB) < len(piece):
                spooled = max(spooled, srv.largest_open_file())
        status, body = _read_response(s)
    return status, body, sent, spooled


def _readable(s: socket.socket) -> bool:
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ)
    try:
        return bool(sel.select(timeout=0))
    finally:
        sel.close()


def _pieces(first: bytes, size: int = MB):
    """A body from a generator: ``first``, then 1 MiB pieces of text, never held whole."""
    yield first
    filler = b"word " * (size // 5)
    while True:
        yield filler


def _warm(srv: Server) -> None:
    body = json.dumps({"text": TEXT}).encode()
    status, _ = srv.request(
        b"POST /chunk HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
    )
    assert status == 200


@pytest.mark.timeout(300)
def test_chunked_300mb_json_body_is_cut_at_the_limit(server):
    """No Content-Length to trust: the bytes are counted as they arrive, and at /chunk's limit the server
    answers 413 and stops reading, its memory growing by a few MB, not by the body."""
    _warm(server)
    before = server.status("VmHWM")
    head = (
        b"POST /chunk HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    status, body, sent, _ = _stream(server, head, _pieces(b'{"text": "'), 300 * MB)
    grown_mb = (server.status("VmHWM") - before) / 1024
    assert status == 413 and b"too large" in body, body[:300]
    assert sent < 100 * MB  # the server stopped reading: the client's sends blocked, then failed
    assert grown_mb < 50, f"server peak grew by {grown_mb:.0f} MB"
    _warm(server)  # and it still answers


@pytest.mark.timeout(300)
def test_chunked_300mb_upload_is_not_spooled(server):
    """A chunked upload to /view: refused at the route's limit, no 300 MB temporary file."""
    before = server.status("VmHWM")
    head = (
        b"POST /view HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    first = (
        b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n'
    )
    status, body, sent, spooled = _stream(server, head, _pieces(first), 300 * MB)
    assert status == 413 and b"too large" in body, body[:300]
    assert sent < 100 * MB
    assert spooled < 20 * MB, f"spooled {spooled / MB:.0f} MB"
    assert (server.status("VmHWM") - before) / 1024 < 50


@pytest.mark.timeout(120)
def test_half_open_connections_are_closed(tmp_path):
    """50 connections that stall (nothing sent, half a request head, a head and part of its body) are all
    closed by the server within the read timeout; the server then still answers."""
    srv = Server(tmp_path, "--read-timeout", "2")
    try:
        stalls = [
            b"",
            b"POST /chunk HTTP/1.1\r\nHost: 127.0.0.1\r\n",
            b"POST /chunk HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"text": "',
        ]
        socks = []
        for n in range(50):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
            s.sendall(stalls[n % 3])
            socks.append(s)
        sel = selectors.DefaultSelector()
        for s in socks:
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ)
        closed, answers = 0, {id(s): b"" for s in socks}
        deadline = time.monotonic() + 60  # a bound on the wait, far above the 2 s timeout
        while closed < len(socks) and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                try:
                    data = key.fileobj.recv(65536)
                except ConnectionResetError:
                    data = b""
                answers[id(key.fileobj)] += data
                if not data:
                    sel.unregister(key.fileobj)
                    closed += 1
        for s in socks:
            s.close()
        assert closed == len(socks), f"{len(socks) - closed} of {len(socks)} connections still open"
        for n, s in enumerate(socks):  # a stalled body gets a 408 before the close, a stalled head the close
            got = answers[id(s)]
            assert got.startswith(b"HTTP/1.1 408") and b"not received in time" in got if n % 3 == 2 else got == b""
        _warm(srv)
    finally:
        srv.stop()
