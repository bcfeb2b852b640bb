"""The web process's bound on what its WebSockets hold unsent (webapp/server.py), alone: a socket past its own bound,
or past a sixteenth of it while the process's sockets together hold more than SOCKET_SEND_PROCESS_BYTES, is sent a
close frame with 4408 instead of more frames (a fake transport; no daphne)."""
from __future__ import annotations

from typing import Any

import pytest
from daphne.ws_protocol import WebSocketProtocol

from webapp.realtime.socket_guard import NOT_READING_CLOSE
from webapp.server import BoundedServer


class Transport:
    def __init__(self, unsent: int) -> None:
        self.dataBuffer, self.offset, self._tempDataLen = b"", 0, unsent


def socket_holding(unsent: int) -> Any:
    protocol = WebSocketProtocol.__new__(WebSocketProtocol)
    protocol.state = WebSocketProtocol.STATE_OPEN
    protocol.transport = Transport(unsent)
    protocol.closed_with: list[int] = []
    protocol.sendClose = lambda code: protocol.closed_with.append(code)
    return protocol


def server_with(*protocols: Any) -> BoundedServer:
    server = BoundedServer.__new__(BoundedServer)
    server.connections = {protocol: {} for protocol in protocols}
    return server


@pytest.fixture
def bounds(settings):
    settings.SOCKET_SEND_BUFFER_BYTES = 4 * 1024 * 1024
    settings.SOCKET_SEND_PROCESS_BYTES = 32 * 1024 * 1024


async def _send(server: BoundedServer, protocol: Any) -> None:
    await server.handle_reply(protocol, {"type": "websocket.send", "text": "{}"})


async def test_a_socket_past_its_own_bound_is_closed_with_4408(bounds):
    late, fine = socket_holding(5 * 1024 * 1024), socket_holding(0)
    server = server_with(late, fine)
    await _send(server, late)
    assert late.closed_with == [NOT_READING_CLOSE]


async def test_past_the_process_budget_the_sockets_holding_most_are_closed_and_the_rest_kept(bounds):
    """Fifty stalled tabs at 1 MB each (each under its own 4 MB bound): 50 MB unsent in all, past the process's 32."""
    stalled = [socket_holding(1024 * 1024) for _ in range(50)]
    reading = socket_holding(100 * 1024)  # under a sixteenth of its bound (256 kB): a slow reader, not a stalled one
    server = server_with(*stalled, reading)
    for protocol in (*stalled, reading):
        try:
            await _send(server, protocol)
        except Exception:  # past the check, daphne's own send meets the fake socket: what matters is the close
            pass
    assert all(protocol.closed_with == [NOT_READING_CLOSE] for protocol in stalled)
    assert reading.closed_with == []


async def test_under_the_process_budget_a_socket_under_its_own_bound_is_not_closed(bounds):
    few = [socket_holding(1024 * 1024) for _ in range(5)]  # 5 MB in all
    server = server_with(*few)
    for protocol in few:
        try:
            await _send(server, protocol)
        except Exception:
            pass
    assert all(protocol.closed_with == [] for protocol in few)


def test_the_web_process_listens_with_a_backlog_a_reconnect_storm_fits_in(asgi_process):
    """The kernel's listen queue of the running daphne (ss shows a listening socket's backlog as its Send-Q)."""
    import subprocess
    from urllib.parse import urlsplit

    from webapp.server import LISTEN_BACKLOG, with_backlog

    assert with_backlog("tcp:port=8000:interface=0.0.0.0") == f"tcp:port=8000:interface=0.0.0.0:backlog={LISTEN_BACKLOG}"
    assert with_backlog("tcp:port=1:backlog=7") == "tcp:port=1:backlog=7" and with_backlog("unix:/x") == "unix:/x"
    port = urlsplit(asgi_process.url).port
    listening = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True).stdout.split()
    assert listening[2] == str(min(LISTEN_BACKLOG, int(open("/proc/sys/net/core/somaxconn").read()))), listening


def test_a_handshake_waits_its_turn_for_thirty_seconds_unless_the_operator_says_otherwise():
    from webapp.server import WEBSOCKET_CONNECT_TIMEOUT_S, BoundedCommandLine

    cli = BoundedCommandLine()
    assert cli.parser.parse_args(["webapp.asgi:application"]).websocket_connect_timeout == WEBSOCKET_CONNECT_TIMEOUT_S
    chosen = cli.parser.parse_args(["--websocket_connect_timeout", "5", "webapp.asgi:application"])
    assert chosen.websocket_connect_timeout == 5
