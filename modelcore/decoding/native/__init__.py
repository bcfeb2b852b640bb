"""The native decoder step (step.cpp), compiled once per machine with torch's C++ extension tools.

    python -m modelcore.decoding.native     # build it now (make setup does), print where it went

`native_step()` returns the compiled module, or None when it cannot be had: the C++ toolchain
is missing or fails, or MODELCORE_NATIVE=0. Decoding then takes the Python step, which gives
the same tokens (tests compare the two); only the speed differs. The build lands in torch's
extension cache (TORCH_EXTENSIONS_DIR, by default ~/.cache/torch_extensions), a folder per version
of step.cpp, and takes about a minute on two cores; later processes load it in milliseconds.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("step.cpp")
NAME = "modelcore_decoder_step"


def enabled() -> bool:
    return os.environ.get("MODELCORE_NATIVE", "1").strip().lower() not in ("0", "false", "no", "off")


def fast_here() -> bool:
    """Whether decoding should take the compiled step when it is built: where its kernels' ISA (isa()) is one
    measured faster than the Python step (FAST_ISAS), unless MODELCORE_NATIVE=0; always with MODELCORE_NATIVE=force."""
    switch = os.environ.get("MODELCORE_NATIVE", "").strip().lower()
    return switch == "force" or (enabled() and isa() in FAST_ISAS)


# The kernels' ISAs where the step was measured faster than the Python step (docs/benchmarks.md): AVX-512,
# 2-2.6x faster than MKL's addmm, and AVX2 since its kernels hold their sums in AVX2 registers (issue 49).
# The SSE-only baseline was never measured.
FAST_ISAS = frozenset({"avx512", "avx2"})


def isa() -> str:
    """The ISA whose kernels the step runs here, by step.cpp's own rule: MODELCORE_ISA (avx512, avx2, baseline)
    when set, else torch's capability (which ATEN_CPU_CAPABILITY forces), so that forcing torch's kernels to
    AVX2 on an AVX-512 CPU takes this host's AVX2 path for both."""
    forced = os.environ.get("MODELCORE_ISA", "").strip().lower()
    if forced not in ("", "auto"):
        if forced not in ("avx512", "avx2", "baseline", "default"):
            raise ValueError(f"MODELCORE_ISA={forced!r}: avx512, avx2, baseline or auto")
        return "baseline" if forced == "default" else forced
    return _torch_isa()


@functools.lru_cache(maxsize=1)
def _torch_isa() -> str:
    import torch

    capability = torch.backends.cpu.get_cpu_capability()  # "AVX512", "AVX2", "DEFAULT", ... (ARM: others)
    return {"AVX512": "avx512", "AVX2": "avx2"}.get(capability, "baseline")


@functools.lru_cache(maxsize=1)
def native_step() -> ModuleType | None:
    """The compiled step, built on first use if needed; None (and one warning) when unavailable."""
    if not enabled():
        return None
    try:
        return build()
    except Exception as error:  # a missing compiler must not stop decoding: the Python step serves
        log.warning("native decoder step unavailable (%s); decoding takes the Python step", str(error)[:300])
        return None


def build(verbose: bool = False) -> ModuleType:
    """Compile (or load the cached build of) step.cpp; raises when the toolchain fails."""
    import importlib.util

    from torch.utils.cpp_extension import _get_build_directory, load

    name = build_name()
    built = Path(_get_build_directory(name, verbose)) / f"{name}.so"
    if built.exists():
        # Import the build directly: torch's load() takes a lock file in the build folder even
        # to load, and a process killed while holding it (a worker stopped by SIGKILL) left every
        # later process waiting on it for ever. The name holds step.cpp's hash, so it is current.
        spec = importlib.util.spec_from_file_location(name, built)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    return load(name=name, sources=[str(SOURCE)], extra_cflags=CFLAGS, extra_ldflags=LDFLAGS, verbose=verbose)


# -fopenmp: step.cpp's at::parallel_for is a header template whose threads are `#pragma omp parallel`, compiled
# into the extension itself; without the flag the pragma is ignored and every projection ran on one thread
# (issue 49: on a 2-core AVX2 host the native step was no faster than the Python step at batch 16, whose
# addmm uses both cores). The extension's libgomp.so.1 is the one torch has loaded already (same soname),
# so both share one thread pool and torch.set_num_threads governs both.
CFLAGS = ["-O3", "-fopenmp"]
LDFLAGS = ["-fopenmp"]


def build_name() -> str:
    """The extension's name, which names its folder in the cache: one per version of step.cpp and its flags.

    Two checkouts on one machine (or a build racing an edit) then never overwrite each other's
    build: torch would otherwise load whichever of them compiled last under the shared name.
    """
    digest = hashlib.sha256(SOURCE.read_bytes() + repr((CFLAGS, LDFLAGS)).encode()).hexdigest()[:12]
    return f"{NAME}_{digest}"
