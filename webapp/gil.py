"""The web process's GIL switch interval (`python -m webapp.server` sets it; kept apart from the server so that
the benchmarks can read it without loading Twisted)."""
from __future__ import annotations

import os

# Python's default is 5 ms; 20 ms interrupts the threads running Django's views less often and lets the event loop
# run its ready frames in longer turns, which shortened the sockets' first-token tail beside a class's page requests
# (figures: docs/benchmarks.md, bench/class_load.py). WEB_GIL_SWITCH_MS sets another (docs/deploy.md).
GIL_SWITCH_MS = 20.0


def gil_switch_interval() -> float:
    """The web process's GIL switch interval in seconds, from WEB_GIL_SWITCH_MS (milliseconds, 0.1 to 100).

    The event loop that moves every socket's frames shares the GIL with the threads that run Django's views:
    while a view computes, the loop waits up to one interval for each turn it gets.
    """
    raw = os.environ.get("WEB_GIL_SWITCH_MS", "").strip()
    if not raw:
        return GIL_SWITCH_MS / 1000
    try:
        value = float(raw)
    except ValueError:
        raise SystemExit(f"WEB_GIL_SWITCH_MS must be a number of milliseconds, got {raw!r}") from None
    if not 0.1 <= value <= 100:
        raise SystemExit(f"WEB_GIL_SWITCH_MS must be between 0.1 and 100 ms, got {raw}")
    return value / 1000
