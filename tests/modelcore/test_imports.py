"""modelcore stands alone: importing all of it pulls in no web framework."""

from __future__ import annotations

import os
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


def test_the_web_process_loads_no_torch() -> None:
    """daphne imports the ASGI app, every URL's view and every app's admin: none of it needs torch (about 2 s of
    start-up and 150 MB per web process). Torch loads in the workers, or on the first request that needs it."""
    code = """
import sys
import django
django.setup()
import webapp.asgi
from django.urls import get_resolver

def walk(patterns):
    for pattern in patterns:
        walk(getattr(pattern, "url_patterns", []))
        getattr(pattern, "callback", None)

walk(get_resolver().url_patterns)
print(len(sys.modules) > 500, "django" in sys.modules, "torch" in sys.modules)
"""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings.test"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout.split()
    assert out == ["True", "True", "False"]


def test_settings_folders_and_the_cli_s_parser_load_no_torch_and_the_package_names_still_import() -> None:
    code = """
import sys
from modelcore.experiments.spec import RunConfig, canonical_params
from modelcore.training.config import TrainConfig
from modelcore.folder import read_summary
from modelcore.cli import build_parser  # the CLI answers --help and bad input before torch loads
build_parser()
canonical_params("compare", {"steps": 10})
TrainConfig(preset="tiny", steps=5)
print("torch" in sys.modules)
from modelcore.experiments import RunConfig as Again, train_probe
from modelcore.training import TrainConfig as Same, train
from modelcore.checkpoint import read_summary as Read
print("torch" in sys.modules, Again is RunConfig, Same is TrainConfig, Read is read_summary, train_probe.__module__)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "True", "True", "True", "modelcore.experiments.runs"]
