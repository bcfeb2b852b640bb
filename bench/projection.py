"""The native step's projection kernels against torch's addmm at the decode benchmark's shapes, side by side.

    .venv/bin/python bench/projection.py [--isa avx2|avx512|auto] [--repeats 7] [--threads 2]

Rows 1 and 16 (batch 1 and 16) through the decoder's matrices (d_model 256, d_ff 1024, vocabulary 1000):
every ISA's kernels this CPU runs (native step's use_isa) and addmm (MKL, with whichever kernels --isa
forced on it), interleaved in each repeat; medians of microseconds per call, weights warm. One thread
measures the kernels alone; two, as decoding runs, also how the threads wait on each other.

Then a step's 19 projections in a row (3 layers of qkv, three 256 -> 256, the FFN's two; then the generator),
each through its own weights as a decode step reads them: 12 MB, more than a core's L2, where the figures per
shape above call one matrix again and again from the caches.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import isa  # bench/isa.py
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from modelcore.decoding.native import native_step  # noqa: E402

SHAPES = [(256, 768), (256, 256), (256, 1024), (1024, 256), (256, 1000)]  # (in, out): qkv, outs, FFN, generator
STEP = [(256, 768), (256, 256), (256, 256), (256, 256), (256, 1024), (1024, 256)] * 3 + [(256, 1000)]


def microseconds(call: Callable[[], object], calls: int = 50) -> float:
    call()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isa", choices=isa.CHOICES, default="auto", help="the ISA forced on torch and MKL")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    isa.enter(args.isa)
    torch.set_num_threads(args.threads)
    module = native_step()
    assert module is not None, "the native step is not built (python -m modelcore.decoding.native)"
    variants = [name for name in ("avx512", "avx2", "baseline") if module.use_isa(name) == name]
    print(f"torch {torch.backends.cpu.get_cpu_capability()}, load average {os.getloadavg()}")
    for rows in (1, 16):
        totals = dict.fromkeys([*variants, "addmm"], 0.0)
        for inner, out in SHAPES:
            w, b, x = torch.randn(inner, out), torch.randn(out), torch.randn(rows, inner)
            packed = module.pack_weight(w)
            times: dict[str, list[float]] = {name: [] for name in totals}
            for _ in range(args.repeats):
                for name in variants:
                    module.use_isa(name)
                    times[name].append(microseconds(functools.partial(module.linear, x, packed, b)))
                times["addmm"].append(microseconds(functools.partial(torch.addmm, b, x, w)))
            medians = {name: statistics.median(t) for name, t in times.items()}
            for name, value in medians.items():
                totals[name] += value
            print(f"rows {rows:2d} {inner:4d} -> {out:4d}: " + "  ".join(f"{n} {v:7.1f} us" for n, v in medians.items()))
        print(f"rows {rows:2d} all five:    " + "  ".join(f"{n} {v:7.1f} us" for n, v in totals.items())
              + "   addmm / each: " + ", ".join(f"{n} {totals['addmm'] / totals[n]:.2f}x" for n in variants))
    step(module, variants, args.repeats)
    module.use_isa("auto")
    print(f"load average after {os.getloadavg()}")


def step(module: ModuleType, variants: list[str], repeats: int) -> None:
    """A decode step's 19 projections, each with its own weights, per ISA and through addmm."""
    weights = [(torch.randn(inner, out), torch.randn(out)) for inner, out in STEP]
    packed = [module.pack_weight(w) for w, _ in weights]
    for rows in (1, 16):
        xs = [torch.randn(rows, inner) for inner, _ in STEP]

        def native(xs: list[torch.Tensor] = xs) -> None:
            for x, p, (_, b) in zip(xs, packed, weights, strict=True):
                module.linear(x, p, b)

        def addmm(xs: list[torch.Tensor] = xs) -> None:
            for x, (w, b) in zip(xs, weights, strict=True):
                torch.addmm(b, x, w)

        times: dict[str, list[float]] = {name: [] for name in [*variants, "addmm"]}
        for _ in range(repeats):
            for name in variants:
                module.use_isa(name)
                times[name].append(microseconds(native, calls=20))
            times["addmm"].append(microseconds(addmm, calls=20))
        medians = {name: statistics.median(t) for name, t in times.items()}
        print(f"rows {rows:2d} a step's 19:  " + "  ".join(f"{n} {v:7.1f} us" for n, v in medians.items())
              + "   addmm / each: " + ", ".join(f"{n} {medians['addmm'] / medians[n]:.2f}x" for n in variants))


if __name__ == "__main__":
    main()
