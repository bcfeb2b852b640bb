"""A class at work at once, then the same class with one abusive student: what the well-behaved ones feel.

    .venv/bin/python bench/class_load.py --students 100 --seconds 60 [--followers 30] [--abuse MODE] [--json PATH]

Starts the stack `make run` starts (scripts/run_stack.py) on loopback: an embedded Redis, a fresh
SQLite database with the shipped models registered, daphne (`python -m webapp.server`), an
`interactive` worker (threads x4) and a `demonstrations` worker (threads x2), with the app's default
limits. Then two phases of --seconds each (with --rounds K, K pairs of them in alternating order, alone,
abuser, abuser, alone, ..., --settle seconds apart; each phase's figures pool its rounds, and the
first-token figures are also given per round):

1. *alone*: N well-behaved students, each looping (think time 1-3 s between actions, random): GET a
   lesson page, POST its demonstration as htmx does (a sentence the shipped zh-en-post knows, a
   layer / head / norm of its own), then a playground decode over /ws/decode/ (greedy, the page's
   request); the first --followers of them also follow one live session (/ws/classroom/<code>/),
   where the instructor's console runs a paced decode (--pace-ms, --run-tokens tokens), opens a
   multiple-choice question, the followers answer, the console reveals; one follower in five
   sends `resync` once during each run;
2. *abuser*: the same class plus one student who floods uncached demonstrations (--abuse-demos
   POSTs at once, no pause), keeps opening sockets (--abuse-sockets playground sockets, half of
   them never read, each asked for long decodes), and sends `resync` on --abuse-class-sockets
   classroom sockets as fast as the socket frame budget allows (half of those never read either).
   `--abuse MODE` picks another abuser, each on --abuse-connections connections of its own at once:
   `uncached-demos` (200: each re-posts demonstrations never asked before, no pause), `cached-demos` (50: each
   re-posts one demonstration the cache answers), `anonymous-sockets` (100: each opens /ws/decode/ handshakes
   with a made-up session cookie, one after another, all from the class's address).

Reported: requests by kind and status (5xx by kind), demonstration outcomes by code, frames by
kind (errors by code; the abuser's apart), closes by code, frames lost (token `seq` gaps: each
playground decode against its `done`, each follower against the console's run), first token
(sending `decode` to its first `token`) p50/p99 of the well-behaved students per phase, daphne's
RSS (before, peak every 0.5 s, 10 s after every socket closed), and, after the stack stopped,
every stored demonstration result recomputed alone in a child process (modelcore.lesson.run_demo
on the shipped model, one torch thread as the worker) and compared after a JSON round trip.
Every loop is bounded in time and count; loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from yarl import URL

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from stream import (  # noqa: E402
    cpu_seconds,
    cpu_share,
    free_port,
    logs_kept,
    signed_in,
    start,
    stop,
    summary,
    wait_http,
)

from webapp.gil import gil_switch_interval  # noqa: E402

MODEL = "zh-en-post"
SENTENCES = ("我的猫追了一只老鼠。", "他没有吃饭。", "我们看见我的猫。", "去年我喜欢猫。", "猫追老鼠。",
             "我的狗追了一只猫。", "他喜欢吃饭。", "三个聪明的女孩喝五瓶水。")
PAGES = {"encoder": "/lesson/encoder/", "decoder": "/lesson/decoder/", "residual": "/lesson/residual-norm/",
         "norms": "/lesson/questions/"}
PARTNER = "猫追老鼠。"  # the forms' default second sentence
RUN_SOURCE = "我的猫追了一只老鼠。"
CONNECT_AT_ONCE = 20  # sockets opening together, so the handshakes of a whole class do not time out
DECODE_WAIT_S = 30.0  # a playground decode not done by then counts as a timeout
DRAIN_S = 40.0  # after a phase's end, how long its last actions may take to finish
RSS_EVERY_S = 0.5
SETTLE_S = 10.0  # after every socket closed, before the last RSS reading
CODE_RE = re.compile(rb'data-code="([a-z_]+)"')


# -- the child processes: setting up the database, checking the stored results ---------------------------


def prepare(n_students: int, n_followers: int) -> dict[str, Any]:
    """Migrate a fresh database, collect static files, register the shipped models, make the users and their
    sessions, open one live session whose participants are the followers and the abuser."""
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from webapp.classroom.models import Participant
    from webapp.classroom.services import session_create
    from webapp.playground.protocol import PAGE_REQUEST
    from webapp.registry.services import shipped_models_register

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off serves the collected files
    shipped_models_register()

    teacher = User.objects.create_user("load-teacher", password="bench-only")
    teacher.groups.add(Group.objects.get_or_create(name="instructors")[0])
    # Unusable passwords: hashing one per student would take minutes; the sessions sign them in.
    User.objects.bulk_create([User(username=f"load-s{i:03d}", password="!") for i in range(n_students)]
                             + [User(username="load-abuser", password="!")])
    students = list(User.objects.filter(username__startswith="load-s").order_by("username"))
    abuser = User.objects.get(username="load-abuser")
    Group.objects.get_or_create(name="students")[0].user_set.add(*students, abuser)
    session = session_create(instructor=teacher, title="class load", model_name=MODEL)
    Participant.objects.bulk_create([Participant(session=session, user=u) for u in [*students[:n_followers], abuser]])
    return {"code": session.code, "teacher": signed_in(teacher), "students": [signed_in(u) for u in students],
            "abuser": signed_in(abuser), "page_request": PAGE_REQUEST}


def first_difference(stored: Any, alone: Any, path: str = "") -> tuple[str, float | None]:
    """Where two JSON values first differ, and by how much when both are numbers."""
    if isinstance(stored, dict) and isinstance(alone, dict):
        for key in sorted(set(stored) | set(alone)):
            if stored.get(key) != alone.get(key):
                return first_difference(stored.get(key), alone.get(key), f"{path}.{key}")
    if isinstance(stored, list) and isinstance(alone, list) and len(stored) == len(alone):
        for i, (a, b) in enumerate(zip(stored, alone, strict=True)):
            if a != b:
                return first_difference(a, b, f"{path}[{i}]")
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (stored, alone))
    return path or ".", abs(stored - alone) if numbers else None


def verify() -> dict[str, Any]:
    """Every stored demonstration result against the same demonstration computed alone, here."""
    import django
    import torch

    django.setup()
    torch.set_num_threads(1)  # as the demonstrations worker (LESSON_DEMO_TORCH_THREADS)
    from modelcore.checkpoint import load_model
    from modelcore.lesson import run_demo
    from webapp.lesson.models import DemoResult
    from webapp.registry.models import TrainedModel

    loaded: dict[str, Any] = {}
    by_kind: collections.Counter[str] = collections.Counter()
    wrong: list[dict[str, Any]] = []
    rows = list(DemoResult.objects.order_by("pk"))
    for row in rows:
        if row.model_name not in loaded:
            loaded[row.model_name] = load_model(TrainedModel.objects.get(name=row.model_name).folder)
        by_kind[row.kind] += 1
        try:
            alone = json.loads(json.dumps(run_demo(row.kind, loaded[row.model_name], row.params)))
        except Exception as error:  # noqa: BLE001 - a stored result the model cannot reproduce is a wrong one
            alone = {"error": repr(error)}
        if alone != row.result:
            where, by = first_difference(row.result, alone)
            wrong.append({"kind": row.kind, "params": row.params, "first_difference": where, "by": by})
    return {"stored": len(rows), "stored_by_kind": dict(by_kind), "wrong": len(wrong), "wrong_examples": wrong[:10]}


# -- counting ---------------------------------------------------------------------------------------------


class Tally:
    """Everything counted during the run, by phase."""

    def __init__(self) -> None:
        self.phase = "warm-up"
        self.round = 0  # with --rounds, the phases' index (each phase's figures pool its rounds)
        self.requests: collections.Counter[str] = collections.Counter()  # "phase who kind status"
        self.outcomes: collections.Counter[str] = collections.Counter()  # demonstrations: "phase who code"
        self.frames: collections.Counter[str] = collections.Counter()  # "phase who socket type[:code]"
        self.closes: collections.Counter[str] = collections.Counter()  # "phase who socket code"
        self.first_token: dict[tuple[str, int], list[float]] = collections.defaultdict(list)  # (phase, round)
        self.demo_ms: dict[str, list[float]] = collections.defaultdict(list)  # well-behaved, uncached or not
        self.page_ms: dict[str, list[float]] = collections.defaultdict(list)
        self.decodes: collections.Counter[str] = collections.Counter()  # "phase outcome"
        self.decode_lost: collections.Counter[str] = collections.Counter()  # phase -> token frames missing
        self.failures: list[str] = []  # the first few unexpected things, in words

    def note(self, what: str) -> None:
        if len(self.failures) < 30:
            self.failures.append(f"[{self.phase}] {what}")

    def frame(self, who: str, socket: str, payload: bytes) -> dict[str, Any]:
        frame = orjson.loads(payload)
        kind = frame.get("type", "?")
        if kind == "error":
            kind = f"error:{frame.get('code')}"
        self.frames[f"{self.phase} {who} {socket} {kind}"] += 1
        return frame


def split(counter: collections.Counter[str], parts: int) -> dict[str, Any]:
    """A flat counter of "a b c ..." keys as nested dicts."""
    out: dict[str, Any] = {}
    for key, value in sorted(counter.items()):
        names = key.split(" ", parts - 1)
        node = out
        for name in names[:-1]:
            node = node.setdefault(name, {})
        node[names[-1]] = node.get(names[-1], 0) + value
    return out


# -- sockets ----------------------------------------------------------------------------------------------


async def open_socket(port: int, path: str, key: str, on_frame: Any, on_close: Any = None,
                      timeout: float = 20.0) -> Any:
    """An autobahn client whose frames go to on_frame(at, payload) where it reads them; on_close(code) at its end."""
    from autobahn.asyncio.websocket import WebSocketClientFactory, WebSocketClientProtocol

    loop = asyncio.get_running_loop()
    opened: asyncio.Future[Any] = loop.create_future()

    class Client(WebSocketClientProtocol):
        close_code: int | None = None
        gone = False

        def onOpen(self) -> None:  # noqa: N802 (autobahn's names)
            if not opened.done():
                opened.set_result(self)

        def onMessage(self, payload: bytes, is_binary: bool) -> None:  # noqa: N802
            on_frame(time.perf_counter(), payload)

        def onClose(self, was_clean: bool, code: int | None, reason: str | None) -> None:  # noqa: N802
            self.gone, self.close_code = True, code
            if not opened.done():
                opened.set_exception(ConnectionError(f"refused: {code} {reason}"))
            elif on_close is not None:
                on_close(code)

    factory = WebSocketClientFactory(f"ws://127.0.0.1:{port}{path}", origin=f"http://127.0.0.1:{port}",
                                     headers={"Cookie": f"sessionid={key}"})
    factory.protocol = Client
    transport, _ = await asyncio.wait_for(loop.create_connection(factory, "127.0.0.1", port), timeout)
    try:
        return await asyncio.wait_for(opened, timeout)
    except BaseException:
        transport.abort()
        raise


def send(client: Any, frame: dict[str, Any]) -> bool:
    if client is None or client.gone:
        return False
    try:
        client.sendMessage(json.dumps(frame).encode())
    except Exception:  # noqa: BLE001 - autobahn's Disconnected: closing, its onClose not yet called
        client.gone = True
        return False
    return True


def shut(client: Any) -> None:
    if client is not None and not client.gone:
        if client.transport is not None and not client.transport.is_reading():
            client.transport.abort()  # a socket never read: nothing would read the server's closing handshake
        else:
            client.sendClose()


# -- the well-behaved class -------------------------------------------------------------------------------


def demo_form(kind: str, rng: random.Random) -> dict[str, str]:
    """What the page's form posts for this kind, with the student's own choices."""
    form = {"sentence": rng.choice(SENTENCES), "model": MODEL}
    if kind in ("encoder", "decoder"):
        form.update(layer=str(rng.randrange(2)), head=str(rng.randrange(4)), query="0" if kind == "encoder" else "2")
    if kind == "decoder" or kind == "norms":
        form["partner"] = PARTNER
    if kind == "residual":
        form["norm"] = str(rng.randrange(2))
    return form


async def http_session(key: str | None, connections: int = 100) -> Any:
    """An HTTP client with this session's cookie (none: anonymous), at most `connections` at once (0: no bound)."""
    import aiohttp

    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True), cookies={"sessionid": key} if key else None,
                                 connector=aiohttp.TCPConnector(limit=connections),
                                 timeout=aiohttp.ClientTimeout(total=30))


class Student:
    """One well-behaved student: lesson pages, demonstrations and playground decodes, with think time."""

    def __init__(self, index: int, key: str, port: int, tally: Tally, page_request: dict[str, Any]) -> None:
        self.index, self.key, self.port, self.tally = index, key, port, tally
        self.page_request = page_request
        self.rng = random.Random(index)
        self.base = f"http://127.0.0.1:{port}"
        self.socket: Any = None
        self.http: Any = None
        self.request: dict[str, Any] | None = None  # the decode running on self.socket

    async def open(self) -> None:
        self.http = await http_session(self.key)
        self.socket = await open_socket(self.port, "/ws/decode/", self.key, self.on_frame, self.on_close)

    def on_close(self, code: int | None) -> None:
        if self.tally.phase == "closing":  # closed by this benchmark at the end
            return
        self.tally.closes[f"{self.tally.phase} class decode {code}"] += 1
        self.tally.note(f"student {self.index}'s playground socket closed with {code}")

    def on_frame(self, at: float, payload: bytes) -> None:
        frame = self.tally.frame("class", "decode", payload)
        request = self.request
        if request is None:
            return
        kind = frame.get("type")
        if kind == "start":
            request["id"] = frame.get("request_id")
        elif frame.get("request_id") not in (None, request["id"]):
            return  # a frame of an earlier request (one that timed out)
        if kind == "token":
            if request["first"] is None:
                request["first"] = at
            request["seqs"].append(frame.get("seq"))
        elif kind in ("done", "error") and not request["ended"].done():
            request["ended"].set_result(frame)

    async def think(self) -> None:
        await asyncio.sleep(self.rng.uniform(1.0, 3.0))

    async def page(self, kind: str) -> str | None:
        """GET the lesson page; the CSRF token its form posts with."""
        phase, started = self.tally.phase, time.perf_counter()
        try:
            async with self.http.get(self.base + PAGES[kind]) as response:
                body = await response.read()
                status = response.status
        except Exception as error:  # noqa: BLE001 - counted and reported, the student goes on
            self.tally.requests[f"{phase} class page failed"] += 1
            self.tally.note(f"GET {PAGES[kind]}: {error!r}")
            return None
        self.tally.requests[f"{phase} class page {status}"] += 1
        if status != 200:
            self.tally.note(f"GET {PAGES[kind]}: {status} {body[:120]!r}")
        self.tally.page_ms[phase].append((time.perf_counter() - started) * 1000)
        cookie = self.http.cookie_jar.filter_cookies(URL(self.base)).get("csrftoken")
        return cookie.value if cookie is not None else None

    async def demo(self, kind: str, token: str | None) -> None:
        await post_demo(self.http, self.base, kind, demo_form(kind, self.rng), token, self.tally, "class")

    async def decode(self) -> None:
        phase, round_index = self.tally.phase, self.tally.round
        if self.socket is None or self.socket.gone:
            try:
                self.socket = await open_socket(self.port, "/ws/decode/", self.key, self.on_frame, self.on_close)
            except Exception as error:  # noqa: BLE001
                self.tally.decodes[f"{phase} socket_refused"] += 1
                self.tally.note(f"student {self.index} could not reopen its playground socket: {error!r}")
                return
        loop = asyncio.get_running_loop()
        request = self.request = {"id": None, "first": None, "seqs": [], "ended": loop.create_future()}
        frame = {"type": "decode", "model": MODEL, "source": self.rng.choice(SENTENCES), "strategy": "greedy",
                 **self.page_request, "step_mode": False, "pace_ms": 0}
        sent = time.perf_counter()
        send(self.socket, frame)
        try:
            end = await asyncio.wait_for(request["ended"], DECODE_WAIT_S)
        except TimeoutError:
            self.tally.decodes[f"{phase} timeout"] += 1
            self.tally.note(f"student {self.index}'s decode had no done within {DECODE_WAIT_S:.0f} s "
                            f"({len(request['seqs'])} tokens)")
            send(self.socket, {"type": "cancel"})
            return
        finally:
            self.request = None
        if end["type"] == "error":
            self.tally.decodes[f"{phase} error:{end.get('code')}"] += 1
            return
        self.tally.decodes[f"{phase} done"] += 1
        if request["first"] is not None:
            self.tally.first_token[(phase, round_index)].append((request["first"] - sent) * 1000)
        steps = end.get("steps", len(request["seqs"]))
        missing = len(set(range(steps)) - set(request["seqs"]))
        if missing or request["seqs"] != list(range(len(request["seqs"]))):
            self.tally.decode_lost[phase] += missing
            self.tally.note(f"student {self.index}'s decode: {steps} steps, seqs received {request['seqs']}")

    async def live(self, until: float, max_loops: int) -> None:
        await asyncio.sleep(self.rng.uniform(0, 3.0))  # a class does not press Run at one instant
        for _ in range(max_loops):
            if time.monotonic() >= until:
                return
            kind = self.rng.choice(list(PAGES))
            token = await self.page(kind)
            await self.think()
            if time.monotonic() >= until:
                return
            await self.demo(kind, token)
            await self.think()
            if time.monotonic() >= until:
                return
            await self.decode()
            await self.think()


async def post_demo(http: Any, base: str, kind: str, form: dict[str, str], token: str | None, tally: Tally,
                    who: str) -> None:
    """POST a demonstration as htmx does; its status and the code of its answer (ok, or the page's data-code)."""
    phase, started = tally.phase, time.perf_counter()
    headers = {"HX-Request": "true", "X-CSRFToken": token or "", "Referer": base + PAGES[kind]}
    try:
        async with http.post(f"{base}/lesson/demo/{kind}/", data={**form, "csrfmiddlewaretoken": token or ""},
                             headers=headers) as response:
            body = await response.read()
            status = response.status
    except Exception as error:  # noqa: BLE001 - counted and reported
        tally.requests[f"{phase} {who} demo failed"] += 1
        tally.note(f"{who} POST /lesson/demo/{kind}/: {error!r}")
        return
    tally.requests[f"{phase} {who} demo {status}"] += 1
    found = CODE_RE.search(body)
    code = found.group(1).decode() if found else ("ok" if status == 200 else f"http_{status}")
    tally.outcomes[f"{phase} {who} {code}"] += 1
    if who == "class":
        tally.demo_ms[phase].append((time.perf_counter() - started) * 1000)
        if code != "ok":
            tally.note(f"a well-behaved demonstration {kind} {form} was answered {status} {code} {body[:120]!r}")
    if status >= 500:
        tally.note(f"{who} POST /lesson/demo/{kind}/ {form}: {status} {body[:300]!r}")


# -- the live session -------------------------------------------------------------------------------------


class Follower:
    """A student's classroom socket: the run's frames it holds, by request, and its answers."""

    def __init__(self, index: int, key: str, port: int, path: str, tally: Tally, resyncs: bool) -> None:
        self.index, self.key, self.port, self.path, self.tally = index, key, port, path, tally
        self.resyncs = resyncs
        self.rng = random.Random(1000 + index)
        self.seqs: dict[str, set[int]] = collections.defaultdict(set)
        self.resync_at: dict[str, int] = {}
        self.closed_at: float | None = None
        self.answers_sent = 0
        self.answered = 0
        self.socket: Any = None

    async def open(self) -> None:
        self.socket = await open_socket(self.port, self.path, self.key, self.on_frame, self.on_close)

    def on_close(self, code: int | None) -> None:
        if self.tally.phase == "closing":  # closed by this benchmark at the end
            return
        self.closed_at = time.monotonic()
        self.tally.closes[f"{self.tally.phase} class classroom {code}"] += 1
        self.tally.note(f"follower {self.index}'s classroom socket closed with {code}")

    def on_frame(self, at: float, payload: bytes) -> None:
        frame = self.tally.frame("class", "classroom", payload)
        kind = frame.get("type")
        if kind == "token":
            request_id, seq = frame.get("request_id"), frame.get("seq")
            self.seqs[request_id].add(seq)
            if self.resyncs:
                at_seq = self.resync_at.setdefault(request_id, self.rng.randrange(5, 50))
                if seq == at_seq:
                    send(self.socket, {"type": "resync"})
        elif kind == "state":
            for inner in frame.get("frames", ()):
                if inner.get("type") == "token":
                    self.seqs[frame.get("request_id") or inner.get("request_id")].add(inner.get("seq"))
        elif kind == "question" and frame.get("options"):
            asyncio.ensure_future(self.answer(frame))
        elif kind == "answered":
            self.answered += 1

    async def answer(self, question: dict[str, Any]) -> None:
        await asyncio.sleep(self.rng.uniform(0.3, 2.5))
        if send(self.socket, {"type": "answer", "question": question["id"], "choice": self.rng.choice(question["options"])}):
            self.answers_sent += 1


class Console:
    """The instructor: paced runs, a question after each, its reveal."""

    def __init__(self, key: str, port: int, path: str, tally: Tally, tokens: int, pace_ms: int) -> None:
        self.key, self.port, self.path, self.tally = key, port, path, tally
        self.tokens, self.pace_ms = tokens, pace_ms
        self.socket: Any = None
        self.started: dict[str, float] = {}
        self.runs: list[dict[str, Any]] = []  # each run: phase, request id, steps, start and end (monotonic)
        self.pending: dict[str, asyncio.Future[Any]] = {}
        self.questions = 0

    async def open(self) -> None:
        self.socket = await open_socket(self.port, self.path, self.key, self.on_frame, self.on_close)

    def on_close(self, code: int | None) -> None:
        if self.tally.phase == "closing":  # closed by this benchmark at the end
            return
        self.tally.closes[f"{self.tally.phase} class console {code}"] += 1
        self.tally.note(f"the console's socket closed with {code}")

    def on_frame(self, at: float, payload: bytes) -> None:
        frame = self.tally.frame("class", "console", payload)
        future = self.pending.get(frame.get("type"))
        if future is not None and not future.done():
            future.set_result(frame)

    async def live(self, until: float, max_runs: int) -> None:
        run_s = self.tokens * self.pace_ms / 1000
        for _ in range(max_runs):
            if time.monotonic() + run_s + 2 >= until:
                return
            loop = asyncio.get_running_loop()
            self.pending = {"start": loop.create_future(), "done": loop.create_future(), "error": loop.create_future()}
            began = time.monotonic()
            send(self.socket, {"type": "run", "source": RUN_SOURCE, "strategy": "greedy", "min_len": self.tokens,
                               "max_len": self.tokens, "pace_ms": self.pace_ms, "step_mode": False})
            done, _ = await asyncio.wait([self.pending["done"], self.pending["error"]], timeout=run_s + 30,
                                         return_when=asyncio.FIRST_COMPLETED)
            start_frame = self.pending["start"].result() if self.pending["start"].done() else None
            if not done or self.pending["error"].done() or start_frame is None:
                error = self.pending["error"].result() if self.pending["error"].done() else None
                self.tally.note(f"a console run did not end with done: {error}")
                self.runs.append({"phase": self.tally.phase, "ok": False, "error": error})
                await asyncio.sleep(2)
                continue
            end = self.pending["done"].result()
            self.runs.append({"phase": self.tally.phase, "ok": True, "request_id": start_frame["request_id"],
                              "steps": end.get("steps"), "began": began, "ended": time.monotonic()})
            await asyncio.sleep(0.5)  # the last frames reach the followers
            options = ["a", "b", "c", "d"]
            send(self.socket, {"type": "question", "kind": "choice", "prompt": "which?", "options": options})
            self.questions += 1
            await asyncio.sleep(3.5)
            send(self.socket, {"type": "reveal", "answer": options[0]})
            await asyncio.sleep(1.0)


# -- the abuser -------------------------------------------------------------------------------------------


ABUSE_CONNECTIONS = {"uncached-demos": 200, "cached-demos": 50, "anonymous-sockets": 100}
CACHED_DEMO = ("encoder", {"sentence": SENTENCES[0], "model": MODEL, "layer": "0", "head": "0", "query": "0"})


class Abuser:
    """One student who floods: uncached demonstrations, sockets (some never read), classroom resyncs; or, with
    --abuse, one pattern on many connections."""

    def __init__(self, key: str, port: int, path: str, tally: Tally, args: argparse.Namespace,
                 page_request: dict[str, Any]) -> None:
        self.key, self.port, self.path, self.tally, self.args = key, port, path, tally, args
        self.page_request = page_request
        self.rng = random.Random(99)
        self.base = f"http://127.0.0.1:{port}"
        self.sockets: list[Any] = []
        self.combos = self._combos()
        self.stop = False
        self.counts: collections.Counter[str] = collections.Counter()

    def _combos(self) -> Any:
        """Demonstration requests never asked before: every sentence, layer, head and query the model allows."""
        combos = [("encoder", {"sentence": s, "model": MODEL, "layer": str(layer), "head": str(head), "query": str(q)})
                  for s in SENTENCES for layer in range(3) for head in range(4) for q in range(1, len(s))]
        combos += [("decoder", {"sentence": s, "model": MODEL, "layer": str(layer), "head": str(head), "query": str(q),
                                "partner": p})
                   for s in SENTENCES for p in SENTENCES for layer in range(3) for head in range(4) for q in range(3)]
        self.rng.shuffle(combos)
        return iter(combos)

    def on_frame(self, socket: str) -> Any:
        return lambda at, payload: self.tally.frame("abuser", socket, payload)

    def on_close(self, socket: str) -> Any:
        def closed(code: int | None) -> None:
            if self.tally.phase == "closing":  # closed by this benchmark at the end
                return
            self.tally.closes[f"{self.tally.phase} abuser {socket} {code}"] += 1
        return closed

    async def connect(self, path: str, socket: str, read: bool) -> Any:
        self.counts[f"{socket} sockets tried"] += 1
        try:
            client = await open_socket(self.port, path, self.key, self.on_frame(socket), self.on_close(socket), timeout=10)
        except Exception as error:  # noqa: BLE001 - a refusal is what the app should answer with
            self.counts[f"{socket} sockets refused"] += 1
            reason = str(error)[:60]
            self.tally.closes[f"{self.tally.phase} abuser {socket} refused:{reason}"] += 1
            return None
        self.counts[f"{socket} sockets opened"] += 1
        if not read:
            client.transport.pause_reading()
        self.sockets.append(client)
        return client

    async def demos(self, until: float, connections: int, cached: bool = False) -> None:
        """`connections` loops POSTing demonstrations as fast as they are answered: never asked before, or one the
        cache answers."""
        combos = itertools.repeat(CACHED_DEMO) if cached else self.combos
        async with await http_session(self.key, connections=0) as http:
            async with http.get(self.base + PAGES["encoder"]) as response:
                await response.read()
            cookie = http.cookie_jar.filter_cookies(URL(self.base)).get("csrftoken")
            token = cookie.value if cookie is not None else None

            async def flood() -> None:
                for kind, form in itertools.islice(combos, 100_000):
                    if self.stop or time.monotonic() >= until:
                        return
                    self.counts["demo POSTs"] += 1
                    await post_demo(http, self.base, kind, form, token, self.tally, "abuser")
                self.counts["loops out of uncached combinations"] += 1  # idle for the rest of the phase

            await asyncio.gather(*(flood() for _ in range(connections)))

    async def handshakes(self, until: float, loops: int) -> None:
        """`loops` loops opening /ws/decode/ with a made-up session cookie each time, one after another."""
        import aiohttp

        url = f"ws://127.0.0.1:{self.port}/ws/decode/"
        async with await http_session(None, connections=0) as http:
            async def loop() -> None:
                for _ in range(100_000):
                    if self.stop or time.monotonic() >= until:
                        return
                    self.counts["anonymous handshakes"] += 1
                    try:
                        async with http.ws_connect(url, origin=self.base,
                                                   headers={"Cookie": f"sessionid={uuid.uuid4().hex}"}):
                            self.counts["anonymous handshakes accepted"] += 1
                    except aiohttp.WSServerHandshakeError as error:
                        self.counts[f"anonymous handshakes refused {error.status}"] += 1
                    except (aiohttp.ClientError, TimeoutError):
                        self.counts["anonymous handshakes failed"] += 1

            await asyncio.gather(*(loop() for _ in range(loops)))

    async def playground(self, until: float) -> None:
        """Keep --abuse-sockets playground sockets open (half never read), each asked for long decodes."""
        frame = {"type": "decode", "model": MODEL, "source": SENTENCES[-1], "strategy": "greedy",
                 **self.page_request, "min_len": 128, "max_len": 128}
        held: list[Any] = [None] * self.args.abuse_sockets
        for _ in range(200):  # rounds, each at most every 0.5 s
            if self.stop or time.monotonic() >= until:
                return
            for i, client in enumerate(held):
                if client is None or client.gone:
                    held[i] = client = await self.connect("/ws/decode/", "decode", read=i % 2 == 0)
                if client is not None and send(client, frame):
                    self.counts["decode frames sent"] += 1
            await asyncio.sleep(0.5)

    async def resyncs(self, until: float) -> None:
        """Resync on --abuse-class-sockets classroom sockets (half never read) at the frame budget's rate."""
        async def one(read: bool) -> None:
            client = None
            for _ in range(int(self.args.seconds / 0.105) + 100):
                if self.stop or time.monotonic() >= until:
                    return
                if client is None or client.gone:
                    client = await self.connect(self.path, "classroom", read)
                    if client is None:
                        await asyncio.sleep(0.5)
                        continue
                if send(client, {"type": "resync"}):
                    self.counts["resyncs sent"] += 1
                await asyncio.sleep(0.105)  # the budget refills 10 frames a second

        await asyncio.gather(*(one(read=i % 2 == 0) for i in range(self.args.abuse_class_sockets)))

    async def live(self, until: float) -> None:
        mode, connections = self.args.abuse, self.args.abuse_connections or ABUSE_CONNECTIONS.get(self.args.abuse, 0)
        if mode == "mixed":
            await asyncio.gather(self.demos(until, self.args.abuse_demos), self.playground(until), self.resyncs(until))
        elif mode == "anonymous-sockets":
            await self.handshakes(until, connections)
        else:
            await self.demos(until, connections, cached=mode == "cached-demos")

    def close(self) -> None:
        for client in self.sockets:
            shut(client)
        self.sockets.clear()


# -- the run ----------------------------------------------------------------------------------------------


def profile(pid: int, phase: str, args: argparse.Namespace) -> subprocess.Popen[bytes]:
    """py-spy on daphne for the phase's --seconds: raw stacks (threads apart, idle left out) in --profile."""
    args.profile.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([str(BIN / "py-spy"), "record", "--pid", str(pid), "--rate", "100", "--duration",
                             str(int(args.seconds)), "--format", "raw", "--threads", "--nonblocking",
                             "-o", str(args.profile / f"daphne-{phase}.txt")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class RssWatch:
    """daphne's resident memory every RSS_EVERY_S, the peak per phase."""

    def __init__(self, pid: int, tally: Tally, limit_mb: int) -> None:
        self.pid, self.tally, self.limit_kb = pid, tally, limit_mb * 1024
        self.peak: dict[str, int] = {}
        self.samples: list[tuple[float, int]] = []
        self.over_limit = asyncio.Event()

    async def watch(self, stop: asyncio.Event) -> None:
        started = time.monotonic()
        while not stop.is_set():
            kb = rss_kb(self.pid)
            self.samples.append((round(time.monotonic() - started, 1), kb))
            self.peak[self.tally.phase] = max(self.peak.get(self.tally.phase, 0), kb)
            if kb > self.limit_kb:
                self.over_limit.set()
            try:
                await asyncio.wait_for(stop.wait(), RSS_EVERY_S)
            except TimeoutError:
                pass


async def bounded(tasks: list[Any], timeout: float, tally: Tally, what: str) -> None:
    done, pending = await asyncio.wait([asyncio.ensure_future(t) for t in tasks], timeout=timeout)
    for task in pending:
        task.cancel()
    if pending:
        tally.note(f"{len(pending)} {what} still busy {timeout:.0f} s after the phase; cancelled")
    for task in done:
        if task.exception() is not None:
            tally.note(f"{what} raised {task.exception()!r}")


async def run_load(port: int, pids: dict[str, int], prepared: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    web_pid = pids["web (daphne)"]
    tally = Tally()
    path = f"/ws/classroom/{prepared['code']}/"
    page_request = prepared["page_request"]
    mb = 1024
    rss_start = rss_kb(web_pid)
    gate = asyncio.Semaphore(CONNECT_AT_ONCE)

    async def gated(opening: Any) -> None:
        async with gate:
            for attempt in range(3):
                try:
                    return await opening()
                except (TimeoutError, OSError):
                    if attempt == 2:
                        raise
            return None

    # warm-up: one student's page, demonstration (each kind) and decode; the console joins
    students = [Student(i, key, port, tally, page_request) for i, key in enumerate(prepared["students"])]
    await students[0].open()
    for kind in PAGES:
        token = await students[0].page(kind)
        await students[0].demo(kind, token)
    await students[0].decode()
    console = Console(prepared["teacher"], port, path, tally, args.run_tokens, args.pace_ms)
    await console.open()
    rss_before = rss_kb(web_pid)

    await asyncio.gather(*(gated(s.open) for s in students[1:]))
    followers = [Follower(i, key, port, path, tally, resyncs=i % 5 == 0)
                 for i, key in enumerate(prepared["students"][:args.followers])]
    await asyncio.gather(*(gated(f.open) for f in followers))
    await asyncio.sleep(1.0)
    rss_connected = rss_kb(web_pid)

    watch = RssWatch(web_pid, tally, args.rss_limit_mb)
    stop_watch = asyncio.Event()
    watcher = asyncio.ensure_future(watch.watch(stop_watch))
    abuser = Abuser(prepared["abuser"], port, path, tally, args, page_request)
    phases, cores = {}, {}
    # Rounds alternate the order (alone, abuser, abuser, alone, ...): a machine that drifts over the run weighs on
    # both phases alike, and each phase's figures pool its rounds.
    order = [(r, phase) for r in range(args.rounds) for phase in (("alone", "abuser") if r % 2 == 0 else
                                                                   ("abuser", "alone"))]
    for index, (round_index, phase) in enumerate(order):
        if index:
            await asyncio.sleep(args.settle)  # what the phase before left queued drains before the next begins
        tally.phase, tally.round = phase, round_index
        label = phase if args.rounds == 1 else f"{phase} {round_index}"
        began, cpu_before = time.monotonic(), cpu_seconds(pids)
        until = began + args.seconds
        tasks = [s.live(until, max_loops=int(args.seconds) + 1) for s in students]
        spy = profile(web_pid, label.replace(" ", "-"), args) if args.profile is not None else None
        tasks.append(console.live(until, max_runs=int(args.seconds) + 1))
        if phase == "abuser":
            abuser.stop = watch.over_limit.is_set()
            tasks.append(abuser.live(until))

            async def limit() -> None:
                await watch.over_limit.wait()
                abuser.stop = True
                tally.note(f"daphne's RSS passed {args.rss_limit_mb} MB: the abuser stopped early")

            guard = asyncio.ensure_future(limit())
        await bounded(tasks, args.seconds + DRAIN_S, tally, "actions")
        if spy is not None:
            spy.wait(timeout=30)
        if phase == "abuser":
            guard.cancel()
            if index < len(order) - 1:  # the class's next phase is without it
                abuser.close()
        phases[label] = round(time.monotonic() - began, 1)
        cores[label] = cpu_share(cpu_before, cpu_seconds(pids), phases[label])
    tally.phase = "closing"

    # frames lost on the followers' screens: each run's steps against what each follower held of it
    lost: collections.Counter[str] = collections.Counter()
    expected: collections.Counter[str] = collections.Counter()
    for run in console.runs:
        if not run["ok"]:
            continue
        for follower in followers:
            if follower.closed_at is not None and follower.closed_at < run["ended"] + 0.5:
                continue  # its socket closed (counted in closes); not a frame the relay lost
            held = follower.seqs.get(run["request_id"], set())
            expected[run["phase"]] += run["steps"]
            lost[run["phase"]] += len(set(range(run["steps"])) - held)

    for client in [*(s.socket for s in students), *(f.socket for f in followers), console.socket]:
        shut(client)
    abuser.close()
    for student in students:
        await student.http.close()
    await asyncio.sleep(SETTLE_S)
    rss_after = rss_kb(web_pid)
    stop_watch.set()
    await watcher

    first = {phase: summary([ms for r in range(args.rounds) for ms in tally.first_token[(phase, r)]])
             for phase in ("alone", "abuser")}
    ratio = (first["abuser"]["p99"] / first["alone"]["p99"]) if first["alone"]["n"] and first["abuser"]["n"] else None
    by_round = {f"{phase} {r}": summary(tally.first_token[(phase, r)])
                for r in range(args.rounds) for phase in ("alone", "abuser")}
    round_ratios = [round(by_round[f"abuser {r}"]["p99"] / by_round[f"alone {r}"]["p99"], 2)
                    for r in range(args.rounds) if by_round[f"abuser {r}"]["n"] and by_round[f"alone {r}"]["n"]]
    five_xx: collections.Counter[str] = collections.Counter()
    for key, value in tally.requests.items():
        phase, who, kind, status = key.split(" ")
        if status.isdigit() and int(status) >= 500:
            five_xx[f"{who} {kind}"] += value
    return {
        "phases_s": phases, "cores_busy": cores,
        "requests": split(tally.requests, 4),
        "five_xx": dict(five_xx), "five_xx_total": sum(five_xx.values()),
        "demo_outcomes": split(tally.outcomes, 3),
        "frames": split(tally.frames, 4),
        "closes": split(tally.closes, 4),
        "decodes": split(tally.decodes, 2),
        "frames_lost": {"playground": dict(tally.decode_lost), "classroom": dict(lost),
                        "classroom_expected": dict(expected),
                        "total": sum(tally.decode_lost.values()) + sum(lost.values())},
        "first_token_ms": first, "first_token_p99_ratio": round(ratio, 2) if ratio else None,
        "first_token_ms_by_round": by_round, "first_token_p99_ratio_by_round": round_ratios,
        "page_ms": {p: summary(v) for p, v in tally.page_ms.items()},
        "demo_ms": {p: summary(v) for p, v in tally.demo_ms.items()},
        "demo_p99_ratio": (round(tally_p99(tally.demo_ms, "abuser") / tally_p99(tally.demo_ms, "alone"), 2)
                           if tally.demo_ms.get("abuser") and tally.demo_ms.get("alone") else None),
        "web_cores_busy": {phase: round(sum(c["web (daphne)"] for label, c in cores.items() if label.split()[0] == phase)
                                        / max(1, sum(label.split()[0] == phase for label in cores)), 2)
                           for phase in ("alone", "abuser")},
        "classroom": {"runs": [{k: v for k, v in r.items() if k not in ("began", "ended")} for r in console.runs],
                      "questions": console.questions, "followers": len(followers),
                      "answers_sent": sum(f.answers_sent for f in followers),
                      "answers_acknowledged": sum(f.answered for f in followers)},
        "abuser": dict(abuser.counts),
        "runs_seen_by_followers": {rid: {"followers": sum(rid in f.seqs for f in followers),
                                         "tokens": sum(len(f.seqs.get(rid, ())) for f in followers)}
                                   for rid in sorted({rid for f in followers for rid in f.seqs})},
        "daphne_rss_mb": {"at_start": round(rss_start / mb, 1), "before": round(rss_before / mb, 1),
                          "sockets_open": round(rss_connected / mb, 1),
                          "peak": {p: round(v / mb, 1) for p, v in watch.peak.items()},
                          "after": round(rss_after / mb, 1),
                          "after_minus_before": round((rss_after - rss_before) / mb, 1),
                          "samples_every_s": RSS_EVERY_S,
                          "samples": [(t, round(kb / mb, 1)) for t, kb in watch.samples[::4]]},
        "unexpected": tally.failures,
    }


def tally_p99(by_phase: dict[str, list[float]], phase: str) -> float:
    return summary(by_phase[phase])["p99"]


def wait_workers(redis_url: str, names: tuple[str, ...], timeout: float = 180) -> None:
    """Until a worker of each queue answers a ping."""
    from celery import Celery

    from webapp.settings.env import redis_url_for_celery

    app = Celery("bench-control", broker=redis_url_for_celery(redis_url), set_as_current=False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answered = {name.split("@")[0] for reply in app.control.ping(timeout=1.0) or [] for name in reply}
        if set(names) <= answered:
            return
    raise RuntimeError(f"the workers {names} did not all answer")


def log_problems(data_dir: Path) -> dict[str, Any]:
    """Tracebacks and error lines in the stack's logs, the first few of each log in full."""
    out: dict[str, Any] = {}
    for log in sorted(data_dir.glob("*.log")):
        text = log.read_text(errors="replace")
        blocks = re.findall(r"(?ms)^.*?Traceback \(most recent call last\):.*?^\S.*?$", text)
        errors = [line for line in text.splitlines() if " ERROR " in line or "ERROR/" in line or line.startswith("ERROR")]
        warnings = collections.Counter(m.group(1) for m in re.finditer(r" WARNING (\S+): ", text))
        out[log.name] = {"tracebacks": text.count("Traceback (most recent call last)"), "error_lines": len(errors),
                         "warnings_by_logger": dict(warnings),
                         "database_is_locked": text.count("database is locked"),
                         "killed_for_slow_shutdown": text.count("took too long to shut down and was killed"),
                         "first_tracebacks": [b[-3000:] for b in blocks[:3]], "first_error_lines": errors[:5]}
    return out


def goals(figures: dict[str, Any]) -> list[dict[str, Any]]:
    rss = figures["daphne_rss_mb"]
    first = figures["first_token_ms"]
    ratio = figures["first_token_p99_ratio"]
    rows = [
        ("wrong demonstration results", figures["verification"]["wrong"], "0", figures["verification"]["wrong"] == 0),
        ("5xx responses", figures["five_xx_total"], "0", figures["five_xx_total"] == 0),
        ("frames lost", figures["frames_lost"]["total"], "0", figures["frames_lost"]["total"] == 0),
        ("first token p99 with the abuser (ms)", first["abuser"]["p99"], "<= 1000", first["abuser"]["p99"] <= 1000),
        ("first token p99 with / without the abuser", ratio, "<= 2", ratio is not None and ratio <= 2),
        ("demonstrations p99 with / without the abuser", figures["demo_p99_ratio"], "<= 2",
         figures["demo_p99_ratio"] is not None and figures["demo_p99_ratio"] <= 2),
        ("web process CPU with the abuser (cores)", figures["web_cores_busy"]["abuser"], "<= 0.5",
         figures["web_cores_busy"]["abuser"] <= 0.5),
        ("daphne RSS after - before (MB)", rss["after_minus_before"], "<= 50", rss["after_minus_before"] <= 50),
    ]
    return [{"goal": g, "measured": m, "target": t, "met": bool(ok)} for g, m, t, ok in rows]


def table(result: dict[str, Any]) -> str:
    lines = [f"{'goal':45} {'measured':>12} {'target':>8}  met"]
    for row in result["goals"]:
        lines.append(f"{row['goal']:45} {row['measured']!s:>12} {row['target']:>8}  {'yes' if row['met'] else 'NO'}")
    f = result["first_token_ms"]
    lines.append("")
    lines.append(f"first token ms, alone:  p50 {f['alone']['p50']}  p99 {f['alone']['p99']}  n {f['alone']['n']}")
    lines.append(f"first token ms, abuser: p50 {f['abuser']['p50']}  p99 {f['abuser']['p99']}  n {f['abuser']['n']}")
    if len(result["first_token_ms_by_round"]) > 2:
        for key, row in result["first_token_ms_by_round"].items():
            lines.append(f"  round {key.split()[1]}, {key.split()[0]:6}: p50 {row['p50']}  p99 {row['p99']}  n {row['n']}")
        lines.append(f"  p99 ratio per round: {result['first_token_p99_ratio_by_round']}")
    d = result["demo_ms"]
    lines.append(f"demonstration ms, alone:  p50 {d['alone']['p50']}  p99 {d['alone']['p99']}  n {d['alone']['n']}")
    lines.append(f"demonstration ms, abuser: p50 {d['abuser']['p50']}  p99 {d['abuser']['p99']}  n {d['abuser']['n']}")
    lines.append(f"web process cores busy: {json.dumps(result['web_cores_busy'])}")
    rss = result["daphne_rss_mb"]
    lines.append(f"daphne RSS MB: start {rss['at_start']}, before {rss['before']}, peak {rss['peak']}, after {rss['after']}")
    lines.append(f"requests: {json.dumps(result['requests'], ensure_ascii=False)}")
    lines.append(f"demonstrations: {json.dumps(result['demo_outcomes'])}")
    lines.append(f"decodes: {json.dumps(result['decodes'])}")
    lines.append(f"closes: {json.dumps(result['closes'])}")
    lines.append(f"abuser: {json.dumps(result['abuser'])}")
    lines.append(f"cores busy by phase: {json.dumps(result['cores_busy'])}")
    lines.append(f"frames lost: {json.dumps(result['frames_lost'])}")
    lines.append(f"load average before / after: {result['machine']['load_average_before']} / "
                 f"{result['machine']['load_average_after']}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each phase")
    parser.add_argument("--rounds", type=int, default=1,
                        help="pairs of phases, in alternating order (alone, abuser, abuser, alone, ...); figures pool them")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds between phases")
    parser.add_argument("--followers", type=int, default=30, help="students who also follow the live session")
    parser.add_argument("--run-tokens", type=int, default=60)
    parser.add_argument("--pace-ms", type=int, default=100)
    parser.add_argument("--abuse-demos", type=int, default=8, help="the abuser's demonstration POSTs at once")
    parser.add_argument("--abuse-sockets", type=int, default=40, help="playground sockets the abuser keeps opening")
    parser.add_argument("--abuse-class-sockets", type=int, default=8, help="classroom sockets the abuser resyncs on")
    parser.add_argument("--abuse", choices=("mixed", *ABUSE_CONNECTIONS), default="mixed",
                        help="the abuser's pattern (mixed: demonstrations, sockets and resyncs together; see above)")
    parser.add_argument("--abuse-connections", type=int,
                        help="connections of an --abuse pattern other than mixed (default: " +
                             ", ".join(f"{mode} {n}" for mode, n in ABUSE_CONNECTIONS.items()) + ")")
    parser.add_argument("--rss-limit-mb", type=int, default=3000, help="the abuser stops when daphne passes this")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "class_load.json")
    parser.add_argument("--profile", type=Path, help="py-spy daphne in each phase (raw stacks into this folder)")
    parser.add_argument("--logs", type=Path, help="copy the web and worker logs into this folder")
    parser.add_argument("--prepare", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--verify", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare is not None:  # the child that sets up the database
        print(json.dumps(prepare(*args.prepare)))
        return 0
    if args.verify:  # the child that recomputes the stored results
        print(json.dumps(verify()))
        return 0
    args.followers = min(args.followers, args.students)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    from scripts.redis_embedded import EmbeddedRedis

    data_dir = Path(tempfile.mkdtemp(prefix="encdec-class-load-"))
    redis = EmbeddedRedis(data_dir / "run")
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="webapp.settings.dev", DEBUG="0", SECRET_KEY="bench-only",
               ALLOWED_HOSTS="127.0.0.1,localhost", DATA_DIR=str(data_dir), REDIS_URL=redis.start(),
               PYTHONUNBUFFERED="1")
    os.environ.update(env)
    port = free_port()
    procs = []
    figures: dict[str, Any] = {}
    try:
        # Django (which loads daphne, hence Twisted) stays out of this process (see bench/stream.py).
        prepared = json.loads(subprocess.run([sys.executable, __file__, "--prepare", str(args.students),
                                              str(args.followers)], env=env, check=True, capture_output=True,
                                             text=True).stdout.strip().splitlines()[-1])
        procs.append(start([str(BIN / "python"), "-m", "webapp.server", "-b", "127.0.0.1", "-p", str(port),
                            "webapp.asgi:application"], env, data_dir / "daphne.log"))
        for queue, extra in (("interactive", ["--pool", "threads", "--concurrency", "4"]),
                             ("demonstrations", ["--pool", "threads", "--concurrency", "2"])):
            procs.append(start([str(BIN / "celery"), "-A", "webapp", "worker", "-Q", queue, "-n", f"{queue}@%h",
                                "--loglevel", "WARNING", *extra], env, data_dir / f"worker-{queue}.log"))
        wait_http(port)
        wait_workers(env["REDIS_URL"], ("interactive", "demonstrations"))
        time.sleep(3)  # the workers' presence (published every 2 s) reaches Redis before the first demonstration
        load_before = os.getloadavg()
        started = time.monotonic()
        pids = {"web (daphne)": procs[0].pid, "worker interactive": procs[1].pid,
                "worker demonstrations": procs[2].pid, "clients (this process)": os.getpid()}
        figures = asyncio.run(run_load(port, pids, prepared, args))
        load_after = os.getloadavg()
        figures["wall_s"] = round(time.monotonic() - started, 1)
    finally:
        for proc in procs:
            stop(proc)
        redis.stop()
        problems = log_problems(data_dir)
        logs_kept(data_dir, args.logs)
        if figures:
            figures["verification"] = json.loads(subprocess.run(
                [sys.executable, __file__, "--verify"], env=env, check=True, capture_output=True,
                text=True).stdout.strip().splitlines()[-1])
        shutil.rmtree(data_dir, ignore_errors=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                             text=True).stdout.splitlines()
    result = {
        "code": {"commit": head, "files_changed_since": len(changed)},
        "settings": {"students": args.students, "seconds_per_phase": args.seconds, "rounds": args.rounds,
                     "settle_s": args.settle, "followers": args.followers,
                     "run_tokens": args.run_tokens, "pace_ms": args.pace_ms, "abuse_demos": args.abuse_demos,
                     "abuse": args.abuse, "abuse_connections": args.abuse_connections,
                     "door_limits": os.environ.get("DOOR_LIMITS", "the default"),
                     "abuse_sockets": args.abuse_sockets, "abuse_class_sockets": args.abuse_class_sockets,
                     "stack": "daphne x1, interactive worker threads x4, demonstrations worker threads x2 "
                              "(as make run), app's default limits", "model": MODEL,
                     "web_gil_switch_ms": round(gil_switch_interval() * 1000, 3),
                     "background_worker_nice": os.environ.get("BACKGROUND_WORKER_NICE", "the default")},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in load_after]},
        **figures,
        "logs": problems,
    }
    result["goals"] = goals(result)
    print(table(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.json.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(args.json)
    print(f"written: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
