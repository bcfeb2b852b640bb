"""The import rules of .importlinter hold: modelcore below webapp, each app's tasks/services direction, no circles."""
from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).parent / "lint-imports"


def lint(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT), "--no-cache"], cwd=folder, capture_output=True, text=True)


def contract_name(key: str) -> str:
    rules = configparser.ConfigParser()
    rules.read(ROOT / ".importlinter")
    return rules[f"importlinter:contract:{key}"]["name"]


def test_every_import_contract_is_kept() -> None:
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


# An import that closes a circle, even inside a function, in a copy of the tree; the contract it breaks.
BREAKS = {
    "modelcore imports webapp": ("modelcore/config.py", "import webapp.site_pages  # noqa: F401\n", "modelcore-alone"),
    "experiment services import their tasks": (
        "webapp/experiments/services.py",
        "def _dispatch() -> None:\n    from webapp.experiments import tasks  # noqa: F401\n",
        "experiments-direction",
    ),
    "playground services import their tasks": (
        "webapp/playground/services.py",
        "def _dispatch() -> None:\n    from webapp.playground.tasks import decode  # noqa: F401\n",
        "playground-direction",
    ),
    "the sockets' base imports operations": (
        "webapp/realtime/feed.py",
        "def _runs() -> None:\n    from webapp.ops import runs  # noqa: F401\n",
        "shared-direction",
    ),
    "operations import an area's app": (
        "webapp/ops/health.py",
        "def _area() -> None:\n    from webapp.classroom import errors  # noqa: F401\n",
        "shared-below-areas",
    ),
}


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """modelcore/, webapp/ (their Python files) and .importlinter, copied: a tree the test may break."""
    for package in ("modelcore", "webapp"):
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=lambda folder, names: [n for n in names if not n.endswith(".py")
                                                      and not (Path(folder) / n).is_dir()])
    shutil.copy(ROOT / ".importlinter", tmp_path)
    return tmp_path


def test_the_copied_tree_keeps_every_contract(tree_copy: Path) -> None:
    done = lint(tree_copy)
    assert done.returncode == 0 and "0 broken" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.parametrize("name", list(BREAKS))
def test_an_import_that_breaks_the_direction_fails_the_check_naming_the_rule(tree_copy: Path, name: str) -> None:
    module, line, contract = BREAKS[name]
    with (tree_copy / module).open("a", encoding="utf-8") as source:
        source.write("\n\n" + line)
    done = lint(tree_copy)
    assert done.returncode != 0, done.stdout[-4000:]
    broken = " ".join(done.stdout.split("Broken contracts", 1)[-1].split())  # the report wraps long names
    assert contract_name(contract) in broken, done.stdout[-4000:]
