"""Tests wait on a condition, not a clock: no fixed sleep under tests/ outside a poll loop.

A fixed sleep is `time.sleep`, `asyncio.sleep` or Playwright's `wait_for_timeout` of 0.1 s or more (or of a value
not written as a number). One inside a `while` loop is a poll loop's tick. A wait that asserts an absence ("nothing
arrives in X s") stays, marked `# absence: <why>` on its line (docs/development.md, "How tests wait").
`python tests/test_no_fixed_sleeps.py` lists them.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MARKER = "# absence:"
SHORTEST_S = 0.1


@dataclass(frozen=True)
class Sleep:
    path: str
    line: int
    text: str
    absence: bool


def _seconds(call: ast.Call, milliseconds: bool) -> float | None:
    """The call's wait in seconds when written as a number; None when computed."""
    if not call.args or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, int | float):
        return None
    return float(call.args[0].value) / (1000 if milliseconds else 1)


def _sleep_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """The names the file gives the modules with a sleep (`import time as clock`) and their sleeps themselves."""
    modules, sleeps = {"time", "asyncio"}, {"sleep"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names if a.name in ("time", "asyncio") and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module in ("time", "asyncio"):
            sleeps |= {a.asname or a.name for a in node.names if a.name == "sleep"}
    return modules, sleeps


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str, lines: list[str], tree: ast.AST) -> None:
        self.path, self.lines, self.loops, self.found = path, lines, 0, []
        self.modules, self.sleeps = _sleep_names(tree)

    def _kind(self, call: ast.Call) -> str | None:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "wait_for_timeout":
            return "wait_for_timeout"
        if isinstance(func, ast.Attribute) and func.attr == "sleep" and isinstance(func.value, ast.Name) \
                and func.value.id in self.modules:
            return "sleep"
        return "sleep" if isinstance(func, ast.Name) and func.id in self.sleeps else None

    def _scope(self, node: ast.AST) -> None:  # a function's body is not its caller's loop
        outer, self.loops = self.loops, 0
        self.generic_visit(node)
        self.loops = outer

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _scope

    def visit_While(self, node: ast.While) -> None:
        self.loops += 1
        self.generic_visit(node)
        self.loops -= 1

    def visit_Call(self, node: ast.Call) -> None:
        kind = self._kind(node)
        seconds = _seconds(node, milliseconds=kind == "wait_for_timeout")
        if kind and self.loops == 0 and (seconds is None or seconds >= SHORTEST_S):
            text = self.lines[node.lineno - 1]
            self.found.append(Sleep(self.path, node.lineno, text.strip(), MARKER in text))
        self.generic_visit(node)


def fixed_sleeps(root: Path = TESTS) -> list[Sleep]:
    found: list[Sleep] = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        finder = _Finder(str(path.relative_to(root.parent)), source.splitlines(), tree)
        finder.visit(tree)
        found.extend(finder.found)
    return found


def test_no_fixed_sleep_outside_a_poll_loop_unless_it_waits_for_an_absence() -> None:
    unmarked = [f"{s.path}:{s.line}: {s.text}" for s in fixed_sleeps() if not s.absence]
    assert not unmarked, ("wait on the condition the sleep stands for (tests/fixtures/waiting.py), or mark an absence "
                          f"with '{MARKER} <why>':\n" + "\n".join(unmarked))


def test_the_check_finds_a_fixed_sleep_and_lets_a_poll_loop_and_a_marked_absence_pass(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import asyncio, time\n"
        "def test_a(page):\n"
        "    import time as clock\n"
        "    from asyncio import sleep as nap\n"
        "    clock.sleep(1)\n"
        "    nap(0.2)\n"
        "    time.sleep(0.5)\n"
        "    page.wait_for_timeout(300)\n"
        "    time.sleep(0.02)\n"
        "    while not done():\n"
        "        time.sleep(0.2)\n"
        f"    time.sleep(0.3)  {MARKER} a second frame would be here by now\n"
        "async def test_b(delay):\n"
        "    await asyncio.sleep(delay)\n",
        encoding="utf-8")
    found = fixed_sleeps(tmp_path)
    assert [(s.line, s.absence) for s in found] == [(5, False), (6, False), (7, False), (8, False), (12, True),
                                                    (14, False)]


if __name__ == "__main__":
    for sleep in fixed_sleeps():
        print(f"{sleep.path}:{sleep.line}: {'(absence) ' if sleep.absence else ''}{sleep.text}")
    sys.exit(0)
