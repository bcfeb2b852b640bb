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
    """Whether decoding should take the compiled step when it is built: on CPUs with AVX-512, where it was
    measured 2-2.6x faster than MKL's addmm. Its AVX2 clone ran 5-28x slower than addmm (docs/benchmarks.md),
    so elsewhere the Python step serves unless MODELCORE_NATIVE=force."""
    return os.environ.get("MODELCORE_NATIVE", "").strip().lower() == "force" or _avx512()


@functools.lru_cache(maxsize=1)
def _avx512() -> bool:
    import torch

    return torch.backends.cpu.get_cpu_capability().startswith("AVX512")


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
    return load(name=name, sources=[str(SOURCE)], extra_cflags=["-O3"], verbose=verbose)


def build_name() -> str:
    """The extension's name, which names its folder in the cache: one per version of step.cpp.

    Two checkouts on one machine (or a build racing an edit) then never overwrite each other's
    build: torch would otherwise load whichever of them compiled last under the shared name.
    """
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    return f"{NAME}_{digest}"
