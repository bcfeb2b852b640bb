"""scripts/device_check.sh, the GPU machine's one prepared check: without CUDA it says so and exits 0; its checks run
for real here with --device cpu (the CPU against itself), so the day a GPU is lent they are known to work."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_without_cuda_it_says_so_and_exits_0():
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("PYTHON", None)
    run = subprocess.run(["bash", "scripts/device_check.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "no CUDA device here" in run.stdout


@pytest.mark.slow
def test_every_check_runs_and_writes_its_figures(tmp_path):
    run = subprocess.run([sys.executable, "scripts/device_check.py", "--device", "cpu", "--quick", "--out",
                          str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "device_check.json").read_text())
    equivalence = report["equivalence"]
    assert equivalence["ok"] and equivalence["same_greedy_tokens"] and equivalence["max_logit_diff"] == 0.0
    assert equivalence["decodes_compared"] == ["cpu", "cpu_no_cache", "device", "device_no_cache"]
    rows = report["decode"]["rows"]
    assert [row["batch"] for row in rows] == [1, 16]
    assert all(row["cpu_tokens_per_s"] > 0 and row["device_tokens_per_s"] > 0 for row in rows)
    train = report["train"]
    assert train["ok"] and all(train[arm]["last_loss"] < train[arm]["first_loss"] for arm in ("fp32", "bf16"))
    assert train["last_loss_gap"] == 0.0  # on a CPU modelcore's step takes no autocast: the two arms are one
    assert report["stream"]["ok"] is None and "CUDA" in report["stream"]["skipped"]
    assert "all passed" in run.stdout
