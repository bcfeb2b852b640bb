"""The ASGI entry point the web process (daphne) loads."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_web_process_keeps_what_it_loaded_at_start_out_of_full_collections() -> None:
    # A full collection over everything loaded at start paused every stream for 115-140 ms; frozen,
    # those objects are never walked again, and what the collector still sees is what serving made.
    code = "import gc, webapp.asgi; print(gc.get_freeze_count(), len(gc.get_objects()))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ), capture_output=True, text=True,
                         check=True, timeout=120)
    frozen, tracked = map(int, out.stdout.split())
    assert frozen > 100_000  # Django, Channels and torch
    assert tracked < frozen / 20
