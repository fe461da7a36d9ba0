"""One response of :mod:`chunkwise.http` being read: every read under the request's deadline and the size
cap, whole or line by line (streams).
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import JSONClient

_READ = 65536


class _Deadline(Exception):
    """The whole-request deadline passed (internal; becomes an :class:`EndpointError`)."""


class _TooLarge(Exception):
    """The response is over ``max_response_bytes`` (internal; becomes a :class:`FatalEndpointError`)."""


_READ_FAILURES = (_Deadline, _TooLarge, OSError, http.client.HTTPException, ValueError)


class Response(AbstractContextManager["Response", None]):
    """An open 2xx response whose reads keep to the deadline, the per-read timeout and the size cap."""

    def __init__(
        self,
        client: JSONClient,
        conn: http.client.HTTPConnection,
        resp: http.client.HTTPResponse,
        sock: socket.socket | None,
        deadline_at: float,
        watchdog: threading.Timer,
    ):
        self._client, self._conn, self._resp, self._sock = client, conn, resp, sock
        self._deadline_at, self._watchdog = deadline_at, watchdog
        self.status = resp.status
        self.headers = resp.headers
        self.content_type = resp.headers.get("Content-Type", "") or ""
        self.received = 0

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._watchdog.cancel()
        try:
            self._resp.close()
        finally:
            self._conn.close()

    def _chunk(self) -> bytes:
        """One read of the body (``b""`` at its end), within the deadline and the size cap."""
        left = self._deadline_at - time.monotonic()
        if left <= 0:
            raise _Deadline
        if self._sock is not None:
            self._sock.settimeout(min(self._client.endpoint.timeout, left))
        try:
            data = self._resp.read1(_READ)
        except (OSError, http.client.HTTPException, ValueError):
            if time.monotonic() >= self._deadline_at:
                raise _Deadline from None
            raise
        if not data and time.monotonic() >= self._deadline_at:
            raise _Deadline  # the watchdog shut the socket: not the body's real end
        self.received += len(data)
        if self.received > self._client.endpoint.max_response_bytes:
            raise _TooLarge
        return data

    def _read_all(self) -> bytes:
        parts: list[bytes] = []
        while True:
            data = self._chunk()
            if not data:
                return b"".join(parts)
            parts.append(data)

    def read(self) -> bytes:
        """The whole body. Raises the client's errors (broke off, deadline, too large)."""
        try:
            return self._read_all()
        except _READ_FAILURES as exc:
            raise self._client._read_error(exc, "the answer broke off") from None

    def lines(self) -> Iterator[bytes]:
        """The body line by line (for server-sent events), as the bytes arrive."""
        buf = b""
        try:
            while True:
                data = self._chunk()
                if not data:
                    if buf:
                        yield buf
                    return
                buf += data
                *complete, buf = buf.split(b"\n")
                yield from complete
        except _READ_FAILURES as exc:
            raise self._client._read_error(exc, "the stream broke off") from None
