"""A live lesson, console to screen: how long each step the console sends takes to show on a student's screen.

    .venv/bin/python bench/classroom_steps.py [--repeats 5] [--root DIR] [--label after] [--json PATH]
    .venv/bin/python bench/classroom_steps.py --merge RUN.json ... [--json POOLED.json]   # before / after side by side

Starts its own stack as bench/stream.py and bench/classroom.py do (embedded Redis, a fresh SQLite database, one
daphne process, one Celery worker on the queues interactive,demonstrations,experiments), every process with its
working directory and import path in --root (default: this tree), so a `git worktree` of an older commit is
measured by the same script. The database gets the shipped models (as `manage.py register_shipped_models`), an
instructor, two seated students and late joiners, and a live session on zh-en-post.

Chromium (Debian's, driven by Python Playwright, the browser tests' flags) opens three pages:
  - the console (the instructor, 1280x800, English), which sends every step with its own controls
    (lesson-part-picker + lesson-show, demo-sentence + demo-run, exercise-picker + ask-exercise, reveal);
  - a desktop student: 1280x800, English;
  - a phone student: 360x780, Chinese (zh-CN), mobile, CPU throttled 4x (CDP Emulation.setCPUThrottlingRate).

Each repeat: a lesson part (encoder#layers), the part's demonstration for the class (a new sentence each repeat,
so the worker computes it: the `demo` frame's `cached` is recorded), an exercise (encoder-1 and -2 in turn, which
both students answer), a late joiner per device (a fresh browser context, nothing cached: the first visit),
a reload of each seated student, then the reveal. One unmeasured round first warms the worker, the model and the
server's caches.

Clock: every page stamps with performance.timeOrigin + performance.now() (the system's clock, one machine, one
browser): the console's click (a capture listener: before the page's own handler sends the frame), each socket
frame's arrival, and on the students' pages the first moment each step is on screen: a MutationObserver (and a
100 ms poll) sees the page's DOM satisfy the step's condition, then the next animation frame's callback stamps it
(the frame that paints it). On screen means:
  - part: a new `h2` in [data-testid=lesson-part];
  - exercise: the question card shown with new option buttons;
  - reveal: [data-testid=question-result] marked right/wrong with its text;
  - demo: the figures (`.plot`) of [data-testid=class-demo-result] in the view drawn (`.js-plotly-plot`), the page
    settled (<html data-settled="yes">, static/js/settled.js) and nothing aria-busy; milestones on the way: the
    `demo` frame's arrival, the fragment in the page, the first figure drawn, every figure drawn (a page that draws
    figures only as they scroll near never gets there unscrolled);
  - late join / reload: from the document's navigation start (performance.timeOrigin) to the part, the demo (as
    above) and the open question all shown;
  - scroll in: the late joiner, once the room is on screen, scrolls to the demonstration's last figure: from the
    scroll to that figure drawn and the page settled.
Printed and written (--json): p50 / max per step kind and device, every sample with its milestones, the CPU
(lscpu's model name, AVX-512 or not, cores) and the load average at start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "bench"))

from stream import free_port, logs_kept, signed_in, stop, wait_http  # noqa: E402

MODEL = "zh-en-post"
PART = ("encoder", "layers")  # the part whose demonstration is the lesson's tallest (encoder: every layer's maps)
DEMO_KIND = "encoder"
EXERCISES = ("encoder-1", "encoder-2")
# A new sentence for each demonstration, so each is computed on the worker (the lesson keeps results by sentence);
# every character one zh-en-post knows (a demonstration refuses the others).
SENTENCES = ["我的猫追了一只老鼠。", "我的狗追了一只老鼠。", "我们看见我的猫。", "昨天我在花园里画了三条大鱼。",
             "我的狗追了一只猫。", "他的猫看见了一只鸟。", "我们的狗追了三只猫。", "她在花园里看见了一条鱼。",
             "我画了一只大狗。", "昨天我们看见了三只鸟。", "他在家里画了一条鱼。", "我的猫看见了我的狗。",
             "她的狗追了一只鸟。", "我们在花园里画了猫。", "昨天他看见了我的鸟。", "我的鸟看见了一只猫。",
             "他们追了一只大老鼠。", "我在花园里看见了她的狗。", "她画了三只小猫。", "我们的猫追了他的鸟。",
             "昨天我的狗看见了老鼠。", "他们在家里画了一只鸟。"]
DEVICES = {
    "desktop": {"viewport": {"width": 1280, "height": 800}, "locale": "en-US"},
    "phone": {"viewport": {"width": 360, "height": 780}, "locale": "zh-CN", "is_mobile": True, "has_touch": True},
}
THROTTLE = {"desktop": 1, "phone": 4}
CHROMIUM_ARGS = [  # tests/fixtures/browser.py's
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]
STEP_KINDS = ("part", "exercise", "reveal", "demo", "late_join", "reload", "scroll_in")
STEP_TIMEOUT_MS = 180_000

# Runs in every page before its own scripts (Playwright init script).
PAGE_JS = r"""
(() => {
  if (window.__bench) return;
  const now = () => performance.timeOrigin + performance.now();
  const B = window.__bench = { clicks: [], frames: [], armed: "join", milestones: {}, result: null, t0: null,
                               longtasks: [] };
  try {  // the main thread's tasks over 50 ms: where a step's time went
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) B.longtasks.push([performance.timeOrigin + e.startTime, e.duration]);
    }).observe({ type: "longtask", buffered: true });
  } catch (error) { /* no longtask timing */ }
  const NativeSocket = window.WebSocket;
  window.WebSocket = class extends NativeSocket {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {  // first listener: stamps the arrival
        const t = now();
        const head = typeof event.data === "string" ? event.data.slice(0, 400) : "";
        const m = /"type":\s*"(\w+)"/.exec(head);
        const cached = /"cached":\s*(true|false)/.exec(head);
        B.frames.push([m ? m[1] : "?", t, typeof event.data === "string" ? event.data.length : 0,
                       cached ? cached[1] === "true" : null]);
      });
    }
  };
  window.addEventListener("click", (event) => {
    const el = event.target && event.target.closest ? event.target.closest("[data-testid]") : null;
    B.clicks.push([el ? el.dataset.testid : "", now()]);
  }, true);

  const q = (s) => document.querySelector(s);
  const all = (s) => [...document.querySelectorAll(s)];
  const drawnPlot = (p) => p.classList.contains("js-plotly-plot") && !!p.querySelector(".main-svg");
  const settled = () => document.documentElement.dataset.settled === "yes" && !q("[aria-busy=true]");
  function demo(fresh) {
    const panel = q("#cr-lesson-demo");
    const plots = all("#cr-demo-result .plot" + (fresh ? ":not([data-bench-old])" : "")).filter((p) => !p.hidden);
    const drawn = plots.filter(drawnPlot);
    const inView = plots.filter((p) => {
      const r = p.getBoundingClientRect();
      return r.height > 0 && r.bottom > 0 && r.top < window.innerHeight;
    });
    const out = { plots: plots.length };
    if (plots.length) out.inserted = true;
    if (drawn.length) out.first_drawn = true;
    if (inView.length && inView.every(drawnPlot)) out.in_view_drawn = true;
    if (plots.length && drawn.length === plots.length) out.all_drawn = true;
    // On screen: what the reader sees drawn (a figure further down is drawn as it scrolls near), the page settled.
    if (plots.length && (out.in_view_drawn || !inView.length) && panel && !panel.hidden && settled()) out.shown = true;
    return out;
  }
  const partShown = (fresh) => {
    const box = q("#cr-lesson");
    return !!(box && !box.hidden && q("#cr-lesson-part h2" + (fresh ? ":not([data-bench-old])" : "")));
  };
  const questionShown = (fresh) => {
    const card = q("#cr-question");
    return !!(card && !card.hidden && q("#cr-q-options button" + (fresh ? ":not([data-bench-old])" : "")));
  };
  const conditions = {
    part: () => ({ shown: partShown(true) }),
    exercise: () => ({ shown: questionShown(true) }),
    reveal: () => {
      const r = q("#cr-q-result");
      return { shown: !!(r && /\b(right|wrong)\b/.test(r.className) && r.textContent.trim()) };
    },
    demo: () => demo(true),
    join: () => {
      const d = demo(false);
      const out = { plots: d.plots };
      if (partShown(false)) out.part = true;
      if (questionShown(false)) out.question = true;
      for (const k of ["inserted", "first_drawn", "in_view_drawn", "all_drawn"]) if (d[k]) out["demo_" + k] = true;
      if (out.part && out.question && d.shown) out.shown = true;
      return out;
    },
  };
  function check() {
    const kind = B.armed;
    if (!kind) return;
    const state = conditions[kind]();
    for (const [key, value] of Object.entries(state)) {
      if (value !== true || B.milestones[key]) continue;
      const mark = B.milestones[key] = { seen: now(), frame: null };
      requestAnimationFrame(() => {
        mark.frame = now();
        if (key === "shown" && B.armed === kind) {
          B.result = { kind, plots: state.plots ?? null, milestones: B.milestones };
          B.armed = null;
        }
      });
    }
  }
  B.arm = (kind) => {
    for (const sel of ["#cr-lesson-part h2", "#cr-q-options button", "#cr-demo-result .plot"]) {
      for (const el of document.querySelectorAll(sel)) el.dataset.benchOld = "1";
    }
    B.milestones = {};
    B.result = null;
    B.t0 = now();
    B.armed = kind;
    check();
  };
  // Scroll to the demonstration's last figure, as a reader does: ms until it is drawn and the page settled.
  B.scrollIn = () => new Promise((resolve) => {
    const plots = all("#cr-demo-result .plot").filter((p) => !p.hidden);
    const last = plots[plots.length - 1];
    if (!last) { resolve(null); return; }
    const t0 = now();
    last.scrollIntoView({ block: "center" });
    const poll = () => {
      if (drawnPlot(last) && settled()) requestAnimationFrame(() => resolve(now() - t0));
      else setTimeout(poll, 5);
    };
    poll();
  });
  new MutationObserver(check).observe(document, {
    subtree: true, childList: true, attributes: true,
    attributeFilter: ["class", "hidden", "aria-busy", "data-settled"],
  });
  setInterval(check, 100);
})();
"""


def lscpu_model() -> str:
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def machine(load_idle: tuple[float, ...], load_start: tuple[float, ...], load_end: tuple[float, ...]) -> dict[str, Any]:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return {"cpu": lscpu_model(), "avx512f": " avx512f" in flags, "cores": os.cpu_count(),
            "platform": platform.platform(), "python": platform.python_version(),
            "load_average_before_stack": [round(x, 2) for x in load_idle],
            "load_average_start": [round(x, 2) for x in load_start],
            "load_average_end": [round(x, 2) for x in load_end]}


def code_version(root: Path) -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True).stdout.strip()

    return {"root": str(root), "commit": git("rev-parse", "--short", "HEAD"),
            "uncommitted_files": len(git("status", "--porcelain", "--untracked-files=no").splitlines())}


# -- the database (a child process, in --root's code) ---------------------------------------------------


def prepare(late: int) -> dict[str, Any]:
    """Migrate a fresh database, collect static files, register the shipped models, make the users and their
    sign-in sessions, open the live session."""
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from webapp.classroom.services import session_create
    from webapp.registry.services import shipped_models_register

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off: this root's own files, hashed

    names = [m.name for m in shipped_models_register()]
    if MODEL not in names:
        raise SystemExit(f"{MODEL} did not register (shipped: {names})")
    teacher = User.objects.create_user("bench-teacher", password="!")
    teacher.groups.add(Group.objects.get_or_create(name="instructors")[0])
    usernames = ["bench-desktop", "bench-phone", *(f"bench-late-{d}-{i}" for d in DEVICES for i in range(late))]
    User.objects.bulk_create([User(username=name, password="!") for name in usernames])
    students = {u.username: u for u in User.objects.filter(username__in=usernames)}
    Group.objects.get_or_create(name="students")[0].user_set.add(*students.values())
    session = session_create(instructor=teacher, title="bench: console to screen", model_name=MODEL)
    return {"code": session.code, "teacher": signed_in(teacher),
            "students": {name: signed_in(user) for name, user in students.items()}}


# -- the browser ------------------------------------------------------------------------------------------


class Browser:
    def __init__(self, base: str, prepared: dict[str, Any]) -> None:
        from playwright.sync_api import sync_playwright

        self.base = base
        self.prepared = prepared
        self.playwright = sync_playwright().start()
        self.chromium = self.playwright.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                                        args=CHROMIUM_ARGS, headless=True)

    def page(self, device: str, session_key: str, throttle: int = 1) -> Any:
        """A fresh context (own cookies and cache) signed in with `session_key`, and its page."""
        spec = DEVICES[device]
        context = self.chromium.new_context(
            **spec, extra_http_headers={"Accept-Language": spec["locale"]}, bypass_csp=True)  # wait_for_function
        context.add_cookies([{"name": "sessionid", "value": session_key, "url": self.base}])
        context.add_init_script(PAGE_JS)
        page = context.new_page()
        page.set_default_timeout(STEP_TIMEOUT_MS)
        if throttle > 1:
            cdp = context.new_cdp_session(page)
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
            page.bench_cdp = cdp  # kept alive with the page
        return page

    def close(self) -> None:
        self.chromium.close()
        self.playwright.stop()


def wait_result(page: Any) -> dict[str, Any]:
    page.wait_for_function("() => window.__bench && window.__bench.result !== null", polling=100,
                           timeout=STEP_TIMEOUT_MS)
    return page.evaluate("() => window.__bench.result")


def frames_after(page: Any, t: float) -> list[list[Any]]:
    return page.evaluate("(t) => window.__bench.frames.filter((f) => f[1] >= t)", t)


def first_frame(frames: list[list[Any]], kinds: tuple[str, ...]) -> list[Any] | None:
    return next((f for f in frames if f[0] in kinds), None)


def blocked_ms(page: Any, start: float, end: float) -> float:
    """How long the page's main thread ran tasks of over 50 ms between two stamps (the page's clock)."""
    tasks = page.evaluate("() => window.__bench.longtasks")
    return round(sum(max(0.0, min(t + d, end) - max(t, start)) for t, d in tasks), 1)


def relative(milestones: dict[str, Any], t0: float) -> dict[str, float]:
    """Each milestone's painted frame (its detection when no frame came) in ms after t0."""
    return {key: round((mark["frame"] or mark["seen"]) - t0, 1) for key, mark in milestones.items()}


FRAME_OF = {"part": ("lesson",), "exercise": ("question",), "reveal": ("reveal",), "demo": ("demo",)}
CLICK = {"part": "lesson-show", "exercise": "ask-exercise", "reveal": "reveal", "demo": "demo-run"}


class Lesson:
    def __init__(self, browser: Browser, prepared: dict[str, Any]) -> None:
        self.browser = browser
        self.code = prepared["code"]
        self.students = prepared["students"]
        self.follow = f"{browser.base}/classroom/{self.code}/"
        self.console = browser.page("desktop", prepared["teacher"])
        self.console.goto(f"{browser.base}/classroom/{self.code}/console/")
        self.console.wait_for_selector("#cr-page[aria-busy=false]", state="attached")
        # Which console this is: the one before the reveal's reason line (46d9842) has no reveal-why.
        self.console_has_reveal_why = self.console.locator("[data-testid=reveal-why]").count() > 0
        self.seated = {"desktop": browser.page("desktop", self.students["bench-desktop"]),
                       "phone": browser.page("phone", self.students["bench-phone"], THROTTLE["phone"])}
        for page in self.seated.values():
            page.goto(self.follow)
            page.wait_for_selector("#cr-page[aria-busy=false]", state="attached")
        self.late_used = 0
        self.samples: list[dict[str, Any]] = []

    def step(self, kind: str, record: bool, **extra: Any) -> None:
        """Arm both students' pages, click the console's control, wait for both screens to show the step."""
        for page in self.seated.values():
            page.evaluate("(kind) => window.__bench.arm(kind)", kind)
        before = self.console.evaluate("() => window.__bench.clicks.length")
        self.console.get_by_test_id(CLICK[kind]).click()
        clicks = self.console.evaluate("() => window.__bench.clicks")
        testid, t_click = clicks[before] if len(clicks) > before else (None, None)
        if testid != CLICK[kind]:
            raise RuntimeError(f"the console's click on {CLICK[kind]} was not seen ({clicks[before:]})")
        # The console's own answer first: the step's frame, or its refusal.
        self.console.wait_for_function(
            "([t, kinds]) => window.__bench.frames.some((f) => f[1] >= t && kinds.includes(f[0]))",
            arg=[t_click, [*FRAME_OF[kind], "error", "demo_refused"]], polling=100, timeout=STEP_TIMEOUT_MS)
        answer = first_frame(frames_after(self.console, t_click), (*FRAME_OF[kind], "error", "demo_refused"))
        if answer[0] not in FRAME_OF[kind]:
            raise RuntimeError(f"the console's {kind} was refused: {answer} "
                               f"({self.console.inner_text('#cr-status')!r})")
        for device, page in self.seated.items():
            result = wait_result(page)
            frames = frames_after(page, t_click)
            arrived = first_frame(frames, FRAME_OF[kind])
            shown = result["milestones"]["shown"]
            sample = {"kind": kind, "device": device, **extra,
                      "on_screen_ms": relative(result["milestones"], t_click)["shown"],
                      "milestones_ms": relative(result["milestones"], t_click),
                      "frame_ms": round(arrived[1] - t_click, 1) if arrived else None,
                      "long_tasks_ms": blocked_ms(page, t_click, shown["frame"] or shown["seen"])}
            if kind == "demo":
                sample["plots"] = result["plots"]
                sample["cached"] = arrived[3] if arrived else None
                sample["worker_frame_at_console_ms"] = None
            if record:
                self.samples.append(sample)
            print(f"  {kind:<9} {device:<7} {sample['on_screen_ms']:8.0f} ms  (frame {sample['frame_ms']} ms)",
                  flush=True)
        if kind == "demo" and record:  # the console's own `demo` frame: the worker's time plus the socket's
            console_frames = frames_after(self.console, t_click)
            at_console = first_frame(console_frames, ("demo",))
            for sample in self.samples[-2:]:
                sample["worker_frame_at_console_ms"] = round(at_console[1] - t_click, 1) if at_console else None

    def answer(self) -> None:
        for page in self.seated.values():
            page.locator("#cr-q-options button").first.click()
            page.wait_for_function("() => document.getElementById('cr-q-result').textContent.trim() !== ''",
                                   polling=100)

    def join(self, device: str, record: bool, reload: bool) -> None:
        """A late joiner (a fresh context, nothing cached) or a seated student's reload: from navigation start to
        the room on screen."""
        if reload:
            page = self.seated[device]
            page.reload(wait_until="commit")
        else:
            key = self.students[f"bench-late-{device}-{self.late_used}"]
            page = self.browser.page(device, key, THROTTLE[device])
            page.goto(self.follow, wait_until="commit")
        result = wait_result(page)
        origin = page.evaluate("() => performance.timeOrigin")
        nav = page.evaluate("""() => { const n = performance.getEntriesByType('navigation')[0];
            return n ? {response_end: n.responseEnd, dom_content_loaded: n.domContentLoadedEventEnd,
                        load: n.loadEventEnd} : {}; }""")
        scripts = page.evaluate("""() => performance.getEntriesByType('resource')
            .filter((r) => r.initiatorType === 'script' && r.decodedBodySize > 100000)
            .map((r) => [r.name.split('/').pop(), r.decodedBodySize, Math.round(r.responseEnd)])""")
        session = first_frame(frames_after(page, 0), ("session",))
        kind = "reload" if reload else "late_join"
        milestones = relative(result["milestones"], origin)
        shown = result["milestones"]["shown"]
        sample = {"kind": kind, "device": device, "on_screen_ms": milestones["shown"], "milestones_ms": milestones,
                  "navigation_ms": {k: round(v, 1) for k, v in nav.items()}, "plots": result["plots"],
                  "frame_ms": round(session[1] - origin, 1) if session else None,
                  "long_tasks_ms": blocked_ms(page, origin, shown["frame"] or shown["seen"]),
                  "large_scripts": scripts}
        if reload and THROTTLE[device] > 1:
            sample["throttled"] = page.evaluate("""() => { const t = performance.now(); let x = 0;
                for (let i = 0; i < 2e7; i++) x += Math.sqrt(i); return performance.now() - t; }""")
        if record:
            self.samples.append(sample)
        print(f"  {kind:<9} {device:<7} {sample['on_screen_ms']:8.0f} ms  (session frame {sample['frame_ms']} ms)",
              flush=True)
        if not reload:
            scrolled = page.evaluate("() => window.__bench.scrollIn()")
            if record and scrolled is not None:
                self.samples.append({"kind": "scroll_in", "device": device, "on_screen_ms": round(scrolled, 1),
                                     "frame_ms": None, "long_tasks_ms": None})
            print(f"  scroll_in {device:<7} {scrolled or 0:8.0f} ms  (the late joiner to the last figure)", flush=True)
            page.context.close()

    def lesson_round(self, n: int, record: bool) -> None:
        self.console.get_by_test_id("lesson-part-picker").select_option(f"{PART[0]}#{PART[1]}")
        self.step("part", record)
        sentence = SENTENCES[n % len(SENTENCES)]
        self.console.get_by_test_id("demo-sentence").fill(sentence)
        self.step("demo", record, sentence=sentence)
        self.console.get_by_test_id("exercise-picker").select_option(EXERCISES[n % len(EXERCISES)])
        self.step("exercise", record, exercise=EXERCISES[n % len(EXERCISES)])
        self.answer()
        for device in DEVICES:
            self.join(device, record, reload=False)
        self.late_used += 1
        for device in DEVICES:
            self.join(device, record, reload=True)
        self.step("reveal", record)


def throttle_check(browser: Browser, prepared: dict[str, Any]) -> dict[str, float]:
    """The same loop on an unthrottled and a throttled page: the throttle's measured factor."""
    loop = "() => { const t = performance.now(); let x = 0; for (let i = 0; i < 2e7; i++) x += Math.sqrt(i);" \
           " return performance.now() - t; }"
    out = {}
    for device in DEVICES:
        page = browser.page(device, prepared["teacher"], THROTTLE[device])
        page.goto(browser.base + "/healthz")
        out[device] = round(statistics.median(page.evaluate(loop) for _ in range(3)), 1)
        page.context.close()
    return out


def summarize(samples: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """p50 / max / min of each step kind on each device; with the p50 of its frame's arrival (for a join: the
    session frame's) and of the main thread's long tasks until it was on screen."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    for kind in STEP_KINDS:
        for device in DEVICES:
            rows = [s for s in samples if s["kind"] == kind and s["device"] == device]
            if not rows:
                continue
            values = [s["on_screen_ms"] for s in rows]
            frames = [s["frame_ms"] for s in rows if s.get("frame_ms") is not None]
            blocked = [s["long_tasks_ms"] for s in rows if s.get("long_tasks_ms") is not None]
            table.setdefault(kind, {})[device] = {
                "p50": round(statistics.median(values)), "max": round(max(values)), "min": round(min(values)),
                "n": len(values), "frame_p50": round(statistics.median(frames)) if frames else None,
                "long_tasks_p50": round(statistics.median(blocked)) if blocked else None}
    return table


GOALS_MS = {"part": (1000, 1000), "exercise": (1000, 1000), "reveal": (1000, 1000), "demo": (2000, 4000),
            "late_join": (2000, 2000), "reload": (2000, 2000), "scroll_in": (1000, 1000)}


def print_table(label: str, table: dict[str, Any], info: dict[str, Any]) -> None:
    m = info["machine"]
    print(f"\n{label}: {info['code']['root']} @ {info['code']['commit']} "
          f"({info['code']['uncommitted_files']} files changed since)")
    print(f"CPU {m['cpu']}, {m['cores']} cores, AVX-512 {'yes' if m['avx512f'] else 'no'}; load average "
          f"{m['load_average_before_stack']} before the stack started, {m['load_average_start']} at the first measured "
          f"step, {m['load_average_end']} at the last; throttle x{info['throttle_check']['factor']}")
    print("on screen, ms after the console's click (joins: after navigation start); frame: its frame's arrival;"
          " blocked: main-thread long tasks until then (p50)")
    print(f"{'step':<10} {'desktop p50':>11} {'max':>6} {'frame':>6} {'blocked':>7}  {'phone p50':>9} {'max':>6}"
          f" {'frame':>6} {'blocked':>7}   goal desktop / phone")
    for kind in STEP_KINDS:
        row = table.get(kind, {})
        cells = []
        for device, width in (("desktop", 11), ("phone", 9)):
            c = row.get(device)
            cells.append(f"{c['p50']:>{width}} {c['max']:>6} {c['frame_p50'] if c['frame_p50'] is not None else '-':>6}"
                         f" {c['long_tasks_p50'] if c['long_tasks_p50'] is not None else '-':>7}" if c
                         else " " * (width + 22))
        goal = GOALS_MS[kind]
        print(f"{kind:<10} {cells[0]}  {cells[1]}   <= {goal[0]} / <= {goal[1]}")


def merge(paths: list[Path], out: Path | None) -> int:
    """Pool several runs' samples by label (before, after) and print the step kinds side by side."""
    runs = [json.loads(path.read_text()) for path in paths]
    labels = list(dict.fromkeys(run["label"] for run in runs))
    pooled = {label: summarize([s for run in runs if run["label"] == label for s in run["samples"]])
              for label in labels}
    print("runs, in the order they ran:")
    for path, run in zip(paths, runs, strict=True):
        m = run["machine"]
        print(f"  {run['label']:<8} {run['code']['commit']} {path.name}: load {m['load_average_before_stack'][0]}"
              f" before the stack, {m['load_average_start'][0]} -> {m['load_average_end'][0]} measuring,"
              f" throttle x{run['throttle_check']['factor']}")
    counts = ", ".join(f"{label}: {sum(run['label'] == label for run in runs)} runs" for label in labels)
    print(f"\np50 / max in ms, pooled over {counts}")
    head = "".join(f" {device + ' ' + label:>22}" for device in DEVICES for label in labels)
    print(f"{'step':<10}{head}   goal desktop / phone")
    for kind in STEP_KINDS:
        cells = ""
        for device in DEVICES:
            for label in labels:
                c = pooled[label].get(kind, {}).get(device)
                cells += f" {(str(c['p50']) + ' / ' + str(c['max'])) if c else '-':>22}"
        print(f"{kind:<10}{cells}   <= {GOALS_MS[kind][0]} / <= {GOALS_MS[kind][1]}")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"pooled_ms": pooled, "goals_ms": runs[0]["goals_ms"], "runs": runs}, indent=1,
                                  ensure_ascii=False) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--root", type=Path, default=ROOT, help="the code to run (a git worktree of another commit)")
    parser.add_argument("--label", default="", help="a name for this run in the printout and JSON (before, after)")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "classroom_steps.json")
    parser.add_argument("--logs", type=Path, help="copy the web and worker logs into this folder")
    parser.add_argument("--merge", type=Path, nargs="+", metavar="RUN_JSON",
                        help="pool these runs' samples by label and print them side by side (writes --json if given)")
    parser.add_argument("--prepare", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.merge:
        return merge(args.merge, args.json if "--json" in sys.argv else None)
    root = args.root.resolve()
    if args.prepare is not None:  # the child, in --root's code, that sets up the database
        sys.path.insert(0, str(root))
        print(json.dumps(prepare(args.prepare)))
        return 0

    load_idle = os.getloadavg()  # before this run's own processes start
    sys.path.insert(0, str(ROOT))
    from stream import wait_worker

    from scripts.redis_embedded import EmbeddedRedis

    data_dir = Path(tempfile.mkdtemp(prefix="encdec-steps-"))
    redis = EmbeddedRedis(data_dir / "run")
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="webapp.settings.dev", DEBUG="0", SECRET_KEY="bench-only",
               ALLOWED_HOSTS="127.0.0.1,localhost", DATA_DIR=str(data_dir), REDIS_URL=redis.start(),
               PYTHONPATH=str(root), PYTHONUNBUFFERED="1")
    os.environ.update({k: v for k, v in env.items() if k != "PYTHONPATH"})
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []
    browser = None

    def start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen(argv, cwd=root, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                                start_new_session=True)

    try:
        prepared = json.loads(subprocess.run(
            [sys.executable, __file__, "--prepare", str(args.repeats + 1), "--root", str(root)], cwd=root, env=env,
            check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        procs.append(start([str(BIN / "python"), "-m", "webapp.server", "-b", "127.0.0.1", "-p", str(port),
                            "webapp.asgi:application"], data_dir / "daphne.log"))
        procs.append(start([str(BIN / "celery"), "-A", "webapp", "worker", "-Q", "interactive,demonstrations,experiments",
                            "--pool", "threads", "--concurrency", "4", "--without-gossip", "--without-mingle",
                            "--loglevel", "WARNING"], data_dir / "worker.log"))
        wait_http(port)
        wait_worker(env["REDIS_URL"])
        browser = Browser(base, prepared)
        throttle = throttle_check(browser, prepared)
        lesson = Lesson(browser, prepared)
        print("warm-up round (not measured)", flush=True)
        lesson.lesson_round(0, record=False)
        load_start = os.getloadavg()
        started = time.monotonic()
        for n in range(1, args.repeats + 1):
            print(f"round {n} of {args.repeats}", flush=True)
            lesson.lesson_round(n, record=True)
        load_end = os.getloadavg()
        took = time.monotonic() - started
    finally:
        if browser is not None:
            browser.close()
        for proc in procs:
            stop(proc)
        redis.stop()
        logs_kept(data_dir, args.logs)
        shutil.rmtree(data_dir, ignore_errors=True)
    table = summarize(lesson.samples)
    result = {"label": args.label, "code": code_version(root), "machine": machine(load_idle, load_start, load_end),
              "throttle_check": {"loop_ms": throttle, "factor": round(throttle["phone"] / throttle["desktop"], 2)},
              "measured_s": round(took), "repeats": args.repeats,
              "setup": {"model": MODEL, "part": "#".join(PART), "demo": DEMO_KIND, "exercises": list(EXERCISES),
                        "devices": {d: {**DEVICES[d], "cpu_throttling_rate": THROTTLE[d]} for d in DEVICES},
                        "stack": "1 daphne, 1 celery worker (threads x4) on interactive,demonstrations,experiments"},
              "goals_ms": {k: {"desktop": v[0], "phone": v[1]} for k, v in GOALS_MS.items()},
              "console_has_reveal_why": lesson.console_has_reveal_why,
              "table_ms": table, "samples": lesson.samples}
    print_table(args.label or "run", table, result)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
