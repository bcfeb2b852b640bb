"""The native step's kernels follow the ISA forced on the process: MODELCORE_ISA, else torch's ATEN_CPU_CAPABILITY."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from modelcore.decoding import native

ROOT = Path(__file__).resolve().parents[3]

# Run in a fresh process: torch reads ATEN_CPU_CAPABILITY, and the step its variables, once.
PROBE = """
import json, torch
from modelcore.decoding import CachedStepper, native
from tests.fixtures.decoding import SRC, done, run, tiny_model
from modelcore.decoding import DecodeParams
model = tiny_model("post", seed=13)
requests = [(SRC, DecodeParams(max_len=9, min_len=9)), (SRC[2:], DecodeParams(max_len=9, min_len=9))]
python_ids = [e.ids for e in done(run(model, requests, cache=True)[0]).values()]
native_ids = [e.ids for e in done(run(model, requests, cache=True, native=True)[0]).values()]
print(json.dumps({"torch": torch.backends.cpu.get_cpu_capability(), "isa": native.isa(),
                  "kernels": native.native_step().isa(), "fast": native.fast_here(),
                  "decodes_natively": CachedStepper(model).native, "same_tokens": python_ids == native_ids}))
"""


def _probe(**environment: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in ("MODELCORE_ISA", "ATEN_CPU_CAPABILITY", "MODELCORE_NATIVE")}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env={**env, **environment}, capture_output=True,
                          text=True, timeout=300, check=True)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() != "AVX512",
                    reason="an AVX-512 CPU forces the AVX2 path; an AVX2 one is on it already")
def test_forcing_torch_to_avx2_forces_the_native_step_to_avx2_and_its_tokens_stay_the_python_steps() -> None:
    forced = _probe(ATEN_CPU_CAPABILITY="avx2")
    assert forced["torch"] == "AVX2" and forced["isa"] == forced["kernels"] == "avx2"
    assert forced["fast"] == forced["decodes_natively"] == ("avx2" in native.FAST_ISAS)
    assert forced["same_tokens"]
    own = _probe(MODELCORE_ISA="avx2", MODELCORE_NATIVE="force")  # torch on AVX-512, the step on AVX2
    assert own["torch"] == "AVX512" and own["kernels"] == "avx2" and own["decodes_natively"] and own["same_tokens"]


def test_the_isa_is_read_from_modelcore_isa_and_a_wrong_name_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODELCORE_ISA", "AVX2")
    assert native.isa() == "avx2" and native.fast_here() == ("avx2" in native.FAST_ISAS)
    monkeypatch.setenv("MODELCORE_ISA", "avx513")
    with pytest.raises(ValueError, match="avx512, avx2, baseline or auto"):
        native.isa()
    module = native.native_step()
    assert module is not None
    with pytest.raises(RuntimeError, match="unknown ISA 'avx513'"):
        module.use_isa("avx513")


def test_a_torch_capability_of_another_cpu_family_leaves_the_choice_to_the_cpu() -> None:
    # ATEN_CPU_CAPABILITY also names ARM's and POWER's kernels; the step must not refuse to run on them.
    chosen = "from modelcore.decoding.native import native_step; print(native_step().isa())"
    env = {k: v for k, v in os.environ.items() if k not in ("MODELCORE_ISA", "ATEN_CPU_CAPABILITY")}
    own, other = (subprocess.run([sys.executable, "-c", chosen], cwd=ROOT, env={**env, **extra}, capture_output=True,
                                 text=True, timeout=300, check=True).stdout.split()[-1]
                  for extra in ({}, {"ATEN_CPU_CAPABILITY": "sve256"}))
    assert own == other != ""
