"""A network link between two simulated hosts: a TCP proxy that adds delay, jitter and loss, and can be cut.

scripts/cluster.py runs one in each host's network namespace, in the path of every connection that host opens to
another (web1's Redis and PostgreSQL connections to the data host, nginx's to each web host): the host's processes
connect to 127.0.0.1:PORT and the proxy carries the bytes to the peer over the bridge. This machine's kernel has
no traffic-control qdiscs (netem), so the link's behaviour is made here, as Toxiproxy does it:

- delay: each chunk read from one side is written to the other `rtt/2` later (plus a jitter drawn uniformly from
  [0, jitter]), never before the chunk read before it (TCP delivers in order: a late chunk holds up the rest);
  opening a connection costs one RTT (the SYN and its answer).
- loss: TCP never loses bytes; a lost segment arrives one retransmission timeout late. A chunk of n segments is
  hit with probability 1 - (1 - loss)^n and is then delivered `max(200 ms, rtt) + rtt/2` late (Linux's minimum RTO).
- cut (`stall`, the default): a partition. Nothing crosses the link until it ends; bytes sent meanwhile wait and
  arrive then, and a new connection waits to reach the peer. `reset`: every connection is reset at once and new
  ones are refused until it ends (a peer that went away and came back).

    python -m scripts.linkproxy --control SOCK --link data=127.0.0.1:6379>10.251.0.30:6379 [--rtt-ms 1] ...
    python -m scripts.linkproxy ping --via 127.0.0.1:6379 --direct 10.251.0.30:6379   # Redis PING round trips

The control socket (a Unix socket: a file, reachable from any namespace) takes one JSON line and answers one:
{"op": "status"}, {"op": "set", "rtt_ms": 20, "jitter_ms": 2, "loss": 0.02}, {"op": "cut", "peer": "data",
"seconds": 10, "mode": "stall"}, {"op": "heal", "peer": "data"}.
"""
from __future__ import annotations

import argparse
import asyncio
import ctypes
import heapq
import itertools
import json
import math
import os
import random
import resource
import socket
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SEGMENT = 1448  # bytes of payload in one TCP segment on a 1500-byte MTU
MIN_RTO_S = 0.2  # Linux's minimum retransmission timeout
QUEUE_CHUNKS = 256  # chunks in flight per direction before the reading side waits (back-pressure)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class PreciseTimer:
    """Wake-ups to the microsecond: asyncio's own timers wait in epoll, whose timeout is whole milliseconds (a
    0.5 ms delay took 1-1.5 ms), so the delays are kept in a heap and one timerfd (CLOCK_MONOTONIC, the clock of
    loop.time()) armed for the earliest wakes the loop through add_reader."""

    CLOCK_MONOTONIC, TFD_NONBLOCK_CLOEXEC, TFD_TIMER_ABSTIME = 1, 0o4000 | 0o2000000, 1

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.timerfd_create(self.CLOCK_MONOTONIC, self.TFD_NONBLOCK_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create failed")
        self.loop = loop
        self.heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self.order = itertools.count()
        self.armed: float | None = None
        loop.add_reader(self.fd, self._fire)

    def _arm(self, when: float) -> None:
        spec = _Itimerspec()
        spec.it_value.tv_sec, spec.it_value.tv_nsec = int(when), max(1, int((when - int(when)) * 1e9))
        self.libc.timerfd_settime(self.fd, self.TFD_TIMER_ABSTIME, ctypes.byref(spec), None)
        self.armed = when

    async def sleep_until(self, when: float) -> None:
        future: asyncio.Future[None] = self.loop.create_future()
        heapq.heappush(self.heap, (when, next(self.order), future))
        if self.armed is None or when < self.armed:
            self._arm(when)
        await future

    def _fire(self) -> None:
        try:
            os.read(self.fd, 8)
        except BlockingIOError:
            pass
        now = time.monotonic()
        while self.heap and self.heap[0][0] <= now:
            _when, _order, future = heapq.heappop(self.heap)
            if not future.done():
                future.set_result(None)
        self.armed = None
        if self.heap:
            self._arm(self.heap[0][0])


@dataclass
class Shape:
    rtt_s: float = 0.0
    jitter_s: float = 0.0
    loss: float = 0.0

    def one_way(self, size: int, rng: random.Random) -> float:
        delay = self.rtt_s / 2
        if self.jitter_s:
            delay += rng.uniform(0, self.jitter_s)
        if self.loss and size and rng.random() < 1 - (1 - self.loss) ** math.ceil(size / SEGMENT):
            delay += max(MIN_RTO_S, self.rtt_s) + self.rtt_s / 2
        return delay


@dataclass
class Peer:
    """Every listener toward one host: cut together."""

    name: str
    cut_until: float = 0.0
    cut_mode: str = "stall"
    healed: asyncio.Event = field(default_factory=asyncio.Event)
    connections: set[Conn] = field(default_factory=set)
    opened: int = 0
    refused: int = 0
    bytes: int = 0

    def __post_init__(self) -> None:
        self.healed.set()

    def cut_left(self) -> float:
        return max(0.0, self.cut_until - time.monotonic())


class Conn:
    def __init__(self, writers: list[asyncio.StreamWriter]) -> None:
        self.writers = writers

    def abort(self) -> None:
        for writer in self.writers:
            transport = writer.transport
            if not transport.is_closing():
                sock = transport.get_extra_info("socket")
                if sock is not None:  # an RST, not a FIN: a reset, as a peer that rebooted answers
                    try:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    except OSError:
                        pass
            transport.abort()


class LinkProxy:
    def __init__(self, shape: Shape, seed: int | None = None) -> None:
        self.shape = shape
        self.peers: dict[str, Peer] = {}
        self.links: list[dict[str, object]] = []
        self.rng = random.Random(seed)
        self.timer: PreciseTimer | None = None

    async def sleep(self, seconds: float) -> None:
        if self.timer is None:
            self.timer = PreciseTimer(asyncio.get_running_loop())
        await self.timer.sleep_until(asyncio.get_running_loop().time() + seconds)

    def peer(self, name: str) -> Peer:
        if name not in self.peers:
            self.peers[name] = Peer(name)
        return self.peers[name]

    async def wait_healed(self, peer: Peer) -> None:
        while peer.cut_left() > 0:
            await peer.healed.wait()

    async def listen(self, name: str, listen: tuple[str, int], target: tuple[str, int]) -> None:
        peer = self.peer(name)

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self.carry(peer, target, reader, writer)

        server = await asyncio.start_server(handle, listen[0], listen[1], backlog=4096)
        self.links.append({"peer": name, "listen": f"{listen[0]}:{listen[1]}", "target": f"{target[0]}:{target[1]}",
                           "server": server})

    async def carry(self, peer: Peer, target: tuple[str, int], c_reader: asyncio.StreamReader,
                    c_writer: asyncio.StreamWriter) -> None:
        if peer.cut_left() > 0 and peer.cut_mode == "reset":
            peer.refused += 1
            Conn([c_writer]).abort()
            return
        await self.wait_healed(peer)  # a stalled SYN: connects once the partition ends
        if self.shape.rtt_s:
            await self.sleep(self.shape.rtt_s)  # the handshake's round trip
        try:
            u_reader, u_writer = await asyncio.open_connection(*target)
        except OSError:
            peer.refused += 1
            Conn([c_writer]).abort()
            return
        for writer in (c_writer, u_writer):
            sock = writer.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Conn([c_writer, u_writer])
        peer.connections.add(conn)
        peer.opened += 1
        try:
            await asyncio.gather(self.direction(peer, c_reader, u_writer), self.direction(peer, u_reader, c_writer))
        finally:
            peer.connections.discard(conn)
            for writer in (c_writer, u_writer):
                writer.close()

    async def direction(self, peer: Peer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(QUEUE_CHUNKS)

        async def read() -> None:
            last = 0.0
            while True:
                try:
                    data = await reader.read(65536)
                except (ConnectionError, OSError):
                    data = b""
                at = max(loop.time() + self.shape.one_way(len(data), self.rng), last)
                last = at
                await queue.put((at, data))
                if not data:
                    return

        async def deliver() -> None:
            while True:
                at, data = await queue.get()
                if peer.cut_left() > 0:
                    await self.wait_healed(peer)
                wait = at - loop.time()
                if wait > 0:
                    await self.sleep(wait)
                if not data:
                    if writer.can_write_eof():
                        try:
                            writer.write_eof()
                        except OSError:
                            pass
                    return
                peer.bytes += len(data)
                writer.write(data)
                try:
                    await writer.drain()
                except (ConnectionError, OSError):
                    return

        reading = asyncio.ensure_future(read())
        try:
            await deliver()
        finally:
            reading.cancel()

    def cut(self, name: str, seconds: float, mode: str) -> None:
        peer = self.peer(name)
        peer.cut_until, peer.cut_mode = time.monotonic() + seconds, mode
        peer.healed.clear()
        if mode == "reset":
            for conn in list(peer.connections):
                conn.abort()
        asyncio.get_running_loop().call_later(seconds, self.heal_if_due, peer)

    def heal_if_due(self, peer: Peer) -> None:
        if peer.cut_left() <= 0:
            peer.cut_until = 0.0
            peer.healed.set()

    def heal(self, name: str) -> None:
        peer = self.peer(name)
        peer.cut_until = 0.0
        peer.healed.set()

    def status(self) -> dict[str, object]:
        return {"rtt_ms": self.shape.rtt_s * 1000, "jitter_ms": self.shape.jitter_s * 1000, "loss": self.shape.loss,
                "links": [{k: v for k, v in link.items() if k != "server"} for link in self.links],
                "peers": {p.name: {"connections": len(p.connections), "opened": p.opened, "refused": p.refused,
                                   "bytes": p.bytes, "cut_left_s": round(p.cut_left(), 2),
                                   "cut_mode": p.cut_mode if p.cut_left() > 0 else None}
                          for p in self.peers.values()}}

    def command(self, request: dict[str, object]) -> dict[str, object]:
        op = request.get("op")
        if op == "set":
            for key, attr, scale in (("rtt_ms", "rtt_s", 1000), ("jitter_ms", "jitter_s", 1000), ("loss", "loss", 1)):
                if key in request:
                    setattr(self.shape, attr, float(request[key]) / scale)  # type: ignore[arg-type]
        elif op == "cut":
            mode = str(request.get("mode", "stall"))
            if mode not in ("stall", "reset"):
                return {"error": f"unknown mode {mode!r}"}
            self.cut(str(request["peer"]), float(request["seconds"]), mode)  # type: ignore[arg-type]
        elif op == "heal":
            self.heal(str(request["peer"]))
        elif op != "status":
            return {"error": f"unknown op {op!r}"}
        return self.status()

    async def serve_control(self, path: Path) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                line = await reader.readline()
                try:
                    answer = self.command(json.loads(line))
                except (ValueError, KeyError, TypeError) as error:
                    answer = {"error": str(error)}
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
            finally:
                writer.close()

        path.unlink(missing_ok=True)
        await asyncio.start_unix_server(handle, str(path))


def control(path: Path, request: dict[str, object], timeout: float = 5.0) -> dict[str, object]:
    """Send one command to a running link proxy's control socket; its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def redis_pings(address: tuple[str, int], count: int) -> list[float]:
    """Round trips (ms) of `count` Redis PINGs, one after another, on one connection."""
    with socket.create_connection(address, timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        times = []
        for _ in range(count + 10):  # the first ten warm the path up and are not counted
            started = time.perf_counter()
            sock.sendall(b"PING\r\n")
            got = b""
            while not got.endswith(b"\r\n"):
                got += sock.recv(64)
            times.append((time.perf_counter() - started) * 1000)
        return times[10:]


def ping_figures(via: tuple[str, int], direct: tuple[str, int], count: int) -> dict[str, float]:
    """Redis PING round trips through the link and straight to the peer, interleaved in rounds of 20."""
    through, straight = [], []
    for _ in range(max(1, count // 20)):
        through += redis_pings(via, 20)
        straight += redis_pings(direct, 20)

    def p(values: list[float], q: float) -> float:
        values = sorted(values)
        return values[min(len(values) - 1, int(q / 100 * len(values)))]

    return {"pings": len(through), "through_p50_ms": round(p(through, 50), 3), "through_p99_ms": round(p(through, 99), 3),
            "direct_p50_ms": round(p(straight, 50), 3), "direct_p99_ms": round(p(straight, 99), 3),
            "added_p50_ms": round(statistics.median(through) - statistics.median(straight), 3)}


async def serve(args: argparse.Namespace) -> None:
    proxy = LinkProxy(Shape(args.rtt_ms / 1000, args.jitter_ms / 1000, args.loss), args.seed)
    for spec in args.link:
        name, _, rest = spec.partition("=")
        listen, _, target = rest.partition(">")
        await proxy.listen(name, _address(listen), _address(target))
    await proxy.serve_control(args.control)
    print(f"[linkproxy] {len(args.link)} links, rtt {args.rtt_ms} ms, jitter {args.jitter_ms} ms, loss {args.loss}",
          flush=True)
    await asyncio.Event().wait()


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "ping":
        parser = argparse.ArgumentParser(prog="linkproxy ping", description="Redis PING round trips, via and direct")
        parser.add_argument("ping")
        parser.add_argument("--via", required=True)
        parser.add_argument("--direct", required=True)
        parser.add_argument("--count", type=int, default=200)
        args = parser.parse_args()
        print(json.dumps(ping_figures(_address(args.via), _address(args.direct), args.count)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--control", type=Path, required=True, help="the control socket's path")
    parser.add_argument("--link", action="append", default=[], help="PEER=LISTEN_HOST:PORT>TARGET_HOST:PORT")
    parser.add_argument("--rtt-ms", type=float, default=0.0)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--loss", type=float, default=0.0, help="segment loss probability, 0..1")
    parser.add_argument("--seed", type=int)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass
    finally:
        args.control.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
