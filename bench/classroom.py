"""A whole class on one live session: N students' sockets follow one decode, then all answer one question.

    .venv/bin/python bench/classroom.py --sockets 200 [--webs 1] [--tokens 64] [--pace-ms 250] --json PATH

Starts its own embedded Redis, database, daphne process(es) and `interactive` worker (as
bench/stream.py does), signs N students and one instructor into one session (loopback only;
every wait is bounded), and the instructor runs a greedy decode of exactly --tokens tokens
with the console's default views, attention rows included, at the console's default pace.

- latency: from the worker's publish of a step to each student socket's receipt of it. A
  thread of this process subscribes to the session's Redis channel beside the web processes
  and stamps each step message as it arrives (about 0.1 ms after the publish); the sockets
  stamp their frames with the same clock (time.perf_counter, one process).
- then the instructor opens a multiple-choice question; each student answers it at a random
  moment within one second; histogram time: from an answer's send to the first console
  `answers` frame whose count includes it (answers are taken in the order they were sent).
- with --lesson, then lesson steps as the console sends them: a lesson part on every screen, then
  the part's demonstration run once for the class (a `demonstrations` worker joins the stack).
  Side by side in one run: every screen GETting a part (the whole lesson page, then the part's
  fragment) against the part in the frame itself, as classroom.js reads it; then the
  demonstration's figures in its frame. Reported: frame and page-request times from the
  console's send (p50/p99), status codes, bytes, the web processes' CPU, and how many
  demonstrations the worker computed (the stored results: one, whatever the class's size).
- with --cluster, the same class on the hosts scripts/cluster.py brought up, instead of a stack of its own: it
  runs from the cluster's `client` namespace (it re-runs itself there), its sockets go over wss through the
  proxy host's nginx to the two web hosts, its users and session are made straight in the data host's
  PostgreSQL, and the sniffer reads the data host's Redis straight (not through a link): the step latency then
  holds the data host's link to the web host and the web host's link to the proxy, one RTT in all. Bring the
  cluster up with `--bench` (the limits this bench lifts on a stack of its own).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from stream import (  # noqa: E402
    SERVERS,
    cpu_model,
    endpoint,
    free_port,
    logs_kept,
    percentile,
    random_small_model,
    signed_in,
    start,
    stop,
    wait_http,
    wait_worker,
    web_command,
)

SOURCE = "昨天我在花园里画了三条大鱼。"
CONNECT_AT_ONCE = 20  # sockets opening together (a class arriving), bounded so the handshakes do not time out


def prepare(n_students: int, prefix: str = "bench", collect: bool = True) -> dict[str, Any]:
    """Migrate a fresh database, make the users and their sessions, register a model, open a live session."""
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from modelcore.checkpoint import SHIPPED_DIR, shipped_models
    from webapp.classroom.models import Participant
    from webapp.classroom.services import session_create
    from webapp.registry.models import TrainedModel
    from webapp.registry.services import model_register_folder

    call_command("migrate", verbosity=0)
    if collect:
        call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off: the pages' own files, as make run has

    teacher = User.objects.create_user(f"{prefix}-teacher", password="bench-only")
    teacher.groups.add(Group.objects.get_or_create(name="instructors")[0])
    # Unusable passwords: hashing one per student would take minutes; the sessions sign them in.
    User.objects.bulk_create([User(username=f"{prefix}-s{i}", password="!") for i in range(n_students)])
    students = list(User.objects.filter(username__startswith=f"{prefix}-s").order_by("pk"))
    Group.objects.get_or_create(name="students")[0].user_set.add(*students)
    if "zh-en-post" in shipped_models():
        folder, name = SHIPPED_DIR / "zh-en-post", "zh-en-post"
    else:
        folder, name = random_small_model(Path(os.environ["DATA_DIR"]) / "models" / "zh-en-random"), "zh-en-random"
    if not TrainedModel.objects.filter(name=name, published=True).exists():  # a cluster's shipped one stays as it is
        model_register_folder(folder=folder, name=name, task="zh-en", published=True)
    session = session_create(instructor=teacher, title="bench", model_name=name)
    Participant.objects.bulk_create([Participant(session=session, user=user) for user in students])
    return {"code": session.code, "teacher": signed_in(teacher), "students": [signed_in(u) for u in students]}


# -- the step messages as the worker publishes them --------------------------------------------------


class Sniffer(threading.Thread):
    """Stamps each step message on the session's Redis channel as it arrives (its own thread and connection)."""

    def __init__(self, redis_url: str, channel: str) -> None:
        super().__init__(daemon=True)
        import redis
        from channels_redis.serializers import registry

        self.deserialize = registry.get_serializer("msgpack").deserialize
        self.pubsub = redis.Redis.from_url(redis_url).pubsub(ignore_subscribe_messages=True)
        self.pubsub.subscribe(channel)
        self.published: dict[str, float] = {}  # "start" / seq / "done" -> when its message arrived here
        self.stopping = False

    def run(self) -> None:
        while not self.stopping:
            message = self.pubsub.get_message(timeout=0.2)
            if message is None:
                continue
            at = time.perf_counter()
            body = self.deserialize(message["data"])
            for _reply, _request_id, _final, text in body.get("frames", ()):
                self.published.setdefault(frame_key(orjson.loads(text)), at)


def frame_key(frame: dict[str, Any]) -> str:
    return str(frame["seq"]) if frame.get("type") in ("token", "beams") else str(frame.get("type"))


# -- the sockets --------------------------------------------------------------------------------------


class Seat:
    """One socket's frames: the decode's (with arrival times) and the classroom's; and what its screen shows of the
    run, kept as static/js/classroom.js keeps it: a step whose seq skips, or a `done` whose step count is not the
    screen's, asks for the run's `state` (once at a time), which replaces the screen's steps."""

    def __init__(self) -> None:
        self.decode: list[tuple[float, str, int | None]] = []  # (arrival, type, seq)
        self.done = asyncio.get_running_loop().create_future()  # the run whole on the screen: its arrival time
        self.ask: Any = None  # sends a `resync` on this seat's socket
        self.steps: int | None = None  # the steps on screen (None before a `start`)
        self.ended = False  # the screen holds the run's `done`
        self.resyncing = False
        self.resyncs = 0
        self.states = 0  # `state` frames received, asked for or not
        self.question = asyncio.get_running_loop().create_future()
        self.counts: list[tuple[float, int]] = []  # console: (arrival, answers counted)
        self.errors: list[dict[str, Any]] = []
        self.lesson = asyncio.get_running_loop().create_future()  # (arrival, frame) of the lesson step's frames
        self.demo = asyncio.get_running_loop().create_future()

    def take(self, at: float, payload: bytes) -> None:
        # Step frames are read without parsing them whole: 200 sockets share this process's one core
        # with the stack, and a full parse of every frame would delay the stamps of the next sockets.
        if payload.startswith(b'{"type":"token"'):
            at_seq = payload.find(b'"seq":') + 6
            end = at_seq
            while payload[end:end + 1].isdigit():
                end += 1
            seq = int(payload[at_seq:end])
            self.decode.append((at, "token", seq))
            self.show_step(seq)
            return
        frame = orjson.loads(payload)
        kind = frame["type"]
        if kind in ("start", "beams", "done"):
            self.decode.append((at, kind, frame.get("seq")))
            if kind == "start":
                self.steps, self.ended = 0, False
            elif kind == "beams":
                self.show_step(frame["seq"])
            elif self.steps is None or frame.get("steps", self.steps) != self.steps:
                self.resync()
            else:
                self.ended = True
                self.whole(at)
        elif kind == "state":
            self.states += 1
            self.resyncing, self.steps, self.ended = False, None, False
            for inner in frame["frames"]:
                if inner["type"] == "start":
                    self.steps = 0
                elif inner["type"] in ("token", "beams") and self.steps == inner["seq"]:
                    self.steps += 1
                elif inner["type"] == "done" and self.steps is not None:
                    self.ended = True
            self.whole(at)
        elif kind == "question" and not self.question.done():
            self.question.set_result(frame)
        elif kind == "answers":
            self.counts.append((at, frame["total"]))
        elif kind in ("lesson", "demo") and not getattr(self, kind).done():
            getattr(self, kind).set_result((at, frame))
        elif kind == "error":
            self.errors.append(frame)


    def show_step(self, seq: int) -> None:
        if self.steps is None or seq > self.steps:
            self.resync()  # a gap: ask for the whole state
        elif seq == self.steps:
            self.steps += 1

    def resync(self) -> None:
        if not self.resyncing and self.ask is not None:
            self.resyncing = True
            self.resyncs += 1
            self.ask()

    def whole(self, at: float) -> None:
        if self.ended and not self.done.done():
            self.done.set_result(at)


async def connect(base: str, path: str, session_key: str) -> Any:
    """A socket to `base` (ws://127.0.0.1:PORT, or wss://HOST through a proxy with a certificate of its own)."""
    from autobahn.asyncio.websocket import WebSocketClientFactory, WebSocketClientProtocol

    loop = asyncio.get_running_loop()
    opened: asyncio.Future[Any] = loop.create_future()
    seat = Seat()

    class Client(WebSocketClientProtocol):
        def onOpen(self) -> None:  # noqa: N802 (autobahn's names)
            self.seat = seat
            seat.ask = lambda: self.sendMessage(b'{"type":"resync"}')
            opened.set_result(self)

        def onMessage(self, payload: bytes, is_binary: bool) -> None:  # noqa: N802
            seat.take(time.perf_counter(), payload)

        def onClose(self, was_clean: bool, code: int | None, reason: str | None) -> None:  # noqa: N802
            if not opened.done():  # dropped before it opened: the caller retries at once, not after its timeout
                opened.set_exception(ConnectionError(f"closed before opening ({code})"))

    url, origin, host, port, context = endpoint(base, path)
    factory = WebSocketClientFactory(url, origin=origin, headers={"Cookie": f"sessionid={session_key}"})
    factory.protocol = Client
    factory.setProtocolOptions(openHandshakeTimeout=30)  # as a browser waits: the server's own limit decides
    await loop.create_connection(factory, host, port, ssl=context)
    return await asyncio.wait_for(opened, 30)


def send(client: Any, frame: dict[str, Any]) -> None:
    client.sendMessage(json.dumps(frame).encode())


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_class(ports: list[str], prepared: dict[str, Any], args: argparse.Namespace,
                    sniffer: Sniffer, web_pids: list[int]) -> dict[str, Any]:
    path = f"/ws/classroom/{prepared['code']}/"
    gate = asyncio.Semaphore(CONNECT_AT_ONCE)

    async def seat(i: int, key: str) -> Any:
        async with gate:
            for attempt in range(3):  # a handshake the loaded machine let time out is tried again
                try:
                    return await connect(ports[i % len(ports)], path, key)
                except (TimeoutError, OSError):
                    if attempt == 2:
                        raise
        raise AssertionError("unreachable")

    async def storm_seat(i: int, key: str, started: float) -> Any:
        """A socket of a class whose Wi-Fi came back: all at once, one retry at most."""
        for attempt in (1, 2):
            try:
                client = await connect(ports[i % len(ports)], path, key)
                client.stormed = (time.perf_counter() - started, attempt)
                return client
            except (TimeoutError, OSError):
                if attempt == 2:
                    return None
        raise AssertionError("unreachable")

    console = await connect(ports[0], path, prepared["teacher"])
    storm = None
    seating_cpu = [cpu_s(pid) for pid in web_pids]
    if args.storm:
        started = time.perf_counter()
        stormed = await asyncio.gather(*(storm_seat(i, key, started) for i, key in enumerate(prepared["students"])))
        students = [client for client in stormed if client is not None]
        took = [client.stormed[0] for client in students]
        storm = {"sockets": len(stormed), "connected": len(students),
                 "retried": sum(client.stormed[1] == 2 for client in students),
                 "connect_p50_s": round(percentile(took, 50), 2), "connect_p99_s": round(percentile(took, 99), 2),
                 "connect_max_s": round(max(took, default=float("nan")), 2),
                 "connected_within_5_s": sum(t <= 5 for t in took)}
        if not students:
            raise SystemExit(f"no socket of the storm connected: {storm}")
    else:
        students = await asyncio.gather(*(seat(i, key) for i, key in enumerate(prepared["students"])))
    await asyncio.sleep(1.0)  # the last snapshots and presence updates go out before the decode starts
    # The web processes' CPU per socket seated (handshake, room snapshot, presence, retries): unlike the times
    # above, barely moved by what else the machine runs.
    seated_cpu_ms = round(1000 * sum(cpu_s(pid) - b for pid, b in zip(web_pids, seating_cpu, strict=True))
                          / max(1, len(students)), 2)
    if storm is not None:
        storm["web_cpu_ms_per_socket"] = seated_cpu_ms

    cpu_before, client_before = [cpu_s(pid) for pid in web_pids], time.process_time()
    send(console, {"type": "run", "source": SOURCE, "strategy": "greedy", "min_len": args.tokens,
                   "max_len": args.tokens, "pace_ms": args.pace_ms, "step_mode": False})
    waited = 30 + args.tokens * (args.pace_ms / 1000 + 0.5)
    await asyncio.wait([s.seat.done for s in students], timeout=waited)
    await asyncio.sleep(0.5)
    web_cpu = [cpu_s(pid) - before for pid, before in zip(web_pids, cpu_before, strict=True)]
    if len(web_cpu) != len(ports):  # one proxy in front of the web hosts: their CPU together, per socket
        web_cpu = [sum(web_cpu)]
    client_cpu = time.process_time() - client_before  # this process, every student's socket: it shares the cores

    expected = args.tokens + 2  # start, the tokens, done
    latencies, received, out_of_order = [], 0, 0
    expected_steps = {str(i) for i in range(args.tokens)} | {"start", "done"}
    whole = 0  # sockets that received every step, in order
    quarters: list[list[float]] = [[], [], [], []]  # by the order the sockets joined (the relay's order)
    by_web: list[list[float]] = [[] for _ in ports]  # student i sits on web process i % len(ports)
    for index, client in enumerate(students):
        last = -1
        keys = set()
        for at, kind, seq in client.seat.decode:
            received += 1
            key = str(seq) if kind in ("token", "beams") else kind
            keys.add(key)
            if key in sniffer.published:
                latencies.append((at - sniffer.published[key]) * 1000)
                quarters[index * 4 // len(students)].append(latencies[-1])
                by_web[index % len(ports)].append(latencies[-1])
            if seq is not None:
                out_of_order += seq != last + 1
                last = seq
        whole += keys >= expected_steps

    done_at = sniffer.published.get("done")
    caught_up = [(client.seat.done.result() - done_at) * 1000 for client in students
                 if client.seat.done.done() and done_at is not None]

    send(console, {"type": "question", "kind": "choice", "prompt": "bench", "options": ["a", "b", "c", "d"]})
    questions = await asyncio.wait_for(asyncio.gather(*(s.seat.question for s in students)), 30)
    sent: list[float] = []

    async def answer(client: Any, question: dict[str, Any]) -> None:
        await asyncio.sleep(random.random())  # within one second, each student at a moment of their own
        sent.append(time.perf_counter())
        send(client, {"type": "answer", "question": question["id"], "choice": random.choice("abcd")})

    await asyncio.gather(*(answer(c, q) for c, q in zip(students, questions, strict=True)))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not console.seat.counts or console.seat.counts[-1][1] < len(students)):
        await asyncio.sleep(0.05)
    counted = max((total for _, total in console.seat.counts), default=0)
    shown_ms = []
    for rank, at in enumerate(sorted(sent), start=1):
        shown = next((t for t, total in console.seat.counts if total >= rank), None)
        if shown is not None:
            shown_ms.append((shown - at) * 1000)
    lesson = await lesson_step(ports, prepared, console, students) if args.lesson else None
    for client in [console, *students]:
        client.sendClose()
    seated = [len(range(i, len(students), len(ports))) + (i == 0) for i in range(len(ports))]  # the console on 0
    if len(web_pids) != len(ports):
        seated = [len(students) + 1]
    errors = [e for client in students for e in client.seat.errors]
    return {
        "sockets": len(students), "web_cpu_ms_per_socket_seated": seated_cpu_ms,
        "frames_expected": expected * len(students), "frames_received": received,
        "out_of_order": out_of_order, "sockets_with_every_step": whole,
        # as a page shows it: every step, live or from the `state` a gap asked for (classroom.js)
        "sockets_resynced": sum(client.seat.resyncs > 0 for client in students),
        "sockets_given_a_state": sum(client.seat.states > 0 for client in students),
        "sockets_caught_up": len(caught_up),
        "caught_up_after_done_p99_ms": round(percentile(caught_up, 99), 2),
        "caught_up_after_done_max_ms": round(max(caught_up, default=float("nan")), 2),
        "latency_p50_ms": round(percentile(latencies, 50), 2), "latency_p99_ms": round(percentile(latencies, 99), 2),
        "latency_max_ms": round(max(latencies, default=float("nan")), 2),
        "latency_p50_by_join_quarter_ms": [round(percentile(q, 50), 2) for q in quarters],
        # Per web process (its students; the console sits on the first): step latency, and the CPU it used while
        # the run streamed, per frame per socket it wrote to (the sizing figure for docs/deploy.md).
        "by_web": [{"sockets": n, "latency_p50_ms": round(percentile(lat, 50), 2),
                    "latency_p99_ms": round(percentile(lat, 99), 2), "cpu_s_during_run": round(cpu, 2),
                    "cpu_us_per_frame_per_socket": round(cpu * 1e6 / (expected * n), 1)}
                   for n, lat, cpu in zip(seated, by_web, web_cpu, strict=True)],
        "bench_client_cpu_s_during_run": round(client_cpu, 2),
        "answers_sent": len(sent), "answers_counted": counted,
        "histogram_p50_ms": round(percentile(shown_ms, 50), 1), "histogram_p99_ms": round(percentile(shown_ms, 99), 1),
        "errors": errors[:5],
        **({"lesson_step": lesson} if lesson is not None else {}),
        **({"storm": storm} if storm is not None else {}),
    }


async def lesson_step(ports: list[int], prepared: dict[str, Any], console: Any, students: list[Any]) -> dict[str, Any]:
    """The console shows a lesson part, then runs its demonstration for the class; each student's page fetches what
    each frame names (the part's lesson page, the demonstration's figures) as classroom.js does."""
    import aiohttp

    def client(i: int, key: str) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(base_url=f"http://127.0.0.1:{ports[i % len(ports)]}", cookies={"sessionid": key},
                                     cookie_jar=aiohttp.CookieJar(unsafe=True), timeout=aiohttp.ClientTimeout(total=120))

    http = [client(i, key) for i, key in enumerate(prepared["students"])]
    web_pids = prepared["web_pids"]

    async def fetch(i: int, kind: str, sent: float, field: str | None) -> tuple[float, float, int | str, int]:
        arrived, frame = await getattr(students[i].seat, kind)
        setattr(students[i].seat, kind, asyncio.get_running_loop().create_future())  # for the next frame of its kind
        if field is None:  # what the screen shows came in the frame (as classroom.js reads it): no request
            return (arrived - sent) * 1000, (arrived - sent) * 1000, "in the frame", len(frame["html"].encode())
        async with http[i].get(frame[field]) as response:
            body = await response.read()
        return (arrived - sent) * 1000, (time.perf_counter() - sent) * 1000, response.status, len(body)

    async def phase(frame: dict[str, Any], kind: str, field: str | None) -> dict[str, Any]:
        before = [cpu_s(pid) for pid in web_pids]
        sent = time.perf_counter()
        send(console, frame)
        got = await asyncio.wait_for(asyncio.gather(*(fetch(i, kind, sent, field) for i in range(len(students)))), 180)
        statuses: dict[str, int] = {}
        for _, _, status, _ in got:
            statuses[str(status)] = statuses.get(str(status), 0) + 1
        return {"frame_p50_ms": round(percentile([g[0] for g in got], 50), 1),
                "frame_p99_ms": round(percentile([g[0] for g in got], 99), 1),
                "page_request_done_p50_ms": round(percentile([g[1] for g in got], 50), 1),
                "page_request_done_p99_ms": round(percentile([g[1] for g in got], 99), 1),
                "statuses": statuses, "bytes_each": max(g[3] for g in got),
                "web_cpu_s": [round(cpu_s(pid) - b, 2) for pid, b in zip(web_pids, before, strict=True)]}

    try:
        # Side by side, one part each: every screen asking the web process for it (the whole lesson page, as the
        # first version of the page did; then the part's own fragment), and the part in the frame itself.
        whole = await phase({"type": "lesson", "page": "encoder", "part": "attention"}, "lesson", "url")
        fragment = await phase({"type": "lesson", "page": "encoder", "part": "positions"}, "lesson", "fragment")
        part = await phase({"type": "lesson", "page": "encoder", "part": "layers"}, "lesson", None)
        demo = await phase({"type": "demo", "kind": "encoder", "sentence": SOURCE}, "demo", None)
    finally:
        await asyncio.gather(*(session.close() for session in http))
    return {"part_from_whole_page": whole, "part_from_fragment": fragment, "part_in_frame": part,
            "whole_page_vs_frame_p99": round(whole["page_request_done_p99_ms"] / part["page_request_done_p99_ms"], 1),
            "fragment_vs_frame_p99": round(fragment["page_request_done_p99_ms"] / part["page_request_done_p99_ms"], 1),
            "demonstration_in_frame": demo}


def count_demonstrations() -> int:
    """The demonstrations the worker computed and the lesson stored (run in a child with the bench's database)."""
    import django

    django.setup()
    from webapp.lesson.models import DemoResult

    return DemoResult.objects.count()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=200)
    parser.add_argument("--webs", type=int, default=1, help="web processes; students are spread over them")
    parser.add_argument("--server", choices=SERVERS, default="daphne", help="the web processes' ASGI server")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--pace-ms", type=int, default=250, help="the console's default pace")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "classroom.json")
    parser.add_argument("--logs", type=Path, help="copy the web and worker logs into this folder")
    parser.add_argument("--lesson", action="store_true", help="then a lesson part and its demonstration for the class")
    parser.add_argument("--storm", action="store_true",
                        help="the students' sockets open all at once (a reconnect storm), one retry each at most")
    parser.add_argument("--backlog", type=int, help="the web processes' listen backlog (default: webapp.server's)")
    parser.add_argument("--connect-timeout", type=int,
                        help="the web processes' WebSocket handshake limit in s (default: webapp.server's; daphne's: 5)")
    parser.add_argument("--cluster", action="store_true",
                        help="the class on the hosts scripts/cluster.py brought up (as root), not a stack of its own")
    parser.add_argument("--prepare", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--prefix", default="bench", help=argparse.SUPPRESS)
    parser.add_argument("--no-collect", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--count-demonstrations", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare is not None:  # the child that sets up the database
        print(json.dumps(prepare(args.prepare, args.prefix, not args.no_collect)))
        return 0
    if args.count_demonstrations:
        print(count_demonstrations())
        return 0
    if args.cluster:
        return on_cluster(args)

    from scripts.redis_embedded import EmbeddedRedis

    data_dir = Path(tempfile.mkdtemp(prefix="encdec-classroom-"))
    redis = EmbeddedRedis(data_dir / "run")
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="webapp.settings.dev", DEBUG="0", SECRET_KEY="bench-only",
               ALLOWED_HOSTS="127.0.0.1,localhost", DATA_DIR=str(data_dir), REDIS_URL=redis.start(),
               PYTHONUNBUFFERED="1")
    os.environ.update(env)
    ports = [free_port() for _ in range(args.webs)]
    procs = []
    sniffer = None
    try:
        prepared = json.loads(subprocess.run([sys.executable, __file__, "--prepare", str(args.sockets)], env=env,
                                             check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        for i, port in enumerate(ports):
            procs.append(start(web_command(args.server, port, args.backlog, args.connect_timeout), env,
                               data_dir / f"web-{i}.log"))
        procs.append(start([str(BIN / "celery"), "-A", "webapp", "worker", "-Q", "interactive", "--pool", "threads",
                            "--concurrency", "4", "--without-gossip", "--without-mingle", "--loglevel", "WARNING"],
                           env, data_dir / "worker.log"))
        if args.lesson:  # as make run starts it: the lesson's demonstrations on a worker of their own
            procs.append(start([str(BIN / "celery"), "-A", "webapp", "worker", "-Q", "demonstrations", "--pool",
                                "threads", "--concurrency", "2", "--without-gossip", "--without-mingle", "--loglevel",
                                "WARNING", "-n", "demos@%h"], env, data_dir / "demonstrations.log"))
        for port in ports:
            wait_http(port)
        wait_worker(env["REDIS_URL"])
        sniffer = Sniffer(env["REDIS_URL"], f"asgi__group__classroom.{prepared['code']}")
        sniffer.start()
        load_before = os.getloadavg()
        prepared["web_pids"] = [proc.pid for proc in procs[:len(ports)]]
        figures = asyncio.run(run_class([f"ws://127.0.0.1:{port}" for port in ports], prepared, args, sniffer,
                                        prepared["web_pids"]))
        load_after = os.getloadavg()
        if args.lesson:
            figures["lesson_step"]["demonstrations_computed"] = int(subprocess.run(
                [sys.executable, __file__, "--count-demonstrations"], env=env, check=True, capture_output=True,
                text=True).stdout.strip().splitlines()[-1])
    finally:
        if sniffer is not None:
            sniffer.stopping = True
        for proc in procs:
            stop(proc)
        redis.stop()
        logs_kept(data_dir, args.logs)
        shutil.rmtree(data_dir, ignore_errors=True)
    write_result(figures, args, load_before, load_after)
    return 0


def on_cluster(args: argparse.Namespace) -> int:
    """The class on scripts/cluster.py's hosts: from its client namespace, through its proxy."""
    import secrets

    from scripts import cluster

    if args.lesson:
        raise SystemExit("--lesson is not measured on a cluster")
    info, env = cluster.for_bench()
    prefix = f"bench-{secrets.token_hex(3)}"  # a class of its own each run, on the same database
    prepared = json.loads(subprocess.run([sys.executable, __file__, "--prepare", str(args.sockets), "--prefix", prefix,
                                          "--no-collect"], env=env, check=True, capture_output=True,
                                         text=True).stdout.strip().splitlines()[-1])
    os.environ.update(env)
    sniffer = Sniffer(info["redis_url"], f"asgi__group__classroom.{prepared['code']}")
    sniffer.start()
    web_pids = [info["hosts"][web]["processes"]["web"]["pid"] for web in cluster.WEBS]
    args.webs = len(web_pids)
    load_before = os.getloadavg()
    try:
        figures = asyncio.run(run_class([info["proxy"].replace("https://", "wss://").rstrip("/")], prepared, args,
                                        sniffer, web_pids))
    finally:
        sniffer.stopping = True
    load_after = os.getloadavg()
    figures["cluster"] = {"rtt_ms": info["rtt_ms"], "jitter_ms": info["jitter_ms"], "loss": info["loss"],
                          "web_hosts": len(web_pids), "link_overhead": info["link_overhead"]}
    write_result(figures, args, load_before, load_after)
    return 0


def write_result(figures: dict[str, Any], args: argparse.Namespace, load_before: tuple[float, ...],
                 load_after: tuple[float, ...]) -> None:
    result = {
        **figures,
        "settings": {"server": args.server, "webs": args.webs, "tokens": args.tokens, "pace_ms": args.pace_ms, "strategy": "greedy",
                     "lesson": args.lesson, "storm": args.storm, "backlog": args.backlog or "webapp.server's",
                     "connect_timeout_s": args.connect_timeout or "webapp.server's",
                     "views": "console default (attention rows included)"},
        "machine": {"cpu": cpu_model(), "cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in load_after]},
    }
    print(json.dumps(result, indent=2))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
