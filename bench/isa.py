"""Which kernels every engine of a benchmark runs: the CPU's best, or AVX2 / AVX-512 forced (bench/decode.py --isa).

An AVX-512 machine measures the AVX2 path too: each library that picks its kernels by the CPU reads a variable
at import or at its first call, so `enter()` sets them all and re-runs the benchmark's process with them before
it has run anything. `verified()` then asks each library which kernels it took, and the JSON keeps the answers.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile
from collections.abc import Callable, Iterator

import torch

# Per ISA, each library's own switch (its documented spelling).
ENVIRONMENT = {
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",  # torch's own kernels
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",  # MKL's GEMM (torch's addmm)
        "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN (torch's mkldnn ops)
        "CT2_FORCE_CPU_ISA": "AVX2",  # CTranslate2
        "MODELCORE_ISA": "avx2",  # modelcore's native decoder step (native/step.cpp)
    },
    "avx512": {
        "ATEN_CPU_CAPABILITY": "avx512",
        "MKL_ENABLE_INSTRUCTIONS": "AVX512",
        "ONEDNN_MAX_CPU_ISA": "AVX512_CORE",
        "CT2_FORCE_CPU_ISA": "AVX512",
        "MODELCORE_ISA": "avx512",
    },
    "auto": {},
}
CHOICES = tuple(ENVIRONMENT)


def enter(isa: str) -> None:
    """Run this process again with `isa`'s variables set, unless they are set already (then return)."""
    wanted = ENVIRONMENT[isa]
    if all(os.environ.get(name) == value for name, value in wanted.items()):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **wanted})


def verified(isa: str) -> dict[str, object]:
    """What each library says it runs, in this process (the modelcore and torch engines' own)."""
    from modelcore.decoding import native

    module = native.native_step()
    x, w, b = torch.randn(16, 256), torch.randn(256, 1024), torch.randn(1024)
    mkl = _printed(lambda: _with(torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON), torch.addmm, b, x, w))
    onednn = _printed(lambda: _with(torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON),
                                    torch.ops.aten.mkldnn_linear, x.to_mkldnn(), w.t().contiguous().to_mkldnn(), None))
    return {
        "requested": isa,
        "environment": ENVIRONMENT[isa],
        "cpu_flags": _cpu_flags(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "mkl_verbose": _first(mkl, "MKL_VERBOSE"),  # on AMD CPUs MKL names no ISA here
        "onednn_verbose": _first(onednn, "isa:"),
        "modelcore_native_isa": module.isa() if module is not None else None,
        "modelcore_native_decodes": native.fast_here() and module is not None,
    }


def _with(manager: contextlib.AbstractContextManager[object], call: Callable[..., object], *args: object) -> None:
    with manager, torch.inference_mode():
        call(*args)


def _printed(call: Callable[[], None]) -> str:
    """What `call` writes to the process's standard output, C libraries' printf included."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            call()
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode(errors="replace")


@contextlib.contextmanager
def stderr_to(path: str) -> Iterator[None]:
    """The process's standard error (C++ loggers' too) written to path while inside."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "wb") as out:
        os.dup2(out.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _first(text: str, marker: str) -> str | None:
    return next((line.strip() for line in text.splitlines() if marker in line), None)


def _cpu_flags() -> list[str]:
    """The AVX flags /proc/cpuinfo lists for the first CPU (what the machine has, whatever is forced)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("flags"):
                    return sorted(f for f in line.split(":", 1)[1].split() if f.startswith(("avx", "fma")))
    except OSError:
        pass
    return []
