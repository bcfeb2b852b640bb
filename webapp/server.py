"""The web process: daphne, with a bound on what one WebSocket may queue. Run `python -m webapp.server` with daphne's arguments.

Daphne hands each received frame to the application through an unbounded queue and keeps reading the socket;
here a socket's queue holds at most QUEUE_FRAMES frames or QUEUE_CHARS characters, so that a client sending faster
than its consumer reads cannot grow the web process: past that, the server stops reading that socket until its
consumer catches up (TCP then slows the client down; nobody else waits). A frame over the size limit is answered
with a close frame, code 1009, instead of a dropped connection.

The other way round, a client that does not read its socket leaves every frame the app sends it in
the web process (Twisted's send buffer). Here a socket with more than SOCKET_SEND_BUFFER_BYTES unsent is sent a
close frame, code 4408, and dropped CLOSE_WAIT_S later if it has not read up to it (its buffer goes with it); and
while all the process's sockets together hold more than SOCKET_SEND_PROCESS_BYTES unsent, so is each that holds
more than a sixteenth of its own bound. Each socket's scope carries what it holds unsent (`encdec.unsent`), so the
app sends no `state` to a socket whose last one has not left yet.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import time
from functools import partial
from typing import Any

from daphne.cli import CommandLineInterface
from daphne.server import Server
from daphne.ws_protocol import WebSocketProtocol

from webapp.gil import gil_switch_interval

log = logging.getLogger(__name__)

QUEUE_FRAMES = 16  # frames one socket may have waiting for its consumer
QUEUE_CHARS = 1_048_576  # and their characters: one full-size frame


class BoundedQueue(asyncio.Queue):
    """One WebSocket's frames on their way to its consumer; pauses reading the socket while full."""

    def __init__(self, protocol: Any) -> None:
        super().__init__()
        self.protocol = protocol
        self.chars = 0
        self.paused = False

    def put_nowait(self, item: dict[str, Any]) -> None:
        super().put_nowait(item)
        self.chars += _size(item)
        if not self.paused and (self.qsize() >= QUEUE_FRAMES or self.chars >= QUEUE_CHARS):
            transport = getattr(self.protocol, "transport", None)
            if transport is not None:
                transport.pauseProducing()
                self.paused = True

    def get_nowait(self) -> dict[str, Any]:
        item = super().get_nowait()
        self.chars -= _size(item)
        if self.paused and self.qsize() < QUEUE_FRAMES // 2 and self.chars < QUEUE_CHARS // 2:
            self.paused = False
            transport = getattr(self.protocol, "transport", None)
            if transport is not None:
                transport.resumeProducing()
        return item


def _size(item: dict[str, Any]) -> int:
    return len(item.get("text") or item.get("bytes") or b"")


class BoundedServer(Server):
    """Daphne's server, giving each WebSocket a BoundedQueue and a close frame for an oversized message, and a TCP
    listen backlog a class's reconnect storm fits in."""

    def __init__(self, application: Any, endpoints: list[str] | None = None, **options: Any) -> None:
        super().__init__(application, endpoints=[with_backlog(endpoint) for endpoint in endpoints or []], **options)

    def create_application(self, protocol: Any, scope: dict[str, Any]) -> asyncio.Queue | None:
        """As daphne's own, with a BoundedQueue for a WebSocket."""
        if scope.get("type") != "websocket":
            return super().create_application(protocol, scope)
        assert "application_instance" not in self.connections[protocol]
        # autobahn drops the TCP connection on a protocol violation unless told to close properly;
        # with this a client sees 1009 (message too big) rather than a dead socket.
        protocol.failByDrop = False
        eager_writes(protocol.transport)
        queue = BoundedQueue(protocol)
        scope.setdefault("asgi", {"version": "3.0"})
        scope["encdec.unsent"] = lambda: unsent_bytes(protocol.transport)  # the app reads it before a large send
        instance = self.application(scope=scope, receive=queue.get, send=partial(self.handle_reply, protocol))
        if protocol not in self.connections:
            return None
        self.connections[protocol]["application_instance"] = asyncio.ensure_future(instance)
        return queue


    async def handle_reply(self, protocol: Any, message: dict[str, Any]) -> None:
        """As daphne's own, except that a WebSocket whose client has left too much unread is closed instead."""
        if message.get("type") == "websocket.send" and isinstance(protocol, WebSocketProtocol):
            if protocol.state != WebSocketProtocol.STATE_OPEN:
                return  # closing (or closed): what is left for it goes nowhere
            unsent = unsent_bytes(protocol.transport)
            if unsent > _send_bound() or (unsent > _send_bound() // 16 and self._process_unsent() > _process_bound()):
                log.warning("closing a WebSocket whose client does not read (%s bytes unsent)", unsent)
                from webapp.realtime.socket_guard import NOT_READING_CLOSE

                # A slow reader gets CLOSE_WAIT_S to read up to the close frame and see why; then autobahn drops it.
                protocol.closeHandshakeTimeout = CLOSE_WAIT_S
                protocol.sendClose(code=NOT_READING_CLOSE)
                return
        await super().handle_reply(protocol, message)

    def _process_unsent(self) -> int:
        """What all WebSockets of this process hold unsent, summed at most every UNSENT_SUM_S (not per frame)."""
        now = time.monotonic()
        if now - getattr(self, "_unsent_at", float("-inf")) > UNSENT_SUM_S:
            self._unsent_at = now
            self._unsent_sum = sum(unsent_bytes(getattr(protocol, "transport", None))
                                   for protocol in list(self.connections) if isinstance(protocol, WebSocketProtocol))
        return self._unsent_sum




WEBSOCKET_CONNECT_TIMEOUT_S = 30  # how long a WebSocket handshake may take before the server drops it
LISTEN_BACKLOG = 1024  # connections the kernel holds for accept: a class's reconnect storm fits (docs/benchmarks.md)
CLOSE_WAIT_S = 5  # how long a socket closed for not reading keeps its buffer for the client to reach the close frame
UNSENT_SUM_S = 0.25  # how often the process's unsent total is summed over its sockets


def unsent_bytes(transport: Any) -> int:
    """What a Twisted TCP transport holds that the kernel has not taken yet (its write buffers)."""
    if transport is None:
        return 0
    buffered = len(getattr(transport, "dataBuffer", b"")) - getattr(transport, "offset", 0)
    return buffered + getattr(transport, "_tempDataLen", 0)


def with_backlog(endpoint: str) -> str:
    """A TCP endpoint description with LISTEN_BACKLOG, unless it names its own (past the backlog the kernel drops
    a storm's SYNs and each waits a second to retry)."""
    if endpoint.startswith("tcp:") and ":backlog=" not in endpoint:
        return f"{endpoint}:backlog={LISTEN_BACKLOG}"
    return endpoint


def eager_writes(transport: Any) -> None:
    """Send a WebSocket's writes at once when nothing is queued before them, as asyncio's own transports do.

    Twisted's TCP transport (here on the asyncio reactor) only queues a write and registers the socket as a writer
    until the loop's next turn, which costs two epoll_ctl calls per frame per socket (docs/benchmarks.md, "Where a
    step's fan-out goes"). Here a write with nothing queued before it goes straight to the kernel; what the kernel does not take (a client that does not read) is queued as before, so the bytes keep
    their order and the not-reading bound (unsent_bytes) sees the same queue. The connection's streaming producer
    (Twisted's HTTP channel, kept after the upgrade) is paused by a full queue as before, and while it is paused every
    write is queued.
    """
    sock = getattr(transport, "socket", None)
    if sock is None or not hasattr(transport, "_tempDataLen"):
        return  # not a plain TCP transport (a test's, or TLS in this process): its own write path
    queued_write = transport.write

    def write(data: bytes) -> None:
        if (data and transport.connected and not transport.disconnecting and not transport._writeDisconnected
                and not transport.producerPaused and unsent_bytes(transport) == 0):
            try:
                sent = sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:  # the connection is gone: Twisted's own write meets the error and closes as it would
                sent = 0
            if sent == len(data):
                return
            data = data[sent:]
        queued_write(data)

    transport.write = write


def _send_bound() -> int:
    from django.conf import settings

    return settings.SOCKET_SEND_BUFFER_BYTES


def _process_bound() -> int:
    from django.conf import settings

    return settings.SOCKET_SEND_PROCESS_BYTES


class BoundedCommandLine(CommandLineInterface):
    server_class = BoundedServer

    def __init__(self) -> None:
        super().__init__()
        # A handshake waits its turn rather than being dropped at daphne's 5 s: in a reconnect storm the handshakes
        # queue up behind one another, and a dropped one costs its client a retry and the server the handshake again.
        self.parser.set_defaults(websocket_connect_timeout=WEBSOCKET_CONNECT_TIMEOUT_S)


def main() -> None:
    sys.setswitchinterval(gil_switch_interval())
    BoundedCommandLine.entrypoint()


if __name__ == "__main__":
    main()
