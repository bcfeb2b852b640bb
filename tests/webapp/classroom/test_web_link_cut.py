"""One web process cut from Redis while the worker and the other web process keep theirs (a web host partitioned
from the data host): the link is reset and refused ten steps into a run, for longer than PLAYGROUND_WORKER_LOST_S
(5 s), while the run ends or while it goes on. The cut process's screens are told, then caught up from the source
once the link is back (the worker's kept copy, or its answer to a resync): every screen ends with the whole run, and
the history keeps it whole (real daphne, worker, Redis, and the project's link proxy between the cut web process and
Redis)."""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from tests.fixtures.link import RedisLink
from tests.fixtures.playground import SOURCE
from tests.fixtures.services import free_port
from tests.fixtures.stack import Stack, classroom_socket, cookie_for, run
from tests.webapp.classroom.test_rolling_restart import STEPS, Screen, reconnecting

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

CUT_AT_STEP = 10


# The run's last 50 steps take 5 s at 100 ms (it ends during an 8 s cut), 12.5 s at 250 ms (it goes on after a 7 s one).
@pytest.mark.parametrize(("pace_ms", "cut_s"), [(100, 8.0), (250, 7.0)], ids=["ends-during-the-cut", "goes-on-after"])
def test_a_web_process_cut_from_redis_mid_run_tells_its_screens_then_catches_them_up(
        tmp_path, session, instructor, make_student, pace_ms, cut_s):
    stack = Stack(tmp_path, redis_port=free_port())
    link = RedisLink(tmp_path, stack.redis.port)
    try:
        cut_web = stack.web(REDIS_URL=link.url)
        other_web = stack.web()
        stack.worker()
        console = Screen(cookie_for(instructor))
        cut_screens = [Screen(cookie_for(make_student(f"cut{i}"))) for i in range(3)]
        other_screens = [Screen(cookie_for(make_student(f"other{i}"))) for i in range(2)]
        cut_at: list[float] = []
        caught_up: dict[int, float] = {}  # a screen: seconds from the cut until it held the whole run
        served: dict[int, float] = {}  # a screen: seconds from the cut until its first `state` after it

        async def follow(web: Any, screen: Screen, until: float, on_frame: Any) -> None:
            await reconnecting(screen, until, lambda: classroom_socket(web, session.code, screen.cookie),
                               lambda tab: tab.whole(), on_frame)

        async def scenario() -> None:
            until = time.monotonic() + 60
            joined: set[int] = set()

            def joining(screen: Screen, then: Any = None) -> Any:
                async def on_frame(frame: dict[str, Any]) -> None:
                    if frame["type"] == "session":
                        joined.add(id(screen))
                    if then is not None:
                        await then(screen, frame)
                return on_frame

            async def cut_when_midway(screen: Screen, frame: dict[str, Any]) -> None:
                if frame["type"] == "token" and frame["seq"] >= CUT_AT_STEP and not cut_at:
                    cut_at.append(time.monotonic())
                    await asyncio.to_thread(link.cut, cut_s, "reset")

            async def caught(screen: Screen, frame: dict[str, Any]) -> None:
                if cut_at and frame["type"] == "state" and id(screen) not in served:
                    served[id(screen)] = time.monotonic() - cut_at[0]
                if cut_at and screen.whole() and id(screen) not in caught_up:
                    caught_up[id(screen)] = time.monotonic() - cut_at[0]

            tabs = [follow(other_web, console, until, joining(console))]
            tabs += [follow(other_web, s, until, joining(s, cut_when_midway)) for s in other_screens]
            tabs += [follow(cut_web, s, until, joining(s, caught)) for s in cut_screens]
            tasks = [asyncio.ensure_future(tab) for tab in tabs]
            while len(joined) < len(tabs):  # every tab has the room before the run starts
                assert time.monotonic() < until - 30, f"{len(joined)} of {len(tabs)} tabs joined"
                await asyncio.sleep(0.05)
            async with classroom_socket(other_web, session.code, console.cookie) as driver:
                await driver.send(json.dumps({"type": "run", "source": SOURCE, "pace_ms": pace_ms,
                                              "min_len": STEPS, "max_len": STEPS}))
                await asyncio.gather(*tasks)

        run(scenario)
        assert cut_at, "the run never reached the cut"
        for name, screens in (("cut", cut_screens), ("other", other_screens), ("console", [console])):
            for screen in screens:
                print(f"{name}: {len(screen.steps())} steps, last {screen.frames[-1]['type'] if screen.frames else None}, "
                      f"told {[f.get('code') for f in screen.told]}, drops {len(screen.drops)}, "
                      f"state after {served.get(id(screen), float('nan')):.1f} s, whole after {caught_up.get(id(screen), float('nan')):.1f} s")
        stuck = [(s.steps()[-3:], s.told_since_join()) for s in [*cut_screens, *other_screens, console] if not s.whole()]
        assert not stuck, f"screens left without the whole run: {stuck}"
        for screen in cut_screens:  # told while they could not follow, in words
            assert [f for f in screen.told if f.get("code") == "catching_up"], screen.told
        for screen in [*other_screens, console]:  # the other web process's screens never noticed
            assert not screen.told and not screen.drops, (screen.told, screen.drops)
        kept = session.transcripts.get()
        deadline = time.monotonic() + 20
        while kept.ended_at is None and time.monotonic() < deadline:  # kept just after `done`
            time.sleep(0.1)
            kept.refresh_from_db()
        assert [f["seq"] for f in kept.frames if f["type"] == "token"] == list(range(STEPS))
        assert kept.frames[-1]["type"] == "done"
    finally:
        link.close()
        stack.close()
