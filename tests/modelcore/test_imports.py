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


def test_decode_params_load_no_torch_and_the_package_names_still_import() -> None:
    code = """
import sys
from modelcore.decoding.params import DecodeParams
print("torch" in sys.modules)
from modelcore import EncoderDecoder, ModelConfig
from modelcore.decoding import BatchDecoder, DecodeParams as Again
print("torch" in sys.modules, Again is DecodeParams, EncoderDecoder.__name__, BatchDecoder.__module__)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "True", "EncoderDecoder", "modelcore.decoding.batch"]
