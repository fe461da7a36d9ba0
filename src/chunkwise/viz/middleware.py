"""The ASGI middlewares of ``chunkwise serve``'s trust boundary, outside the routes: :class:`BodyGuard`
(a body limit counted as the bytes arrive, and deadlines for each piece of a body and for all of it) and
:class:`TokenGate` (the token every route but ``/health`` and ``/static/`` needs). They answer on the ASGI
channel before the app runs, with the same ``{"error": message}`` JSON as the routes."""

import asyncio
import contextlib
import hmac
import json
from dataclasses import KW_ONLY, dataclass
from typing import Any
from urllib.parse import parse_qs

#: seconds a client may take to send a request's head, and to send each piece of its body
READ_TIMEOUT = 10.0
#: seconds a whole body may take, however steadily it drips in
BODY_TIMEOUT = 120.0
#: the cookie the page's first load with ``?token=`` sets
TOKEN_COOKIE = "chunkwise_token"


async def send_error(send, status: int, message: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """A JSON error straight onto the ASGI channel (the middlewares answer before the app runs)."""
    body = json.dumps({"error": message}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


@dataclass(eq=False)
class BodyGuard:
    """Counts a request's body bytes as they arrive and stops at the route's limit.

    ``Content-Length`` is only a claim and a chunked body has none, so a claim over the limit is refused
    before the app runs, and otherwise the bytes are counted as they arrive: at the limit the client gets
    413 and the app gets a disconnect, so nothing more is read, kept in memory or spooled to disk. A body
    that stalls for ``read_timeout`` seconds, or takes longer than ``body_timeout`` in all, gets 408 (uvicorn
    has no such deadline: a client sending one byte now and then held a connection and a worker forever).
    """

    app: Any
    _: KW_ONLY
    limits: dict[str, int]
    default: int
    max_upload_bytes: int
    read_timeout: float
    body_timeout: float

    def _too_large(self, method: str, path: str, limit: int) -> str:
        what = f" (a file up to {self.max_upload_bytes:,} bytes and text)" if path == "/view" else ""
        return f"request too large: {method} {path} takes at most {limit:,} bytes{what}"

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope.get("path", ""), scope.get("method", "")
        limit = self.limits.get(path, self.default)
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.strip().isdigit() and int(value) > limit:
                await send_error(send, 413, self._too_large(method, path, limit), ((b"connection", b"close"),))
                return
        guard = _GuardedBody(self, receive, send, limit, self._too_large(method, path, limit))
        try:
            await self.app(scope, guard.receive, guard.send)
        except Exception:
            if not guard.refused:  # the app failing over the disconnect it was given is expected
                raise


class _GuardedBody:
    """One request's body read under the limits: ``receive`` counts the bytes and bounds each wait (a 413
    or 408 is sent once and the app sees a disconnect), ``send`` passes the app's answer on unless the
    client was already refused."""

    def __init__(self, limits: BodyGuard, receive, send, limit: int, too_large: str) -> None:
        self.limits, self._receive, self._send = limits, receive, send
        self.limit, self.too_large = limit, too_large
        self.loop = asyncio.get_running_loop()
        self.deadline = self.loop.time() + limits.body_timeout
        self.received = 0
        self.done = False  # the whole body has arrived: later receives only wait for a disconnect
        self.refused = False
        self.started = False

    async def refuse(self, status: int, message: str) -> dict[str, Any]:
        if not self.started:
            await send_error(self._send, status, message, ((b"connection", b"close"),))
        self.refused = True
        return {"type": "http.disconnect"}

    async def receive(self) -> dict[str, Any]:
        if self.refused:
            return {"type": "http.disconnect"}
        if self.done:
            return await self._receive()
        limits = self.limits
        wait = min(limits.read_timeout, self.deadline - self.loop.time())
        try:
            message = await asyncio.wait_for(self._receive(), timeout=max(wait, 0.001))
        except TimeoutError:
            return await self.refuse(
                408,
                f"request body not received in time (limit {limits.read_timeout:g} s "
                f"without data, {limits.body_timeout:g} s in all)",
            )
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                return await self.refuse(413, self.too_large)
            self.done = not message.get("more_body", False)
        return message

    async def send(self, message: dict[str, Any]) -> None:
        if self.refused:  # the client already has its 413/408; the app's answer to the disconnect goes nowhere
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


class TokenGate:
    """Every route but ``/health`` and ``/static/`` needs the token: ``Authorization: Bearer TOKEN`` or the
    cookie that ``GET /?token=TOKEN`` sets (then redirects to ``/``, so the token leaves the address bar).
    The cookie is ``HttpOnly`` and ``SameSite=Strict``: another site's page cannot send it along."""

    def __init__(self, app, *, token: str):
        self.app = app
        self.token = token.encode()

    def _good(self, value: str | bytes | None) -> bool:
        if value is None:
            return False
        raw = value.encode() if isinstance(value, str) else value
        return hmac.compare_digest(raw, self.token)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if path == "/health" or path.startswith("/static/"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        auth = headers.get(b"authorization", b"")
        if auth[:7].lower() == b"bearer " and self._good(auth[7:].strip()):
            await self.app(scope, receive, send)
            return
        from http.cookies import CookieError, SimpleCookie

        cookies: SimpleCookie = SimpleCookie()
        with contextlib.suppress(CookieError):
            cookies.load(headers.get(b"cookie", b"").decode("latin-1"))
        if TOKEN_COOKIE in cookies and self._good(cookies[TOKEN_COOKIE].value):
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if path == "/" and scope.get("method") == "GET" and self._good((query.get("token") or [None])[0]):
            cookie = f"{TOKEN_COOKIE}={self.token.decode()}; HttpOnly; SameSite=Strict; Path=/"
            await send(
                {
                    "type": "http.response.start",
                    "status": 303,
                    "headers": [
                        (b"location", b"/"),
                        (b"set-cookie", cookie.encode()),
                        (b"cache-control", b"no-store"),
                        (b"content-length", b"0"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await send_error(
            send,
            401,
            "this server needs its token: open the address printed when it started "
            "(/?token=...) or send 'Authorization: Bearer TOKEN'",
            ((b"www-authenticate", b"Bearer"),),
        )
