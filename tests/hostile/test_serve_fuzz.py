"""Fuzzing `chunkwise serve` over real sockets: random and oversized JSON, multipart forms, headers
(Host, Content-Type, chunked or not, cookies, tokens) against a server child on 127.0.0.1.

Every answer is a 4xx or a 200, never a 5xx or a dropped connection without one; the server's peak memory
stays bounded (oversized bodies are refused as they arrive); it still answers afterwards. Bounded in
examples (``CHUNKWISE_FUZZ_EXAMPLES``, default 60 per target) and in time (pytest-timeout).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

EXAMPLES = int(os.environ.get("CHUNKWISE_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
MB = 1024 * 1024
#: strategies that need no embedding model (the child has no fake one), and names that do not exist
STRATEGIES = ["recursive", "fixed", "sentence", "markdown", "nope", "../etc", ""]
HOSTS = ["127.0.0.1", "localhost", "[::1]", "evil.example", "127.0.0.1.evil.example", "", "a b", "x" * 300]
TYPES = [
    "application/json",
    "application/json; charset=utf-8",
    "multipart/form-data",
    "multipart/form-data; boundary=",
    "multipart/form-data; boundary=B0undary",
    "text/plain",
    "application/x-www-form-urlencoded",
    "\x7f;;;",
]


class Child:
    """`chunkwise serve` on a free loopback port, its memory read from /proc."""

    def __init__(self, tmp: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = dict(os.environ, TMPDIR=str(tmp), CHUNKWISE_CACHE_DIR=str(tmp / "cache"))
        env.pop("CHUNKWISE_SERVE_TOKEN", None)
        code = "import sys; from chunkwise.cli import main; sys.exit(main(sys.argv[1:]))"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                code,
                "serve",
                "--port",
                str(self.port),
                "--max-upload-size",
                "256KB",
                "--read-timeout",
                "5",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(600):
            if self.proc.poll() is not None:
                raise RuntimeError(self.proc.stderr.read().decode(errors="replace"))
            try:
                if self.send("GET", "/health", {"Host": "127.0.0.1"}, b"")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the server did not answer")

    def peak_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise KeyError("VmHWM")

    def send(
        self, method: str, path: str, headers: dict[str, str], body: bytes, chunked: bool = False
    ) -> tuple[int, bytes]:
        """One request over a fresh connection; status 0 when the server closed it without an answer."""
        lines = [f"{method} {path} HTTP/1.1", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        lines.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(body)}")
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        if chunked:
            pieces = [body[i : i + 65536] for i in range(0, len(body), 65536)]
            raw += b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
        else:
            raw += body
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as s:
            try:
                s.sendall(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused before the body was read: the answer is waiting
            data = b""
            while True:
                try:
                    part = s.recv(65536)
                except ConnectionResetError:
                    break
                if not part:
                    break
                data += part
        head, _, rest = data.partition(b"\r\n\r\n")
        return (int(head.split()[1]) if head.startswith(b"HTTP/1.1 ") else 0), rest

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)


@pytest.fixture(scope="module")
def child(tmp_path_factory):
    srv = Child(tmp_path_factory.mktemp("serve-fuzz"))
    srv.send(
        "POST",
        "/chunk",
        {"Host": "127.0.0.1", "Content-Type": "application/json"},
        json.dumps({"text": "Warm up the imports. Then measure."}).encode(),
    )
    srv.baseline_kb = srv.peak_kb()
    yield srv
    srv.stop()


def _check(child: Child, status: int, body: bytes, host: str) -> None:
    assert status != 0, "connection closed without an answer"
    assert status < 500, body[:300]
    if host not in ("127.0.0.1", "localhost", "[::1]"):  # HOSTS carry no port
        assert status in (400, 421), (host, status)
        return
    if status >= 400:  # the app's refusals are JSON with a message
        error = json.loads(body)["error"]
        assert error and "Traceback" not in error
    assert (child.peak_kb() - child.baseline_kb) / 1024 < 150, "server memory grew past 150 MB"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4),
    max_leaves=12,
)
params = st.dictionaries(
    st.sampled_from(["max_tokens", "min_tokens", "overlap", "tokenizer", "embedder", "zzz"]),
    st.one_of(st.integers(-5, 5000), st.text(max_size=8), st.sampled_from(["hf:/etc", "chars"])),
    max_size=3,
)
chunk_bodies = st.fixed_dictionaries(
    {"text": st.text(max_size=300) | st.sampled_from(["word " * 2000, "\x00\ud7ff" * 50])},
    optional={
        "strategy": st.sampled_from(STRATEGIES),
        "params": params,
        "explain": st.booleans(),
        "compare": st.lists(
            st.fixed_dictionaries({"strategy": st.sampled_from(STRATEGIES)}, optional={"params": params}), max_size=4
        ),
        "max_tokens": st.integers(-3, 3),
        "extra": json_values,
    },
)
search_bodies = st.fixed_dictionaries(
    {"query": st.text(max_size=50)}, optional={"k": st.integers(-3, 200), "hybrid": json_values, "top_k": st.just(3)}
)


@st.composite
def json_requests(draw):
    path = draw(st.sampled_from(["/chunk", "/search", "/view", "/health", "/", "/nope", "/static/../../etc/passwd"]))
    kind = draw(st.sampled_from(["schema", "schema", "random", "oversize", "garbage"]))
    if kind == "schema":
        body = json.dumps(draw(chunk_bodies if path != "/search" else search_bodies)).encode()
    elif kind == "random":
        body = json.dumps(draw(json_values)).encode()
    elif kind == "oversize":  # just over /search's or /chunk's limit, or a deep nest
        body = draw(
            st.sampled_from(
                [
                    b'{"query": "' + b"q" * (70 * 1024) + b'"}',
                    b'{"text": "' + b"a" * (13 * MB) + b'"}',
                    b"[" * 100_000 + b"]" * 100_000,
                ]
            )
        )
    else:
        body = draw(st.binary(max_size=2000))
    headers = {"Host": draw(st.sampled_from(HOSTS)), "Content-Type": draw(st.sampled_from(TYPES))}
    if draw(st.booleans()):
        headers[draw(st.sampled_from(["Cookie", "Authorization", "Accept-Encoding", "X-Forwarded-Host"]))] = draw(
            st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60)
        )
    method = draw(st.sampled_from(["POST", "POST", "POST", "GET", "PUT"]))
    return method, path, headers, body, draw(st.booleans())


@pytest.mark.timeout(600)
def test_json_and_header_fuzz(child):
    @FUZZ
    @given(json_requests())
    def check(request):
        method, path, headers, body, chunked = request
        status, answer = child.send(method, path, headers, body, chunked)
        _check(child, status, answer, headers["Host"])

    check()
    assert child.send("GET", "/health", {"Host": "127.0.0.1"}, b"")[0] == 200


@st.composite
def multipart_requests(draw):
    boundary = "B0undary"
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        name = draw(st.sampled_from(["text", "strategies", "file", "other", ""]))
        filename = draw(st.none() | st.sampled_from(["a.txt", "a.md", "a.pdf", "a.exe", "../../x.srt", "", 'n"q.vtt']))
        if name == "strategies" and draw(st.booleans()):
            value = json.dumps(
                draw(
                    st.lists(
                        st.fixed_dictionaries(
                            {"strategy": st.sampled_from(STRATEGIES)}, optional={"params": params, "zzz": st.just(1)}
                        ),
                        max_size=5,
                    )
                )
            ).encode()
        else:
            value = draw(
                st.binary(max_size=600)
                | st.text(max_size=300).map(str.encode)
                | st.sampled_from([b"word " * 60_000, b"%PDF-1.4\n", b"WEBVTT\n\n"])
            )
        disp = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
        parts.append(f"--{boundary}\r\nContent-Disposition: {disp}\r\n\r\n".encode() + value + b"\r\n")
    body = b"".join(parts) + (f"--{boundary}--\r\n".encode() if draw(st.booleans()) else b"")
    headers = {
        "Host": draw(st.sampled_from(HOSTS[:4])),
        "Content-Type": draw(st.sampled_from([f"multipart/form-data; boundary={boundary}", *TYPES])),
    }
    return headers, body, draw(st.booleans())


@pytest.mark.timeout(600)
def test_multipart_fuzz(child):
    @FUZZ
    @given(multipart_requests())
    def check(request):
        headers, body, chunked = request
        status, answer = child.send("POST", "/view", headers, body, chunked)
        _check(child, status, answer, headers["Host"])

    check()
    assert child.send("GET", "/health", {"Host": "127.0.0.1"}, b"")[0] == 200
