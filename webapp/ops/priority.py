"""CPU priority of the workers: on shared cores a decode's next token comes before background work.

A worker that consumes none of the latency-bound queues (`interactive`: playground and classroom decodes) lowers
its own scheduling priority by BACKGROUND_WORKER_NICE when it starts, before its pool forks or spawns threads,
so every process and thread of it runs at that priority. The demonstrations, experiments and training workers
then take the cores that decoding and the web process leave: a flood of demonstrations queues behind nothing,
yet it no longer slows another student's first token by competing for the CPU. 0 turns it off.
"""
from __future__ import annotations

import logging
import os
from typing import Any

from celery import signals
from django.conf import settings

log = logging.getLogger(__name__)

LATENCY_BOUND = frozenset({"interactive"})


def background(queues: set[str]) -> bool:
    """A worker of these queues serves nobody who waits token by token."""
    return bool(queues) and not queues & LATENCY_BOUND


@signals.worker_init.connect
def _lower_background_priority(sender: Any = None, **_: Any) -> None:
    queues = set(getattr(sender.app.amqp.queues, "consume_from", None) or {}) if sender is not None else set()
    step = settings.BACKGROUND_WORKER_NICE
    if not step or not background(queues):
        return
    niceness = os.nice(step)
    log.info("%s: background worker (%s) at nice %d", sender.hostname, ", ".join(sorted(queues)), niceness)
