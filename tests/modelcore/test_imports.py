"""modelcore stands alone: importing all of it pulls in no web framework."""

from __future__ import annotations

import subprocess
import sys


def test_modelcore_imports_no_web_stack() -> None:
    code = """
import importlib, pkgutil, sys
import modelcore
for info in pkgutil.walk_packages(modelcore.__path__, "modelcore."):
    if info.name != "modelcore.__main__":
        importlib.import_module(info.name)
loaded = sorted({name.split(".")[0] for name in sys.modules})
print(" ".join(loaded))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "torch" in out and "modelcore" in out
    assert not {"django", "channels", "celery", "plotly"} & set(out)
