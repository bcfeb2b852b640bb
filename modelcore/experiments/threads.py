"""Running a block with a given number of torch threads."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Use n intra-op threads inside the block, then restore the previous count.

    Probe models are small: one thread runs them about as fast as two, and never stalls
    waiting for a core that another process holds (measured: a 34 s run took over 600 s
    with two threads on two busy cores).
    """
    if n < 1:
        raise ValueError(f"need at least one thread, got {n}")
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
