"""One OpenAI-compatible server on the loopback for every endpoint test: chat and embeddings.

``POST /v1/chat/completions`` answers (SSE when ``stream`` is asked for) and enforces a context window
counted exactly as chunkwise counts it; ``POST /v1/embeddings`` returns deterministic vectors, out of order
on purpose. Everything else a real or hostile server does is scripted by attributes: statuses (always,
for the first requests, or a list to pop), ``Retry-After``, delays, malformed bodies, broken streams,
echoed headers, a key to check, ``3xx`` redirects to another host, answers dripped a byte at a time, and
huge answers. Every request, any method, is recorded with its path and headers, so a second instance
used as a redirect target shows whether the key reached it.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from chunkwise.llm.openai import MESSAGE_OVERHEAD, REQUEST_OVERHEAD
from chunkwise.segmentation.tokenizers import get_tokenizer

CL100K = get_tokenizer("cl100k")
DIM = 8


def prompt_tokens(body: dict) -> int:
    return sum(CL100K.count(m["content"]) + MESSAGE_OVERHEAD for m in body["messages"]) + REQUEST_OVERHEAD


def fake_vector(text: str) -> list[float]:
    h = hashlib.sha256(text.encode()).digest()
    return [b - 128.0 for b in h[:DIM]]


def default_answer(body: dict) -> str:
    """Answers cite the first passage; notes and summaries cite every passage number they were shown and
    fill most of ``max_tokens`` (so map-reduce has real work to do)."""
    user = body["messages"][-1]["content"]
    if "Question:" in user:
        return "Open the vents for ten minutes before cleaning so the glass can dry [1]."
    nums = sorted({int(n) for n in re.findall(r"\[(\d+)\]", user)})
    cites = "".join(f"[{n}]" for n in nums[:40])
    words = max(1, int(body["max_tokens"] * 0.8) - CL100K.count(cites) - 10)
    return f"Summary of the passages {cites}: " + " ".join(["point"] * words)


def _loopback_host() -> str:
    """127.0.0.2 where the system routes it (Linux does): a second host, not only a second port."""
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.2", 0))
        return "127.0.0.2"
    except OSError:
        return "127.0.0.1"


class FakeOpenAI:
    """The server; ``host="other"`` binds it to a second loopback address (a redirect target)."""

    def __init__(self, host: str = "127.0.0.1"):
        self.requests: list[dict] = []  # POST bodies (JSON), in order
        self.headers: list[dict] = []  # headers of every request, any method
        self.seen: list[tuple[str, str]] = []  # (method, path) of every request
        self.fail_first = 0
        self.fail_status = 503
        self.always_status: int | None = None
        self.script: list[int] = []  # statuses to answer first, one per request
        self.retry_after: str | None = "0"  # sent with 429 and 503
        self.delay = 0.0
        self.malformed: str | None = None  # a raw body to send instead of an answer
        self.truncate = False  # send half of the answer's bytes (with a matching Content-Length)
        self.bad_event: str | None = None  # a raw server-sent event to stream first
        self.break_stream_after: int | None = None  # pieces sent before the connection is dropped
        self.echo_auth = False  # put the Authorization header in error messages
        self.echo_headers = False  # put every request header in error bodies
        self.key: str | None = None  # when set, a request without "Bearer <key>" gets 401
        self.context_tokens: int | None = None
        self.overflows: list[int] = []
        self.prompt_sizes: list[int] = []
        self.answer = default_answer
        self.redirect: tuple[int, str] | None = None  # (status, origin): every request sent there, same path
        self.drip: float | None = None  # seconds between the bytes of a never-ending answer
        self.huge: int | None = None  # bytes of answer text to send (no Content-Length unless huge_length)
        self.huge_length = False
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _record(self) -> None:
                with fake.lock:
                    fake.headers.append(dict(self.headers))
                    fake.seen.append((self.command, self.path))

            def _send(self, status: int, payload: bytes, ctype: str = "application/json", extra=None):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):  # what a redirected request becomes under urllib: recorded, then a page
                self._record()
                self._send(200, b"<html>a page that is not an answer</html>", "text/html")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                self._record()
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                with fake.lock:
                    fake.requests.append(body)
                    n = len(fake.requests)
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                    scripted = fake.script.pop(0) if fake.script else None
                try:
                    self._answer(body, n, scripted)
                finally:
                    with fake.lock:
                        fake.in_flight -= 1

            def _error(self, status: int) -> None:
                msg = f"scripted {status}"
                if fake.echo_auth:
                    msg += f" for {self.headers.get('Authorization')}"
                doc: dict = {"error": {"message": msg}}
                if fake.echo_headers:
                    doc["error"]["headers"] = dict(self.headers)
                    doc["error"]["message"] += f" at {fake.origin}{self.path}"  # the request URL, query and all
                extra = {"Retry-After": fake.retry_after} if status in (429, 503) and fake.retry_after else None
                self._send(status, json.dumps(doc).encode(), extra=extra)

            def _answer(self, body: dict, n: int, scripted: int | None) -> None:
                if fake.redirect is not None:
                    status, origin = fake.redirect
                    return self._send(status, b"moved", "text/plain", {"Location": origin + self.path})
                if fake.delay:
                    time.sleep(fake.delay)
                path = self.path.split("?")[0]
                route = path.rsplit("/v1", 1)[-1] if "/v1/" in path else None
                if route not in ("/chat/completions", "/embeddings"):
                    return self._send(404, json.dumps({"error": {"message": "no such route"}}).encode())
                if fake.key and self.headers.get("Authorization") != f"Bearer {fake.key}":
                    return self._send(401, json.dumps({"error": {"message": "Incorrect API key provided"}}).encode())
                status = scripted or fake.always_status or (fake.fail_status if n <= fake.fail_first else 200)
                if status != 200:
                    return self._error(status)
                if fake.malformed is not None:
                    return self._send(200, fake.malformed.encode())
                if fake.drip is not None:
                    return self._drip(body)
                if fake.huge is not None:
                    return self._huge(body)
                if route == "/embeddings":
                    return self._embeddings(body)
                return self._chat(body)

            def _full(self, payload: bytes) -> None:
                self._send(200, payload[: len(payload) // 2] if fake.truncate else payload)

            def _embeddings(self, body: dict) -> None:
                inputs = body.get("input") or []
                if any(not isinstance(t, str) or t == "" for t in inputs):
                    return self._send(400, json.dumps({"error": {"message": "'$.input' is invalid"}}).encode())
                data = [
                    {"object": "embedding", "index": i, "embedding": fake_vector(t)}
                    for i, t in reversed(list(enumerate(inputs)))
                ]  # out of order on purpose
                self._full(json.dumps({"object": "list", "data": data, "model": body.get("model")}).encode())

            def _chat(self, body: dict) -> None:
                size = prompt_tokens(body)
                with fake.lock:
                    fake.prompt_sizes.append(size)
                if fake.context_tokens is not None and size + body["max_tokens"] > fake.context_tokens:
                    with fake.lock:
                        fake.overflows.append(size)
                    return self._send(400, json.dumps({"error": {"message": "context length exceeded"}}).encode())
                text = fake.answer(body)
                if not body.get("stream"):
                    return self._full(
                        json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()
                    )
                pieces = re.findall(r"\S+\s*", text)
                self._open_stream("text/event-stream")
                events = [{"choices": [{"delta": {"role": "assistant"}}]}]
                events += [{"choices": [{"delta": {"content": p}}]} for p in pieces]
                events[-1]["choices"][0]["finish_reason"] = "stop"
                try:
                    if fake.bad_event is not None:
                        self.wfile.write(f"data: {fake.bad_event}\n\n".encode())
                    for i, ev in enumerate(events):
                        if fake.break_stream_after is not None and i > fake.break_stream_after:
                            self.wfile.flush()
                            self.connection.shutdown(socket.SHUT_RDWR)
                            return
                        self.wfile.write(f"data: {json.dumps(ev)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except OSError:
                    pass

            def _open_stream(self, ctype: str, length: int | None = None) -> None:
                """Headers of a body delimited by the connection's close (or by ``length``)."""
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                if length is not None:
                    self.send_header("Content-Length", str(length))
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True

            def _drip(self, body: dict) -> None:
                """A valid beginning, then one byte every ``drip`` seconds, never finishing."""
                if body.get("stream"):
                    self._open_stream("text/event-stream")
                    head = b'data: {"choices": [{"delta": {"content": "'
                else:
                    self._open_stream("application/json")
                    head = b'{"choices": [{"message": {"role": "assistant", "content": "'
                try:
                    self.wfile.write(head)
                    self.wfile.flush()
                    while True:
                        time.sleep(fake.drip or 0.0)
                        self.wfile.write(b"a")
                        self.wfile.flush()
                except OSError:
                    pass

            def _huge(self, body: dict) -> None:
                """``huge`` bytes of answer text, written a megabyte at a time."""
                block = b"A" * 2**20
                total = int(fake.huge or 0)
                try:
                    if body.get("stream"):
                        self._open_stream("text/event-stream")
                        sent = 0
                        while sent < total:
                            event = b'data: {"choices": [{"delta": {"content": "' + block + b'"}}]}\n\n'
                            self.wfile.write(event)
                            sent += len(block)
                        self.wfile.write(b"data: [DONE]\n\n")
                        return
                    head = b'{"choices": [{"message": {"role": "assistant", "content": "'
                    tail = b'"}}]}'
                    self._open_stream("application/json", len(head) + total + len(tail) if fake.huge_length else None)
                    self.wfile.write(head)
                    for start in range(0, total, len(block)):
                        self.wfile.write(block[: min(len(block), total - start)])
                    self.wfile.write(tail)
                except OSError:
                    pass

        bind = _loopback_host() if host == "other" else host
        self.server = ThreadingHTTPServer((bind, 0), Handler)
        self.server.daemon_threads = True
        self.host = bind
        self.origin = f"http://{bind}:{self.server.server_address[1]}"
        self.url = f"{self.origin}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def redirect_to(self, other: FakeOpenAI, status: int = 302) -> None:
        """Answer every request with ``status`` and a Location on ``other``, same path."""
        self.redirect = (status, other.origin)

    def authorizations(self) -> list[str | None]:
        """The Authorization header of every request received (``None`` where there was none)."""
        with self.lock:
            return [h.get("Authorization") for h in self.headers]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
