"""scripts/cluster.py: a school's hosts as network namespaces (nginx with TLS, two web hosts, gpu, cpu and data), every
link at an RTT of 1 ms. A class of 50 students and the console follow a run over wss while web1 is cut from the data
host (its Redis and PostgreSQL): held for 5 s (a partition TCP outlives), then, with another class, reset and refused
for 10 s while the run ends. Every screen must end with the whole run or a named error frame that ends it, and
`down` must leave no namespace, bridge or folder behind, whatever happened.

Needs root, `ip`, nginx, redis-server and PostgreSQL's server (scripts/ensure_system_packages.sh installs them, as
`make test` does for nginx); skipped where they are missing or a cluster is up already."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from scripts import cluster
from tests.webapp.classroom.test_rolling_restart import STEPS, Screen, reconnecting

pytestmark = [pytest.mark.slow, pytest.mark.services]

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
STUDENTS = 50
PACE_MS = 150  # STEPS (60) as test_rolling_restart's run
CUT_AT_STEP = 10
ORIGIN = f"https://{cluster.address('proxy')}"


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "nginx", "redis-server", "openssl", "setpriv"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"needs {tool}"
    if not (cluster.PG_BIN / "postgres").exists():
        return "needs PostgreSQL's server"
    if subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.count(cluster.PREFIX):
        return "a cluster is up already"
    return None


def finished(screen: Screen) -> bool:
    """The whole run on the screen, or a named error frame that ends it (what the page shows instead; `catching_up`
    says the screen is behind, not that the run ended)."""
    return screen.whole() or any(frame.get("code") not in (None, "catching_up") for frame in screen.told)


def _tls() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # the cluster's own certificate
    return context


async def follow(url: str, screen: Screen, until: float, on_frame: Any) -> None:
    """Keep the tab open until the run is whole or a named error came (or `until`), as test_rolling_restart's tab."""
    await reconnecting(screen, until,
                       lambda: connect(url, ssl=_tls(), origin=ORIGIN, additional_headers={"Cookie": screen.cookie},
                                       open_timeout=15, close_timeout=2),
                       finished, lambda frame: on_frame(screen, frame))


async def scenario(url: str, teacher: str, students: list[str], web1_links: Path, mode: str,
                   seconds: float) -> dict[str, Any]:
    console, screens = Screen(f"sessionid={teacher}"), [Screen(f"sessionid={key}") for key in students]
    # The console starts the run once the class has joined, as test_rolling_restart's does.
    console.first_after = screens
    console.first_frames = [{"type": "run", "source": "昨天我在花园里画了三条大鱼。", "strategy": "greedy",
                             "min_len": STEPS, "max_len": STEPS, "pace_ms": PACE_MS, "step_mode": False}]
    until = time.monotonic() + 150
    cut: dict[str, float] = {}

    async def on_frame(screen: Screen, frame: dict[str, Any]) -> None:
        if frame["type"] == "token" and frame["seq"] == CUT_AT_STEP and not cut:
            cut["at"] = time.monotonic()
            cluster.control(web1_links, {"op": "cut", "peer": "data", "seconds": seconds, "mode": mode})

    await asyncio.gather(*(follow(url, s, until, on_frame) for s in [console, *screens]))
    ended = time.monotonic()
    return {"screens": [console, *screens], "cut_at": cut.get("at"), "ended_after_cut_s": ended - cut.get("at", ended)}


@pytest.fixture(scope="module")
def school(tmp_path_factory: pytest.TempPathFactory) -> Any:
    missing = _missing()
    if missing:
        pytest.skip(missing)
    tmp_path = tmp_path_factory.mktemp("cluster")
    env = dict(os.environ, ENCDEC_CLUSTER_STATE=str(tmp_path / "cluster.json"))
    try:
        up = subprocess.run([PYTHON, "scripts/cluster.py", "up", "--bench", "--rtt", "1ms"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        yield {**json.loads((tmp_path / "cluster.json").read_text()), "state_file": str(tmp_path / "cluster.json")}
    finally:
        down = subprocess.run([PYTHON, "scripts/cluster.py", "down"], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=120)
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert cluster.PREFIX not in left, f"namespaces left behind: {left}\n{down.stderr}"
        assert subprocess.run(["ip", "link", "show", cluster.BRIDGE], capture_output=True).returncode != 0
        assert not (tmp_path / "cluster.json").exists()


# stall: nothing crosses, TCP outlives it; reset: every connection reset, new ones refused (the run ends meanwhile).
@pytest.mark.parametrize(("mode", "seconds"), [("stall", 5.0), ("reset", 10.0)])
def test_a_class_through_a_cut_between_web1_and_the_data_host_ends_whole_or_told(
        school: dict[str, Any], mode: str, seconds: float) -> None:
    assert Path(school["dir"]).exists()
    made = subprocess.run(["ip", "netns", "exec", cluster.namespace("client"), PYTHON, "bench/classroom.py",
                           "--prepare", str(STUDENTS), "--prefix", f"cut{mode}", "--no-collect"], cwd=ROOT,
                          env=cluster.app_env(school, direct=True), capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr[-3000:]
    prepared = json.loads(made.stdout.strip().splitlines()[-1])
    url = f"wss://{cluster.address('proxy')}/ws/classroom/{prepared['code']}/"
    result = cluster.in_namespace("client", asyncio.run, scenario(url, prepared["teacher"], prepared["students"],
                                                                 Path(school["links"]["web1"]), mode, seconds))
    screens = result["screens"]
    whole = sum(s.whole() for s in screens)
    told = Counter(frame.get("code") for s in screens for frame in s.told)
    print(f"{mode} {seconds} s: {whole} of {len(screens)} screens whole, told: {dict(told)}, "
          f"drops: {sum(len(s.drops) for s in screens)}, the last {result['ended_after_cut_s']:.1f} s after the cut began")
    assert result["cut_at"] is not None, "the run never reached the step the cut waits for"
    lost = [(i, s.steps()[-5:], [f.get("code") for f in s.told]) for i, s in enumerate(screens) if not finished(s)]
    assert not lost, f"screens with neither the whole run nor a named error: {lost[:5]}"
    if mode == "reset":  # the worker finished: web1's screens are caught up from its copy once the link is back
        assert whole == len(screens), [(i, s.steps()[-3:], s.told_since_join()) for i, s in enumerate(screens)
                                       if not s.whole()][:5]


async def takeover(url: str, teacher: str, students: list[str], kill_gpu: Any, run_again: Any) -> dict[str, Any]:
    """The class follows a run; the gpu host dies mid-run (`kill_gpu`), every screen must say `worker_lost`; then
    `run_again()` (the second host up) returns and the console runs again: every screen must get that run whole.
    Each tab as the page keeps it: a `start` begins a run, a seq that skips asks for the state, which replaces it."""
    started = time.monotonic()
    until = started + 240
    tabs: list[dict[str, Any]] = [{"cookie": f"sessionid={key}", "runs": [], "lost_at": None, "joined": False}
                                  for key in [teacher, *students]]
    console = tabs[0]
    first = {"type": "run", "source": "昨天我在花园里画了三条大鱼。", "strategy": "greedy", "min_len": STEPS,
             "max_len": STEPS, "pace_ms": PACE_MS, "step_mode": False}
    events: dict[str, float] = {}

    def whole(tab: dict[str, Any], run: int) -> bool:
        runs = tab["runs"]
        return len(runs) > run and runs[run]["done"] and runs[run]["steps"] == list(range(STEPS))

    async def follow_tab(tab: dict[str, Any]) -> None:
        async with connect(url, ssl=_tls(), origin=ORIGIN, additional_headers={"Cookie": tab["cookie"]},
                           open_timeout=30, close_timeout=2) as ws:
            if tab is console:
                console_ws.set_result(ws)
            while not whole(tab, 1):
                frame = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, until - time.monotonic())))
                kind, runs = frame["type"], tab["runs"]
                if kind == "session":
                    tab["joined"] = True
                elif kind == "start" and not any(r["id"] == frame["request_id"] for r in runs):
                    runs.append({"id": frame["request_id"], "steps": [], "done": False})
                elif kind == "token" and runs and runs[-1]["id"] == frame["request_id"]:
                    if frame["seq"] != len(runs[-1]["steps"]):
                        await ws.send(json.dumps({"type": "resync"}))
                    else:
                        runs[-1]["steps"].append(frame["seq"])
                        if tab is console and len(runs) == 1 and frame["seq"] == CUT_AT_STEP:
                            events["killed"] = time.monotonic()
                            await asyncio.to_thread(kill_gpu)
                elif kind == "done" and runs and runs[-1]["id"] == frame["request_id"]:
                    runs[-1]["done"] = True
                elif kind == "state":
                    inner = [f for f in frame["frames"] if f["type"] == "start"]
                    if inner:
                        run = {"id": inner[0]["request_id"], "done": frame["frames"][-1]["type"] == "done",
                                "steps": [f["seq"] for f in frame["frames"] if f["type"] == "token"]}
                        tab["runs"] = [r for r in runs if r["id"] != run["id"]] + [run]
                elif kind == "error" and frame.get("code") == "worker_lost" and tab["lost_at"] is None:
                    tab["lost_at"] = time.monotonic()

    async def drive() -> None:
        ws = await console_ws
        while not all(tab["joined"] for tab in tabs):  # the class joins first
            await asyncio.sleep(0.05)
        await ws.send(json.dumps(first))
        while console["lost_at"] is None:
            await asyncio.sleep(0.05)
        await asyncio.to_thread(run_again)  # the second gpu host's interactive worker counted by /healthz
        events["second_up"] = time.monotonic()
        await ws.send(json.dumps(first))

    console_ws: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    await asyncio.gather(drive(), *(follow_tab(tab) for tab in tabs))  # a failing step fails it at once
    return {"tabs": tabs, **events}


def test_a_gpu_host_lost_mid_run_says_so_on_every_screen_and_a_second_gpu_host_runs_the_next(
        school: dict[str, Any]) -> None:
    """Last in this file: it kills the gpu host's workers (the file's tests share one cluster, in order)."""
    made = subprocess.run(["ip", "netns", "exec", cluster.namespace("client"), PYTHON, "bench/classroom.py",
                           "--prepare", str(STUDENTS), "--prefix", "gpu", "--no-collect"], cwd=ROOT,
                          env=cluster.app_env(school, direct=True), capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr[-3000:]
    prepared = json.loads(made.stdout.strip().splitlines()[-1])
    url = f"wss://{cluster.address('proxy')}/ws/classroom/{prepared['code']}/"
    env = dict(os.environ, ENCDEC_CLUSTER_STATE=school["state_file"])

    def fault(*argv: str) -> None:
        done = subprocess.run([PYTHON, "scripts/cluster.py", "fault", *argv], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr

    def second_gpu_up() -> None:
        fault("start", "gpu2")
        deadline = time.monotonic() + 120
        while True:  # the interactive worker of gpu2 is counted (gpu's presence went when it died)
            status, body = cluster.https_get("/healthz")
            if status == 200 and json.loads(body).get("workers", {}).get("interactive", 0) >= 1:
                return
            assert time.monotonic() < deadline, f"gpu2's interactive worker never came: {body[:300]!r}"
            time.sleep(0.2)

    result = cluster.in_namespace("client", asyncio.run, takeover(url, prepared["teacher"], prepared["students"],
                                                                  lambda: fault("kill", "gpu"), second_gpu_up))
    tabs = result["tabs"]
    told = [tab["lost_at"] - result["killed"] for tab in tabs if tab["lost_at"] is not None]
    first_steps = [tab["runs"][0]["steps"][-1] if tab["runs"] and tab["runs"][0]["steps"] else None for tab in tabs]
    print(f"gpu killed at step {CUT_AT_STEP}: {len(told)} of {len(tabs)} screens told worker_lost "
          f"{min(told, default=0):.1f}-{max(told, default=0):.1f} s after the kill; "
          f"second host counted {result['second_up'] - result['killed']:.1f} s after the kill; "
          f"{sum(len(t['runs']) > 1 and t['runs'][1]['done'] for t in tabs)} screens with the second run whole; "
          f"first run ended at steps {sorted(set(first_steps))}")
    assert len(told) == len(tabs), "every screen is told the worker was lost"
    assert all(len(tab["runs"]) == 2 and tab["runs"][1]["steps"] == list(range(STEPS)) and tab["runs"][1]["done"]
               for tab in tabs), "every screen gets the run the second gpu host decoded, whole"
