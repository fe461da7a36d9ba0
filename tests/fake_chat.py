"""An OpenAI-compatible chat server on 127.0.0.1 for the answer and summary tests.

It streams (SSE) when asked, enforces a context window counted exactly as chunkwise counts it (cl100k plus
the per-message overhead) and records any request over it, fails on demand (status codes, delays,
malformed bodies, broken streams), tracks how many requests are in flight at once, and can echo the
Authorization header in its error bodies (to check the key is redacted).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from chunkwise.llm.openai import MESSAGE_OVERHEAD, REQUEST_OVERHEAD
from chunkwise.segmentation.tokenizers import get_tokenizer

CL100K = get_tokenizer("cl100k")


def prompt_tokens(body: dict) -> int:
    return sum(CL100K.count(m["content"]) + MESSAGE_OVERHEAD for m in body["messages"]) + REQUEST_OVERHEAD


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


class FakeChat:
    def __init__(self):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.fail_first = 0
        self.fail_status = 503
        self.always_status: int | None = None
        self.delay = 0.0
        self.malformed: str | None = None  # a raw body to send instead of an answer
        self.bad_event: str | None = None  # a raw server-sent event to stream first
        self.break_stream_after: int | None = None  # pieces sent before the connection is dropped
        self.echo_auth = False
        self.context_tokens: int | None = None
        self.overflows: list[int] = []
        self.prompt_sizes: list[int] = []
        self.answer = default_answer
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        chat = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

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

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with chat.lock:
                    chat.requests.append(body)
                    chat.headers.append(dict(self.headers))
                    n = len(chat.requests)
                    chat.in_flight += 1
                    chat.max_in_flight = max(chat.max_in_flight, chat.in_flight)
                try:
                    self._answer(body, n)
                finally:
                    with chat.lock:
                        chat.in_flight -= 1

            def _answer(self, body, n):
                if chat.delay:
                    time.sleep(chat.delay)
                status = chat.always_status or (chat.fail_status if n <= chat.fail_first else 200)
                if status != 200:
                    msg = f"scripted {status}"
                    if chat.echo_auth:
                        msg += f" for {self.headers.get('Authorization')}"
                    extra = {"Retry-After": "0"} if status == 429 else None
                    return self._send(status, json.dumps({"error": {"message": msg}}).encode(), extra=extra)
                size = prompt_tokens(body)
                with chat.lock:
                    chat.prompt_sizes.append(size)
                if chat.context_tokens is not None and size + body["max_tokens"] > chat.context_tokens:
                    with chat.lock:
                        chat.overflows.append(size)
                    return self._send(400, json.dumps({"error": {"message": "context length exceeded"}}).encode())
                if chat.malformed is not None:
                    return self._send(200, chat.malformed.encode())
                text = chat.answer(body)
                if not body.get("stream"):
                    payload = {"choices": [{"message": {"role": "assistant", "content": text}}]}
                    return self._send(200, json.dumps(payload).encode())
                pieces = re.findall(r"\S+\s*", text)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                events = [{"choices": [{"delta": {"role": "assistant"}}]}]
                events += [{"choices": [{"delta": {"content": p}}]} for p in pieces]
                try:
                    if chat.bad_event is not None:
                        self.wfile.write(f"data: {chat.bad_event}\n\n".encode())
                    for i, ev in enumerate(events):
                        if chat.break_stream_after is not None and i > chat.break_stream_after:
                            self.wfile.flush()
                            self.close_connection = True
                            self.connection.shutdown(2)
                            return
                        self.wfile.write(f"data: {json.dumps(ev)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
