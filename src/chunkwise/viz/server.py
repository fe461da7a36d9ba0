"""Running ``chunkwise serve``'s app: uvicorn with a deadline for every request head
(:func:`head_deadline_protocol`), and the ``Host`` names a server answers to (:func:`host_names`), so a
page on another site cannot reach it through DNS rebinding."""

import asyncio
import contextlib
import ipaddress

from .middleware import READ_TIMEOUT

#: seconds an idle keep-alive connection is kept open
KEEP_ALIVE_TIMEOUT = 5
#: largest request head (request line and headers) h11 buffers
MAX_HEAD_BYTES = 16 * 1024
#: the names a loopback server answers to (``Host`` header; IPv6 literals keep their brackets)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_names(host: str, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The ``Host`` names a server bound to ``host`` answers: the loopback names, ``host`` itself (not a
    wildcard address: nobody reaches a server by the name 0.0.0.0; this machine's name stands for it) and
    ``extra`` (``--allowed-host``). IPv6 literals get their brackets, as a ``Host`` header carries them."""

    def bracket(name: str) -> str:
        name = name.strip().lower()
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(name.strip("[]")).version == 6:
                return "[" + name.strip("[]") + "]"
        return name

    names = list(LOOPBACK_HOSTS)
    if host in ("0.0.0.0", "::", ""):
        import socket

        names.append(socket.gethostname().lower())
    else:
        names.append(bracket(host))
    names.extend(bracket(n) for n in extra)
    return list(dict.fromkeys(n for n in names if n))


def serve(app, host: str, port: int, *, read_timeout: float = READ_TIMEOUT) -> None:
    """Run ``app`` under uvicorn with deadlines: ``read_timeout`` seconds for each request's head (from
    the first byte, or from the connection's opening: uvicorn has no such timeout, so a connection that
    never finished its headers stayed open), keep-alive connections closed after
    :data:`KEEP_ALIVE_TIMEOUT` idle seconds, heads of at most :data:`MAX_HEAD_BYTES`."""
    import uvicorn

    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        http=head_deadline_protocol(read_timeout),
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )


def head_deadline_protocol(seconds: float):
    """uvicorn's h11 protocol with a deadline for every request head: armed when the connection opens and
    when a new request's first bytes arrive, disarmed once its headers are complete; at the deadline the
    connection is closed."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadDeadlineProtocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._arm()  # partway through a request head
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _expired(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return HeadDeadlineProtocol
