"""The web process's GIL switch interval: Python's default unless WEB_GIL_SWITCH_MS says otherwise, a bad value refused."""
from __future__ import annotations

import subprocess
import sys

import pytest

from webapp.gil import GIL_SWITCH_MS, gil_switch_interval


def test_the_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("WEB_GIL_SWITCH_MS", raising=False)
    assert gil_switch_interval() == GIL_SWITCH_MS / 1000
    monkeypatch.setenv("WEB_GIL_SWITCH_MS", "0.5")
    assert gil_switch_interval() == 0.0005


@pytest.mark.parametrize("value", ["fast", "0", "500", "nan"])
def test_a_bad_interval_is_refused_with_one_line(monkeypatch, value):
    monkeypatch.setenv("WEB_GIL_SWITCH_MS", value)
    with pytest.raises(SystemExit) as refused:
        gil_switch_interval()
    message = str(refused.value.code)
    assert message.startswith("WEB_GIL_SWITCH_MS must be") and "\n" not in message


def test_a_bad_interval_stops_the_server_with_one_line():
    result = subprocess.run([sys.executable, "-m", "webapp.server", "webapp.asgi:application"],
                            env={"WEB_GIL_SWITCH_MS": "fast", "PATH": ""}, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "WEB_GIL_SWITCH_MS must be" in result.stderr
