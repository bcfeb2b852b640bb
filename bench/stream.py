"""Streaming through the real stack: WebSocket clients -> daphne -> Celery worker -> Redis -> back.

    .venv/bin/python bench/stream.py [--request playground|plain|both] [--tokens 48] [--rounds 5] [--clients 32]
                                     [--out bench/results/stream.json]

Starts its own embedded Redis, database, daphne and `interactive` worker (thread pool of 4,
as `make run` does), registers the shipped zh-en-post model (or, when it has not shipped yet,
a random model of the same "small" size on the same tokenizers) and warms it. Each request
decodes exactly --tokens tokens (min_len = max_len), greedy. The request is the playground
page's (`--request playground`, the default: what the page adds to its form's fields,
webapp/playground/protocol.PAGE_REQUEST, read here from the same place the page's HTML gets it:
attention, the cache comparison, 8 alternatives) or a plain one (`plain`: no attention, no
comparison); `both` runs the two interleaved, round by round, so a loaded machine weighs on
both alike. Measured at the client, per token frame:
  - first token: from sending the `decode` frame to receiving token 0;
  - gap: between two token frames of one request;
  - overhead: gap minus the decoder's own step time for that token (`timing.step_ms`, which
    the worker measures around the batched step): what the stack adds to each frame.
1 client sends requests one after another; N clients send one request each at the same
moment, for several rounds. Tokens/s counts every token of a run over its wall time. Bytes per
frame are the WebSocket messages' sizes by frame type. Last, one client decodes a source of
200 characters (the longest allowed) to its end, as the page would (no min_len/max_len), timed
from sending it to its `done`.

With --cluster the same requests go to the hosts scripts/cluster.py brought up, from its `client` namespace (it
re-runs itself there), over wss through the proxy host's nginx; bring the cluster up with `--bench` (the limits this
bench lifts on a stack of its own).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))

SOURCE = "昨天我在花园里画了三条大鱼。"
LONG_SOURCE = (SOURCE * 15)[:200]  # the longest source the playground allows (PLAYGROUND_MAX_SOURCE_CHARS)
REQUESTS = ("playground", "plain")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 3), "p99": round(percentile(values, 99), 3),
            "mean": round(statistics.fmean(values), 3) if values else float("nan"), "n": len(values)}


# -- the stack -------------------------------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's model name and whether it has AVX-512 (/proc/cpuinfo)."""
    info = Path("/proc/cpuinfo").read_text()
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    return f"{name} ({'AVX-512' if ' avx512f' in info else 'no AVX-512'})"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def signed_in(user: Any) -> str:
    """A sign-in session for `user` in the bench's database (django set up): its key, the `sessionid` cookie."""
    from django.contrib.sessions.backends.db import SessionStore

    store = SessionStore()
    store.update({"_auth_user_id": str(user.pk), "_auth_user_backend": "django.contrib.auth.backends.ModelBackend",
                  "_auth_user_hash": user.get_session_auth_hash()})
    store.create()
    return store.session_key


def logs_kept(data_dir: Path, logs: Path | None) -> None:
    """Copy a bench stack's logs into `logs` (when given) before its data folder goes."""
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)
        for log in data_dir.glob("*.log"):
            shutil.copy(log, logs / log.name)


def prepare(data_dir: Path, username: str = "bench") -> tuple[str, str, dict[str, Any]]:
    """Migrate a fresh database, make a student, register a model; returns (session cookie, model name, page request)."""
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from modelcore.checkpoint import SHIPPED_DIR, shipped_models
    from webapp.playground.protocol import PAGE_REQUEST
    from webapp.registry.models import TrainedModel
    from webapp.registry.services import model_register_folder

    call_command("migrate", verbosity=0)
    user = User.objects.create_user(username, password="bench-only")
    session_key = signed_in(user)
    if "zh-en-post" in shipped_models():
        folder, name = SHIPPED_DIR / "zh-en-post", "zh-en-post"
    else:
        folder, name = random_small_model(data_dir / "models" / "zh-en-random"), "zh-en-random"
    if not TrainedModel.objects.filter(name=name, published=True).exists():  # a cluster's shipped one stays as it is
        model_register_folder(folder=folder, name=name, task="zh-en", published=True)
    return session_key, name, PAGE_REQUEST


def random_small_model(folder: Path) -> Path:
    """The shipped models' size ("small" preset) on the zh-en tokenizers, random weights."""
    import torch

    from modelcore import EncoderDecoder, ModelConfig
    from modelcore.checkpoint import save_model
    from modelcore.tasks import get_task

    src_tok, tgt_tok = get_task("zh-en", seed=0).build_tokenizers()
    torch.manual_seed(0)
    config = ModelConfig.from_preset("small", src_vocab_size=src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size)
    return save_model(folder, EncoderDecoder(config).eval(), src_tok, tgt_tok, {"task": "zh-en"})


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


SERVERS = ("daphne", "uvicorn")


def web_command(server: str, port: int, backlog: int | None = None, connect_timeout: float | None = None) -> list[str]:
    """The web process: daphne through webapp.server, as make run starts it, or uvicorn (uvloop, httptools,
    websockets) for comparison, the app's own bounds on a socket's queue and unsent bytes left out (they are
    daphne's). Same app, same address, same backlog."""
    if server == "uvicorn":
        return [str(BIN / "python"), "-m", "uvicorn", "webapp.asgi:application", "--host", "127.0.0.1",
                "--port", str(port), "--loop", "uvloop", "--http", "httptools", "--ws", "websockets",
                "--backlog", str(backlog or 1024), "--lifespan", "off", "--no-access-log", "--log-level", "warning"]
    where = (["-e", f"tcp:port={port}:interface=127.0.0.1:backlog={backlog}"] if backlog
             else ["-b", "127.0.0.1", "-p", str(port)])
    if connect_timeout:
        where += ["--websocket_connect_timeout", str(connect_timeout)]
    return [str(BIN / "python"), "-m", "webapp.server", *where, "webapp.asgi:application"]


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def wait_worker(redis_url: str, timeout: float = 120) -> None:
    from celery import Celery

    from webapp.settings.env import redis_url_for_celery

    app = Celery("bench-control", broker=redis_url_for_celery(redis_url), set_as_current=False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if app.control.ping(timeout=0.5):
            return
    raise RuntimeError("the worker did not answer")


def wait_http(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the web process did not start")


# -- the clients -----------------------------------------------------------------------------------


class Request:
    """One request's frames as its client reads them: the arrival time and step time of each token."""

    def __init__(self, done: asyncio.Future[dict[str, Any]]) -> None:
        self.done = done
        self.sent = self.started = time.perf_counter()
        self.arrivals: list[tuple[float, float]] = []
        self.sizes: dict[str, list[int]] = {}  # bytes of each frame, by type

    def take(self, at: float, payload: bytes) -> None:
        message = orjson.loads(payload)
        kind = message["type"]
        self.sizes.setdefault(kind, []).append(len(payload))
        if kind == "token":
            self.arrivals.append((at, message["timing"]["step_ms"]))
        elif kind == "start":
            self.started = at
        elif kind == "error":
            self.done.set_exception(RuntimeError(message))
        elif kind == "done":
            self.done.set_result({"sent": self.sent, "started": self.started, "ended": at, "arrivals": self.arrivals,
                                  "timings": message["timings"], "sizes": self.sizes})


def endpoint(base: str, path: str) -> tuple[str, str, str, int, Any]:
    """Where a socket to `base` (ws://127.0.0.1:PORT, or wss://HOST: a proxy with a certificate of its own) connects:
    its URL, its page's origin, host, port and TLS context."""
    import ssl
    from urllib.parse import urlsplit

    where = urlsplit(base)
    secure = where.scheme == "wss"
    context = None
    if secure:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # the cluster's own certificate
    return (f"{base}{path}", f"{'https' if secure else 'http'}://{where.netloc}", str(where.hostname),
            where.port or (443 if secure else 80), context)


async def connect(base: str, session_key: str) -> Any:
    """A WebSocket client (autobahn, installed with daphne) that timestamps each frame on arrival.

    The clients stand in for browsers on other machines, but here they share the stack's two
    cores: each frame is handled where it is read (no queue, no task switch), to take as little
    from the stack as they can.
    """
    from autobahn.asyncio.websocket import WebSocketClientFactory, WebSocketClientProtocol

    loop = asyncio.get_running_loop()
    opened: asyncio.Future[Any] = loop.create_future()

    class Client(WebSocketClientProtocol):
        request: Request | None = None

        def onOpen(self) -> None:  # noqa: N802 (autobahn's names)
            opened.set_result(self)

        def onMessage(self, payload: bytes, is_binary: bool) -> None:  # noqa: N802
            at = time.perf_counter()
            if self.request is not None:
                self.request.take(at, payload)

    url, origin, host, port, context = endpoint(base, "/ws/decode/")
    factory = WebSocketClientFactory(url, origin=origin, headers={"Cookie": f"sessionid={session_key}"})
    factory.protocol = Client
    await loop.create_connection(factory, host, port, ssl=context)
    return await asyncio.wait_for(opened, 10)


def request_frame(kind: str, model: str, source: str, tokens: int | None, page_request: dict[str, Any]) -> dict[str, Any]:
    """The `decode` frame: the page's (its form's defaults and what it adds to them) or a plain greedy one.

    tokens fixes the output's length (min_len = max_len), so every run decodes as many steps;
    None leaves the length to the model, as the page does.
    """
    frame: dict[str, Any] = {"type": "decode", "model": model, "source": source, "strategy": "greedy"}
    if kind == "playground":  # as static/js/playground.js sends it with the form untouched (pace: full speed)
        frame.update(page_request, step_mode=False, pace_ms=0)
    if tokens is not None:
        frame.update(min_len=tokens, max_len=tokens)
    return frame


async def decode(client: Any, frame: dict[str, Any]) -> dict[str, Any]:
    """One request; the arrival time and decoder step time of each of its token frames."""
    client.request = Request(asyncio.get_running_loop().create_future())
    client.sendMessage(json.dumps(frame).encode())
    try:
        return await asyncio.wait_for(client.request.done, 60)
    finally:
        client.request = None


def measure(results: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    first = [(r["arrivals"][0][0] - r["sent"]) * 1000 for r in results]
    gaps, overheads, steps = [], [], []
    for r in results:
        for (before, _), (at, step_ms) in zip(r["arrivals"], r["arrivals"][1:], strict=False):
            gap = (at - before) * 1000
            gaps.append(gap)
            steps.append(step_ms)
            overheads.append(gap - step_ms)
    n_tokens = sum(len(r["arrivals"]) for r in results)
    return {"requests": len(results), "tokens": n_tokens, "tokens_per_s": round(n_tokens / wall_s, 1),
            "first_token_ms": summary(first),
            "start_frame_ms": summary([(r["started"] - r["sent"]) * 1000 for r in results]),
            # where the first token's time went: socket + Celery until the loop took the job, then the loop
            "queue_ms": summary([r["timings"]["queue_ms"] for r in results]),
            "first_token_at_worker_ms": summary([r["timings"]["first_token_ms"] for r in results]),
            "gap_ms": summary(gaps), "decoder_step_ms": summary(steps), "overhead_ms": summary(overheads)}


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """User + system CPU time each process has used so far (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    used = {}
    for name, pid in pids.items():
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        used[name] = (int(fields[11]) + int(fields[12])) / ticks
    return used


def cpu_share(before: dict[str, float], after: dict[str, float], wall_s: float) -> dict[str, float]:
    """Cores each process kept busy during a run (1.0: one core all the time)."""
    return {name: round((after[name] - before[name]) / wall_s, 2) for name in before}


def frame_bytes(results: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Bytes per WebSocket message by frame type: mean and largest."""
    sizes: dict[str, list[int]] = {}
    for r in results:
        for kind, values in r["sizes"].items():
            sizes.setdefault(kind, []).extend(values)
    return {kind: {"mean": round(statistics.fmean(v)), "max": max(v), "n": len(v)} for kind, v in sorted(sizes.items())}


class Run:
    """One request kind's results at one client count, gathered over interleaved rounds."""

    def __init__(self) -> None:
        self.results: list[dict[str, Any]] = []
        self.wall = 0.0
        self.cpu: dict[str, float] = {}

    async def add(self, requests: Any, pids: dict[str, int]) -> None:
        before, started = cpu_seconds(pids), time.perf_counter()
        self.results += await requests
        self.wall += time.perf_counter() - started
        for name, used in cpu_seconds(pids).items():
            self.cpu[name] = self.cpu.get(name, 0.0) + used - before[name]

    def figures(self) -> dict[str, Any]:
        return {**measure(self.results, self.wall), "bytes_per_frame": frame_bytes(self.results),
                "cores_busy": {name: round(used / self.wall, 2) for name, used in self.cpu.items()}}


async def long_source(client: Any, frame: dict[str, Any]) -> dict[str, Any]:
    """One request of the longest source allowed, to its end: how long until `done`, and its frames' sizes."""
    r = await decode(client, frame)
    return {"source_chars": len(frame["source"]), "tokens": len(r["arrivals"]),
            "done_ms": round((r["ended"] - r["sent"]) * 1000, 1),
            "first_token_ms": round((r["arrivals"][0][0] - r["sent"]) * 1000, 1) if r["arrivals"] else None,
            "bytes_per_frame": frame_bytes([r])}


async def run_clients(
    base: str, session_key: str, model: str, page_request: dict[str, Any], args: argparse.Namespace,
    pids: dict[str, int],
) -> dict[str, Any]:
    kinds = list(REQUESTS) if args.request == "both" else [args.request]
    frames = {kind: request_frame(kind, model, SOURCE, args.tokens, page_request) for kind in kinds}
    clients = [await connect(base, session_key) for _ in range(args.clients)]
    for kind in kinds:  # warm the path: worker threads, model, connections, the cache comparison's table
        for client in clients[:4]:
            await decode(client, frames[kind])
    single = {kind: Run() for kind in kinds}
    many = {kind: Run() for kind in kinds}
    per_round = max(1, args.sequential // args.rounds)
    for _ in range(args.rounds):  # the kinds take turns, so a machine whose load changes weighs on each alike
        for kind in kinds:
            async def one_after_another(frame: dict[str, Any] = frames[kind]) -> list[dict[str, Any]]:
                return [await decode(clients[0], frame) for _ in range(per_round)]

            await single[kind].add(one_after_another(), pids)
            await many[kind].add(asyncio.gather(*(decode(c, frames[kind]) for c in clients)), pids)
    out: dict[str, Any] = {}
    for kind in kinds:
        one, together = single[kind].figures(), many[kind].figures()
        long = request_frame(kind, model, LONG_SOURCE, None, page_request)
        out[kind] = {"request": frames[kind], "1_client": one, f"{args.clients}_clients": together,
                     "speedup": round(together["tokens_per_s"] / one["tokens_per_s"], 2),
                     "long_source": await long_source(clients[0], long)}
    for client in clients:
        client.sendClose()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--request", choices=[*REQUESTS, "both"], default="playground",
                        help="the playground page's request (default), a plain greedy one, or both interleaved")
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--sequential", type=int, default=20, help="requests of the single client")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--server", choices=SERVERS, default="daphne", help="the web process's ASGI server")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "stream.json")
    parser.add_argument("--cluster", action="store_true",
                        help="the requests go to the hosts scripts/cluster.py brought up (as root), not a stack of its own")
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--username", default="bench", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare:  # the child that sets up the database (see below)
        print(json.dumps(prepare(Path(os.environ["DATA_DIR"]), args.username)))
        return 0
    if args.cluster:
        return on_cluster(args)

    from scripts.redis_embedded import EmbeddedRedis

    data_dir = Path(tempfile.mkdtemp(prefix="encdec-stream-"))
    redis = EmbeddedRedis(data_dir / "run")
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="webapp.settings.dev", DEBUG="0", SECRET_KEY="bench-only",
               ALLOWED_HOSTS="127.0.0.1,localhost", DATA_DIR=str(data_dir), REDIS_URL=redis.start(),
               PLAYGROUND_MAX_CONCURRENT="1000", PLAYGROUND_REQUESTS_PER_MINUTE="100000",
               SOCKETS_PER_USER="1000",  # its clients are one user: a class's worth of sockets, not one student's
               PYTHONUNBUFFERED="1")
    os.environ.update(env)
    port = free_port()
    procs = []
    try:
        # Django (which loads daphne, hence Twisted) stays out of this process: autobahn's asyncio
        # client cannot share a process with Twisted's txaio.
        prepared = subprocess.run([sys.executable, __file__, "--prepare"], env=env, check=True, capture_output=True,
                                  text=True)
        session_key, model, page_request = json.loads(prepared.stdout.strip().splitlines()[-1])
        procs.append(start(web_command(args.server, port), env, data_dir / "web.log"))
        procs.append(start([str(BIN / "celery"), "-A", "webapp", "worker", "-Q", "interactive", "--pool", "threads",
                            "--concurrency", "4", "--without-gossip", "--without-mingle", "--loglevel", "WARNING"],
                           env, data_dir / "worker.log"))
        wait_http(port)
        wait_worker(env["REDIS_URL"])
        load_before = os.getloadavg()
        pids = {f"web ({args.server})": procs[0].pid, "worker": procs[1].pid, "clients (this process)": os.getpid()}
        figures = asyncio.run(run_clients(f"ws://127.0.0.1:{port}", session_key, model, page_request, args, pids))
        load_after = os.getloadavg()
    finally:
        for proc in procs:
            stop(proc)
        redis.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    write_result(figures, args, model, load_before, load_after)
    return 0


def on_cluster(args: argparse.Namespace) -> int:
    """The requests on scripts/cluster.py's hosts: from its client namespace, through its proxy."""
    import secrets

    from scripts import cluster

    info, env = cluster.for_bench()
    prepared = subprocess.run([sys.executable, __file__, "--prepare", "--username", f"bench-{secrets.token_hex(3)}"],
                              env=env, check=True, capture_output=True, text=True)
    session_key, model, page_request = json.loads(prepared.stdout.strip().splitlines()[-1])
    hosts = info["hosts"]
    pids = {**{f"web ({web})": hosts[web]["processes"]["web"]["pid"] for web in cluster.WEBS},
            "worker": hosts["gpu"]["processes"]["interactive"]["pid"], "clients (this process)": os.getpid()}
    load_before = os.getloadavg()
    figures = asyncio.run(run_clients(info["proxy"].replace("https://", "wss://").rstrip("/"), session_key, model,
                                      page_request, args, pids))
    load_after = os.getloadavg()
    figures["cluster"] = {"rtt_ms": info["rtt_ms"], "jitter_ms": info["jitter_ms"], "loss": info["loss"],
                          "web_hosts": len(cluster.WEBS), "link_overhead": info["link_overhead"]}
    write_result(figures, args, model, load_before, load_after)
    return 0


def write_result(figures: dict[str, Any], args: argparse.Namespace, model: str, load_before: tuple[float, ...],
                 load_after: tuple[float, ...]) -> None:
    result = {
        "server": args.server,
        "machine": {"cpu": cpu_model(), "cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in load_after]},
        "model": model, "tokens_per_request": args.tokens, "worker": "celery threads pool x4, 1 torch thread",
        **figures,
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(args.out)


if __name__ == "__main__":
    raise SystemExit(main())
