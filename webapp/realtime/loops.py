"""Objects kept per asyncio event loop (a web process may run several: tests, threads)."""
from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def per_loop(factory: Callable[[], T]) -> Callable[[], T]:
    """A function that returns the running event loop's own instance, made by factory on first use."""
    instances: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()

    def get() -> T:
        loop = asyncio.get_running_loop()
        if loop not in instances:
            instances[loop] = factory()
        return instances[loop]

    return get
