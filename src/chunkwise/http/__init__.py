"""The one HTTP client for OpenAI-compatible endpoints: chat (:mod:`chunkwise.llm.client`) and embeddings
(:mod:`chunkwise.embeddings.openai`), with the trust policy written once.

An :class:`Endpoint` is where requests go and how far the server is trusted; :class:`JSONClient` sends JSON
POSTs to it. Every rule below exists because a misbehaving or hostile server could otherwise hurt the user:

- **No redirects, ever.** A ``3xx`` fails at once with one line naming the status and the ``Location``'s
  origin. Following one would re-send the API key to whatever host the server names, and the standard
  library's handler also turns the POST into a GET whose body is then read as the answer. An endpoint that
  moved is fixed by configuring its new URL, which is the user's decision, not the server's.
- **A whole-request deadline** (``deadline``: connect, headers and every read, streaming included, retries
  and back-off too) besides ``timeout`` (the longest silence: connecting, or between two reads). A server
  that drips one byte a second never trips a per-read timeout; the deadline ends it.
- **A response size cap** (``max_response_bytes``, streams too): a 50 MB "answer" is refused, not printed
  or held in memory.
- **The same retries for every use**: HTTP 408, 409, 429 and 5xx, timeouts and dropped connections, with
  exponential back-off and jitter; ``Retry-After`` is honoured as seconds or as an HTTP date (capped at
  ``max_backoff``). Other statuses fail at once: retrying a bad key or an unknown model cannot help.
- **The key** travels only in the ``Authorization`` header, only to the configured origin; it is not in
  ``repr``, and error text a server echoes back is redacted (:func:`chunkwise.security.redact`). A key
  about to cross the network over plain ``http://`` is warned about (:func:`~chunkwise.security.warn_plain_http`).

The standard library's ``http.client`` is used directly (not ``urllib``, whose opener follows redirects,
and not a third-party client) because it never redirects by construction and hands over the socket, so
the deadline can close a request that is stuck in any phase. Proxies from ``$HTTPS_PROXY``/``$HTTP_PROXY``
(and ``$NO_PROXY``) are honoured as ``urllib`` did, except for loopback hosts.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import getproxies, proxy_bypass

from ..security import is_loopback, redact, warn_plain_http
from .endpoint import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RESPONSE_BYTES,
    RETRY_STATUS,
    Endpoint,
    EndpointError,
    FatalEndpointError,
    _origin,
    parse_retry_after,
    retried,
)
from .response import Response, _Deadline, _TooLarge

T = TypeVar("T")

#: how the client waits between attempts (a name of its own so tests can see the waits)
_sleep = time.sleep


class JSONClient:
    """JSON POSTs to one :class:`Endpoint`, under the policy of this module.

    ``error`` and ``fatal`` are the exception classes raised (subclasses of :class:`EndpointError` and
    :class:`FatalEndpointError`, so each use keeps its own error names); ``key_hint`` is appended to a
    401/403 message (``"set $OPENAI_API_KEY to a valid key"``); ``deadline_hint`` to a missed deadline's
    message (how to give a longer one).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        error: type[EndpointError] = EndpointError,
        fatal: type[EndpointError] = FatalEndpointError,
        key_hint: str = "",
        deadline_hint: str = "deadline=",
    ):
        self.endpoint = endpoint
        self.error, self.fatal, self.key_hint = error, fatal, key_hint
        self.deadline_hint = deadline_hint
        self.requests_sent = 0
        self._lock = threading.Lock()
        warn_plain_http(endpoint.url, bool(endpoint.key()))  # at set-up, where the warning is actionable

    @property
    def url(self) -> str:
        return self.endpoint.url

    def redact(self, text: str) -> str:
        return redact(text, self.endpoint.key())

    # -- the public calls ------------------------------------------------------------------------------
    def post(self, payload: dict[str, Any]) -> Any:
        """POST ``payload`` and return the decoded JSON answer; retried whole (body included) on timeouts,
        dropped connections and the retried statuses."""
        return self.decode(self._attempts(payload, "application/json", self._read_whole))

    def decode(self, raw: bytes) -> Any:
        """``raw`` as JSON, or the one error every use reports for a body that is not JSON."""
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise self.fatal(
                self.redact(f"malformed answer: not JSON (first bytes: {raw[:80]!r})"), source=self.url
            ) from None

    def open(self, payload: dict[str, Any], accept: str = "text/event-stream") -> Response:
        """POST ``payload`` and return the open 2xx response (for streams: read it with ``lines()``). Retried
        only until the response starts; after that a retry could repeat what was already shown."""
        return self._attempts(payload, accept, lambda resp: resp)

    def _attempts(self, payload: dict[str, Any], accept: str, use: Callable[[Response], T]) -> T:
        """``use`` of the first response that starts (and that ``use`` does not turn into a retry), under the
        whole request's deadline and the endpoint's retries; the one error after the last attempt."""
        body = json.dumps(payload).encode("utf-8")
        deadline_at = time.monotonic() + float(self.endpoint.deadline or DEFAULT_DEADLINE)
        attempts, last = 0, ""
        while True:
            attempts += 1
            retry_after: float | None = None
            try:
                return use(self._start(body, accept, deadline_at))
            except _Retry as exc:
                last, retry_after = exc.reason, exc.retry_after
            if not self._wait(attempts, retry_after, deadline_at, last):
                raise self.error(self.redact(f"{last}; gave up after {_n(attempts)}"), source=self.url)

    def _read_whole(self, resp: Response) -> bytes:
        """The whole body of ``resp``; a body that breaks off before its end is a retry."""
        try:
            return resp._read_all()
        except (OSError, http.client.HTTPException, ValueError) as exc:  # nothing shown yet: retry
            raise _Retry(f"the answer broke off ({_describe(exc, self.endpoint.timeout)})") from None
        except (_Deadline, _TooLarge) as exc:
            raise self._read_error(exc, "the answer broke off") from None
        finally:
            resp.close()

    # -- one attempt -----------------------------------------------------------------------------------
    def _wait(self, attempts: int, retry_after: float | None, deadline_at: float, last: str) -> bool:
        """Sleep before the next attempt; False when there is none (retries used, or the deadline near)."""
        if attempts > self.endpoint.retries:
            return False
        ep = self.endpoint
        if retry_after is None:
            base = ep.backoff * 2 ** (attempts - 1)
            retry_after = base * (0.5 + random.random() / 2)
        delay = min(ep.max_backoff, retry_after)
        if time.monotonic() + delay >= deadline_at:
            raise self.error(
                self.redact(
                    f"{last}; the {_s(ep.deadline)} deadline left no time for another attempt after {_n(attempts)}"
                ),
                source=self.url,
            )
        _sleep(delay)
        return True

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": accept, "User-Agent": "chunkwise"}
        key = self.endpoint.key()
        if key:
            warn_plain_http(self.url, True)  # once per URL: a key that appeared in the environment later
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _connect(self, timeout: float) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
        """A connection to the endpoint (or its proxy), the request target and any proxy headers."""
        parts = urlsplit(self.url)
        host, port = parts.hostname or "", parts.port
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        proxy = None if is_loopback(host) or proxy_bypass(host) else getproxies().get(parts.scheme)
        conn: http.client.HTTPConnection
        auth: dict[str, str] = {}
        if proxy:
            p = urlsplit(proxy if "//" in proxy else "http://" + proxy)
            if p.username:
                import base64

                token = base64.b64encode(f"{unquote(p.username)}:{unquote(p.password or '')}".encode()).decode()
                auth["Proxy-Authorization"] = f"Basic {token}"
            if parts.scheme == "https":
                conn = http.client.HTTPSConnection(
                    p.hostname or "", p.port or 8080, timeout=timeout, context=ssl.create_default_context()
                )
                conn.set_tunnel(host, port or 443, headers=auth)
            else:
                conn = http.client.HTTPConnection(p.hostname or "", p.port or 8080, timeout=timeout)
                target = self.url  # a plain-http proxy takes the absolute URL
                return conn, target, auth
            return conn, target, {}
        elif parts.scheme == "https":
            conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=ssl.create_default_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        return conn, target, auth

    def _start(self, body: bytes, accept: str, deadline_at: float) -> Response:
        """Send the request and read the status and headers: a 2xx :class:`Response`, or :class:`_Retry`,
        or the client's error."""
        ep = self.endpoint
        left = deadline_at - time.monotonic()
        if left <= 0:
            raise self._deadline_error()
        with self._lock:
            self.requests_sent += 1
        conn, target, proxy_headers = self._connect(min(ep.timeout, left))
        holder: dict[str, socket.socket | None] = {"sock": None}
        watchdog = threading.Timer(left, _shut, args=(holder,))
        watchdog.daemon = True
        watchdog.start()
        try:
            conn.connect()
            holder["sock"] = conn.sock
            headers = {**self._headers(accept), **proxy_headers}
            conn.request("POST", target, body=body, headers=headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            watchdog.cancel()
            conn.close()
            if time.monotonic() >= deadline_at:
                raise self._deadline_error() from None
            raise _Retry(_describe(exc, ep.timeout)) from None
        except BaseException:
            watchdog.cancel()
            conn.close()
            raise
        status = resp.status
        if 200 <= status < 300:
            length = resp.getheader("Content-Length")
            if length and length.strip().isdigit() and int(length) > ep.max_response_bytes:
                watchdog.cancel()
                conn.close()
                raise self._too_large(int(length))
            return Response(self, conn, resp, holder["sock"], deadline_at, watchdog)
        raise self._refusal(resp, conn, watchdog)

    def _refusal(self, resp: http.client.HTTPResponse, conn: Any, watchdog: threading.Timer) -> Exception:
        """The error a status that is not 2xx stands for (the connection closed): :class:`_Retry` for a
        status worth retrying, else the client's error, a redirect named and never followed."""
        ep, status = self.endpoint, resp.status
        try:
            detail = self._detail(resp)
            retry_after = parse_retry_after(resp.getheader("Retry-After"))
            location = resp.getheader("Location")
        finally:
            watchdog.cancel()
            conn.close()
        if 300 <= status < 400:
            where = f" to {_origin(urljoin(self.url, location))}" if location else " (no Location)"
            return self.fatal(
                f"HTTP {status} redirect{where}: not followed (the request and its key go only to "
                f"{ep.origin}; configure the final URL as the base URL)",
                source=self.url,
            )
        text = f"HTTP {status}{': ' + detail if detail else ''}"
        if retried(status):
            return _Retry(self.redact(text), retry_after)
        if status in (401, 403) and self.key_hint:
            text = f"authentication failed ({text}); {self.key_hint}"
        elif status == 404:
            text += " (is the base URL right? it usually ends in /v1)"
        return self.fatal(self.redact(text), source=self.url)

    def _detail(self, resp: http.client.HTTPResponse) -> str:
        """The server's ``error.message`` (OpenAI style) or the start of the body, one line, redacted."""
        try:
            raw = resp.read(4096)
        except (OSError, http.client.HTTPException, ValueError):
            return ""
        try:
            doc = json.loads(raw)
            err = doc.get("error", doc) if isinstance(doc, dict) else doc
            msg = err.get("message", err) if isinstance(err, dict) else err
            text = str(msg)
        except ValueError:
            text = raw.decode("utf-8", "replace")
        return self.redact(" ".join(text.split())[:300])

    def _deadline_error(self) -> EndpointError:
        err = self.error(
            f"no complete answer within the {_s(self.endpoint.deadline)} deadline; the server is too slow or "
            f"sends its answer a trickle at a time (a longer deadline: {self.deadline_hint})",
            source=self.url,
        )
        err.past_deadline = True  # the endpoint is too slow: callers with more requests to make stop here
        return err

    def _too_large(self, size: int | None = None) -> EndpointError:
        got = f" ({size:,} bytes announced)" if size else ""
        return self.fatal(
            f"the answer is larger than the {self.endpoint.max_response_bytes:,}-byte limit{got}; "
            "refused (max_response_bytes)",
            source=self.url,
        )

    def _read_error(self, exc: BaseException, broke: str) -> EndpointError:
        """A failure while reading a started response, as the client's error."""
        if isinstance(exc, _Deadline):
            return self._deadline_error()
        if isinstance(exc, _TooLarge):
            return self._too_large()
        return self.error(f"{broke} ({_describe(exc, self.endpoint.timeout)})", source=self.url)


class _Retry(Exception):
    """An attempt that may be repeated: why it failed and the server's ``Retry-After``."""

    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.reason, self.retry_after = reason, retry_after


def _shut(holder: dict[str, socket.socket | None]) -> None:
    """The deadline passed: shut the socket so a read stuck in any phase returns at once."""
    sock = holder.get("sock")
    if sock is not None:
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's method: safe beside TLS reads
        except OSError:
            pass


def _describe(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return f"timed out (nothing received for {_s(timeout)})"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted ({exc.verify_message or exc})"
    if isinstance(exc, (ConnectionRefusedError, socket.gaierror)) or (
        isinstance(exc, OSError) and not isinstance(exc, ConnectionError) and exc.errno is not None
    ):
        return f"endpoint unreachable ({exc})"
    if isinstance(exc, (ConnectionError, http.client.RemoteDisconnected, http.client.IncompleteRead)):
        return f"connection dropped ({exc.__class__.__name__})"
    return f"request failed ({exc.__class__.__name__}: {exc})"[:300]


def _n(attempts: int) -> str:
    return f"{attempts} attempt" + ("s" if attempts != 1 else "")


def _s(seconds: float | None) -> str:
    return f"{seconds:g} s"


__all__ = [
    "Endpoint",
    "JSONClient",
    "Response",
    "EndpointError",
    "FatalEndpointError",
    "RETRY_STATUS",
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "parse_retry_after",
    "retried",
    "warn_plain_http",
]
